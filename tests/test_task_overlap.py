"""Consecutive tasks of one AI core overlap in the model (perf/task_overlap.py): the
cube starts the next task while the vector cores finish the last one, as the
generated kernel lets it and the timer over the executed record shows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fadsl import target as targets
from fadsl.driver.source import load_source, select
from fadsl.perf.costs import cost_table
from fadsl.perf.kernel import KernelModel
from fadsl.perf.task_overlap import Ends, ends_of, overlaps

# 16 tasks of 16 KV iterations at 128 x 128 blocks
SHAPE = dict(B=1, N=2, Sq=1024, Skv=2048, D=128)
ENV = {**SHAPE, "block_q": 128, "block_kv": 128, "stages": 2, "scale": 0.088}


def _model(cores: int) -> tuple[KernelModel, targets.Target]:
    t = targets.get("ascend910b1")
    t = dataclasses.replace(t, aic_cores=cores, aiv_cores=2 * cores)
    kernel = select(load_source("examples/fa2.py"), "fa2").build({"stages": 2})
    return KernelModel(kernel, t).at(ENV), t


def test_four_tasks_a_core_overlap_by_the_tail_the_schedule_shows() -> None:
    """4 tasks on each of 4 cores: the headline is launch + 4 x (task overhead +
    makespan) less 3 hand-overs of min(tail, slack), read from the full schedule's
    events here (the cube's last end, the vector cores' first read of a cube
    result). Before the overlap the headline was the plain sum (this failed)."""
    model, t = _model(4)
    kt = model.estimate(ENV)
    timer = model.timer(ENV)
    sched = model.schedule(timer, 16)
    ev = sched.events
    cube_end = max(e.end for e in ev if e.lane in ("AIC MTE2", "MTE1", "CUBE", "FIXPIPE"))
    vec = [e for e in ev if e.lane in ("VECTOR", "SCALAR", "AIV MTE2", "AIV MTE3")]
    first = min(e.start for e in vec if e.kind == "ws_read")
    busy = sum(e.end - e.start for e in vec if e.end <= first)
    tail, slack = sched.makespan - cube_end, first - busy
    assert tail > 0 and slack > 0
    c = cost_table(t)
    launch = (c["launch_overhead_cycles"] + 3 * c["block_dispatch_cycles"]) / c.clock
    task = c.seconds("task_overhead_cycles")
    summed = launch + 4 * (task + sched.makespan)
    assert kt.time_s == pytest.approx(summed - 3 * min(tail, slack), rel=1e-9)
    assert kt.time_s < summed
    assert kt.handover_s == pytest.approx(3 * min(tail, slack), rel=1e-9)


def test_one_task_a_core_has_nothing_to_overlap() -> None:
    model, t = _model(24)
    kt = model.estimate(ENV)
    sched = model.schedule(model.timer(ENV), 16)
    c = cost_table(t)
    launch = (c["launch_overhead_cycles"] + 15 * c["block_dispatch_cycles"]) / c.clock
    task = c.seconds("task_overhead_cycles")
    assert kt.time_s == pytest.approx(launch + task + sched.makespan, rel=1e-9)


def test_a_coupled_chip_does_not_overlap() -> None:
    kernel = select(load_source("examples/fa2.py"), "fa2").build({"stages": 2})
    model = KernelModel(kernel, targets.get("ascend910a"))
    assert model.ends(model.timer(ENV), 4) == Ends(0.0, 0.0)


def test_the_hand_over_is_the_next_tasks_slack_when_that_is_shorter() -> None:
    ends = {1: Ends(tail=5.0, slack=2.0), 2: Ends(tail=1.0, slack=3.0)}
    trips = np.array([1, 2, 1, 2])
    cores = np.array([0, 0, 1, 1])
    order = np.array([0, 2, 1, 3])  # core 0 runs task 0 then 1; core 1 task 2 then 3
    got = overlaps(ends, trips, cores, order)
    assert got.tolist() == [3.0, 0.0, 3.0, 0.0]  # min(5, 3), last tasks 0
    assert ends_of([], 1.0) == Ends(0.0, 0.0)


def test_a_carried_ring_hands_over_from_the_last_stage_a_write() -> None:
    """fa2 at 128 x 512 carries its ring across tasks (plan/schedule/carry.py): the
    cube starts the next task's prologue after the last S write, so 4 tasks of 2 KV
    iterations on each of 2 cores overlap by min(free, slack), free the makespan
    less the end of that write (the timer over the executed record: 81.4 -> 75.2 us,
    the model 84.2 -> 73.8 us). Before, min(tail, slack) (this failed)."""
    t = dataclasses.replace(targets.get("ascend910b1"), aic_cores=2, aiv_cores=4)
    kernel = select(load_source("examples/fa2.py"), "fa2").build({"stages": 2})
    env = {**ENV, "Sq": 512, "Skv": 1024, "block_kv": 512}
    model = KernelModel(kernel, t).at(env)
    assert model.carried is not None
    sched = model.schedule(model.timer(env), 2)
    ev = sched.events
    last_s = max(e.end for e in ev if e.name.startswith("ws dot write"))
    cube_end = max(e.end for e in ev if e.lane in ("AIC MTE2", "MTE1", "CUBE", "FIXPIPE"))
    vec = [e for e in ev if e.lane in ("VECTOR", "SCALAR", "AIV MTE2", "AIV MTE3")]
    first = min(e.start for e in vec if e.kind == "ws_read")
    slack = first - sum(e.end - e.start for e in vec if e.end <= first)
    free, tail = sched.makespan - last_s, sched.makespan - cube_end
    assert min(tail, slack) < min(free, slack)
    kt = model.estimate(env)
    assert kt.handover_s == pytest.approx(3 * min(free, slack), rel=1e-9)
    assert ends_of([], 1.0, ("dot",)) == Ends(0.0, 0.0, 0.0)
