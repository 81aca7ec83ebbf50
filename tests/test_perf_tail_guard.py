"""The model counts the KV-tail select as the generated code runs it (issue 16, item 5):
the backend runs ``where(arange(j * block_kv, block_kv) < Skv, s, -inf)`` and the
arange and cast its mask reads only in the block that reaches past Skv
(fadsl/plan/schedule/tail_guard.py), so the model charges their vector work to the share of
partial blocks, not to every block."""

from __future__ import annotations

from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.driver.source import load_source, select
from fadsl.ir import nodes as ir
from fadsl.perf.kernel import KernelModel
from fadsl.perf.schedule import Schedule
from fadsl.plan.resources.footprint_eval import exact
from fadsl.plan.schedule.sides import classify
from fadsl.plan.schedule.tail_guard import partial_blocks, tail_guard

ROOT = Path(__file__).parent.parent
B2 = targets.get("ascend910b2")


def _kernel(causal: bool = False) -> ir.Kernel:
    kdef = select(load_source(str(ROOT / "examples/fa2.py")), "fa2")
    return kdef.build({"stages": 2, "causal": causal})


def _softmax_ops(model: KernelModel, skv: int) -> float:
    env = dict(B=1, N=1, Sq=128, Skv=skv, D=128, block_q=128, block_kv=128, stages=2)
    step = next(s for s in model.body if s.name.startswith("vector softmax"))
    return float(exact(step.work["vector_ops"], env))


def test_a_full_block_is_charged_no_tail_select() -> None:
    model = KernelModel(_kernel(), B2, Schedule(stages=2))
    rows, cols = 128, 128
    full = _softmax_ops(model, 8192)  # 64 full blocks
    tail = _softmax_ops(model, 8192 + 1)  # 65 blocks, the last one partial
    # the select (one op per element of S) and the arange and cast (one per column),
    # once in 65 blocks (16640 / 65 = 256: the evaluation rounds to whole ops)
    assert tail - full == pytest.approx((rows * cols + 2 * cols) / 65, rel=1e-12)
    # what every block pays per element of S: Muls, row max, subtract, row sum, cast
    # (plus per-row ops); no select
    assert 5 * rows * cols <= full < 6 * rows * cols


def test_partial_blocks_counts_the_blocks_past_the_bound() -> None:
    kernel = _kernel()
    grid = next(op for op in kernel.body if isinstance(op, ir.Grid))
    loop = next(op for op in grid.body if isinstance(op, ir.For))
    sides = classify(grid, {})
    where = next(op for op in loop.body if isinstance(op, ir.Where))
    guard = tail_guard(where, sides.defs, sides.readers)
    assert guard is not None
    assert [type(f).__name__ for f in guard.feeders] == ["Arange", "ExpandDims", "Lt"]
    n = partial_blocks(guard, loop)
    assert n is not None
    for skv, want in ((4096, 0), (4097, 1), (100, 1), (128, 0), (255, 1)):
        assert int(exact(n, {"Skv": skv, "block_kv": 128})) == want


def _causal_ops(model: KernelModel, i: int) -> float:
    env = dict(B=1, N=1, Sq=8192, Skv=8192, D=128, block_q=128, block_kv=128)
    step = next(s for s in model.body if s.name.startswith("vector softmax"))
    return float(exact(step.work["vector_ops"], {**env, "stages": 2, "i": i}))


def test_the_causal_select_is_charged_only_to_blocks_crossing_the_diagonal() -> None:
    """``where(keep & (kv_idx <= q_idx + Skv - Sq), s, -inf)`` runs as two selects;
    the causal one (its compare and the rows' positions too) only in a block that
    crosses the diagonal (plan/schedule/diag_guard.py): Q block 63 of 64 has 64 KV blocks
    and one crossing, Q block 0 has one, crossing."""
    model = KernelModel(_kernel(causal=True), B2, Schedule(stages=2))
    plain = _softmax_ops(KernelModel(_kernel(), B2, Schedule(stages=2)), 8192)
    rows, cols = 128, 128
    causal = 2 * rows * cols + rows  # compare, select; the rows' offset
    # the key positions feed both masks: made in every block
    assert _causal_ops(model, 0) == pytest.approx(plain + cols + causal, abs=1)
    assert _causal_ops(model, 63) == pytest.approx(plain + cols + causal / 64, abs=1)


def _decode_shares(seqlen: int) -> list[list[float]]:
    """Split-KV decode (kv_splits=3, its KV loop starting at each part's first
    block): per guarded op, its share of the blocks in each of the three parts."""
    from fadsl.perf.guard_share import tail_times
    from fadsl.perf.step_calls import share_of

    kdef = select(load_source(str(ROOT / "examples/decode_paged.py")), "decode_paged")
    kernel = kdef.build({"kv_splits": 3, "block_q": 16, "block_kv": 128, "stages": 2})
    grid = next(op for op in kernel.body if isinstance(op, ir.Grid))
    loop = next(op for op in grid.body if isinstance(op, ir.For))
    times = tail_times(grid, loop)
    assert times, "the decode kernel's KV-tail and causal selects are guarded"
    shape = dict(B=2, N=32, Nkv=8, Sq=1, D=128, Pages=64, MaxPages=8, Dv=128)
    env = {**shape, "kv_splits": 3, "block_q": 16, "block_kv": 128, "stages": 2}
    env["seqlens_kv_s"] = seqlen
    return [
        [share_of(t, {**env, "y": y, "x": 0, "b": 0}) for y in range(3)]
        for t in times.values()
    ]


def test_split_kv_parts_charge_the_tail_select_only_to_their_own_tail_block() -> None:
    """A split-KV part's loop starts at its own first block: with 8 full pages
    (3, 3 and 2 blocks) no part runs a guarded select; with 7.5 pages only the
    last part (2 blocks, one partial) does, in half its blocks. The model used to
    take a loop that does not start at 0 as unguarded and charge the selects to
    every block (18 of decode's 44 modelled vector calls per iteration)."""
    for shares in _decode_shares(8 * 128):
        assert shares == [0.0, 0.0, 0.0]
    tail = _decode_shares(8 * 128 - 64)
    assert [0.0, 0.0, 0.5] in tail
