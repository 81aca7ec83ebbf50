"""``perf/task_probe.task_and_ends`` (what ``KernelModel._first_phase`` asks per trip
count) gives, exactly, the makespan of separate runs (extended by the probes' period
for long loops, as ``KernelModel.task_seconds`` defines it) and the ``Ends`` of the
full schedule with every ``Event`` (``KernelModel.ends``), though it schedules each
task once: at configurations that exercise each rule (one and two stages, a causal
grid point, a carried ring, row chunks, a coupled chip), every trip count 1-12 and
two long ones, on fresh timers and on one timer shared by the trip counts in turn
(a task point the grid does not change: the plain kernel)."""

from __future__ import annotations

from fadsl.perf.kernel import KernelModel
from fadsl.perf.task_probe import PROBE, _extended
from fadsl.perf.task_probe import task_and_ends
from fadsl.perf.timeline_schedule import Timer

import pytest

from tests.test_makespan_fast import CASES, SHAPE, _model

TRIPS = (*range(1, 13), 21, 40)


def _reference(model: KernelModel, timer: Timer, trips: int) -> float:
    """The makespan of ``trips`` as the model defines it, each probe a run of its own."""
    if trips <= PROBE + 2:
        return model.makespan(timer, trips)
    probe = tuple(model.makespan(timer, n) for n in range(PROBE, PROBE + 5))
    extended = _extended(probe, trips)
    return model.makespan(timer, trips) if extended is None else extended


def _timer(model: KernelModel, env: dict[str, object]) -> Timer:
    return model.timer(model.scaled(env))


@pytest.mark.parametrize("tname, stages, causal, bq, bkv", CASES)
def test_one_schedule_gives_the_makespan_and_the_ends(
    tname: str, stages: int, causal: bool, bq: int, bkv: int
) -> None:
    env = {**SHAPE, "block_q": bq, "block_kv": bkv, "stages": stages, "scale": 0.088}
    model = _model(tname, stages, causal).at(env)
    shared = _timer(model, env)
    for trips in TRIPS:
        ref = (_reference(model, _timer(model, env), trips), model.ends(shared, trips))
        assert task_and_ends(model, _timer(model, env), trips) == ref, trips
        assert task_and_ends(model, shared, trips) == ref, trips
        assert model.task_seconds(_timer(model, env), trips) == ref[0], trips


def test_the_cases_carry_a_ring_and_overlap_tasks() -> None:
    """The ends compared above are not all zero, and one case carries the ring
    (its ``free`` differs from its ``tail``)."""
    free = tails = 0
    for tname, stages, causal, bq, bkv in CASES:
        env = {**SHAPE, "block_q": bq, "block_kv": bkv, "stages": stages}
        env["scale"] = 0.088
        model = _model(tname, stages, causal).at(env)
        _, ends = task_and_ends(model, _timer(model, env), 9)
        assert ends is not None
        tails += ends.tail > 0 and ends.slack > 0
        free += ends.free > ends.tail
    assert tails >= 3 and free >= 1
