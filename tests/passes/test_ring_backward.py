"""The backward's cube runs ahead through a ring (plan/schedule/ring.py): in
examples/fa2_bwd.py and fd.attention_backward's library kernel the cube loads its own
Q and dO copies, so no tile is read by the dots on both sides of the vector cores'
hand-over (issue 27 item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

import fadsl as fd
from fadsl.driver.source import load_source, select
from fadsl.ir import nodes as ir
from fadsl.plan.schedule import ring
from fadsl.plan.schedule.sides import classify

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fa2_bwd.py"
LIB = {
    "plain": fd.attention_backward(name="ring_bwd"),
    "causal": fd.attention_backward(name="ring_bwd_causal", causal=True),
    "softcap": fd.attention_backward(name="ring_bwd_softcap", softcap=30.0),
    "dropout": fd.attention_backward(name="ring_bwd_dropout", dropout_p=0.1),
}


def _rings(kernel: ir.Kernel) -> list[ring.Ring]:
    grid = next(op for op in kernel.body if isinstance(op, ir.Grid))
    sides = classify(grid, {})
    # a kernel with atomic_add (dQ) keeps its flags to IDs 0-10 (SyncAll: 11-14)
    chosen = ring.choose(grid, sides, True, ring.SYNC_ALL_FIRST_FLAG)
    return list(chosen.values())


@pytest.mark.parametrize("causal", [False, True])
def test_the_example_backward_gets_a_ring_of_s_and_dp(causal: bool) -> None:
    k = select(load_source(str(EXAMPLE)), "fa2_bwd").build({"causal": causal})
    (r,) = _rings(k)
    assert r.loop.var == "i" and r.depth == 3
    assert set(r.stages.ring_values) == {"dot", "dp"}  # S = Q K^T and dP = dO V^T


@pytest.mark.parametrize("name", sorted(LIB))
def test_the_library_backward_gets_a_ring(name: str) -> None:
    (r,) = _rings(LIB[name].build({}))
    assert r.depth == 3 and len(r.stages.ring_values) == 2
