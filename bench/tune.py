"""Tune speed: configurations ``fadsl tune`` evaluates, plans exactly and the seconds it takes.

Runs ``fadsl tune examples/fa2.py --target ascend910b1 --shape ... --json`` (a new
process each round) at issue 32's shape, without and with ``causal``, and prints per
round and as medians: the configurations evaluated (block_q x block_kv x stages), how
they were decided (ruled out by a footprint floor, by a lower bound of the modelled
time, or planned exactly as ``fadsl check`` plans them), the seconds tune reports for
its search, the whole process's wall and CPU seconds, and the best configuration.
Target (issue 32): <= 5 s, causal <= 10 s, whole process, idle 2-core machine.

    python3 bench/tune.py [--rounds 3] [--only plain|causal]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from timing import Samples, footer, header, timed

SHAPE = "B=1,N=8,Sq=8192,Skv=8192,D=128"
VARIANTS = {"plain": [], "causal": ["--set", "causal=true"]}
TARGETS = {"plain": 5.0, "causal": 10.0}


def _round(cmd: list[str], whole: Samples) -> str:
    result = json.loads(timed(cmd, whole))
    line = (
        f"{result['evaluated']} configurations: {result['ruled_out_by_floor']} by a "
        f"footprint floor, {result['ruled_out_by_time_bound']} by a time bound, "
        f"{result['planned_exactly']} planned exactly ({result['feasible']} fit); "
        f"search {result['seconds']:.2f} s, process {whole.wall[-1]:.2f} s wall"
    )
    best = result["ranked"][0]
    return line + f"; best {best['values']} {best['estimate']['time_s'] * 1e3:.3f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", default="ascend910b1")
    parser.add_argument("--only", choices=sorted(VARIANTS))
    args = parser.parse_args()
    for name, extra in VARIANTS.items():
        if args.only and name != args.only:
            continue
        cmd = [
            sys.executable,
            "-m",
            "fadsl",
            "tune",
            "examples/fa2.py",
            "--target",
            args.target,
            "--shape",
            SHAPE,
            *extra,
            "--json",
        ]
        header(f"tune ({name}): {' '.join(cmd[2:])}, {args.rounds} rounds")
        whole = Samples(f"fadsl tune, {name} (whole process)")
        for r in range(args.rounds):
            text = _round(cmd, whole)
            print(f"  round {r + 1}: {text}; load {os.getloadavg()[0]:.1f}", flush=True)
        print("   " + whole.line())
        print(
            f"   TUNE {name}: median whole process {whole.wall_median:.2f} s wall, "
            f"{whole.cpu_median:.2f} s CPU (target <= {TARGETS[name]:.0f} s on an "
            "idle machine)"
        )
    footer()
    return 0


if __name__ == "__main__":
    sys.exit(main())
