"""Tune speed: configurations ``fadsl tune`` evaluates, plans exactly and the seconds it takes.

Runs ``fadsl tune examples/fa2.py --target ascend910b1 --shape ... --json`` (a new
process each round) at issue 32's shape, without and with ``causal``, and prints per
round and as medians: the configurations evaluated (block_q x block_kv x stages), how
they were decided (ruled out by a footprint floor, by a lower bound of the modelled
time, or planned exactly as ``fadsl check`` plans them), the seconds tune reports for
its search, the whole process's wall and CPU seconds, and the best configuration.
Target (issue 32): <= 5 s, causal <= 10 s, whole process, idle 2-core machine.

``--base DIR`` times another checkout (e.g. one of main) in the same run, alternating
with this one round by round (timing.py: load drifts), and prints the CPU ratio and
whether the two rank the same configurations in the same order, and how far apart
their modelled times are.

    python3 bench/tune.py [--rounds 3] [--only plain|causal] [--base DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from timing import ROOT, Samples, footer, header, ratios, timed

SHAPE = "B=1,N=8,Sq=8192,Skv=8192,D=128"
VARIANTS = {"plain": [], "causal": ["--set", "causal=true"]}
TARGETS = {"plain": 5.0, "causal": 10.0}


def _round(cmd: list[str], whole: Samples, cwd: str) -> tuple[str, list[Any]]:
    """One process: its summary line and its ranking (values and modelled seconds)."""
    result = json.loads(timed(cmd, whole, cwd=cwd))
    line = (
        f"{result['evaluated']} configurations: {result['ruled_out_by_floor']} by a "
        f"footprint floor, {result['ruled_out_by_time_bound']} by a time bound, "
        f"{result['planned_exactly']} planned exactly ({result['feasible']} fit, "
        f"{result.get('modelled_configurations', result['feasible'])} modelled); "
        f"search {result['seconds']:.2f} s, process {whole.wall[-1]:.2f} s wall, "
        f"{whole.cpu[-1]:.2f} s CPU"
    )
    ranked = [(r["values"], r["estimate"]["time_s"]) for r in result["ranked"]]
    best = ranked[0]
    return line + f"; best {best[0]} {best[1] * 1e3:.3f} ms", ranked


def _same(ours: list[Any], theirs: list[Any]) -> str:
    """Whether two rankings name the same configurations in the same order, and how
    far apart their modelled times are."""
    if [v for v, _ in ours] != [v for v, _ in theirs]:
        return "DIFFERENT ranking"
    apart = max((abs(a - b) / b for (_, a), (_, b) in zip(ours, theirs)), default=0.0)
    return f"same ranking, times within {apart:.1e} relative"


def _variant(name: str, cmd: list[str], rounds: int, base: str | None) -> None:
    header(f"tune ({name}): {' '.join(cmd[2:])}, {rounds} rounds")
    whole = Samples(f"fadsl tune, {name} (whole process)")
    other = Samples(f"fadsl tune, {name}, base {base} (whole process)")
    for r in range(rounds):
        text, ranked = _round(cmd, whole, ROOT)
        print(f"  round {r + 1}: {text}; load {os.getloadavg()[0]:.1f}", flush=True)
        if base is None:
            continue
        text, theirs = _round(cmd, other, base)
        same = _same(ranked, theirs)
        print(f"  round {r + 1}, base: {text}; {same}; load {os.getloadavg()[0]:.1f}")
    print("   " + whole.line())
    if base is not None:
        print("   " + other.line())
        cpu = " ".join(f"{x:.2f}" for x in ratios(whole.cpu, other.cpu))
        print(f"   CPU this / base per round: {cpu}")
    print(
        f"   TUNE {name}: median whole process {whole.wall_median:.2f} s wall, "
        f"{whole.cpu_median:.2f} s CPU (target <= {TARGETS[name]:.0f} s on an "
        "idle machine)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", default="ascend910b1")
    parser.add_argument("--only", choices=sorted(VARIANTS))
    parser.add_argument(
        "--base", metavar="DIR", help="another checkout to time alternately with this"
    )
    args = parser.parse_args()
    base = os.path.abspath(args.base) if args.base else None
    if base is not None and not os.path.isdir(os.path.join(base, "fadsl")):
        parser.error(f"--base {args.base}: not a checkout of fadsl (no fadsl/ in it)")
    for name, extra in VARIANTS.items():
        if args.only and name != args.only:
            continue
        cmd = [sys.executable, "-m", "fadsl", "tune", "examples/fa2.py"]
        cmd += ["--target", args.target, "--shape", SHAPE, *extra, "--json"]
        _variant(name, cmd, args.rounds, base)
    footer()
    return 0


if __name__ == "__main__":
    sys.exit(main())
