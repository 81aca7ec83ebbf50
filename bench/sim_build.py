"""``bench/sim.py --build``: the time of sim's build, cold and after an edit.

Each round runs, for this checkout and (``--base``) another one, alternately:
"cold", the README's main job with an empty build cache, then "edit", the same kernel
with another block size and the cache the cold run left (new kernel C++, so the
project is compiled again while the runtime's cached library and precompiled header,
where the checkout has them, are reused). Each is a whole ``python3 -m fadsl sim``
process: wall and CPU seconds (its children's included), and the build seconds sim
itself reports.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from timing import ROOT, Samples, footer, header

JOB = [
    "sim",
    "examples/fa2.py",
    "--shape",
    "B=1,N=2,Sq=300,Skv=256,D=128",
    "--set",
    "causal=true",
]
EDIT = ["--set", "block_kv=64"]


def run_sim(
    checkout: str, cache: str, out: str, extra: list[str]
) -> tuple[float, float, float]:
    """(wall, CPU, build seconds sim reports) of one ``fadsl sim`` process."""
    env = dict(os.environ, FADSL_CACHE_DIR=cache)
    env.pop("FADSL_SIM_OPT", None)  # sim's default level
    cmd = [sys.executable, "-m", "fadsl", *JOB, *extra, "-o", out]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"failed in {checkout}: {' '.join(cmd)}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    found = re.search(r"build ([0-9.]+) s", proc.stdout)
    return wall, cpu, float(found.group(1)) if found else 0.0


def bench_builds(rounds: int, base: str | None) -> int:
    checkouts = [("this", ROOT)] + ([("base", os.path.abspath(base))] if base else [])
    header(f"sim build: fadsl {' '.join(JOB)} (cold cache, then edit), {rounds} rounds")
    for label, path in checkouts:
        print(f"   {label}: {path}")
    samples = {
        (c, kind): Samples(f"{c:4} {kind:4}")
        for c, _ in checkouts
        for kind in ("cold", "edit")
    }
    builds: dict[tuple[str, str], list[float]] = {k: [] for k in samples}
    with tempfile.TemporaryDirectory(prefix="fadsl-bench-simbuild-") as tmp:
        for r in range(rounds):
            for label, path in checkouts:
                cache = os.path.join(tmp, f"cache-{label}-{r}")
                for kind, extra in (("cold", []), ("edit", EDIT)):
                    out = os.path.join(tmp, f"out-{label}-{r}-{kind}")
                    wall, cpu, built = run_sim(path, cache, out, extra)
                    samples[(label, kind)].wall.append(wall)
                    samples[(label, kind)].cpu.append(cpu)
                    builds[(label, kind)].append(built)
                    print(
                        f"   round {r + 1} {label} {kind}: wall {wall:.2f} s, "
                        f"CPU {cpu:.2f} s, sim's build {built:.1f} s",
                        flush=True,
                    )
                shutil.rmtree(cache, ignore_errors=True)
    for key, s in samples.items():
        reported = " ".join(f"{b:.1f}" for b in builds[key])
        print(f"-- {s.line()}; sim's build: {reported}")
    footer()
    return 0
