"""The chip's HBM bandwidth shared by the cores of a launch (MODELLED).

Each engine that reads HBM streams at most ``ddr_bytes_per_cycle`` (perf/engines.py),
and an AI core has three such engines: the cube's MTE2 and its two vector cores'.
A task schedule that reads on more than one of them (paged decode: K on the cube, V
on the vector cores, ``fadsl/lib/paged.py`` ``relayed``) can ask more of HBM than a
core's share of the chip's ``hbm_bytes_per_s``, so the per-core schedules are checked
against the chip as a whole here, as the instruction-level timer does with its
bandwidth bins (``perf/timer/memory.py``).

The model is fluid: core ``c`` starts at ``starts[c]`` (the block dispatches, one
after another), needs ``work[c]`` seconds at its own rates and reads ``demand[c]``
bytes from HBM in them, evenly. While the running cores' rates add up to more than
the chip's, every running core slows by the same factor (chip / their sum). A core
that starts late therefore finds the chip shared by more cores; the cores that
started early have streamed faster meanwhile. When the sum never exceeds the chip's
rate (one HBM engine per core: every kernel but the relayed decode on 910B, where
24 cores x 32 B/cycle is the chip's rate) the finish times are the starts plus the
work, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from fadsl.perf.engines import Engines

EPS = 1e-15


def shared_finish(
    starts: np.ndarray, work: np.ndarray, demand: np.ndarray, chip: float
) -> np.ndarray:
    """Per core, when it finishes: cores as the module says, ``chip`` bytes/s."""
    n = len(starts)
    finish = np.asarray(starts, dtype=float) + np.asarray(work, dtype=float)
    rate = np.where(work > 0, demand / np.maximum(work, EPS), 0.0)
    if n == 0 or chip <= 0 or _never_over(starts, finish, rate, chip):
        return finish
    left = np.asarray(work, dtype=float).copy()  # seconds of work at full rate
    done = left <= 0
    now = float(np.min(starts))
    while not done.all():
        running = (~done) & (starts <= now + EPS)
        factor = min(1.0, chip / max(float(rate[running].sum()), EPS))
        ahead = starts[(~done) & (starts > now + EPS)]
        step = float(ahead.min() - now) if ahead.size else np.inf
        if running.any():
            step = min(step, float(left[running].min()) / factor)
        left[running] -= step * factor
        now += step
        ended = running & (left <= EPS * max(1.0, float(work.max())))
        finish[ended] = now
        done |= ended
    return finish


def _never_over(
    starts: np.ndarray, finish: np.ndarray, rate: np.ndarray, chip: float
) -> bool:
    """Whether the cores at full speed never ask more than ``chip`` at once (the
    sum of rates is largest just after some core starts)."""
    for t in np.unique(starts):
        on = (starts <= t) & (finish > t)
        if float(rate[on].sum()) > chip * (1 + 1e-9):
            return False
    return True


def capped_time(
    base: float,
    dispatch: float,
    per_core: np.ndarray,
    per_core_bytes: np.ndarray,
    chip: float,
) -> float:
    """The launch's end: ``base`` (the first block's start) plus the last core's
    finish, core c dispatched ``c * dispatch`` after the first with ``per_core[c]``
    seconds of tasks reading ``per_core_bytes[c]`` from HBM."""
    if len(per_core) == 0:
        return base
    starts = np.arange(len(per_core)) * dispatch
    return base + float(shared_finish(starts, per_core, per_core_bytes, chip).max())




def launch_end(
    engines: Engines,
    per_task: np.ndarray,
    cores: np.ndarray,
    trips: np.ndarray,
    hbm_bytes: float,
) -> float:
    """The launch's end with the chip's HBM shared (``capped_time``): the tasks'
    seconds ``per_task`` summed per core (the core that runs each: ``cores``), and
    the phase's ``hbm_bytes`` dealt to the cores by their tasks' KV iterations
    (``trips``; by task count when no task iterates)."""
    e = engines
    base = e.launch_s - e.dispatch_s * max(0, e.active - 1)
    if len(per_task) == 0 or e.target is None:
        return e.launch_s
    sums = np.bincount(cores, weights=per_task)
    weight = np.asarray(trips, dtype=float)
    if weight.sum() <= 0:
        weight = np.ones(len(per_task))
    share = np.bincount(cores, weights=weight, minlength=sums.size)
    per_core_bytes = hbm_bytes * share / share.sum()
    chip = e.target.rate("hbm_bytes_per_s")
    return capped_time(base, e.dispatch_s, sums, per_core_bytes, chip)


__all__ = ["capped_time", "launch_end", "shared_finish"]
