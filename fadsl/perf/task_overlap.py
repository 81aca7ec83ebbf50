"""Consecutive tasks of one AI core overlap (docs/cost-model.md, "The schedule and
the headline"): the generated kernel's cube core starts its next task (the Q load,
the K loads and the S = Q K^T dots of the ring's prologue) as soon as its own part of
the task before ended, while the vector cores still read the last P V, run the last
update, normalise and store. Nothing in the generated code holds the cube back there:
its next task's first workspace writes wait for no flag, its L1 and L0 slots are free
once its own last dot ended, and the cross-core flags count (the vector cores consume
each set in order). The timer over the executed record shows this overlap
(``fadsl sim --profile``); ``perf/kernel.py`` charges it here.

Per task of ``n`` KV iterations, from one full schedule (``timeline_schedule``):

- ``tail``: the task's makespan less the end of its last step on the cube core (the
  vector cores' work after the cube is done);
- ``slack``: how late the vector cores may start the task without delaying it: the
  start of their first read of a cube result less their busy time before it.

Task B after task A on one core starts ``min(tail(A), slack(B))`` before A's
makespan ended; the task overhead stays in series. A coupled chip (one core does
everything) has no such overlap.

With the ring carried across tasks (``plan/schedule/carry.py``) the cube issues B's
prologue (Q load, K loads, S dots) right after A's last stage-A write, before A's last
stage B: B's first S is ready ``first(B)`` after that write, so B starts
``min(free(A), slack(B))`` early, ``free`` the makespan less the end of A's last
stage-A workspace write (``free >= tail``: the rule above is the case without carry).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

CUBE_LANES = frozenset({"AIC MTE2", "MTE1", "CUBE", "FIXPIPE"})
VECTOR_LANES = frozenset({"VECTOR", "SCALAR", "AIV MTE2", "AIV MTE3"})
PROBE_TRIPS = 4
"""Trip counts above this share the tail and slack of this many (the schedule's end
and start no longer depend on the trip count: the steady period repeats between)."""


@dataclass(frozen=True)
class Ends:
    """The overlappable ends of one task's schedule (seconds, MODELLED)."""

    tail: float
    slack: float
    free: float = 0.0
    """The makespan less the end of the task's last stage-A workspace write (the
    cube may start the next task's prologue there when the ring is carried)."""


def ends_of(
    events: Iterable[object], makespan: float, ahead: Iterable[str] = ()
) -> Ends:
    """``Ends`` of one full schedule's events (``timeline_schedule.Event``);
    ``ahead``: the values the cube writes in stage A (the ring's, for ``free``)."""
    evs = list(events)
    marks = tuple(f"ws {v} write" for v in ahead)
    cube = [e.end for e in evs if e.lane in CUBE_LANES]  # type: ignore[attr-defined]
    vec = [e for e in evs if e.lane in VECTOR_LANES]  # type: ignore[attr-defined]
    reads = [e.start for e in vec if e.kind == "ws_read"]  # type: ignore[attr-defined]
    if not cube or not reads:
        return Ends(0.0, 0.0)
    first = min(reads)
    busy = sum(e.end - e.start for e in vec if e.end <= first)  # type: ignore[attr-defined]
    writes = [e.end for e in evs if e.lane in CUBE_LANES and e.name.startswith(marks)]  # type: ignore[attr-defined]
    tail = max(0.0, makespan - max(cube))
    free = max(tail, makespan - max(writes)) if marks and writes else tail
    return Ends(tail, max(0.0, first - busy), free)


def overlaps(
    ends: dict[int, Ends],
    trips: np.ndarray,
    cores: np.ndarray,
    order: np.ndarray,
    carried: bool = False,
) -> np.ndarray:
    """Seconds by which each task (grid order) hands its core over early: for a task
    followed by another on its core (dealing ``order``), ``min(tail, next slack)``
    (``min(free, next slack)`` with the ring ``carried``); 0 for each core's last task."""
    out = np.zeros(trips.shape, dtype=float)
    last: dict[int, int] = {}
    for t in np.argsort(order, kind="stable"):
        c = int(cores[t])
        if c in last:
            prev = last[c]
            a = ends[int(trips[prev])]
            out[prev] = min(a.free if carried else a.tail, ends[int(trips[t])].slack)
        last[c] = int(t)
    return out


def busiest_handover(
    dispatch_s: float, per_task: np.ndarray, handover: np.ndarray, cores: np.ndarray
) -> float:
    """The hand-over seconds of the core that ends last (``Engines.dispatched``:
    core c starts c dispatches after the first)."""
    if not len(per_task):
        return 0.0
    sums = np.bincount(cores, weights=per_task - handover)
    c = int(np.argmax(sums + np.arange(sums.size) * dispatch_s))
    return float(np.bincount(cores, weights=handover, minlength=c + 1)[c])
