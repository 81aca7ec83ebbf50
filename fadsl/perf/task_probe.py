"""One task's makespan and overlappable ends from the same schedules (what
``KernelModel._first_phase`` asks per trip count: ``fadsl tune`` asks it for every
distinct trip count of every configuration it models).

``KernelModel.task_seconds`` schedules a long task's first iterations (the probes of
PROBE .. PROBE + 4 trips, forks of one schedule: ``timeline_fast.makespans``) and
``KernelModel.ends`` scheduled the task of ``min(trips, PROBE_TRIPS)`` iterations again,
with every ``Event``, to read its tail and slack (``task_overlap.ends_of``). That
schedule is one of the probes (or, for a short task, the task's own schedule): here the
probes' scheduler notes each placed step's lane, kind, name, start and end
(``FastScheduler.marks``, the fields ``ends_of`` reads) and the ends come from the fork
of PROBE_TRIPS trips. The figures are the same as scheduling twice, exactly
(``tests/test_task_probe.py``: the makespans and ends of every trip count 1-12 at
configurations that exercise each rule, against ``task_seconds`` and ``ends``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from fadsl.perf.task_overlap import PROBE_TRIPS, Ends, ends_of
from fadsl.perf.timeline_fast import FastScheduler, makespans, resume
from fadsl.perf.timeline_schedule import Scheduler, Timer

if TYPE_CHECKING:
    from fadsl.perf.kernel import KernelModel

PROBE = 4
"""KV iterations scheduled before looking for a period (of one or two iterations, in
the makespans of PROBE .. PROBE + 4 iterations: ``_extended``)."""


_ENDS: WeakKeyDictionary[Timer, dict[int, Ends]] = WeakKeyDictionary()
"""Per timer (a task's point) and model (by id): the ends of PROBE_TRIPS trips, shared
by every longer trip count at that timer."""


def task_and_ends(
    model: KernelModel, timer: Timer, trips: int, want_ends: bool = True
) -> tuple[float, Ends | None]:
    """(``model.task_seconds(timer, trips)``, ``model.ends(timer, trips)`` or None
    without ``want_ends``)."""
    split = want_ends and model.target.split
    if trips <= PROBE + 2:
        sched = _scheduler(model, timer, trips, split)
        kept: dict[int, Scheduler] = {}
        counts = (PROBE_TRIPS,) if split and trips > PROBE_TRIPS else ()
        makespans(sched, model.before, model.after, counts, kept=kept)
        if not split:
            return sched.makespan, _none(want_ends)
        if trips <= PROBE_TRIPS:
            return sched.makespan, _ends(model, sched)
        return sched.makespan, _short_ends(model, timer, kept)
    main = None
    if timer.probe is None:  # shared by every long trip count at this point
        counts = tuple(range(PROBE, PROBE + 5))
        longest = max(trips, counts[-1])
        main = _scheduler(model, timer, longest, split)
        finish = longest == counts[-1]
        kept = {}
        got = makespans(main, model.before, model.after, counts, finish, kept)
        main.marks = None  # what goes on is not a probe
        timer.probe = tuple(
            got[n] if n in got else _makespan(model, timer, n) for n in counts
        )
        if split:
            _short_ends(model, timer, kept)
        main = None if finish else main
    ends = _short_ends(model, timer, {}) if split else _none(want_ends)
    extended = _extended(timer.probe, trips)
    if extended is not None:
        return extended, ends
    if main is not None:
        return resume(main, model.after), ends
    return _makespan(model, timer, trips), ends


def _scheduler(
    model: KernelModel, timer: Timer, trips: int, marked: bool
) -> FastScheduler:
    sched = FastScheduler(model.loop, timer, model.order, model.kv_schedule, trips)
    if marked:
        sched.marks = []
    return sched


def _makespan(model: KernelModel, timer: Timer, trips: int) -> float:
    sched = _scheduler(model, timer, trips, False)
    sched.run(model.before, model.after, 0.0)
    return sched.makespan


def _ends(model: KernelModel, sched: Scheduler) -> Ends:
    """``ends_of`` a finished, marked schedule."""
    assert isinstance(sched, FastScheduler) and sched.marks is not None
    ahead = model.carried.stages.ring_values if model.carried else ()
    return ends_of(sched.marks, sched.makespan, ahead)


def _short_ends(model: KernelModel, timer: Timer, kept: dict[int, Scheduler]) -> Ends:
    """The ends of PROBE_TRIPS trips at ``timer``: kept per timer, from the fork of
    that many trips when ``kept`` has it, else from a schedule of their own."""
    known = _ENDS.setdefault(timer, {})
    hit = known.get(id(model))
    if hit is None:
        sched = kept.get(PROBE_TRIPS)
        if sched is None:
            sched = _scheduler(model, timer, PROBE_TRIPS, True)
            sched.run(model.before, model.after, 0.0)
        hit = known[id(model)] = _ends(model, sched)
    return hit


def _none(want: bool) -> Ends | None:
    return Ends(0.0, 0.0) if want else None


__all__ = ["task_and_ends"]


def _extended(spans: tuple[float, ...], trips: int) -> float | None:
    """The makespan of ``trips`` iterations from those of PROBE .. PROBE + 4
    (``spans``), when they grow by a constant step (a period of one iteration) or
    by two alternating steps (a period of two iterations: the causal and several
    plain schedules of fa2 at issue 32's shape); None when they show neither."""
    a, b, c, d, e = spans
    if abs((c - b) - (b - a)) <= 1e-12 * c:
        return c + (trips - PROBE - 2) * (c - b)
    if trips <= PROBE + 4:
        return spans[trips - PROBE]
    d4, d5, d6, d7 = b - a, c - b, d - c, e - d
    if abs(d6 - d4) <= 1e-12 * e and abs(d7 - d5) <= 1e-12 * e:
        m = trips - PROBE - 4
        return e + (m // 2) * (d6 + d7) + (m % 2) * d6
    return None
