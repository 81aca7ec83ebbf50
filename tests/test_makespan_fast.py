"""The cost model's makespans (``KernelModel.makespan``: ``perf/timeline_fast.py``, the
scheduler without its events, what ``estimate`` and ``fadsl tune`` run) are the full schedule's
(``KernelModel.schedule``: every Event, what ``fadsl timeline`` draws), exactly, at
configurations that exercise each rule: one and two stages, a causal grid point, row
chunks (block_kv = 512 on 910B), a coupled chip, short and long trip counts."""

from __future__ import annotations

from functools import lru_cache

import pytest

from fadsl import target as targets
from fadsl.driver.source import load_source, select
from fadsl.perf.kernel import KernelModel
from fadsl.perf.timeline_fast import FastScheduler, makespans, resume
from fadsl.perf.timeline_schedule import Timer

SHAPE = dict(B=1, N=2, Sq=1024, Skv=2048, D=128)

CASES = [
    ("ascend910b1", 2, False, 128, 128),
    ("ascend910b1", 1, False, 128, 128),
    ("ascend910b1", 2, True, 128, 256),
    ("ascend910b1", 2, False, 128, 512),
    ("ascend910b1", 1, True, 256, 512),
    ("ascend910a", 2, False, 128, 128),
    ("ascend310p3", 1, True, 64, 128),
]
"""(chip, stages, causal, block_q, block_kv)."""


@lru_cache(maxsize=None)
def _model(tname: str, stages: int, causal: bool) -> KernelModel:
    kdef = select(load_source("examples/fa2.py"), "fa2")
    return KernelModel(
        kdef.build({"stages": stages, "causal": causal}), targets.get(tname)
    )


@pytest.mark.parametrize("tname, stages, causal, bq, bkv", CASES)
def test_makespans_without_events_are_the_full_schedules(
    tname: str, stages: int, causal: bool, bq: int, bkv: int
) -> None:
    env = {**SHAPE, "block_q": bq, "block_kv": bkv, "stages": stages, "scale": 0.088}
    model = _model(tname, stages, causal).at(env)  # the planner's row chunks, L0
    scaled = model.scaled(env)
    timer = model.timer(scaled)
    for trips in (1, 2, 3, 5, 7, 12):
        full = model.schedule(timer, trips).events
        assert len(full) > trips
        assert model.makespan(timer, trips) == max(e.end for e in full), trips


@pytest.mark.parametrize("tname, stages, causal, bq, bkv", CASES)
def test_one_forked_schedule_gives_each_trip_counts_makespan(
    tname: str, stages: int, causal: bool, bq: int, bkv: int
) -> None:
    """``makespans`` (the cost model's probes of a periodic schedule) runs the longest
    loop once and forks it for the shorter ones: each is the makespan of its own
    run, from every fork point (the shortest loops cannot fork: left out)."""
    env = {**SHAPE, "block_q": bq, "block_kv": bkv, "stages": stages, "scale": 0.088}
    model = _model(tname, stages, causal).at(env)
    timer = model.timer(model.scaled(env))
    counts = tuple(range(1, 10))
    sched = FastScheduler(model.loop, timer, model.order, model.kv_schedule, 9)
    got = makespans(sched, model.before, model.after, counts)
    ahead = model.order.lead + model.kv_schedule.stages - 1
    assert sorted(got) == [n for n in counts if n >= ahead]
    for n, span in got.items():
        assert span == max(e.end for e in model.schedule(timer, n).events), n


@pytest.mark.parametrize("tname, stages, causal, bq, bkv", CASES)
def test_a_probed_schedule_goes_on_to_its_own_makespan(
    tname: str, stages: int, causal: bool, bq: int, bkv: int
) -> None:
    """The cost model probes a long loop by forks of its own schedule and, when the
    probes show no constant period, resumes that schedule: the probes and the end are
    those of separate runs."""
    env = {**SHAPE, "block_q": bq, "block_kv": bkv, "stages": stages, "scale": 0.088}
    model = _model(tname, stages, causal).at(env)
    timer = model.timer(model.scaled(env))
    sched = FastScheduler(model.loop, timer, model.order, model.kv_schedule, 11)
    probes = makespans(sched, model.before, model.after, (4, 5, 6), finish=False)
    assert sched.placed < 11
    for n, span in probes.items():
        assert span == max(e.end for e in model.schedule(timer, n).events), n
    full = max(e.end for e in model.schedule(timer, 11).events)
    assert resume(sched, model.after) == full


def _period(spans: tuple[float, ...]) -> int:
    """1 or 2: the period the probes' makespans grow with (0: neither)."""
    steps = [b - a for a, b in zip(spans, spans[1:])]
    tol = 1e-12 * spans[-1]
    if abs(steps[1] - steps[0]) <= tol:
        return 1
    return (
        2 if abs(steps[2] - steps[0]) <= tol and abs(steps[3] - steps[1]) <= tol else 0
    )


@pytest.mark.parametrize("tname, stages, causal, bq, bkv", CASES)
def test_long_loops_extended_by_their_period_are_the_full_schedules(
    tname: str, stages: int, causal: bool, bq: int, bkv: int
) -> None:
    """``task_seconds`` schedules a long loop's first iterations and extends them by
    the period they show (one or two iterations): the full schedule's makespan up to
    rounding, at every length; the cases include both periods (below)."""
    env = {**SHAPE, "block_q": bq, "block_kv": bkv, "stages": stages, "scale": 0.088}
    model = _model(tname, stages, causal).at(env)
    timer = model.timer(model.scaled(env))
    for trips in (7, 8, 9, 10, 21, 40):
        full = max(e.end for e in model.schedule(timer, trips).events)
        assert model.task_seconds(timer, trips) == pytest.approx(full, rel=1e-12)


def test_the_cases_have_schedules_of_either_period() -> None:
    """The extension test above covers a period of one and of two iterations."""
    periods = set()
    for tname, stages, causal, bq, bkv in CASES:
        env = {**SHAPE, "block_q": bq, "block_kv": bkv, "stages": stages}
        model = _model(tname, stages, causal).at({**env, "scale": 0.088})
        timer = model.timer(model.scaled({**env, "scale": 0.088}))
        model.task_seconds(timer, 40)
        assert timer.probe is not None
        periods.add(_period(timer.probe))
    assert periods == {1, 2}


def test_steps_the_grid_point_does_not_change_are_timed_once() -> None:
    """A causal estimate times each trip count's tasks at a grid point of their own;
    the steps ``_pointless`` names (seconds reused between those timers) take the same
    seconds at every grid point, and the guarded select does not."""
    env = {**SHAPE, "block_q": 128, "block_kv": 128, "stages": 2, "scale": 0.088}
    model = _model("ascend910b1", 2, True).at(env)
    scaled = model.scaled(env)
    base = model.timer(scaled)
    o = model.order
    steps = [*model.before, *model.after, *o.loads, *o.a_loads, *o.cube_ahead]
    steps += [*o.now, *o.deferred]
    points = [{"b": 0, "h": 1, "i": i} for i in (0, 3, 7)]
    assert set(points[0]) == set(model.grid.vars)
    timers = [Timer(base.engines, {**scaled, **p}, base.hits) for p in points]
    fixed = model._pointless()
    moved = 0
    for s in steps:
        seconds = {t.seconds(s) for t in timers}
        if id(s) in fixed:
            assert len(seconds) == 1, s.name
        moved += len(seconds) > 1
    assert moved > 0 and len(fixed) < len(steps)
