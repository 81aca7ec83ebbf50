"""Durations and the schedule of ``fadsl/perf/timeline.py``: rules 1-7 of its docstring.

``Step`` is one engine action of the program before it is placed; ``program_order``
decides the order the cube and vector programs issue a KV iteration's steps in (the
schedule of ``fadsl/perf/schedule.py``); ``Scheduler`` places the steps of the task's
own code, of every KV iteration and of its tail, in that order, and records for each
``Event`` what held it back. ``Timer`` turns a step's work into seconds on its engine
(``fadsl/perf/engines.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fadsl.perf.cost_work import WORK_KEYS
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.plan.resources.footprint_eval import exact
from fadsl.perf.engines import LANES, Engines
from fadsl.perf.schedule import Schedule
from fadsl.perf.step_calls import GmCopy, VectorCall, total
from fadsl.plan.memory.instr_counts import Calls

if TYPE_CHECKING:
    from fadsl.perf.program_order import Order

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
    """For a vector step: the ops in it."""
    calls: tuple[Any, ...] = ()
    """For a vector step: its ops' calls as the backend emits them
    (``perf/step_calls.VectorCall``); for an MTE1 step: its LoadData
    (``step_calls.LoadDataCall``); for a load or store: its GM bursts
    (``step_calls.GmCopy``) and a load's pad fill (``VectorCall``)."""


def gm_copies(step: Step) -> tuple[GmCopy, ...]:
    """The GM transfers among a load or store step's calls."""
    return tuple(c for c in step.calls if isinstance(c, GmCopy))


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
        self.chunked: tuple[int, frozenset[int]] = (1, frozenset())
        """(row chunks, ids of the vector steps run once per chunk): perf/schedule.py."""

    def seed(self, known: Mapping[int, float]) -> None:
        """Take the seconds of steps (by id) another timer found, for steps whose
        seconds are the same at both timers' points (``KernelModel._pointless``)."""
        self._cache.update(known)

    def known(self, ids: frozenset[int]) -> dict[int, float]:
        """The seconds found so far of the steps ``ids``."""
        return {k: v for k, v in self._cache.items() if k in ids}

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
        chunks, steps = self.chunked
        times = chunks if id(step) in steps else 1
        copy = e.copy_s + e.burst_s  # a contiguous transfer: one burst
        if step.kind == "load":  # after its pad's Duplicate (step_calls.pad_fill)
            pad = self.pad_calls(step)
            return (
                self.copy_s(step, per_aiv)
                + e.read_s(n["mte2_bytes"] / per_aiv, self.hits.get(step.src, 0.0))
                + pad.vector * e.call_s
            )
        if step.kind == "ws_read":  # workspaces stay in L2
            return copy * times + e.read_s(n["ws_bytes"] / per_aiv, 1.0)
        if step.kind == "ws_write":
            if step.lane == "FIXPIPE":
                return e.fixpipe_start_s + e.fixpipe_s(n["ws_bytes"])
            return copy * times + e.write_s(n["ws_bytes"] / per_aiv)
        if step.kind == "store":
            units = e.vector_units
            return self.copy_s(step, units) + e.write_s(n["mte3_bytes"] / units)
        if step.kind == "mte1":
            loads = self.load_data(step, n)
            return loads * e.load_data_s + e.mte1_s(n["l0a_bytes"], n["l0b_bytes"])
        if step.kind == "dot":
            return e.mmad_s + e.cube_s(n["cube_flops"], n["cube_f32_flops"])
        if step.kind == "scalar":
            return e.round_s
        units = e.vector_units
        c = self.vector_calls(step)
        return (
            e.vector_s(n["vector_ops"] / units, n["vector_transcendental"] / units)
            + c.vector * e.call_s
            + c.barriers * e.drain_s
            + c.scalar_reads * e.scalar_read_s
        )

    def pad_calls(self, step: Step) -> Calls:
        """A load's pad fill: the vector calls it issues before the copy."""
        pads = tuple(c for c in step.calls if isinstance(c, VectorCall))
        return total(pads, self.env, self.engines.vector_units, 1)

    def copy_s(self, step: Step, per_core: int) -> float:
        """Start-up and bursts of a load or store: a burst per row of the tile, on
        a vector core per row of its part (``step_calls.GmCopy``)."""
        e = self.engines
        bursts = sum(c.bursts(self.env, per_core) for c in gm_copies(step)) or 1
        return e.copy_s + bursts * e.burst_s

    def vector_calls(self, step: Step) -> Calls:
        """One vector core's calls of a vector step, as the backend emits them
        (``perf/step_calls.py``); a step without them (built by hand in a test)
        counts one call and one barrier per op."""
        if not step.calls:
            return Calls(step.count, step.count)
        chunks, steps = self.chunked
        times = chunks if id(step) in steps else 1
        return total(step.calls, self.env, self.engines.vector_units, times)

    def load_data(self, step: Step, n: Mapping[str, int]) -> int:
        """LoadData calls of an MTE1 step, by the cube helpers' strips."""
        if step.calls:
            return sum(c.count(self.env) for c in step.calls)
        return -(-(n["l0a_bytes"] + n["l0b_bytes"]) // LOAD_DATA_BYTES)


LOAD_DATA_BYTES = 4096
"""Bytes per LoadData of an MTE1 step built without its calls (a test's hand-made
step); the model's own steps count the cube helpers' strips (``step_calls``)."""


@dataclass
class Scheduler:
    """Rules 1-4 of the module docstring, applied in issue order (the cost model's
    makespans: ``perf/timeline_fast.py``, the same rules without the events)."""

    loop: ir.For
    timer: Timer
    order: Order
    """The KV iteration's steps in issue order (``program_order``, made once: the
    Timer caches durations per step object)."""
    plan: Schedule
    trips: int
    events: list[Event] = field(default_factory=list)
    dots: list[tuple[int, tuple[str, int | None]]] = field(default_factory=list)
    """CUBE events in issue order: (event index, key of the result)."""
    where: dict[tuple[str, int | None], int] = field(default_factory=dict)
    read_end: dict[tuple[str, int | None], float] = field(default_factory=dict)
    """Per value (by key), the latest end of the steps placed so far that read it."""
    lane_free: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(LANES, 0.0)
    )
    ends: dict[int, float] = field(default_factory=dict)
    """Per KV iteration, the latest end of its events so far (rule 4's wait for the
    previous iteration, without a scan of every event)."""
    staged: tuple[str, int | None] | None = None
    """The cube result last read into the vector cores' staging slot (rule 8)."""
    depths: dict[int, int] = field(default_factory=dict)
    """Per step (by id), its slots: ``Order.slots`` asked once."""
    end_of: list[float] = field(default_factory=list)
    """Per placed step, in placing order: its end (``events[i].end``)."""
    makespan: float = 0.0
    """The latest end of any placed step."""
    placed: int = 0
    """KV iterations issued so far, when ``makespans`` stopped early."""

    def __post_init__(self) -> None:
        self._args: dict[str, int] = {}
        for k, a in enumerate(self.loop.iter_args):
            self._args.setdefault(a.name, k)
        self._results: dict[str, int] = {}
        for k, r in enumerate(self.loop.loop_results):
            self._results.setdefault(r.name, k)
        self._bases: dict[str, str] = {}

    def run(self, before: list[Step], after: list[Step], start: float) -> None:
        self.begin(before, start)
        for j in range(self.trips):
            self.iteration(j)
        self.finish(after)

    def begin(self, before: list[Step], start: float) -> None:
        """The task's code before the loop and the loop's prologue."""
        self.lane_free = dict.fromkeys(LANES, start)
        self.flag = self.timer.engines.flag_s
        for s in before:
            self._place(s, None)
        order = self.order
        ahead, lead = self.plan.stages - 1, order.lead
        for j in range(min(ahead, self.trips)):
            self._place_all(order.a_loads + order.loads, j)
        for j in range(min(lead, self.trips)):  # the cube's prologue of stage A
            self._stage_a(j, ahead)

    def iteration(self, j: int) -> None:
        """What the programs issue in KV iteration ``j``."""
        order = self.order
        ahead, lead = self.plan.stages - 1, order.lead
        if lead and j + lead < self.trips:
            self._stage_a(j + lead, ahead)
        if j + ahead < self.trips:
            self._place_all(order.loads, j + ahead)
        self._place_all(order.now, j)
        if order.deferred and j >= 1:
            self._place_all(order.deferred, j - 1)

    def finish(self, after: list[Step]) -> None:
        """The last iteration's deferred steps and the task's code after the loop."""
        if self.order.deferred and self.trips:
            self._place_all(self.order.deferred, self.trips - 1)
        for s in after:
            self._place(s, None)

    def _stage_a(self, j: int, ahead: int) -> None:
        """Stage A of iteration ``j``, after the loads it prefetches for j + ahead."""
        if j + ahead < self.trips:
            self._place_all(self.order.a_loads, j + ahead)
        self._place_all(self.order.cube_ahead, j)

    def _place_all(self, steps: list[Step], j: int) -> None:
        for s in steps:
            self._place(s, j)

    def _place(self, step: Step, j: int | None) -> None:
        lane_free, end_of = self.lane_free, self.end_of
        limits: dict[str, float] = {"unit": lane_free[step.lane]}
        deps = []
        for name in step.uses:
            found = self._producer(name, j)
            if found is None:
                continue
            deps.append(found)
            if step.kind == "ws_read" and "@gm" in name and self.flag:
                at = end_of[found] + self.flag
                limits["flag"] = max(limits.get("flag", 0.0), at)
            else:
                limits["inputs"] = max(limits.get("inputs", 0.0), end_of[found])
        if j is not None:
            self._buffer_limits(step, j, limits)
        if step.kind == "scalar":  # the vector core's program runs in order
            limits["inputs"] = max(lane_free["VECTOR"], lane_free["SCALAR"])
        start = max(limits.values())
        end = start + self.timer.seconds(step)
        idx = len(end_of)
        end_of.append(end)
        if end > self.makespan:
            self.makespan = end
        self._event(step, j, limits, start, end, tuple(deps))
        lane_free[step.lane] = end
        if j is not None and end > self.ends.get(j, -1.0):
            self.ends[j] = end
        if step.kind == "dot":
            self.dots.append((idx, self._key(step.defs[0], j)))
        for d in step.defs:
            self.where[(d, j)] = idx
        read_end = self.read_end
        for name in step.uses:
            key = self._key(name, j)
            if end > read_end.get(key, -1.0):
                read_end[key] = end

    def _event(
        self,
        step: Step,
        j: int | None,
        limits: dict[str, float],
        start: float,
        end: float,
        deps: tuple[int, ...],
    ) -> None:
        reason = max(limits, key=lambda k: (limits[k], k == "unit"))
        wait = start - self.lane_free[step.lane]
        self.events.append(
            Event(step.lane, step.kind, step.name, j, start, end, reason, wait, deps)
        )

    def _buffer_limits(self, step: Step, j: int, limits: dict[str, float]) -> None:
        """Rules 3, 4, 6 and 7: a slot of a load queue, of a workspace ring or of L0
        is reused only after its previous value was consumed."""
        if step.kind == "load":
            depth = self.plan.stages
        elif (depth := self.depths.get(id(step), 0)) == 0:
            depth = self.depths[id(step)] = self.order.slots(step)
        if step.kind == "ws_read" and step.lane == "AIV MTE2":
            self._staging_limit(step, j, limits)
        if step.kind in ("load", "ws_write") and j - depth >= 0:
            read = self.read_end.get((step.defs[0], j - depth))
            if read is not None:
                limits["buffer"] = read
        if step.kind == "load" and self.plan.stages == 1 and j > 0:
            limits["iteration"] = self.ends[j - 1]
        if step.kind in ("mte1", "dot"):
            self._l0_limits(step, limits)

    def _staging_limit(self, step: Step, j: int, limits: dict[str, float]) -> None:
        """Rule 8: the vector cores stage the cube's results in a one-slot VECIN
        queue (``plan/memory/vector_queues.py``), so a result is read into UB only after
        the vector steps reading the one staged before it ended."""
        if self.staged is not None:
            end = self.read_end.get(self.staged)
            if end is not None:
                limits["buffer"] = max(limits.get("buffer", 0.0), end)
        self.staged = self._key(step.defs[0], j)

    def _l0_limits(self, step: Step, limits: dict[str, float]) -> None:
        """Rule 7: with L0 depth b, MTE1 fills L0A/L0B for dot n after the cube ended
        dot n - b; the cube starts dot n after the steps reading dot n - b's result
        out of L0C (Fixpipe) ended."""
        b = max(1, self.plan.l0_buffers)
        if step.kind == "mte1" and len(self.dots) >= b:
            limits["buffer"] = max(
                limits.get("buffer", 0.0), self.end_of[self.dots[-b][0]]
            )
        if step.kind == "dot" and len(self.dots) >= b:
            drained = self.read_end.get(self.dots[-b][1])
            if drained is not None:
                limits["buffer"] = max(limits.get("buffer", 0.0), drained)

    def _key(self, name: str, j: int | None) -> tuple[str, int | None]:
        if j is None:
            return (name, None)
        base = self._bases.get(name)
        if base is None:
            base = self._bases[name] = name.split("@")[0]
        where = self.where
        if (base, j) not in where and (name, j) not in where:
            return (name, None)
        return (name, j)

    def _producer(self, name: str, j: int | None) -> int | None:
        """The event that made ``name`` as seen by iteration ``j`` (None: task code)."""
        where = self.where
        if j is not None:
            found = where.get((name, j))
            if found is not None:
                return found
        if name in self._args or name in self._results:
            carried = self._carried(name, j)
            if carried is not None:
                return carried
        return where.get((name, None))

    def _carried(self, name: str, j: int | None) -> int | None:
        k = self._args.get(name)
        if k is not None and j is not None:
            if j == 0:
                init = self.loop.inits[k]
                return (
                    self.where.get((init.name, None))
                    if isinstance(init, ir.Value)
                    else None
                )
            return self.where.get((self.loop.yields[k].name, j - 1))
        k = self._results.get(name)
        if k is not None and j is None and self.trips:
            return self.where.get((self.loop.yields[k].name, self.trips - 1))
        return None
