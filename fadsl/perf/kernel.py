"""The modelled kernel: one task's engine schedule, dealt over cores and rounds.

``KernelModel(kernel, target)`` builds the engine steps of one task once
(``fadsl/perf/timeline_steps.py``); ``estimate(env)`` then

1. works out, per load, the fraction of reads the L2 serves (``perf/l2.py``);
2. schedules one task per distinct KV trip count with the rules of
   ``fadsl/perf/timeline_schedule.py`` (long loops: the first iterations are scheduled
   until the makespan grows with a period of one or two iterations, then extended by
   that period -- exact for a periodic schedule, up to rounding);
3. deals the tasks to ``blockDim`` cores as the generated kernel does (round-robin in
   grid order, or longest first in a snake: ``plan/schedule/task_order.py``, the same
   expressions), each core running its tasks one after another, each task after
   ``task_overhead_cycles``; the kernel takes ``launch_overhead_cycles`` plus the busiest
   core's sum.

The time and TFLOPS that ``fadsl timeline``, ``tune`` and ``check`` print are this
``KernelTime``; the closed form of ``fadsl/perf/cost_model.py`` is kept as bounds only.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from fadsl.perf.cost_model import CostModel
from fadsl.errors import UsageError
from fadsl.ir import nodes as ir
from fadsl.plan.resources.footprint_eval import exact
from fadsl.perf import kernel_traffic, l2
from fadsl.perf.engines import Engines
from fadsl.perf.hbm_share import launch_end
from fadsl.perf.loop_nest import flatten
from fadsl.perf.post_phase import with_post
from fadsl.plan.memory import l1_fit
from fadsl.plan.schedule import phases
from fadsl.perf.schedule import (
    Schedule,
    l0_plan_at,
    planned_chunks,
    planned_l0,
    planned_sub_dots,
    scaled_env,
    schedule_of,
)
from fadsl.plan.memory.l0_split import from_keys
from fadsl.perf.unvalued import refuse_unvalued
from fadsl.plan.schedule.task_order import task_order
from fadsl.target import Target
from fadsl.perf.program_order import program_order
from fadsl.perf.timeline_schedule import Scheduler, Step, Timer
from fadsl.perf.atomic_phases import atomic_phases
from fadsl.perf.timeline_fast import FastScheduler
from fadsl.perf.task_probe import task_and_ends
from fadsl.plan.schedule.carry import carried_grid
from fadsl.plan.schedule.sides import classify
from fadsl.perf.task_overlap import (
    PROBE_TRIPS,
    Ends,
    busiest_handover,
    ends_of,
    overlaps,
)
from fadsl.perf.kernel_time import KernelTime
from fadsl.perf.timeline_steps import StepBuilder, chunked_steps


class KernelModel:
    """The engine steps of one kernel on one target; ``estimate`` schedules them."""

    def __init__(
        self,
        kernel: ir.Kernel,
        target: Target,
        schedule: Schedule | None = None,
        base: KernelModel | None = None,
    ) -> None:
        """``base``: the model of the same kernel this one is a variant of (``at``):
        what does not depend on the planner's choices is taken from it."""
        self.kernel, self.target = kernel, target
        first, post = phases.split(kernel)
        if base is not None:
            self.post = base.post
        else:
            self.post = None if post is None else KernelModel(post, target)
        self.dim_cap: int | None = None
        """At most this many blocks (the post phase: the AIVs of the launch)."""
        self.cost = base.cost if base is not None else CostModel(first, target)
        grid = self.cost.grid
        loops = [op for op in grid.body if isinstance(op, ir.For)]
        if len(loops) != 1:
            raise UsageError(
                f"the kernel model needs one KV loop in the grid body of "
                f"`{kernel.name}`, found {len(loops)}",
                kernel.loc,
            )
        nest = flatten(loops[0])  # a perfect nest: its innermost loop (loop_nest.py)
        self.grid, self.loop = grid, nest.loop
        pos = grid.body.index(loops[0])
        self.kv_schedule = schedule or schedule_of(nest.inner, grid, target)
        self._auto = schedule is None
        ringed = self.kv_schedule.ring > 1
        if base is not None and (base.kv_schedule.ring > 1) == ringed:
            self.carried = base.carried  # the same grid and chip: the same ring
        else:
            self.carried = carried_grid(grid, target.split) if ringed else None
        """The ring the generated kernel carries across tasks (plan/schedule/carry.py)."""
        self._variants: dict[tuple[Any, ...], KernelModel] = {}
        self._sides: Any = None
        self.stages = self.kv_schedule.stages
        s = self.kv_schedule
        b = StepBuilder(
            grid, self.loop, target, s.resident_l0, from_keys(s.sub_dots), kernel.params
        )
        self.before = b.steps(grid.body[:pos], "init")
        self.body = b.steps(self.loop.body)
        self.after = b.steps(grid.body[pos + 1 :], "finish")
        self.order = program_order(self.body, self.loop, self.kv_schedule)
        self._pointless_ids: frozenset[int] | None = None
        names = {str(x) for s in self.body for e in s.work.values() for x in _syms(e)}
        self._pointwise = bool(names & set(grid.vars))
        self._loads = base._loads if base else l2.grid_loads(grid, self.loop)
        self.task_order = (
            base.task_order if base else task_order(grid, int(target.rate("l2_bytes")))
        )
        """The order the generated kernel deals the tasks in (plan/schedule/task_order.py)."""

    def retarget(self, target: Target) -> KernelModel:
        """This model on ``target``, a chip that differs in rates and cost-table
        constants only (not in sizes or cores): the steps are shared, every time is
        charged anew (the ranges of ``perf/ranges.py``)."""
        other = copy.copy(self)
        other.target = target
        other.cost = copy.copy(self.cost)
        other.cost.target = target
        other.post = None if self.post is None else self.post.retarget(target)
        other._variants = {k: v.retarget(target) for k, v in self._variants.items()}
        return other

    def at(self, env: Mapping[str, Any]) -> KernelModel:
        """This model with the L0 decisions the planner makes at ``env`` (Q resident in
        L0A, L0 depth: ``planned_l0``), unless a Schedule was given."""
        if not self._auto:
            return self
        from fadsl.plan.search.memo import remembered  # fadsl tune asks twice

        return remembered(("at", self), env, lambda: self._at(env))

    def _at(self, env: Mapping[str, Any]) -> KernelModel:
        kernel, single = l1_fit.fit(self.kernel, self.target, env)
        if single:  # the driver single-buffers the L1 loads (plan/memory/l1_fit.py)
            if ("l1",) not in self._variants:
                self._variants[("l1",)] = KernelModel(kernel, self.target)
            return self._variants[("l1",)].at(env)
        if self._sides is None:  # the grid's sides: the same at every size
            self._sides = classify(self.grid, {})
        l0 = l0_plan_at(self.grid, self.target, env, self._sides)  # planned once
        key = planned_l0(self.grid, self.loop, self.target, env, l0) + (
            planned_chunks(self.kernel, self.target, env),
            planned_sub_dots(self.grid, self.target, env, l0),
        )
        s = self.kv_schedule
        if key == (s.resident_l0, s.l0_buffers, s.row_chunks, s.sub_dots):
            return self
        if key not in self._variants:
            plan = dataclasses.replace(
                s,
                resident_l0=key[0],
                l0_buffers=key[1],
                row_chunks=key[2],
                sub_dots=key[3],
            )
            self._variants[key] = KernelModel(self.kernel, self.target, plan, self)
        return self._variants[key]

    def scaled(self, env: Mapping[str, Any]) -> dict[str, Any]:
        """``env`` as the modelled schedule sees it: a round of k KV blocks and k Q
        blocks sharing a K/V load are one iteration / task (perf/schedule.py)."""
        return scaled_env(env, self.kv_schedule, self.grid, self.loop, self.kernel)

    # -- one task --------------------------------------------------------------

    def block_dim(self, env: Mapping[str, Any]) -> int:
        dim = self.cost.block_dim(env)
        return dim if self.dim_cap is None else min(dim, self.dim_cap)

    def timer(self, env: Mapping[str, Any]) -> Timer:
        dim = self.block_dim(env)
        engines = Engines.of(self.target, dim)
        point = {**env, **_last(self.grid, env)}
        timer = Timer(engines, point, self.hits(env, dim))
        if self.kv_schedule.row_chunks > 1:
            timer.chunked = (self.kv_schedule.row_chunks, chunked_steps(self.body))
        return timer

    def _timer_at(
        self, timer: Timer, env: Mapping[str, Any], extents: tuple[int, ...], which: Any
    ) -> Timer:
        """``timer`` for the tasks ``which`` (one trip count), or, when an
        iteration's work depends on the grid point (a causal select guarded to the
        blocks crossing the diagonal: perf/guard_share.py), a timer at the last of
        those tasks' grid points."""
        if not self._pointwise:
            return timer
        idx = np.unravel_index(int(np.flatnonzero(which)[-1]), extents)
        point = {v: int(x) for v, x in zip(self.grid.vars, idx)}
        return at_point(timer, env, point)

    def _pointless(self) -> frozenset[int]:
        """The steps (by id) whose seconds do not depend on the task's grid point:
        neither their work nor their calls name a grid variable."""
        if self._pointless_ids is None:
            grid = set(self.grid.vars)
            o = self.order
            steps = [*self.before, *self.after, *o.loads, *o.a_loads, *o.cube_ahead]
            steps += [*o.now, *o.deferred]
            self._pointless_ids = frozenset(
                id(s) for s in steps if not _step_symbols(s) & grid
            )
        return self._pointless_ids

    def schedule(self, timer: Timer, trips: int) -> Scheduler:
        """The full schedule of one task with ``trips`` KV iterations."""
        sched = Scheduler(self.loop, timer, self.order, self.kv_schedule, trips)
        sched.run(self.before, self.after, 0.0)
        return sched

    def ends(self, timer: Timer, trips: int) -> Ends:
        """What the next task on the core may overlap of this one's schedule
        (``perf/task_overlap.py``); nothing on a coupled chip."""
        if not self.target.split:
            return Ends(0.0, 0.0)
        sched = self.schedule(timer, min(trips, PROBE_TRIPS))
        ahead = self.carried.stages.ring_values if self.carried else ()
        return ends_of(sched.events, sched.makespan, ahead)

    def makespan(self, timer: Timer, trips: int) -> float:
        """The makespan of ``schedule(timer, trips)``, without keeping its events."""
        sched = FastScheduler(self.loop, timer, self.order, self.kv_schedule, trips)
        sched.run(self.before, self.after, 0.0)
        return sched.makespan

    def task_seconds(self, timer: Timer, trips: int) -> float:
        """The makespan of one task's schedule (without the task overhead): a long
        one's first iterations scheduled, extended by their period
        (``perf/task_probe.py``)."""
        return task_and_ends(self, timer, trips, want_ends=False)[0]

    # -- the kernel ------------------------------------------------------------

    def estimate(self, env: Mapping[str, Any]) -> KernelTime:
        refuse_unvalued(self.kernel, self.grid, self.loop, env)
        model = self.at(env)
        if model is not self:
            return model.estimate(env)
        if self.post is not None:
            first = self._first_phase(env)
            self.post.dim_cap = 2 * first.block_dim
            return with_post(first, self.post.estimate(env), self.target)
        return self._first_phase(env)

    def _first_phase(self, env: Mapping[str, Any]) -> KernelTime:
        env = self.scaled(env)
        bounds = self.cost.estimate(env, self.block_dim(env))
        extents = tuple(int(exact(e, env)) for e in self.grid.extents)
        trips = self.cost.trips(env, extents).reshape(-1)
        timer = self.timer(env)
        e = timer.engines
        per_task = np.zeros(trips.shape)
        shared: dict[int, float] = {}
        ends: dict[int, Ends] = {}
        for n in np.unique(trips):
            at = self._timer_at(timer, env, extents, trips == n)
            if at is not timer:  # the steps the grid point does not change: reused
                at.seed(shared)
            took, ends[int(n)] = task_and_ends(self, at, int(n))  # type: ignore[assignment]
            per_task[trips == n] = e.task_s + took
            if at is not timer:
                shared = at.known(self._pointless())
        engines: dict[str, float] = {}
        for s in self.body:
            engines[s.lane] = engines.get(s.lane, 0.0) + timer.seconds(s)
        pace = max(engines.values(), default=0.0)
        dim = bounds.block_dim
        cores, position = self.dealt(env, extents, dim)
        tasks = int(per_task.size)
        rounds = -(-tasks // dim) if tasks else 0
        hbm, l2b = self._traffic(env, timer, trips)
        phase_s, phase_bytes = atomic_phases(self.kernel, self.target, env, e, dim)
        handover = overlaps(ends, trips, cores, position, self.carried is not None)
        launch_s, busiest = e.dispatched(per_task - handover, cores)
        shared = launch_end(e, per_task - handover, cores, trips, hbm)
        busiest = max(busiest, shared - launch_s)  # the chip's HBM (perf/hbm_share.py)
        overlapped = busiest_handover(e.dispatch_s, per_task, handover, cores)
        bound_start, bound_tasks = e.dispatched(e.task_s + pace * trips, cores)
        return KernelTime(
            time_s=launch_s + busiest + phase_s,
            tasks=tasks,
            block_dim=dim,
            rounds=rounds,
            tail_tasks=tasks - (rounds - 1) * dim if rounds else 0,
            busiest_tasks=rounds,
            launch_s=launch_s,
            task_overhead_s=e.task_s,
            iterations=bounds.iterations,
            cube_flops=bounds.cube_flops,
            hbm_bytes=hbm + phase_bytes,
            l2_bytes=l2b,
            hbm_lower_bound=bounds.hbm_lower_bound,
            workspace_bytes=bounds.workspace_bytes,
            hits=dict(timer.hits),
            engine_iteration_s=engines,
            serial_iteration_s=sum(engines.values()),
            lower_bound_s=bound_start + bound_tasks + phase_s,
            bounds=bounds,
            atomic_phase_s=phase_s,
            handover_s=overlapped,
        )

    def dealt(
        self, env: Mapping[str, Any], extents: tuple[int, ...], dim: int
    ) -> np.ndarray:
        """For every task in grid order: the core that runs it and its position in
        the order of dealing (round = position // dim), as the generated kernel has
        them (``plan/schedule/task_order.py``; grid order round-robin without an order).
        """
        if self.task_order is not None and extents:
            return self.task_order.dealt(env, extents, dim)
        t = np.arange(int(np.prod(extents)) if extents else 1)
        return np.stack([t % max(1, dim), t])

    def hits(self, env: Mapping[str, Any], dim: int) -> dict[str, float]:
        """Per loaded tensor, the fraction of its bytes the L2 serves (perf/l2.py);
        asked once per model and sizes while fadsl tune searches (its pace bound and
        the estimate both time the planned model: ``plan/search/memo.py``)."""
        from fadsl.plan.search.memo import remembered

        return remembered(("hits", self, dim), env, lambda: self._hits(env, dim))

    def _hits(self, env: Mapping[str, Any], dim: int) -> dict[str, float]:
        return kernel_traffic.l2_hits(self, env, dim)

    def _traffic(
        self, env: Mapping[str, Any], timer: Timer, trips: Any
    ) -> tuple[int, int]:
        """(HBM bytes, L2 bytes) of the whole kernel."""
        return kernel_traffic.traffic(self, env, timer, trips)


def _step_symbols(step: Step) -> set[str]:
    """The names a step's seconds read: its work's and its calls' (``step_calls``)."""
    out = {str(x) for e in step.work.values() for x in _syms(e)}
    for c in step.calls:
        for f in dataclasses.fields(c):
            out |= {str(x) for x in _syms(getattr(c, f.name))}
    return out


def _syms(e: Any) -> set[Any]:
    return set(getattr(e, "free_symbols", ()))


def at_point(timer: Timer, env: Mapping[str, Any], point: Mapping[str, int]) -> Timer:
    """``timer`` at a grid point: the same engines, hits and row chunks (a timer
    made without the chunks charged a chunked softmax region once, not per chunk)."""
    out = Timer(timer.engines, {**env, **point}, timer.hits)
    out.chunked = timer.chunked
    return out


def _last(grid: ir.Grid, env: Mapping[str, Any]) -> dict[str, int]:
    return {v: max(0, int(exact(e, env)) - 1) for v, e in zip(grid.vars, grid.extents)}
