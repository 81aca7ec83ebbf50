"""Split-KV (flash-decoding) in the interpreter: ``kv_splits`` > 1 cuts each task's
pages into parts that separate grid tasks (cores) compute; each stores its normalised
output and LSE in f32 (``o_part`` / ``lse_part``), and the post-phase grid merges the
parts by the LSE formula (``fadsl/lib/paged.py``).

Against the float64 reference that gathers the pages itself, on the decode grid of
issue 18 (B=4, N=32, Nkv 8 or 32, D=128, Sq 1 or 4, lengths 300, 1, 128, 517,
shuffled pages, causal or not, packed or not): the rule passes, and the merge equals the
unsplit kernel to f32 rounding, including parts that see no page at all.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fadsl as fd
from fadsl.backends.interp import interpret
from fadsl.driver.binding import Binding
from fadsl.io import runio
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType
from fadsl.io.input_checks import check_index_inputs
from fadsl.passes import run_pipeline
from tests.variants.test_paged import CASES, SHAPE, _inputs, _kernel, _passes
from attkit import symbol_values


def run(kdef: Any, shape: dict[str, int], splits: int) -> tuple[Any, Any, Any]:
    kernel = kdef.build({"block_q": 16, "kv_splits": splits}, DType.F16)
    kdef.check_shape(shape)
    full = symbol_values(kernel, shape)
    b = Binding(kernel, full, {"scale": shape["D"] ** -0.5}, kdef)
    data = runio.make_inputs(b, 0)
    data.update(_inputs(shape))
    check_index_inputs(b, data)
    out = interpret(run_pipeline(kernel), b.env(), data).outputs
    return kernel, out, runio.check_outputs(b, data, out)


@pytest.mark.parametrize("sq", [1, 4])
@pytest.mark.parametrize("nkv", [8, 32])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_split_decode_grid_passes_the_tolerance_rule(
    case: int, nkv: int, sq: int
) -> None:
    kernel, out, check = run(_kernel(**CASES[case]), dict(SHAPE, Nkv=nkv, Sq=sq), 3)
    assert sum(isinstance(op, ir.Grid) for op in kernel.body) == 2  # the combine
    _passes(check)
    assert np.isfinite(out["o"].astype(np.float32)).all()


@pytest.mark.parametrize("splits", [2, 5])
@pytest.mark.parametrize("case", [0, 1])
def test_the_merge_equals_the_unsplit_kernel(case: int, splits: int) -> None:
    """5 parts of at most 5 pages: some parts of every sequence are empty (lse -inf)."""
    shape = dict(SHAPE, Sq=4)
    _, whole, _ = run(_kernel(**CASES[case]), shape, 1)
    _, split, _ = run(_kernel(**CASES[case]), shape, splits)
    o1, o2 = (x["o"].astype(np.float64) for x in (whole, split))
    assert np.abs(o1 - o2).max() <= 2.0**-10 * np.abs(o1).max()
    l1, l2 = whole["lse"], split["lse"]
    assert (np.isinf(l1) == np.isinf(l2)).all()
    fin = np.isfinite(l1)
    assert np.abs(l1[fin] - l2[fin]).max() <= 1e-5 * np.abs(l1[fin]).max()


def test_mods_and_windows_split_too() -> None:
    from tests.variants.test_paged import alibi

    for kw in (dict(score_mod=alibi, causal=True), dict(window=(200, 0), causal=True)):
        _, _, check = run(_kernel(**kw), dict(SHAPE, Sq=4), 4)
        _passes(check)


def _model(b: int, splits: int) -> Any:
    import argparse

    from fadsl import target as targets
    from fadsl.commands import common
    from fadsl.perf.kernel import KernelModel

    args = argparse.Namespace(
        file="examples/decode_paged.py",
        kernel=None,
        sets=[f"kv_splits={splits}"],
        dtype=None,
        shape=f"B={b},N=32,Nkv=8,Sq=1,D=128,Pages={64 * b},MaxPages=64",
    )
    binding = common.build(args)
    model = KernelModel(binding.kernel, targets.get("ascend910b2"))
    env = binding.model_env()
    return model, model.estimate(env), env


def test_the_model_reads_each_part_of_a_sequence_from_hbm() -> None:
    """The parts of one sequence read disjoint pages: no L2 sharing between them, so
    the modelled HBM traffic is the cache once (K and V) plus the small rest (q, the
    parts written and read back: about 1.4% here)."""
    _, whole, _ = _model(1, 1)
    _, split, _ = _model(1, 4)
    assert split.hits.get("k_cache", 0.0) == 0.0
    assert split.hits.get("v_cache", 0.0) == 0.0
    cache = 2 * 64 * 128 * 8 * 128 * 2
    assert cache <= whole.hbm_bytes < split.hbm_bytes <= 1.02 * cache


def test_the_model_adds_the_barrier_and_the_post_phase() -> None:
    from fadsl.perf.post_phase import sync_all_s

    model, split, env = _model(1, 4)
    model = model.at(env)  # the variant with the L0 plan the planner makes at env
    assert model.post is not None and split.post_tasks == 2  # B * Sq * cdiv(N, 16)
    first = model._first_phase(env)
    post = model.post.estimate(env)
    assert model.post.dim_cap == 2 * first.block_dim
    expect = first.time_s + sync_all_s(model.target) + post.time_s - post.launch_s
    assert split.time_s == pytest.approx(expect)
    assert split.post_s > sync_all_s(model.target)
