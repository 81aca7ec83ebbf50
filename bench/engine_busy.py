"""Per-engine busy time of the generated fa2 schedule against the native reference.

Usage: ``python3 bench/engine_busy.py [--n 8] [--s 16384] [--causal] [--set NAME=INT]``

For one shape (910B2, B=1, D=128, fp16) it prints, per engine of one AI core, the
seconds of work the modelled schedules give each engine (fadsl/perf/kernel.py for the
generated kernel, fadsl/perf/native.py for CANN's FlashAttentionScore), both per
million (query, key) pairs of one AI core, and the steady period (the pace the busiest
chain sets), in the same unit. An engine whose busy time is far below the period waits:
the difference between the period and the busiest engine is the part of the schedule
that does not overlap. Then the generated KV iteration's steps, each with its engine
and duration. Every figure is MODELLED (no NPU here).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fadsl import target as targets  # noqa: E402
from fadsl.perf import native  # noqa: E402
from fadsl.perf.engines import Engines  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LANES = (
    "SCALAR",
    "AIC MTE2",
    "MTE1",
    "CUBE",
    "FIXPIPE",
    "AIV MTE2",
    "VECTOR",
    "AIV MTE3",
)
MEGA = 1e6
"""Busy seconds / (pairs / 1e6) * 1e6: microseconds per million pairs."""


def generated(n: int, s: int, causal: bool, sets: list[str]) -> dict[str, object]:
    """Busy seconds per engine and the period, per million pairs of one AI core."""
    from fadsl.commands import common
    from fadsl.perf.kernel import KernelModel

    t = targets.get("ascend910b2")
    args = argparse.Namespace(
        file=os.path.join(ROOT, "examples", "fa2.py"),
        kernel=None,
        sets=[f"causal={causal}", *sets],
        dtype=None,
        shape=f"B=1,N={n},Sq={s},Skv={s},D=128",
    )
    binding = common.build(args)
    env = binding.env()
    model = KernelModel(binding.kernel, t).at(env)
    scaled = model.scaled(env)
    timer = model.timer(scaled)
    busy = dict.fromkeys(LANES, 0.0)
    steps = []
    for step in model.body:
        sec = timer.seconds(step)
        busy[step.lane] = busy.get(step.lane, 0.0) + sec
        steps.append((step.lane, step.name, sec, step.count))
    period = model.task_seconds(timer, 12) - model.task_seconds(timer, 11)
    pairs = int(scaled["block_q"]) * int(scaled["block_kv"]) / MEGA / MEGA
    return {
        "busy": {k: v / pairs for k, v in busy.items()},
        "period": period / pairs,
        "steps": steps,
        "schedule": model.kv_schedule.describe(),
        "rows": int(scaled["block_q"]),
        "keys": int(scaled["block_kv"]),
        "time": model.estimate(env).time_s,
    }


def reference(n: int, s: int, causal: bool) -> dict[str, object]:
    """The same for the native reference's full round (1024 keys, no mask)."""
    t = targets.get("ascend910b2")
    shape = native.Shape(1, n, n, s, 128, causal)
    est = native.estimate(shape, t)
    e = Engines.of(t, est.pairs)
    parts = native.round_engines(
        shape, est.s1_block, (native.ROUND_KEYS, False), e, est.kv_hit
    )
    busy = dict.fromkeys(LANES, 0.0)
    for key, sec in parts.items():
        step, lane = key.split(" ", 1)
        busy[lane] += sec
    busy["SCALAR"] = e.round_s
    pairs = 2 * est.s1_block * native.ROUND_KEYS / MEGA / MEGA
    return {
        "busy": {k: v / pairs for k, v in busy.items()},
        "period": est.round_s / pairs,
        "rows": 2 * est.s1_block,
        "keys": native.ROUND_KEYS,
        "time": est.time_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--s", type=int, default=16384)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--set", dest="sets", action="append", default=[])
    a = parser.parse_args()
    gen, nat = generated(a.n, a.s, a.causal, a.sets), reference(a.n, a.s, a.causal)
    print(
        f"fa2 on ascend910b2, B=1 N={a.n} S={a.s} D=128 fp16"
        f"{' causal' if a.causal else ''}; MODELLED, us per million (query, key) pairs "
        "of one AI core"
    )
    print(f"generated: {gen['schedule']}")
    print(
        f"  a KV iteration of one AI core: {gen['rows']} rows x {gen['keys']} keys; "
        f"native round: {nat['rows']} rows x {nat['keys']} keys"
    )
    print(f"{'engine':<10} {'generated':>10} {'native':>8} {'gen/native':>10}")
    gb, nb = gen["busy"], nat["busy"]
    for lane in LANES:
        ratio = gb[lane] / nb[lane] if nb[lane] else float("inf")  # type: ignore[index]
        print(f"{lane:<10} {gb[lane]:10.2f} {nb[lane]:8.2f} {ratio:10.2f}")  # type: ignore[index]
    gp, np_ = gen["period"], nat["period"]
    print(f"{'period':<10} {gp:10.2f} {np_:8.2f} {gp / np_:10.2f}")  # type: ignore[operator]
    print(
        f"kernel time: generated {gen['time'] * 1e6:.1f} us, native "  # type: ignore[operator]
        f"{nat['time'] * 1e6:.1f} us"  # type: ignore[operator]
    )
    print("generated KV iteration, steps in program order (us per iteration):")
    for lane, name, sec, count in gen["steps"]:  # type: ignore[attr-defined]
        extra = f"  ({count} ops)" if count else ""
        print(f"  {lane:<9} {sec * 1e6:7.3f}  {name}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
