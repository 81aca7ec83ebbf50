"""The generated FlashAttention backward (examples/fa2_bwd.py) in the kernel model
(issue 17): modelled TFLOPS on 910B2, MODELLED (no NPU here).

examples/fa2_bwd.py as ``fadsl compile`` builds it (its default tiles block_q=64,
block_kv=128, and the schedule its IR gives) at B=1, N=8, D=128, fp16, S = 4K and 8K,
non-causal and causal. The useful work of a backward is five matmuls per visible
(query, key) pair (S = Q K^T recomputed, dV += P^T dO, dP = dO V^T, dQ += dS K,
dK += dS^T Q): 5 * 2 * D FLOPs per pair, with S(S+1)/2 pairs per head when causal, as
FlashAttention counts them (2.5 times the forward's two matmuls).
TFLOPS = those FLOPs / the modelled kernel time (fadsl/perf/kernel.py).

    python3 bench/backward_model.py [--set block_q=64 --set block_kv=64 ...]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fadsl import target as targets  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = "ascend910b2"
B, N, D = 1, 8, 128
SHAPES = [(False, 4096), (True, 4096), (False, 8192), (True, 8192)]


def useful_flops(causal: bool, s: int) -> float:
    pairs = s * (s + 1) / 2 if causal else s * s
    return 5 * 2 * D * pairs * B * N


def models(sets: list[str]) -> list[tuple[bool, int, object, dict]]:
    """(causal, S, model with the planner's choices made, env) per shape."""
    from fadsl.commands import common
    from fadsl.perf.kernel import KernelModel

    t = targets.get(TARGET)
    out = []
    for causal, s in SHAPES:
        args = argparse.Namespace(
            file=os.path.join(ROOT, "examples", "fa2_bwd.py"),
            kernel=None,
            sets=[f"causal={causal}", *sets],
            dtype=None,
            shape=f"B={B},N={N},Sq={s},Skv={s},D={D}",
        )
        binding = common.build(args)
        env = binding.model_env()
        model = KernelModel(binding.kernel, t).at(env)
        out.append((causal, s, model, env))
    return out


def tflops_ranges(sets: list[str]) -> list[object]:
    """Each shape's TFLOPS as a range (fadsl/perf/ranges.py)."""
    from fadsl.perf import ranges

    cases = models(sets)

    def figures(get: object) -> list[float]:
        t = get(TARGET)  # type: ignore[operator]
        return [
            useful_flops(c, s) / m.retarget(t).estimate(env).time_s / 1e12
            for c, s, m, env in cases
        ]

    return ranges.parallel(figures)


def rows(sets: list[str]) -> list[tuple[bool, int, float, float, int, int]]:
    """(causal, S, modelled seconds, TFLOPS, tasks, blockDim) per shape."""
    from fadsl.commands import common
    from fadsl.perf.kernel import KernelModel

    t = targets.get(TARGET)
    out = []
    for causal, s in SHAPES:
        args = argparse.Namespace(
            file=os.path.join(ROOT, "examples", "fa2_bwd.py"),
            kernel=None,
            sets=[f"causal={causal}", *sets],
            dtype=None,
            shape=f"B={B},N={N},Sq={s},Skv={s},D={D}",
        )
        binding = common.build(args)
        kt = KernelModel(binding.kernel, t).estimate(binding.model_env())
        tflops = useful_flops(causal, s) / kt.time_s / 1e12
        out.append((causal, s, kt.time_s, tflops, kt.tasks, kt.block_dim))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        help="a tile constant, e.g. block_kv=64 (default: the example's)",
    )
    parser.add_argument(
        "--no-ranges", action="store_true", help="central figures only (faster)"
    )
    a = parser.parse_args()
    sets = a.sets
    spans = None if a.no_ranges else tflops_ranges(sets)
    print(
        f"generated backward (examples/fa2_bwd.py{', ' + ', '.join(sets) if sets else ''})"
        f", MODELLED on {TARGET}: B={B}, N={N}, D={D}, fp16;\n"
        "TFLOPS = 5 matmuls x 2 D FLOPs per visible (q, k) pair / modelled time"
    )
    print(
        "TFLOPS C [L, H]: central, lowest and highest with every uncertain cost-table "
        "entry at x0.5 and x2\n(fadsl/perf/ranges.py); no native backward reference "
        "yet, so no ratio"
    )
    print(
        f"{'causal':>6} {'S':>6}  {'time ms':>8}  {'TFLOPS C [L, H]':>22}  {'tasks':>5}  "
        "blockDim"
    )
    for k, (causal, s, secs, tflops, tasks, block_dim) in enumerate(rows(sets)):
        span = spans[k].text(".1f") if spans else f"{tflops:.1f}"  # type: ignore[attr-defined]
        print(
            f"{'yes' if causal else 'no':>6} {s:>6}  {secs * 1e3:8.3f}  {span:>22}  "
            f"{tasks:>5}  {block_dim}"
        )
    print("every figure above is MODELLED, not measured (no NPU here)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
