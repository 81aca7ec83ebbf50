"""The pipe-level timer: every executed instruction placed on its core's pipe.

Rules (docs/cost-model.md, "The timer"):

1. each core's scalar unit issues its calls in program order, ``scalar_issue_cycles``
   each; a call on the scalar pipe (``S``: GetValue, bookkeeping) runs there and the
   scalar issues nothing else meanwhile;
2. every other call joins its pipe's queue; each pipe runs its queue in order, one
   call at a time, for the cycles ``perf/timer/charge.py`` charges; the scalar stalls
   while a pipe holds ``pipe_queue_depth`` calls not yet started;
3. a call's result is usable ``latency`` cycles after its pipe frees (vector and copy
   pipelines); ``PipeBarrier<P>`` makes pipe P wait until every earlier call of P is
   usable, then costs ``pipe_barrier_cycles``; ``PipeBarrier<PIPE_ALL>`` stalls the scalar
   until every pipe is drained;
4. ``SetFlag`` fires on its source pipe once the pipe's earlier calls are usable;
   the ``WaitFlag`` it pairs with (the record's ``from``) holds its destination pipe
   (the scalar when that is ``S``) until ``flag_cycles`` after;
5. ``CrossCoreSetFlag`` fires the same way; a ``CrossCoreWaitFlag`` waits until
   ``flag_handover_cycles`` after the latest set it consumed (``from``: core and seq);
   ``SyncAll``'s steps (the runtime builds it from cross-core flags and records each)
   are such sets, fired once every pipe of the core is drained, and waits that hold
   the scalar and every pipe;
6. GM reads hit or miss the shared L2 and misses share the HBM (``perf/timer/memory.py``);
7. block b starts ``b x block_dispatch_cycles`` after the launch (a mix launch's block
   is an AI core: its AIC and its AIVs, whose record ``block`` is the vector core's own
   index 2 b + sub, start together); the kernel takes
   ``launch_overhead_cycles`` plus the latest result of any core.
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass

from fadsl.errors import InternalError
from fadsl.perf.costs import CostTable
from fadsl.perf.timer.charge import SYNC, charge
from fadsl.perf.timer.instr import Instr
from fadsl.perf.timer.memory import L2, Hbm

SLACK = 4000.0
"""Cycles a core may run ahead of the earliest other core before the timer switches
(keeps the cores' GM traffic in about time order)."""


@dataclass(frozen=True)
class Placed:
    """One timed instruction (cycles from the end of the launch)."""

    instr: Instr
    start: float
    end: float
    """Its pipe is free again."""
    done: float
    """Its result is usable."""
    idle: float
    """Cycles its pipe stood idle right before it."""
    why: str
    """What the pipe (or, for a scalar stall, the scalar) waited on: ``issue``,
    ``flag <event>``, ``cross-core``, ``drain``, ``queue``, ``SyncAll`` or ``""``."""
    hbm_bytes: int = 0


@dataclass(frozen=True)
class Timing:
    """The timed record (MODELLED)."""

    placed: dict[str, list[Placed]]
    """Per core, in program order."""
    launch: float
    span: float
    """Cycles from the end of the launch to the last result."""
    clock: float
    hbm_bytes: int
    gm_read_bytes: int
    issue: dict[str, float]
    """Per core: cycles its scalar unit spent issuing calls (``scalar_issue_cycles``
    each; its scalar-pipe work is in ``placed``)."""

    @property
    def total_cycles(self) -> float:
        return self.launch + self.span

    @property
    def time_s(self) -> float:
        return self.total_cycles / self.clock


class _Core:
    def __init__(self, name: str, instrs: list[Instr], start: float) -> None:
        self.name = name
        self.instrs = instrs
        self.k = 0
        self.issue = start
        self.free: dict[str, float] = defaultdict(lambda: start)
        self.done: dict[str, float] = defaultdict(lambda: start)
        self.window: dict[str, deque[float]] = defaultdict(deque)
        self.sets: dict[int, float] = {}
        self.last_set: dict[tuple[str | None, int | None], float] = {}
        self.out: list[Placed] = []
        self.operands: str | None = None
        self.scalar = 0.0
        """The dtype of the last LoadData into L0A/L0B (what the next Mmad reads)."""


class Timer:
    def __init__(self, table: CostTable) -> None:
        self.t = table
        self.l2 = L2(table["l2_bytes"])
        self.hbm = Hbm(table)
        self.cross: dict[str, float] = {}
        self.parked: dict[str, list[_Core]] = defaultdict(list)
        self.hbm_bytes = 0
        self.read_bytes = 0
        self.wake: list[_Core] = []

    def run(self, instrs: Iterable[Instr]) -> Timing:
        by_core: dict[str, list[Instr]] = defaultdict(list)
        for i in instrs:
            by_core[i.core].append(i)
        cores = {}
        per_block = _vector_cores_per_block(by_core)
        for name, rows in by_core.items():
            rows.sort(key=lambda r: r.seq)
            block = rows[0].block
            if name.startswith("AIV"):
                block //= per_block
            start = block * self.t["block_dispatch_cycles"]
            cores[name] = _Core(name, rows, start)
        heap = [(c.issue, n) for n, c in cores.items()]
        heapq.heapify(heap)
        while heap:
            _, name = heapq.heappop(heap)
            core = cores[name]
            limit = (heap[0][0] if heap else float("inf")) + SLACK
            while core.k < len(core.instrs) and core.issue <= limit:
                moved = self._step(core)
                for c in self.wake:
                    heapq.heappush(heap, (c.issue, c.name))
                self.wake = []
                if not moved:  # parked on a cross-core set not timed yet
                    break
            else:
                if core.k < len(core.instrs):
                    heapq.heappush(heap, (core.issue, name))
        stuck = [c.name for c in cores.values() if c.k < len(c.instrs)]
        if stuck:
            raise InternalError(
                "the record's cross-core waits name sets that never happen "
                f"(cores {', '.join(sorted(stuck))}): a damaged record"
            )
        span = max((p.done for c in cores.values() for p in c.out), default=0.0)
        span = max([span] + [p.end for c in cores.values() for p in c.out])
        return Timing(
            {n: c.out for n, c in cores.items()},
            self.t["launch_overhead_cycles"],
            span,
            self.t.clock,
            self.hbm_bytes,
            self.read_bytes,
            {n: c.scalar for n, c in cores.items()},
        )

    # ------------------------------------------------------------------
    def _step(self, c: _Core) -> bool:
        """Time ``c``'s next instruction; False when it must wait for a set on
        another core that is not timed yet (the core is parked on it)."""
        i = c.instrs[c.k]
        if i.api in ("CrossCoreWaitFlag", "SyncAll"):
            missing = [d for d in i.deps if d not in self.cross]
            if missing:
                self.parked[missing[0]].append(c)
                return False
        dispatch = c.issue + self.t["scalar_issue_cycles"]
        c.scalar += self.t["scalar_issue_cycles"]
        if i.pipe != "S" and i.pipe in c.window:
            q = c.window[i.pipe]
            while q and q[0] <= dispatch:
                q.popleft()
            if len(q) >= self.t["pipe_queue_depth"]:
                dispatch = max(dispatch, q[0])
        c.issue = dispatch
        if i.api in SYNC:
            placed = self._sync(c, i, dispatch)
        else:
            placed = self._work(c, i, dispatch)
        if i.pipe not in ("S", "ALL"):
            c.window[i.pipe].append(placed.start)
        c.out.append(placed)
        c.k += 1
        return True

    def _set(self, key: str, when: float) -> None:
        self.cross[key] = when
        self.wake += self.parked.pop(key, [])

    def _sync(self, c: _Core, i: Instr, dispatch: float) -> Placed:
        t = self.t
        p = i.pipe
        if i.api == "PipeBarrier":
            if p in ("ALL", "S"):
                start = max([dispatch] + list(c.done.values()) + list(c.free.values()))
                end = start + t["pipe_barrier_cycles"]
                for q in list(c.free):
                    c.free[q] = max(c.free[q], end)
                c.issue = end
                return Placed(i, start, end, end, start - dispatch, "drain")
            before = c.free[p]
            start = max(dispatch, before, c.done[p])
            end = start + t["pipe_barrier_cycles"]
            c.free[p] = end
            c.done[p] = max(c.done[p], end)
            why = (
                "drain" if c.done[p] > max(dispatch, before) else _why(dispatch, before)
            )
            return Placed(i, start, end, end, max(0.0, start - before), why)
        if i.api in ("SetFlag", "CrossCoreSetFlag"):
            start = max(dispatch, c.free[p], c.done[p])
            c.free[p] = start
            if i.api == "SetFlag":
                fire = start + t["flag_cycles"]
                c.sets[i.seq] = fire
                c.last_set[(i.event, i.event_id)] = fire
            else:
                self._set(f"{c.name}:{i.seq}", start + t["flag_handover_cycles"])
            return Placed(i, start, start, start, 0.0, "")
        if i.api == "WaitFlag":
            fire = self._pair(c, i)
            return self._hold(c, i, dispatch, fire, f"flag {i.event or '?'}")
        if i.api == "CrossCoreWaitFlag":
            fire = max((self.cross[d] for d in i.deps), default=dispatch)
            return self._hold(c, i, dispatch, fire, "cross-core")
        # SyncAll, built from cross-core flags (the runtime records each step): a
        # set step fires once every pipe of the core is drained, a wait step holds
        # the scalar and every pipe until the sets it consumed fired
        if not i.deps:
            start = max([dispatch] + list(c.done.values()) + list(c.free.values()))
            self._set(f"{c.name}:{i.seq}", start + t["flag_handover_cycles"])
            return Placed(i, start, start, start, 0.0, "")
        fire = max(self.cross[d] for d in i.deps)
        start = max(dispatch, fire)
        c.issue = start
        for q in list(c.free):
            c.free[q] = max(c.free[q], start)
        why = "SyncAll" if fire > dispatch else ""
        return Placed(i, start, start, start, start - dispatch, why)

    def _pair(self, c: _Core, i: Instr) -> float:
        for d in i.deps:
            seq = int(d.rpartition(":")[2])
            if seq in c.sets:
                return c.sets[seq]
        return c.last_set.get((i.event, i.event_id), 0.0)

    def _hold(
        self, c: _Core, i: Instr, dispatch: float, fire: float, reason: str
    ) -> Placed:
        """A wait on pipe ``i.pipe`` (the scalar when ``S``) until ``fire``."""
        p = i.pipe
        if p == "S":
            start = max(dispatch, fire)
            c.issue = start
            why = reason if fire > dispatch else ""
            return Placed(i, start, start, start, start - dispatch, why)
        before = c.free[p]
        start = max(dispatch, before, fire)
        c.free[p] = start
        why = reason if fire >= max(dispatch, before) else _why(dispatch, before)
        return Placed(i, start, start, start, max(0.0, start - before), why)

    def _work(self, c: _Core, i: Instr, dispatch: float) -> Placed:
        if i.pipe == "MTE1" and i.dst in ("L0A", "L0B"):
            c.operands = i.dtype
        ch = charge(i, self.t, c.operands if i.pipe == "M" else None)
        if i.pipe == "S":
            start = dispatch
            end = start + ch.busy
            c.issue = end
            return Placed(i, start, end, end, 0.0, "")
        before = c.free[i.pipe]
        start = max(dispatch, before)
        busy, hbm = ch.busy, 0
        if ch.gm_read and i.gm is not None:
            miss, fetched = self.l2.read_parts(
                i.gm, i.offset or 0, ch.gm_read, i.blocks or 1, i.span or 0
            )
            self.read_bytes += ch.gm_read
            hit_time = (ch.gm_read - miss) / ch.rate
            busy = (
                ch.startup
                + hit_time
                + self.hbm.transfer(start + ch.startup + hit_time, fetched)
            )
            hbm = fetched
            self.hbm_bytes += fetched
        elif ch.gm_read:
            self.read_bytes += ch.gm_read
        if ch.gm_write and i.gm is not None:
            self.l2.write(i.gm, i.offset or 0, ch.gm_write, i.blocks or 1, i.span or 0)
        end = start + busy
        c.free[i.pipe] = end
        done = end + ch.latency
        c.done[i.pipe] = max(c.done[i.pipe], done)
        return Placed(i, start, end, done, start - before, _why(dispatch, before), hbm)


def _why(dispatch: float, before: float) -> str:
    return "issue" if dispatch > before else ""


def _vector_cores_per_block(by_core: dict[str, list[Instr]]) -> int:
    """AIVs per block of the launch: in a mix launch a block is one AI core (its cube
    core and its vector cores, dispatched together), and the record's block of a
    vector core is its ``GetBlockIdx()``, the vector core's own index (2 b + sub on
    a 1:2 launch); a vector-only launch dispatches each vector core as a block."""
    aic = sum(1 for n in by_core if n.startswith("AIC"))
    aiv = sum(1 for n in by_core if n.startswith("AIV"))
    return max(1, aiv // aic) if aic else 1


def time_record(instrs: Iterable[Instr], table: CostTable) -> Timing:
    """Time the executed instructions of one launch with ``table``."""
    return Timer(table).run(instrs)
