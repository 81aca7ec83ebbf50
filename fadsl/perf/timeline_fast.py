"""The schedule's makespan without its events: what ``perf/kernel.py`` needs for every
configuration ``fadsl tune`` models, many times per estimate (a probe per trip count).

``FastScheduler`` places the same steps in the same order by the same rules as
``timeline_schedule.Scheduler`` (rules 1-8: a lane does one step at a time, inputs,
queue and workspace slots, L0 depth, the staging slot, the loop control), but keeps
only each step's end, and reads what the rules ask of a step (its kind, its lane, its
inputs' base names, its duration, its slots) from a record made once per step rather
than at every placement. It keeps no ``Event`` (what held a step back, its
dependencies): ``fadsl timeline`` draws the full schedule. Both give the same
makespans (``tests/test_makespan_fast.py``: every configuration there, every trip
count 1-12).

``makespans`` gives the makespans of several trip counts from one schedule forked
(the cost model's probes of a periodic schedule), ``resume`` goes on with it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

from fadsl.perf.timeline_schedule import Scheduler, Step


class Mark(NamedTuple):
    """A placed step as ``task_overlap.ends_of`` reads a full schedule's ``Event``."""

    lane: str
    kind: str
    name: str
    start: float
    end: float


@dataclass(frozen=True)
class _Use:
    name: str
    base: str
    """``name`` before ``@`` (``Scheduler._key``)."""
    flagged: bool
    """A workspace read through GM: it waits ``flag_s`` after its producer."""


@dataclass(frozen=True)
class _Info:
    lane: str
    kind: str
    uses: tuple[_Use, ...]
    defs: tuple[str, ...]
    seconds: float
    depth: int
    """Slots of a load (the stages) or of a workspace write (``Order.slots``)."""
    staged: bool
    """A read of a cube result into the vector cores' staging slot (rule 8)."""


class FastScheduler(Scheduler):
    """``Scheduler`` keeping only the ends of its steps (``end_of``, ``makespan``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._info: dict[int, _Info] = {}
        self.marks: list[Mark] | None = None
        """When a list: every placed step's ``Mark``, in placing order (what
        ``task_overlap.ends_of`` reads of the full schedule's events)."""

    def _about(self, step: Step) -> _Info:
        kind = step.kind
        if kind == "load":
            depth = self.plan.stages
        elif kind == "ws_write":
            depth = self.order.slots(step)
        else:
            depth = 0
        uses = tuple(
            _Use(
                n, n.split("@")[0], kind == "ws_read" and "@gm" in n and bool(self.flag)
            )
            for n in step.uses
        )
        info = _Info(
            step.lane,
            kind,
            uses,
            step.defs,
            self.timer.seconds(step),
            depth,
            kind == "ws_read" and step.lane == "AIV MTE2",
        )
        self._info[id(step)] = info
        return info

    def _place(self, step: Step, j: int | None) -> None:
        info = self._info.get(id(step)) or self._about(step)
        kind = info.kind
        where, end_of, lane_free = self.where, self.end_of, self.lane_free
        start = lane_free[info.lane]
        for u in info.uses:
            found = where.get((u.name, j)) if j is not None else None
            if found is None:
                if u.name in self._args or u.name in self._results:
                    found = self._carried(u.name, j)
                if found is None:
                    found = where.get((u.name, None))
                    if found is None:
                        continue
            if u.flagged:
                at = end_of[found] + self.flag
            elif kind == "scalar":  # its inputs are the engines' (below)
                continue
            else:
                at = end_of[found]
            if at > start:
                start = at
        if j is not None:
            start = self._slots(info, j, start)
        if kind == "scalar":  # the vector core's program runs in order
            start = max(start, lane_free["VECTOR"], lane_free["SCALAR"])
        end = start + info.seconds
        idx = len(end_of)
        end_of.append(end)
        if self.marks is not None:
            self.marks.append(Mark(info.lane, kind, step.name, start, end))
        if end > self.makespan:
            self.makespan = end
        lane_free[info.lane] = end
        if j is not None and end > self.ends.get(j, -1.0):
            self.ends[j] = end
        if kind == "dot":
            self.dots.append((idx, self._key(info.defs[0], j)))
        for d in info.defs:
            where[(d, j)] = idx
        read_end = self.read_end
        for u in info.uses:
            if j is not None and ((u.base, j) in where or (u.name, j) in where):
                key = (u.name, j)
            else:
                key = (u.name, None)
            if end > read_end.get(key, -1.0):
                read_end[key] = end

    def _slots(self, info: _Info, j: int, start: float) -> float:
        """Rules 3, 4, 6, 7 and 8 (``Scheduler._buffer_limits``): the latest start."""
        kind, read_end = info.kind, self.read_end
        if info.staged:
            if self.staged is not None:
                start = max(start, read_end.get(self.staged, 0.0))
            self.staged = self._key(info.defs[0], j)
        if kind in ("load", "ws_write") and j - info.depth >= 0:
            start = max(start, read_end.get((info.defs[0], j - info.depth), 0.0))
        if kind == "load" and self.plan.stages == 1 and j > 0:
            start = max(start, self.ends[j - 1])
        if kind in ("mte1", "dot"):
            b = max(1, self.plan.l0_buffers)
            if len(self.dots) >= b:
                if kind == "mte1":
                    start = max(start, self.end_of[self.dots[-b][0]])
                else:
                    start = max(start, read_end.get(self.dots[-b][1], 0.0))
        return start


def makespans(
    sched: Scheduler,
    before: list[Step],
    after: list[Step],
    counts: tuple[int, ...],
    finish: bool = True,
    kept: dict[int, Scheduler] | None = None,
) -> dict[int, float]:
    """The makespan of the schedule of each of ``counts`` trips (``sched`` a scheduler
    of more), as separate runs give them, from one run forked: the loop issues the
    same steps in iteration j of a loop of n trips as of any longer one while j + lead
    + stages - 1 < n (the steps issued ahead of their iteration stop at the loop's
    end), so a loop of n trips is the longer one forked before iteration n - lead -
    stages + 1 (tests/test_makespan_fast.py). With ``finish`` the longer one's too;
    without, ``sched`` stops after the last fork and ``resume`` goes on with it.
    ``kept`` receives each finished fork by its trip count."""
    ahead = sched.order.lead + sched.plan.stages - 1
    forks = {n - ahead: n for n in counts if ahead <= n < sched.trips}
    top = max(forks, default=-1)
    out: dict[int, float] = {}
    sched.begin(before, 0.0)
    for j in range(sched.trips + 1):
        n = forks.get(j)
        if n is not None:
            other = fork(sched, n)
            for k in range(j, n):
                other.iteration(k)
            other.finish(after)
            out[n] = other.makespan
            if kept is not None:
                kept[n] = other
        if not finish and j >= top:
            sched.placed = j
            return out
        if j < sched.trips:
            sched.iteration(j)
    sched.finish(after)
    out[sched.trips] = sched.makespan
    return out


def resume(sched: Scheduler, after: list[Step]) -> float:
    """The makespan of a schedule ``makespans(..., finish=False)`` left unfinished."""
    for j in range(sched.placed, sched.trips):
        sched.iteration(j)
    sched.finish(after)
    return sched.makespan


def fork(sched: Scheduler, trips: int) -> Scheduler:
    """A copy of ``sched`` so far that goes on as a loop of ``trips`` iterations."""
    other = dataclasses.replace(
        sched,
        trips=trips,
        events=list(sched.events),
        dots=list(sched.dots),
        where=dict(sched.where),
        read_end=dict(sched.read_end),
        lane_free=dict(sched.lane_free),
        ends=dict(sched.ends),
        end_of=list(sched.end_of),
    )
    other.flag = sched.flag
    if isinstance(sched, FastScheduler) and isinstance(other, FastScheduler):
        other._info = sched._info  # the same steps, timer and slots
        other.marks = None if sched.marks is None else list(sched.marks)
    return other


__all__ = ["FastScheduler", "fork", "makespans", "resume"]
