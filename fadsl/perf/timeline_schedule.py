"""Durations and the schedule of ``fadsl/perf/timeline.py``: rules 1-5 of its docstring.

``Step`` is one engine action of the program before it is placed; ``Scheduler`` places
the steps of the task's own code, of every KV iteration (loads issued ``stages - 1``
iterations ahead) and of its tail, in issue order, and records for each ``Event`` what
held it back. ``Timer`` turns a step's work into seconds on its engine
(``fadsl/perf/engines.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fadsl.perf.cost_work import WORK_KEYS
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.plan.footprint_eval import exact
from fadsl.perf.engines import LANES, Engines

ROUND = "__round"
"""The pseudo-value a KV iteration's SCALAR loop-control step defines."""


@dataclass(frozen=True)
class Step:
    """One engine action of the program before it is scheduled."""

    lane: str
    kind: str
    """load, store, mte1, dot, vector, ws_write, ws_read or scalar."""
    name: str
    uses: tuple[str, ...]
    defs: tuple[str, ...]
    work: dict[str, Expr]
    src: str = ""
    """For a load: the tensor read (the L2 model's hit fraction is per tensor)."""
    count: int = 0
    """For a vector step: the ops in it (one PipeBarrier each)."""


@dataclass(frozen=True)
class Event:
    """A scheduled step: one unit busy from ``start`` to ``end`` (seconds, modelled)."""

    lane: str
    kind: str
    name: str
    iteration: int | None
    """The KV iteration, or None for the task's own code."""
    start: float
    end: float
    waited_for: str
    """What held the start back: ``unit`` (the lane was busy), ``inputs``,
    ``buffer`` (a queue slot), ``iteration`` (stages = 1) or ``flag`` (workspace)."""
    wait: float
    """Seconds the lane stood idle before this event (start - when the lane was free)."""
    deps: tuple[int, ...]
    """Indices of the events that made its inputs."""


class Timer:
    """Seconds of a step on its engine at the task's point (each step's duration is the
    same in every iteration, so it is computed once)."""

    def __init__(
        self, engines: Engines, env: Mapping[str, Any], hits: Mapping[str, float]
    ) -> None:
        self.engines, self.env, self.hits = engines, env, hits
        self._cache: dict[int, float] = {}
        self.probe: tuple[float, ...] | None = None
        """Makespans of short schedules, kept by perf/kernel.py to extend long ones."""

    def numbers(self, work: Mapping[str, Expr]) -> dict[str, int]:
        nums = dict.fromkeys(WORK_KEYS, 0)
        for k, e in work.items():
            nums[k] = int(round(float(exact(e, self.env))))
        return nums

    def seconds(self, step: Step) -> float:
        key = id(step)
        if key not in self._cache:
            self._cache[key] = self._seconds(step, self.numbers(step.work))
        return self._cache[key]

    def _seconds(self, step: Step, n: dict[str, int]) -> float:
        e = self.engines
        per_aiv = e.vector_units if step.lane.startswith("AIV") else 1
        if step.kind == "load":
            return e.read_s(n["mte2_bytes"] / per_aiv, self.hits.get(step.src, 0.0))
        if step.kind == "ws_read":  # workspaces stay in L2
            return e.read_s(n["ws_bytes"] / per_aiv, 1.0)
        if step.kind == "ws_write":
            if step.lane == "FIXPIPE":
                return e.fixpipe_s(n["ws_bytes"])
            return e.write_s(n["ws_bytes"] / per_aiv)
        if step.kind == "store":
            return e.write_s(n["mte3_bytes"] / e.vector_units)
        if step.kind == "mte1":
            return e.mte1_s(n["l0a_bytes"], n["l0b_bytes"])
        if step.kind == "dot":
            return e.cube_s(n["cube_flops"], n["cube_f32_flops"])
        if step.kind == "scalar":
            return e.round_s
        units = e.vector_units
        return e.vector_s(
            n["vector_ops"] / units, n["vector_transcendental"] / units, step.count
        )


@dataclass
class Scheduler:
    """Rules 1-4 of the module docstring, applied in issue order."""

    loop: ir.For
    timer: Timer
    body: list[Step]
    stages: int
    trips: int
    events: list[Event] = field(default_factory=list)
    where: dict[tuple[str, int | None], int] = field(default_factory=dict)
    readers: dict[tuple[str, int | None], list[int]] = field(default_factory=dict)
    lane_free: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(LANES, 0.0)
    )

    def run(self, before: list[Step], after: list[Step], start: float) -> None:
        self.lane_free = dict.fromkeys(LANES, start)
        self.flag = self.timer.engines.flag_s
        for s in before:
            self._place(s, None)
        loads = [s for s in self.body if s.kind == "load"]
        rest = [s for s in self.body if s.kind != "load"]
        ahead = self.stages - 1
        for j in range(min(ahead, self.trips)):
            for s in loads:
                self._place(s, j)
        for j in range(self.trips):
            issue = j + ahead
            if issue < self.trips:
                for s in loads:
                    self._place(s, issue)
            for s in rest:
                self._place(s, j)
        for s in after:
            self._place(s, None)

    def _place(self, step: Step, j: int | None) -> None:
        limits: dict[str, float] = {"unit": self.lane_free[step.lane]}
        deps = []
        for name in step.uses:
            found = self._producer(name, j)
            if found is None:
                continue
            deps.append(found)
            delay = self.flag if step.kind == "ws_read" else 0.0
            limits["flag" if delay else "inputs"] = max(
                limits.get("flag" if delay else "inputs", 0.0),
                self.events[found].end + delay,
            )
        if step.kind == "load" and j is not None:
            self._buffer_limits(step, j, limits)
        if step.kind == "scalar":  # the vector core's program runs in order
            limits["inputs"] = max(self.lane_free["VECTOR"], self.lane_free["SCALAR"])
        start = max(limits.values())
        reason = max(limits, key=lambda k: (limits[k], k == "unit"))
        end = start + self.timer.seconds(step)
        idx = len(self.events)
        self.events.append(
            Event(
                step.lane,
                step.kind,
                step.name,
                j,
                start,
                end,
                reason,
                start - self.lane_free[step.lane],
                tuple(deps),
            )
        )
        self.lane_free[step.lane] = end
        for d in step.defs:
            self.where[(d, j)] = idx
        for name in step.uses:
            self.readers.setdefault(self._key(name, j), []).append(idx)

    def _buffer_limits(self, step: Step, j: int, limits: dict[str, float]) -> None:
        old = j - self.stages
        if old >= 0:
            users = self.readers.get((step.defs[0], old), [])
            if users:
                limits["buffer"] = max(self.events[u].end for u in users)
        if self.stages == 1 and j > 0:
            limits["iteration"] = max(
                e.end for e in self.events if e.iteration == j - 1
            )

    def _key(self, name: str, j: int | None) -> tuple[str, int | None]:
        base = name.split("@")[0]
        if (
            j is not None
            and (base, j) not in self.where
            and (name, j) not in self.where
        ):
            return (name, None)
        return (name, j)

    def _producer(self, name: str, j: int | None) -> int | None:
        """The event that made ``name`` as seen by iteration ``j`` (None: task code)."""
        if j is not None and (name, j) in self.where:
            return self.where[(name, j)]
        carried = self._carried(name, j)
        if carried is not None:
            return carried
        return self.where.get((name, None))

    def _carried(self, name: str, j: int | None) -> int | None:
        names = [a.name for a in self.loop.iter_args]
        results = [r.name for r in self.loop.loop_results]
        if name in names and j is not None:
            k = names.index(name)
            if j == 0:
                init = self.loop.inits[k]
                return (
                    self.where.get((init.name, None))
                    if isinstance(init, ir.Value)
                    else None
                )
            return self.where.get((self.loop.yields[k].name, j - 1))
        if name in results and j is None and self.trips:
            return self.where.get(
                (self.loop.yields[results.index(name)].name, self.trips - 1)
            )
        return None
