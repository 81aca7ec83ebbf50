"""State shared by every frame of one ``interpret`` call: memory, caches, loop counts.

A grid split over threads (``threads.py``) gives each chunk a ``for_chunk`` machine:
the same global memory and caches, its own loop statistics, added back in chunk order.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from fadsl.backends.interp.liveness import dead_after
from fadsl.backends.interp.storage import to_f32
from fadsl.ir.nodes import For, Kernel, Op, Param, Value


@dataclass
class Trips:
    """One loop's runs at one position of its enclosing loops (summed over grid chunks)."""

    var: str
    points: int = 0
    executed: int = 0
    lo: int = 0
    hi: int = 0

    def add(self, points: int, executed: int, lo: int, hi: int) -> None:
        if self.points == 0:
            self.lo, self.hi = lo, hi
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        self.points += points
        self.executed += executed

    @property
    def rectangle(self) -> int:
        """Point-iterations if every point ran from the smallest start to the largest stop."""
        return self.points * max(0, self.hi - self.lo)


Path = tuple[tuple[int, int], ...]
"""The loops around a frame: (id of the For op, iteration number), outermost first."""


@dataclass
class Machine:
    """State shared by every frame of one ``interpret`` call."""

    kernel: Kernel
    params: dict[str, Param]
    gm: dict[str, np.ndarray]
    threads: int = 1
    """Worker threads a grid may split its points over (``threads.py``)."""
    trips: dict[tuple[int, Path], Trips] = field(default_factory=dict)
    sums: dict[str, np.ndarray] = field(default_factory=dict)
    """f32 accumulators of the outputs atomic_add writes (``atomics.py``)."""
    _gm_f32: dict[str, np.ndarray] = field(default_factory=dict)
    _seq: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _plans: dict[int, tuple[tuple[Value, ...], ...]] = field(default_factory=dict)
    prints: list[tuple[tuple[int, ...], int, str]] = field(default_factory=list)
    """Lines of debug_print: (grid point, sequence number, text); shared by chunks."""

    def for_chunk(self) -> Machine:
        """A machine for one chunk of a split grid: the same memory and caches, its own
        loop statistics (``absorb`` adds them back in chunk order)."""
        return replace(self, threads=1, trips={})

    def absorb(self, chunk: Machine) -> None:
        for key, t in chunk.trips.items():
            self.trips.setdefault(key, Trips(t.var)).add(
                t.points, t.executed, t.lo, t.hi
            )

    def release_plan(
        self, ops: Sequence[Op], keep: Sequence[Value], args: Sequence[Value]
    ) -> tuple[tuple[Value, ...], ...]:
        """``liveness.dead_after`` of a block, computed once per run (blocks are
        identified by id: the kernel outlives the run)."""
        found = self._plans.get(id(ops))
        if found is None:
            found = self._plans[id(ops)] = dead_after(ops, keep, args)
        return found

    def gm_f32(self, name: str) -> np.ndarray:
        """A float32 copy of input ``name`` (inputs are never written), made once."""
        with self._lock:
            found = self._gm_f32.get(name)
            if found is None:
                found = to_f32(self.gm[name])
                self._gm_f32[name] = found
            return found

    def next_seq(self) -> int:
        """Increasing numbers that order enqueues (``next`` of a count is atomic)."""
        return next(self._seq)

    def count_trips(
        self, op: For, path: Path, points: int, executed: int, lo: int, hi: int
    ) -> None:
        """Record one run of loop ``op`` over ``points`` points from ``lo`` to ``hi``."""
        key = (id(op), path)
        found = self.trips.get(key)
        if found is None:
            found = self.trips[key] = Trips(op.var)
        found.add(points, executed, lo, hi)

    def loop_stats(self) -> dict[str, tuple[int, int]]:
        """Per loop variable: (point-iterations executed, of the bounding rectangles)."""
        out: dict[str, tuple[int, int]] = {}
        for t in self.trips.values():
            done, total = out.get(t.var, (0, 0))
            out[t.var] = (done + t.executed, total + t.rectangle)
        return out
