"""CPU-runtime speed: the generated kernel's run under ``fadsl sim`` against ``fadsl run``.

For fa2 at each shape (default the issue's B=1 N=8 Sq=Skv=2048 D=128 fp16, non-causal
and causal) this builds the generated project with fadsl's CPU runtime exactly as
``fadsl sim`` does (the build cache is used; build time is printed but not counted),
writes the seeded inputs ``fadsl sim`` would write, and times the built program alone:
wall seconds, CPU seconds and peak resident memory of that process (GNU time).
The build is at -O3 ($FADSL_SIM_OPT, when set, chooses another level): the bench
measures the runtime's speed, not sim's default -O1.
It then times the whole ``fadsl run ... --no-check`` process on the same shape (same
seed) and prints the ratio of the two wall times. Targets (issue 20): sim <= 10x run,
peak memory <= 1 GB. The load average is printed before and after: on a shared machine
wall times are unreliable, CPU times less so.

    python3 bench/sim.py [--shape B=1,N=8,Sq=2048,Skv=2048,D=128] [--variants plain,causal]
                         [--save DIR]   # keep each sim output as DIR/<variant>/o.bin (for cmp)

With ``--build`` it times sim's build instead (issue 32: <= 15 s on an idle 2-core
machine): the README's main job ``fadsl sim examples/fa2.py --shape
B=1,N=2,Sq=300,Skv=256,D=128 --set causal=true`` as a whole process with an empty
build cache ("cold"), then, with that cache, the same kernel with another block size
("edit": new kernel C++, the runtime's cached parts reused), at sim's default
optimisation level. ``--base DIR`` runs the same commands from another checkout
(e.g. main's) alternately with this one, round by round:

    python3 bench/sim.py --build [--rounds 3] [--base /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from timing import ROOT, footer, header

sys.path.insert(0, ROOT)

SHAPE = "B=1,N=8,Sq=2048,Skv=2048,D=128"
KERNEL = "examples/fa2.py"


def kernel_args(shape: str, causal: bool) -> list[str]:
    sets = ["--set", "causal=True"] if causal else []
    return [KERNEL, "--shape", shape, "--dtype", "fp16", *sets]


def prepare(shape: str, causal: bool, work: str) -> tuple[str, float, Any]:
    """Build (cached) and write the inputs; return the program, build seconds, binding."""
    from fadsl.commands import common, sim_cmd
    from fadsl.backends.sim import run as sim_run
    from fadsl.driver.lower import lower
    from fadsl.io.runio import make_inputs

    parser = argparse.ArgumentParser()
    sim_cmd.add_arguments(parser)
    args = parser.parse_args(kernel_args(shape, causal) + ["-o", work])
    binding = common.build(args, target=common.target_of(args))
    binary, build_seconds = sim_run.build(lower(binding), KERNEL)
    os.makedirs(os.path.join(work, "input"))
    os.makedirs(os.path.join(work, "output"))
    for name, arr in make_inputs(binding, 0).items():
        arr.tofile(os.path.join(work, "input", f"{name}.bin"))
    with open(os.path.join(work, "input", "shape.txt"), "w") as f:
        for k, v in list(binding.shape.items()) + list(binding.scalars.items()):
            f.write(f"{k} {v!r}\n")
    return binary, build_seconds, binding


def run_timed(cmd: list[str], tmp: str) -> dict[str, float]:
    """Run ``cmd`` from the repository under GNU time; wall s, CPU s and peak RSS (MB)
    of that process alone. (Not os.wait4 from here: a child forked from this Python
    process reports this process's resident size as its own peak on Linux.)"""
    stats = os.path.join(tmp, "time.txt")
    timed = ["/usr/bin/time", "-o", stats, "-f", "%e %U %S %M", *cmd]
    proc = subprocess.run(timed, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    with open(stats) as f:
        wall, user, system, rss_kb = f.read().split()[-4:]
    notes = proc.stderr.strip()
    if notes:
        print("   (stderr: " + notes.splitlines()[-1][:200] + ")")
    return {
        "wall": float(wall),
        "cpu": float(user) + float(system),
        "rss_mb": int(rss_kb) / 1024.0,
    }


def measure(shape: str, causal: bool, tmp: str, save: str | None) -> None:
    label = "causal" if causal else "plain"
    work = os.path.join(tmp, f"sim-{label}")
    t0 = time.perf_counter()
    binary, build_s, _ = prepare(shape, causal, work)
    prep = time.perf_counter() - t0
    print(
        f"-- fa2 {label} [{shape}]: build {'cached' if build_s == 0 else f'{build_s:.1f} s'}"
        f" (prepare incl. inputs {prep:.1f} s)",
        flush=True,
    )
    sim = run_timed([binary, work], tmp)
    print(
        f"   sim program: wall {sim['wall']:.2f} s, CPU {sim['cpu']:.2f} s, "
        f"peak RSS {sim['rss_mb']:.0f} MB",
        flush=True,
    )
    if save:
        dest = os.path.join(save, label)
        os.makedirs(dest, exist_ok=True)
        shutil.copy(os.path.join(work, "output", "o.bin"), os.path.join(dest, "o.bin"))
    out = os.path.join(tmp, f"run-{label}")
    cmd = [sys.executable, "-m", "fadsl", "run", *kernel_args(shape, causal)]
    run = run_timed(cmd + ["--no-check", "-o", out], tmp)
    with open(os.path.join(out, "meta.json")) as f:
        interp = float(json.load(f)["interpreter_seconds"])
    print(
        f"   fadsl run (whole process): wall {run['wall']:.2f} s, CPU {run['cpu']:.2f} s, "
        f"peak RSS {run['rss_mb']:.0f} MB (interpreter alone {interp:.2f} s)"
    )
    print(
        f"   RATIO sim / run: wall {sim['wall'] / run['wall']:.2f}, "
        f"CPU {sim['cpu'] / run['cpu']:.2f}  (target <= 10); "
        f"sim peak memory {sim['rss_mb']:.0f} MB (target <= 1024)",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", default=SHAPE)
    parser.add_argument("--variants", default="plain,causal")
    parser.add_argument("--save", metavar="DIR", help="keep sim outputs for cmp")
    parser.add_argument("--build", action="store_true", help="time sim's build")
    parser.add_argument("--rounds", type=int, default=3, help="--build rounds")
    parser.add_argument("--base", metavar="DIR", help="--build: compare a checkout")
    args = parser.parse_args()
    if args.build:
        from sim_build import bench_builds

        return bench_builds(args.rounds, args.base)
    os.environ.setdefault("FADSL_SIM_OPT", "-O3")
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not set(variants) <= {"plain", "causal"}:
        parser.error("--variants takes plain and/or causal")
    header(
        f"CPU runtime: fadsl sim's program vs fadsl run, {KERNEL} [{args.shape}] fp16, "
        f"built at {os.environ['FADSL_SIM_OPT']}"
    )
    with tempfile.TemporaryDirectory(prefix="fadsl-bench-sim-") as tmp:
        for v in variants:
            measure(args.shape, v == "causal", tmp, args.save)
    footer()
    return 0


if __name__ == "__main__":
    sys.exit(main())
