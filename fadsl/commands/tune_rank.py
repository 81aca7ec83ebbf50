"""``fadsl tune``'s branch and bound: the best configurations by modelled time, planning
and modelling only those that can still be among them.

1. Configurations whose footprint floor exceeds a memory are dropped (``tune_fit``).
2. Every other one gets a lower bound of its modelled time (``tune_bound``), and they
   are taken in the order of their bounds: each is planned and checked exactly (as
   ``fadsl check`` plans it) and, if it fits, modelled (``perf/kernel.py``).
3. Once ``top`` configurations fit, one whose bound, taken again at the row chunks
   its plan has (``plan/search/chunks.py`` bounds them before), or the model's own
   pace bound at its plan (``TimeBound.pace``), exceeds the ``top``-th best time is
   not modelled; once the next bound exceeds it, no
   configuration left can enter the ranking, and the search stops.

The ranking is therefore the one that planning and modelling every configuration
would give (``tests/commands/test_tune_search.py`` compares them). Each bound is
checked against the exact answer of every configuration planned; one that fails
makes the search start again without that kind of bound, and says so.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fadsl.commands import tune_fit

if TYPE_CHECKING:
    from fadsl.commands.tune_bound import TimeBound
    from fadsl.driver.lower import Lowered
    from fadsl.perf.kernel import KernelModel, KernelTime
    from fadsl.plan.resources.check_resources import ResourceReport


SLACK = 1e-9
"""Relative room for rounding between a bound and the time it bounds (both are sums of
the same floats in other orders)."""


@dataclass
class Structure:
    """The kernel at one value of the structural constants (``stages``, ...)."""

    shape: dict[str, int]
    low: Lowered
    env: dict[str, Any]
    """The shape and the kernel's own sizes (``Binding.model_env``)."""
    model: KernelModel
    bound: TimeBound


@dataclass(frozen=True)
class Found:
    time_s: float
    key: tuple[tuple[str, int], ...]
    values: dict[str, int]
    estimate: KernelTime
    report: ResourceReport


@dataclass
class Ranking:
    best: list[Found] = field(default_factory=list)
    """The ``top`` best configurations that fit, in order."""
    fit: int = 0
    """Configurations planned that fit."""
    planned: int = 0
    bounded: int = 0
    """Dropped by a footprint floor, without a plan."""
    skipped: int = 0
    """Not planned: their time's lower bound exceeds the ``top``-th best time."""
    unmodelled: int = 0
    """Planned and fit, not modelled: their time's lower bound at the row chunks of
    their plan exceeds the ``top``-th best time."""
    notes: list[str] = field(default_factory=list)


class Restart(Exception):
    """A bound exceeded an exact answer: search again without it."""

    def __init__(self, kind: str, values: dict[str, int]) -> None:
        super().__init__(kind)
        self.kind, self.values = kind, values


def rank(
    structures: list[Structure],
    grid: list[dict[str, int]],
    top: int,
    progress: Any = None,
) -> Ranking:
    """The ``top`` best configurations of ``grid`` x ``structures`` that fit."""
    notes: list[str] = []
    floors = bounds = True
    while True:
        try:
            out = _rank(structures, grid, top, progress, floors, bounds)
        except Restart as r:
            if progress:
                progress.restart()
            what = f"{r.kind} of {_text(r.values)}"
            if r.kind == "footprint floor":
                floors = False
                notes.append(
                    f"the {what} exceeded its exact footprint: searched again "
                    "without floors (plan/search/floor.py)"
                )
            else:
                bounds = False
                notes.append(
                    f"the {what} exceeded its modelled time: searched again "
                    "without time bounds (commands/tune_bound.py)"
                )
            continue
        out.notes = notes + out.notes
        return out


def _rank(
    structures: list[Structure],
    grid: list[dict[str, int]],
    top: int,
    progress: Any,
    floors: bool,
    bounds: bool,
) -> Ranking:
    import numpy as np

    out = Ranking()
    pool: list[tuple[float, tuple[tuple[str, int], ...], int, dict[str, int]]] = []
    columns = {n: np.array([g[n] for g in grid]) for n in (grid[0] if grid else {})}
    floor_of: list[dict[str, Any]] = []
    for k, st in enumerate(structures):
        env = {**st.env, **st.shape}
        dropped, floor = tune_fit.floored(st.low, env, columns, len(grid))
        if not floors:
            dropped, floor = np.zeros(len(grid), dtype=bool), {}
        floor_of.append(floor)
        out.bounded += int(dropped.sum())
        if progress:
            progress.step(int(dropped.sum()))
        kept = [{**grid[i], **st.shape} for i in np.flatnonzero(~dropped)]
        points = [{**env, **values} for values in kept]
        lbs = st.bound.seconds_many(points) if bounds else [0.0] * len(kept)
        for values, lb in zip(kept, lbs):
            pool.append((lb, tuple(sorted(values.items())), k, values))
    pool.sort(key=lambda p: (p[0], p[1]))
    times: list[tuple[float, tuple[tuple[str, int], ...]]] = []
    for n, (lb, key, k, values) in enumerate(pool):
        if bounds and len(times) >= top and lb > times[top - 1][0] * (1 + SLACK):
            out.skipped = len(pool) - n
            break
        worst = times[top - 1][0] if bounds and len(times) >= top else None
        fits, found = _exact(
            structures[k], values, floor_of[k], lb if bounds else None, worst
        )
        out.planned += 1
        out.fit += fits
        if progress:
            progress.step()
        if found is None:
            out.unmodelled += fits
            continue
        at = bisect.bisect(times, (found.time_s, key))
        times.insert(at, (found.time_s, key))
        out.best.insert(at, found)
        del times[top:], out.best[top:]
    if progress and out.skipped:
        progress.step(out.skipped)
    return out


def _exact(
    st: Structure,
    values: dict[str, int],
    floor: dict[str, Any],
    lb: float | None,
    worst: float | None,
) -> tuple[bool, Found | None]:
    """(whether the configuration fits, planned and checked; if it does, it modelled,
    unless ``worst`` is given and its time bound at the row chunks its plan has
    exceeds it: then None)."""
    point = {**st.env, **values}
    report = st.low.check_at(point)
    if floor and tune_fit.below_floor(report, floor):
        raise Restart("footprint floor", values)
    if not report.ok:
        return False, None
    planned = lb
    if lb is not None:
        variant = st.model.at(point)
        planned = max(lb, st.bound.seconds(point, variant.kv_schedule.row_chunks))
        if worst is not None and planned <= worst * (1 + SLACK):
            planned = max(planned, st.bound.pace(variant, point))
        if worst is not None and planned > worst * (1 + SLACK):
            return True, None
    est = st.model.estimate(point)
    if planned is not None and planned > est.time_s * (1 + SLACK):
        raise Restart("time bound", values)
    return True, Found(est.time_s, tuple(sorted(values.items())), values, est, report)


def _text(values: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


__all__ = ["Found", "Ranking", "Structure", "rank"]
