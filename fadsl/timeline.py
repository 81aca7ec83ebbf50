"""The modelled schedule of one task on one core: which unit does what, and when.

Input: a kernel's typed IR before pipelining (as for the cost model), a Target and the
value of every symbol. Output: a ``Timeline``, the events of one task (one grid point)
on lanes -- MTE2 (loads), CUBE (dots), VECTOR (runs of vector ops), MTE3 (stores) and,
on split chips, the GM workspace in each direction -- from its own code through every
KV iteration to its store. Every time is MODELLED from the target's rates
(docs/cost-model.md): ``fadsl timeline`` prints and draws it.

Steps come from the grid body in program order: each load, dot and store is one step,
consecutive vector ops one step; on split chips (910B, A3) a value passing between the
cube and the vector cores adds a workspace step (written by one core, read by the
other). A step lasts its work (``cost_work.count_op``) at its lane's rate
(``CostModel.phase_times``); a workspace step, its write plus its read.

Schedule rules (``timeline_schedule.Scheduler``):
1. a lane runs its steps one at a time, in issue order;
2. a step starts after the steps that made its operands have ended (loop-carried values:
   the previous iteration's); a workspace step also waits for the cube <-> vector flag,
   the target's ``iteration_overhead_cycles`` shared among an iteration's crossings;
3. loads of a loop with ``stages`` = s go through queues of s slots and are issued s - 1
   iterations ahead, as the pipeline pass arranges: the load for iteration j is issued
   before the work of iteration j - s + 1 and waits for its slot (the last step of
   iteration j - s reading that tile has ended);
4. with s = 1 nothing is issued ahead: iteration j's loads wait until every step of
   iteration j - 1 has ended (the loop body runs as written).

Non-goals: cycle accuracy (see cost_model); the other tasks of a core (they follow one
another); loops nested inside the KV loop (counted as one vector step).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fadsl.cost_model import CostModel, Estimate
from fadsl.cost_work import FREE, Work, count_body, count_op, value_bytes
from fadsl.ir import nodes as ir
from fadsl.passes.footprint_eval import exact
from fadsl.target import Target
from fadsl.timeline_schedule import LANES, Event, Scheduler, Step, Timer

__all__ = ["LANES", "Event", "Step", "Timeline", "build"]


@dataclass(frozen=True)
class Timeline:
    """The events of one task, in issue order, with what the closed form predicts."""

    events: tuple[Event, ...]
    stages: int
    iterations: int
    task: dict[str, int]
    """The grid point scheduled (the one with the most KV iterations)."""
    block_dim: int
    serial_iteration_s: float
    """Closed form (cost model): one iteration with nothing overlapped."""
    overlapped_iteration_s: float
    """Closed form: one iteration with the four units perfectly overlapped."""
    per_iteration: dict[str, int]
    """Work of one full KV iteration (cost model keys: bytes, FLOPs, element-ops)."""
    estimate: Estimate
    """The cost model's whole-kernel figures at the same point."""

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
    model = CostModel(kernel, target)
    grid = model.grid
    loops = [op for op in grid.body if isinstance(op, ir.For)]
    if len(loops) != 1:
        from fadsl.errors import UsageError

        raise UsageError(
            f"fadsl timeline needs one KV loop in the grid body of "
            f"`{kernel.name}`, found {len(loops)}",
            kernel.loc,
        )
    loop = loops[0]
    pos = grid.body.index(loop)
    task = _task_point(grid, env)
    point = {**env, **task}
    trips = max(0, int(exact(loop.stop - loop.start, point)))
    builder = _StepBuilder(grid, loop, target.split)
    before = builder.steps(grid.body[:pos], "init")
    body = builder.steps(loop.body)
    after = builder.steps(grid.body[pos + 1 :], "finish")
    dim = model.block_dim(env)
    times = Timer(model, dim, point)
    sched = Scheduler(loop, times, body, max(1, loop.stages), trips)
    sched.run(
        before, after, target.rate("task_overhead_cycles") / target.rate("clock_hz")
    )
    est = model.estimate(env)
    return Timeline(
        tuple(sched.events),
        max(1, loop.stages),
        trips,
        task,
        dim,
        est.phases.serial,
        est.phases.overlapped,
        est.per_iteration,
        est,
    )


def _task_point(grid: ir.Grid, env: Mapping[str, Any]) -> dict[str, int]:
    """The last grid point: under causal masking its Q block sees every KV block."""
    return {v: max(0, int(exact(e, env)) - 1) for v, e in zip(grid.vars, grid.extents)}


# ----------------------------------------------------------------------------
# Steps from the IR
# ----------------------------------------------------------------------------


class _StepBuilder:
    """Turns op sequences into steps, adding workspace transfers on split chips."""

    def __init__(self, grid: ir.Grid, loop: ir.For, split: bool) -> None:
        self.split = split
        self.part = ""
        self.alias: dict[str, str] = {}
        self.side: dict[str, str] = {}
        self.producers = {r: op for op in _all_ops(grid.body) for r in op.results()}
        for arg, y in zip(loop.iter_args, loop.yields):
            self.side[arg.name] = _side(self.producers.get(y))
        for res, y in zip(loop.loop_results, loop.yields):
            self.side[res.name] = _side(self.producers.get(y))

    def steps(self, ops: tuple[ir.Op, ...], part: str = "") -> list[Step]:
        """Steps of ``ops``; ``part`` names vector steps outside the loop (init, finish)."""
        self.part = part
        out: list[Step] = []
        group: list[ir.Op] = []
        for op in ops:
            if isinstance(op, ir.ExpandDims):
                self.alias[op.result.name] = self._name(op.x)
                continue
            if isinstance(op, FREE):
                continue
            if _lane(op) == "VECTOR":
                crossings = self._crossings(op, "vector")
                if crossings:
                    self._close(group, out)
                    group = []
                    out += crossings
                group.append(op)
                continue
            self._close(group, out)
            group = []
            out += self._crossings(op, "cube") if isinstance(op, ir.Dot) else []
            out.append(self._single(op))
        self._close(group, out)
        return out

    def _name(self, v: ir.Value) -> str:
        return self.alias.get(v.name, v.name)

    def _crossings(self, op: ir.Op, side: str) -> list[Step]:
        if not self.split:
            return []
        out = []
        for v in op.operand_values():
            name = self._name(v)
            made = self.side.get(name) or _side(self.producers.get(v))
            if made in ("dma", side) or f"{name}@{side}" in self.side:
                continue
            self.side[f"{name}@{side}"] = side
            lane, arrow = (
                ("WS c>v", "cube -> vector")
                if side == "vector"
                else ("WS v>c", "vector -> cube")
            )
            out.append(
                Step(
                    lane,
                    "ws",
                    f"ws {name} {arrow}",
                    (name,),
                    (f"{name}@{side}",),
                    {"ws_bytes": value_bytes(v)},
                )
            )
        return out

    def _uses(self, ops: list[ir.Op], side: str) -> tuple[str, ...]:
        made = {r.name for op in ops for r in op.results()}
        names = []
        for op in ops:
            for v in op.operand_values():
                name = self._name(v)
                if name in made:
                    continue
                crossed = f"{name}@{side}"
                names.append(crossed if crossed in self.side else name)
        return tuple(dict.fromkeys(names))

    def _single(self, op: ir.Op) -> Step:
        w = Work()
        count_op(op, w, {}, False, 1)
        lane = _lane(op)
        kind = {"MTE2": "load", "MTE3": "store", "CUBE": "dot"}.get(lane, "vector")
        if isinstance(op, ir.For):
            count_body(op.body, w, {}, False, op.stop - op.start)
        uses = self._uses([op], "cube" if lane == "CUBE" else "vector")
        defs = tuple(r.name for r in op.results())
        for d in defs:
            self.side[d] = _side(op)
        return Step(lane, kind, _label(op), uses, defs, dict(w.amounts))

    def _close(self, group: list[ir.Op], out: list[Step]) -> None:
        if not group:
            return
        w = Work()
        for op in group:
            count_op(op, w, {}, False, 1)
        defs = tuple(r.name for op in group for r in op.results())
        for d in defs:
            self.side[d] = "vector"
        first, last = _line(group[0]), _line(group[-1])
        lines = f"line {first}" if first == last else f"lines {first}-{last}"
        kind = self.part or (
            "softmax" if any(isinstance(o, ir.Exp) for o in group) else "update"
        )
        name = f"vector {kind} -> {defs[-1]} ({lines})"
        out.append(
            Step(
                "VECTOR",
                "vector",
                name,
                self._uses(group, "vector"),
                defs,
                dict(w.amounts),
            )
        )


def _all_ops(body: tuple[ir.Op, ...]) -> list[ir.Op]:
    out: list[ir.Op] = []
    for op in body:
        out.append(op)
        if isinstance(op, (ir.Grid, ir.For)):
            out += _all_ops(op.body)
    return out


def _lane(op: ir.Op | None) -> str:
    if isinstance(op, ir.Load):
        return "MTE2"
    if isinstance(op, ir.Store):
        return "MTE3"
    if isinstance(op, ir.Dot):
        return "CUBE"
    return "VECTOR"


def _side(op: ir.Op | None) -> str:
    """Which core holds a value: dma (loaded: either may read it), cube or vector."""
    if op is None or isinstance(op, ir.Load):
        return "dma"
    return "cube" if isinstance(op, ir.Dot) else "vector"


def _label(op: ir.Op) -> str:
    if isinstance(op, ir.Load):
        return f"load {op.result.name} ({op.src})"
    if isinstance(op, ir.Store):
        return f"store {op.dst}"
    if isinstance(op, ir.Dot):
        bt = "^T" if op.transpose_b else ""
        return f"cube {op.result.name} = {op.a.name} @ {op.b.name}{bt}"
    return f"vector {type(op).__name__.lower()}"


def _line(op: ir.Op) -> int:
    loc = op.loc
    while getattr(loc, "derived_from", None) is not None:
        loc = loc.derived_from  # type: ignore[assignment]
    return int(getattr(loc, "line", 0) or 0)
