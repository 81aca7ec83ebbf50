"""The modelled schedule of one task on one AI core: which engine does what, and when.

Input: a kernel's typed IR before pipelining (as for the cost model), a Target and the
value of every symbol. Output: a ``Timeline``, the events of one task (one grid point)
on the engines of fadsl/perf/engines.py -- on split chips the cube core's AIC MTE2,
MTE1, CUBE and FIXPIPE and a vector core's AIV MTE2, VECTOR, AIV MTE3 and SCALAR -- from
its own code through every KV iteration to its store, and the kernel figures that the
same schedule gives when the tasks are dealt over the cores (``perf/kernel.py``). Every
time is MODELLED from the target's rates (docs/cost-model.md).

Steps come from the grid body in program order (``fadsl/perf/timeline_steps.py``): each load
is a step on the MTE2 of the core that reads it, each dot an MTE1 then a CUBE step,
consecutive vector ops one VECTOR step, a store an MTE3 step; on split chips a value
passing between the cube and the vector cores is a workspace write (FIXPIPE or AIV MTE3)
and a read (the other core's MTE2); each KV iteration starts with a SCALAR step.

Schedule rules (``timeline_schedule.Scheduler``):
1. an engine runs its steps one at a time, in issue order;
2. a step starts after the steps that made its operands have ended (loop-carried values:
   the previous iteration's); a workspace read also waits ``flag_handover_cycles`` after
   the write (the cross-core flag);
3. loads of a loop with ``stages`` = s go through queues of s slots and are issued s - 1
   iterations ahead, as the pipeline pass arranges: the load for iteration j is issued
   before the work of iteration j - s + 1 and waits for its slot (the last step of
   iteration j - s reading that tile has ended);
4. with s = 1 nothing is issued ahead: iteration j's loads wait until every step of
   iteration j - 1 has ended (the loop body runs as written);
5. an iteration's SCALAR step (``iteration_overhead_cycles``) follows the vector core's
   previous work, and the iteration's first compute step waits for it;
6. with a workspace ring of R >= 2 slots the cube issues stage A (the steps that need
   no vector value of their iteration, with the loads only they read) R - 1 iterations
   ahead, and a stage-A workspace write waits until its slot's value of R iterations
   back was read; with ``defer_update`` the vector core runs the update on P V one
   iteration late when nothing earlier needs it (``program_order``);
7. with L0 depth b, MTE1 fills L0 for dot n after the cube ended dot n - b, and the cube
   starts dot n after Fixpipe drained dot n - b.

The loop's queue depth, ring, deferral, round length, resident operands, L0 depth and
shared Q blocks come from ``fadsl/perf/schedule.py`` (read from the IR).

Non-goals: cycle accuracy (see docs/cost-model.md); loops nested inside the KV loop
(counted as one vector step).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fadsl.perf.cost_model import Estimate
from fadsl.ir import nodes as ir
from fadsl.plan.resources.footprint_eval import exact
from fadsl.perf.engines import LANES
from fadsl.perf.kernel import KernelModel, KernelTime
from fadsl.target import Target
from fadsl.perf.timeline_schedule import Event, Step

__all__ = ["LANES", "Event", "Step", "Timeline", "build"]


@dataclass(frozen=True)
class Timeline:
    """The events of one task, in issue order, with the kernel figures they give."""

    events: tuple[Event, ...]
    stages: int
    iterations: int
    task: dict[str, int]
    """The grid point scheduled (the one with the most KV iterations)."""
    block_dim: int
    serial_iteration_s: float
    """One iteration with nothing overlapped: the sum of its steps."""
    overlapped_iteration_s: float
    """One iteration at the busiest engine's pace: a lower bound of the period."""
    per_iteration: dict[str, int]
    """Work of one full KV iteration (cost model keys: bytes, FLOPs, element-ops)."""
    estimate: Estimate
    """The closed-form bounds of the whole kernel at the same point."""
    kernel: KernelTime
    """The headline: this schedule dealt over the cores (perf/kernel.py)."""
    lead: int = 0
    """Iterations the cube runs ahead of the vector cores (the loop's ring - 1)."""

    @property
    def makespan(self) -> float:
        return max((e.end for e in self.events), default=0.0)

    def of(self, iteration: int | None, kind: str | None = None) -> list[Event]:
        return [
            e
            for e in self.events
            if e.iteration == iteration and (kind is None or e.kind == kind)
        ]

    def period(self) -> float:
        """Steady-state seconds between the first CUBE events of late iterations."""
        firsts: dict[int, float] = {}
        for e in self.events:
            if e.kind == "dot" and e.iteration is not None:
                firsts.setdefault(e.iteration, e.start)
        if len(firsts) < 3:
            return 0.0
        ordered = sorted(firsts.items())
        (j0, t0), (j1, t1) = ordered[len(ordered) // 2], ordered[-1]
        return (t1 - t0) / (j1 - j0)

    def busy(self, lane: str) -> float:
        """Fraction of the task's time the lane works."""
        total = sum(e.end - e.start for e in self.events if e.lane == lane)
        return total / self.makespan if self.makespan else 0.0


def build(kernel: ir.Kernel, target: Target, env: Mapping[str, Any]) -> Timeline:
    """The modelled schedule of the task with the most KV iterations at ``env``."""
    model = KernelModel(kernel, target).at(env)
    kt = model.estimate(env)
    seen = model.scaled(env)  # a round / shared Q blocks as one iteration / task
    task = _task_point(model, seen)
    point = {**seen, **task}
    loop = model.loop
    trips = max(0, int(exact(loop.stop - loop.start, point)))
    sched = model.schedule(model.timer(seen), trips)
    est = kt.bounds
    return Timeline(
        tuple(sched.events),
        model.stages,
        trips,
        task,
        kt.block_dim,
        kt.serial_iteration_s,
        kt.overlapped_iteration_s,
        est.per_iteration,
        est,
        kt,
        model.kv_schedule.lead,
    )


def _task_point(model: KernelModel, env: Mapping[str, Any]) -> dict[str, int]:
    """The last of the grid points with the most KV iterations: under causal masking
    the last Q block, which sees every KV block; with packed sequences the last Q
    block that holds rows of its sequence (the grid's last blocks may have none)."""
    import numpy as np

    grid = model.grid
    extents = tuple(max(0, int(exact(e, env))) for e in grid.extents)
    if 0 in extents:
        return {v: 0 for v in grid.vars}
    trips = np.broadcast_to(model.cost.trips(env, extents), extents).reshape(-1)
    flat = trips.size - 1 - int(np.argmax(trips[::-1]))
    return dict(zip(grid.vars, (int(i) for i in np.unravel_index(flat, extents))))
