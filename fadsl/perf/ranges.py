"""A range, not a point: every figure the benches print with every uncertain entry of
the cost table (``perf/costs.py`` ``uncertain_entries``) moved to x0.5 and x2, one at
a time, the fitted constants refitted each time (``perf/calibration.py``), so the
native reference stays on the published points it was fitted to.

``ranged(figure)`` evaluates ``figure(targets)`` at the central table and at every
move; ``targets(name)`` gives the target of that table. It returns the central value,
the lowest and the highest, and which move gave each (``Range``). A move with which
no non-negative refit reproduces the published figures the constants are fitted to is
ruled out by those figures and left out of the ranges (``ruled_out``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from fadsl.perf import calibration
from fadsl.perf.costs import uncertain_entries
from fadsl.target import Target

FACTORS = (0.5, 2.0)
TIMER_ONLY = frozenset(
    {"scalar_access_cycles", "mte_latency_cycles", "pipe_queue_depth"}
)
"""Entries only the timer charges (the models have no scalar UB access, copy
latency behind flags or queue depth): moving them changes no modelled ratio."""
Targets = Callable[[str], Target]


@dataclass(frozen=True)
class Range:
    central: float
    low: float
    high: float
    low_by: str = ""
    high_by: str = ""
    moves: dict[str, float] = field(default_factory=dict)
    """Every move's value, keyed ``"name x0.5"``."""

    def text(self, fmt: str = ".2f") -> str:
        return f"{self.central:{fmt}} [{self.low:{fmt}}, {self.high:{fmt}}]"


def moves() -> list[tuple[str, dict[str, float]]]:
    """(label, factors) of the central table and every move."""
    out: list[tuple[str, dict[str, float]]] = [("central", {})]
    for name in uncertain_entries():
        if name in calibration.FITTED or name in TIMER_ONLY:
            continue
        for k in FACTORS:
            out.append((f"{name} x{k:g}", {name: k}))
    return out


def tables() -> list[tuple[str, Targets]]:
    """Per move, a function from a target name to its target with the moved and
    refitted table."""
    out = []
    for label, factors in moves():
        values = calibration.fit(factors)
        if calibration.reproduces(values, factors):
            out.append((label, _targets(values, factors)))
    return out


def _targets(values: Mapping[str, float], factors: Mapping[str, float]) -> Targets:
    cache: dict[str, Target] = {}

    def get(name: str) -> Target:
        if name not in cache:
            cache[name] = calibration.target_at(name, values, factors)
        return cache[name]

    return get


def ranged_many(
    figures: Callable[[Targets], list[float]],
    at: list[tuple[str, Targets]] | None = None,
) -> list[Range]:
    """``figures`` (a list of numbers per table) as ranges, one per number."""
    at = at or tables()
    return from_results({label: figures(get) for label, get in at if get is not None})


def from_results(results: Mapping[str, list[float] | None]) -> list[Range]:
    """Ranges from the figures of every move (``"central"`` and ``moves()``' labels);
    a move whose figures are None is ruled out (``ruled_out``) and left out."""
    central = results["central"]
    assert central is not None
    results = {k: v for k, v in results.items() if v is not None}
    out = []
    for i, c in enumerate(central):
        vals = {label: r[i] for label, r in results.items() if label != "central"}
        low_by = min(vals, key=lambda k: vals[k], default="")
        high_by = max(vals, key=lambda k: vals[k], default="")
        out.append(
            Range(
                c,
                min([c, *vals.values()]),
                max([c, *vals.values()]),
                low_by,
                high_by,
                vals,
            )
        )
    return out


def sensitivity(ranges: list[Range]) -> list[tuple[str, float, float]]:
    """Per entry: the largest relative move down and up it causes in any figure
    (fractions of the central value), largest first."""
    by: dict[str, tuple[float, float]] = {}
    for r in ranges:
        for label, v in r.moves.items():
            name = label.rsplit(" x", 1)[0]
            rel = v / r.central - 1 if r.central else 0.0
            lo, hi = by.get(name, (0.0, 0.0))
            by[name] = (min(lo, rel), max(hi, rel))
    rows = [(n, lo, hi) for n, (lo, hi) in by.items()]
    return sorted(rows, key=lambda x: -max(-x[1], x[2]))


_FIGURES: list[Callable[[Targets], list[float]]] = []


def _one(job: tuple[str, dict[str, float]]) -> tuple[str, list[float] | None]:
    label, factors = job
    values = calibration.fit(factors)
    if not calibration.reproduces(values, factors):
        return label, None
    return label, _FIGURES[0](_targets(values, factors))


def ruled_out() -> list[str]:
    """The moves with which no non-negative fitted constants reproduce the published
    4K and 32K figures: the published native kernel rules them out (for example a
    cube or a vector pipe half as fast cannot reach 150.8 TFLOPS at 32K)."""
    out = []
    for label, factors in moves()[1:]:
        if not calibration.reproduces(calibration.fit(factors), factors):
            out.append(label)
    return out


def parallel(figures: Callable[[Targets], list[float]], jobs: int = 2) -> list[Range]:
    """``ranged_many`` with the moves spread over ``jobs`` forked processes (the
    figures' models are built before the fork and shared)."""
    import multiprocessing

    _FIGURES[:] = [figures]
    work = moves()
    if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            return from_results(dict(pool.map(_one, work)))
    return from_results(dict(map(_one, work)))
