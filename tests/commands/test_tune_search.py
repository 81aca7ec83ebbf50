"""``fadsl tune`` ranks exactly what planning every configuration would rank.

The search rules configurations out with footprint floors (``plan/search/floor.py``)
and shares plans between the fit check and the cost model (``plan/search/memo.py``).
The reference here does neither: for every configuration of the same grid it runs the
driver as ``fadsl check`` does (``lower`` of a binding with every constant set) and the
cost model on a model of its own, and the two must agree on which configurations fit
and on the order of the best ones, on small shapes of several kernels and chips (a
coarse grid of block sizes keeps the reference short).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.commands import common, tune_bound, tune_cmd
from fadsl.driver.lower import lower
from fadsl.driver.source import load_source, select
from fadsl.perf.kernel import KernelModel
from fadsl.plan.search import floor

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")
COARSE = (16, 64, 128, 272, 512)
"""Block sizes of the test grid: both ends, the defaults, and one past fa2's UB limit."""

CASES = [
    ("ascend910b1", "B=1,N=2,Sq=1024,Skv=1024,D=128", (), True),
    ("ascend910b1", "B=1,N=2,Sq=1024,Skv=768,D=128", ("causal=true",), True),
    ("ascend910a", "B=1,N=2,Sq=512,Skv=512,D=64", (), False),
]
"""(target, shape, --set, whether a split chip: its floors and time bounds rule
configurations out; on a coupled chip the time bound is 0, commands/tune_bound.py)."""


def _args(
    shape: str, target: str, sets: tuple[str, ...], top: int
) -> argparse.Namespace:
    return argparse.Namespace(
        file=FA2,
        kernel=None,
        sets=list(sets),
        dtype=None,
        shape=shape,
        target=target,
        target_file=None,
        top=top,
        apply=False,
        json=False,
    )


def _exhaustive(args: argparse.Namespace) -> dict[tuple[int, ...], float]:
    """Every configuration of the grid that ``fadsl check`` accepts, with its modelled
    seconds, each planned and modelled on its own."""
    chosen = select(load_source(FA2), None)
    t = targets.get(args.target)
    out = {}
    for stages in tune_cmd.STAGE_VALUES:
        for bq in tune_cmd.BLOCK_VALUES:
            for bkv in tune_cmd.BLOCK_VALUES:
                sets = [f"block_q={bq}", f"block_kv={bkv}", f"stages={stages}"]
                one = argparse.Namespace(**{**vars(args), "sets": args.sets + sets})
                binding = common.bind(chosen, one, target=t)
                if lower(binding).fits:
                    model = KernelModel(binding.kernel, t)
                    out[(bq, bkv, stages)] = model.estimate(binding.model_env()).time_s
    return out


def _key(values: dict[str, int]) -> tuple[int, ...]:
    return (values["block_q"], values["block_kv"], values["stages"])


@pytest.fixture
def coarse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tune_cmd, "BLOCK_VALUES", COARSE)


@pytest.mark.slow
@pytest.mark.parametrize("target,shape,sets,split", CASES)
def test_search_keeps_the_exhaustive_feasible_set_and_order(
    coarse: None, target: str, shape: str, sets: tuple[str, ...], split: bool
) -> None:
    reference = _exhaustive(_args(shape, target, sets, 1))
    assert 0 < len(reference) < 2 * len(COARSE) ** 2
    # ties (stages often changes nothing the model sees) in tune's order: by the
    # configuration's values sorted by name (block_kv, block_q, stages)
    order = sorted(reference, key=lambda k: (reference[k], (k[1], k[0], k[2])))
    chosen = select(load_source(FA2), None)
    t = targets.get(target)
    # every configuration ranked: the whole feasible set, in order
    whole = tune_cmd.search(chosen, _args(shape, target, sets, 2 * len(COARSE) ** 2), t)
    assert [_key(c.values) for c in whole.ranked] == order
    assert [c.estimate.time_s for c in whole.ranked] == [reference[k] for k in order]
    assert whole.feasible == len(reference) and whole.skipped == 0
    assert whole.bounded > 0 or not split, "the floors ruled nothing out"
    assert whole.planned + whole.bounded == whole.evaluated
    assert not whole.notes or all("the model assumes" in n for n in whole.notes)
    # the best three only: the time bounds leave the rest unplanned
    best = tune_cmd.search(chosen, _args(shape, target, sets, 3), t)
    assert [_key(c.values) for c in best.ranked] == order[:3]
    assert best.skipped > 0 or not split, "the time bounds ruled nothing out"
    assert best.planned + best.bounded + best.skipped == best.evaluated
    assert not best.notes or all("the model assumes" in n for n in best.notes)


def test_a_floor_above_an_exact_footprint_costs_plans_not_configurations(
    coarse: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A floor that overstates L1 (two slots for every buffer: single-buffered plans
    hold less) is caught at the first plan it exceeds; every configuration it dropped
    is then planned, and the result is the one without floors."""
    args = _args("B=1,N=2,Sq=1024,Skv=1024,D=128", "ascend910b1", ("stages=2",), 50)
    chosen = select(load_source(FA2), None)
    t = targets.get("ascend910b1")
    honest = tune_cmd.search(chosen, args, t)
    real = floor.floors

    def doubled(lowering, target):  # type: ignore[no-untyped-def]
        return {s: 2 * e for s, e in real(lowering, target).items()}

    monkeypatch.setattr(floor, "floors", doubled)
    wrong = tune_cmd.search(chosen, args, t)
    assert [c.values for c in wrong.ranked] == [c.values for c in honest.ranked]
    assert wrong.bounded == 0 and wrong.planned == wrong.evaluated
    assert any("exceeded its exact footprint" in n for n in wrong.notes)


def test_a_time_bound_above_a_modelled_time_costs_plans_not_configurations(
    coarse: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A time bound that overstates (twice the chain) is caught at the first
    configuration it exceeds; the search starts again without time bounds and ranks
    as without them."""
    args = _args("B=1,N=2,Sq=1024,Skv=1024,D=128", "ascend910b1", (), 4)
    chosen = select(load_source(FA2), None)
    t = targets.get("ascend910b1")
    honest = tune_cmd.search(chosen, args, t)
    real = tune_bound.TimeBound.seconds
    monkeypatch.setattr(
        tune_bound.TimeBound,
        "seconds",
        lambda self, env, chunks=None: 2 * real(self, env, chunks),
    )
    wrong = tune_cmd.search(chosen, args, t)
    assert [c.values for c in wrong.ranked] == [c.values for c in honest.ranked]
    assert wrong.skipped == 0 and honest.skipped > 0
    assert any("exceeded its modelled time" in n for n in wrong.notes)
