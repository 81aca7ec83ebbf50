"""The fewest row chunks tune's time bound charges (``plan/search/chunks.py``) never
exceed the chunks the cost model uses for a configuration that fits.

The model decides whole rows with a UB formula made once, at the first sizes asked,
and plans exactly where it overflows; the exact plan may still keep whole rows (at
fa2's block_q = 272, block_kv = 128 the formula overflows, the plan fits whole). The
bound claims chunks only where a floor of every whole-rows plan overflows too.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.commands import tune_cmd
from fadsl.driver.source import load_source, select
from fadsl.plan.search.memo import sharing_plans

FA2 = str(Path(__file__).resolve().parents[2] / "examples" / "fa2.py")
SIZES = (16, 64, 128, 160, 272, 512)


def _args(sets: list[str]) -> argparse.Namespace:
    return argparse.Namespace(
        file=FA2,
        kernel=None,
        sets=sets,
        dtype=None,
        shape="B=1,N=2,Sq=1024,Skv=1024,D=128",
        target="ascend910b1",
        target_file=None,
        top=10,
        apply=False,
        json=False,
    )


@pytest.mark.parametrize("stages", [1, 2])
def test_least_chunks_never_exceed_the_models(stages: int) -> None:
    t = targets.get("ascend910b1")
    chosen = select(load_source(FA2), None)
    args = _args([])
    claimed = 0
    with sharing_plans():
        st = tune_cmd._structure(chosen, args, t, {"stages": stages}, None, 0)
        env = {**st.env, "stages": stages}
        points = [{**env, "block_q": q, "block_kv": kv} for q in SIZES for kv in SIZES]
        least = [st.bound.least.least(p) for p in points]  # tune's order: bounds first
        for point, n in zip(points, least):
            if not st.low.check_at(point).ok:
                continue
            used = st.model.at(point).kv_schedule.row_chunks
            assert n <= used, (point["block_q"], point["block_kv"], n, used)
            claimed += n > 1
    assert claimed > 0, "the bound never claimed a chunk: it bounds nothing"


@pytest.mark.parametrize("sets", [["stages=2"], ["stages=1", "causal=true"]])
def test_least_chunks_at_once_are_those_one_by_one(sets: list[str]) -> None:
    """``least_many`` (tune's pool: the UB tests of every configuration at once) gives
    ``least`` of each, over the whole grid of block sizes, asked in the same order
    from two fresh bounds (the whole-rows formula is made at the first sizes asked)."""
    t = targets.get("ascend910b1")
    chosen = select(load_source(FA2), None)
    values = tune_cmd.BLOCK_VALUES
    with sharing_plans():
        stages = {"stages": int(sets[0].split("=")[1])}
        one = tune_cmd._structure(chosen, _args(sets), t, stages, None, 0)
        many = tune_cmd._structure(chosen, _args(sets), t, stages, None, 0)
        env = {**one.env, **stages}
        points = [{**env, "block_q": q, "block_kv": kv} for q in values for kv in values]
        each = [one.bound.least.least(p) for p in points]
        assert many.bound.least.least_many(points) == each
    assert 1 in each and any(n > 1 for n in each), "both answers are exercised"
