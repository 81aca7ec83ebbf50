"""Tune speed: configurations evaluated by ``fadsl tune`` and the seconds it takes.

Runs ``fadsl tune examples/fa2.py --target ascend910b1 --shape ... --json`` (a new
process each round) and prints, per round and as medians, the configurations it
evaluated (block_q x block_kv x stages, each pruned by the checker's formulas and the
feasible ones ranked by the cost model), the seconds tune itself reports for its search,
and the whole process's wall time. Target (issue 6): >= 200 configurations in <= 5 s.

    python3 bench/tune.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from timing import Samples, footer, header, timed

SHAPE = "B=1,N=8,Sq=4096,Skv=4096,D=128"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target", default="ascend910b1")
    args = parser.parse_args()
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
        "--json",
    ]
    header(f"tune: {' '.join(cmd[2:])}, {args.rounds} rounds")
    whole = Samples("fadsl tune (whole process)")
    searched, configs = [], []
    for r in range(args.rounds):
        result = json.loads(timed(cmd, whole))
        configs.append(result["evaluated"])
        searched.append(result["seconds"])
        print(
            f"  round {r + 1}: {result['evaluated']} configurations, "
            f"{result['feasible']} feasible, search {result['seconds']:.2f} s, "
            f"process {whole.wall[-1]:.2f} s",
            flush=True,
        )
    print("   " + whole.line())
    n, search = statistics.median(configs), statistics.median(searched)
    print(
        f"   TUNE {n:.0f} configurations; median search {search:.2f} s, median whole "
        f"process {whole.wall_median:.2f} s ({n / whole.wall_median:.0f} configurations/s; "
        "target >= 200 in <= 5 s)"
    )
    footer()
    return 0


if __name__ == "__main__":
    sys.exit(main())
