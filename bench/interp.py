"""Interpreter speed: ``fadsl run`` against a plain numpy fp32 attention, and causal skipping.

Prints the whole-process time of ``fadsl run examples/fa2.py --no-check`` at B=1 N=8
S=4096 D=128 fp16 (seeded random inputs made and written by fadsl itself) divided by
that of ``bench/numpy_attention.py`` on the same ``.bin`` inputs, the two run
alternately; and the speed-up of ``--set causal=True`` over the non-causal run, whole
process and interpreter alone (``interpreter_seconds`` of meta.json); and, for
comparison, both runs with ``FADSL_THREADS=1`` (the grid on one thread) and the causal
speed-up there. Targets (issue 6): ratio <= 1.3, causal speed-up >= 1.7.

    python3 bench/interp.py [--rounds 15] [--shape B=1,N=8,Sq=4096,Skv=4096,D=128]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

import numpy as np
from timing import Samples, footer, header, ratios, timed

SHAPE = "B=1,N=8,Sq=4096,Skv=4096,D=128"


def fadsl_run(shape: str, out: str, causal: bool) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "fadsl",
        "run",
        "examples/fa2.py",
        "--shape",
        shape,
        "--dtype",
        "fp16",
        "--no-check",
        "-o",
        out,
    ]
    return cmd + (["--set", "causal=True"] if causal else [])


def baseline(run_dir: str, out: str) -> list[str]:
    return [sys.executable, "bench/numpy_attention.py", run_dir, out]


def interp_seconds(run_dir: str) -> float:
    with open(os.path.join(run_dir, "meta.json")) as f:
        return float(json.load(f)["interpreter_seconds"])


def max_difference(a_dir: str, b_dir: str) -> float:
    a, b = (np.fromfile(os.path.join(d, "o.bin"), np.float16) for d in (a_dir, b_dir))
    return float(np.abs(a.astype(np.float32) - b.astype(np.float32)).max())


def measure(rounds: int, shape: str, tmp: str) -> None:
    run, ref, causal = (os.path.join(tmp, n) for n in ("run", "numpy", "causal"))
    timed(fadsl_run(shape, run, False), Samples("warm-up"))  # inputs, file cache
    fad, base, cau = Samples("fadsl run"), Samples("numpy fp32"), Samples("causal")
    single = Samples("fadsl run, FADSL_THREADS=1")
    single_causal = Samples("causal, FADSL_THREADS=1")
    one_thread = dict(os.environ, FADSL_THREADS="1")
    interp: dict[str, list[float]] = {k: [] for k in ("nc", "c", "nc1", "c1")}
    for r in range(rounds):
        pair = [(fadsl_run(shape, run, False), fad), (baseline(run, ref), base)]
        for cmd, samples in pair if r % 2 == 0 else pair[::-1]:
            timed(cmd, samples)
        interp["nc"].append(interp_seconds(run))
        timed(fadsl_run(shape, causal, True), cau)
        interp["c"].append(interp_seconds(causal))
        timed(fadsl_run(shape, causal, False), single, env=one_thread)
        interp["nc1"].append(interp_seconds(causal))
        timed(fadsl_run(shape, causal, True), single_causal, env=one_thread)
        interp["c1"].append(interp_seconds(causal))
        print(
            f"  round {r + 1}: fadsl {fad.wall[-1]:.2f} s, numpy {base.wall[-1]:.2f} s, "
            f"causal {cau.wall[-1]:.2f} s, one thread {single.wall[-1]:.2f} s "
            f"(causal {single_causal.wall[-1]:.2f} s)",
            flush=True,
        )
    report(fad, base, cau, interp["nc"], interp["c"])
    print("   " + single.line())
    print("   " + single_causal.line())
    one = statistics.median(ratios(interp["nc1"], interp["c1"]))
    print(
        f"   CAUSAL speed-up on one thread (FADSL_THREADS=1), interpreter alone: "
        f"{one:.2f}  (non-causal median {statistics.median(interp['nc1']):.3f} s, "
        f"causal {statistics.median(interp['c1']):.3f} s)"
    )
    print(f"   max |o_fadsl - o_numpy| = {max_difference(run, ref):.2e} (fp16 outputs)")


def report(
    fad: Samples,
    base: Samples,
    cau: Samples,
    interp: list[float],
    interp_causal: list[float],
) -> None:
    for s in (fad, base, cau):
        print("   " + s.line())
    wall = statistics.median(ratios(fad.wall, base.wall))
    cpu = statistics.median(ratios(fad.cpu, base.cpu))
    print(
        f"   RATIO fadsl run / numpy (median of per-round ratios): wall {wall:.2f}, "
        f"CPU {cpu:.2f}  (target <= 1.3); ratio of medians {fad.wall_median / base.wall_median:.2f}"
    )
    whole = statistics.median(ratios(fad.wall, cau.wall))
    inner = statistics.median(ratios(interp, interp_causal))
    print(
        f"   CAUSAL speed-up (non-causal / causal, median): whole process {whole:.2f}, "
        f"CPU {statistics.median(ratios(fad.cpu, cau.cpu)):.2f}, interpreter alone "
        f"{inner:.2f}  (target >= 1.7)"
    )
    print(
        f"   interpreter seconds: non-causal median {statistics.median(interp):.3f}, "
        f"causal median {statistics.median(interp_causal):.3f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--shape", default=SHAPE)
    args = parser.parse_args()
    header(
        f"interpreter: fadsl run examples/fa2.py --shape {args.shape} fp16 "
        f"vs numpy fp32, {args.rounds} alternating rounds"
    )
    with tempfile.TemporaryDirectory(prefix="fadsl-bench-") as tmp:
        measure(args.rounds, args.shape, tmp)
    footer()
    return 0


if __name__ == "__main__":
    sys.exit(main())
