"""The fewest row chunks the cost model can give a configuration, without planning it.

The modelled kernel (``perf/kernel.py`` ``at``) charges the vector steps of a chunked
region once per row chunk (``perf/schedule.planned_chunks``): one where the UB formula
of the kernel's whole-rows plan (made once, at the first sizes asked) fits, else
``core_rows // n`` for the chunk of ``n`` rows of the exact plan (one, when that plan
keeps whole rows). The planner chunks only when whole rows overflow UB, and tries only
multiples of ``CHUNK_ALIGN`` that divide the core's rows and are below them
(``row_chunk.candidates``), largest first, keeping the first whose plan fits. So
where the formula overflows and even a floor of every whole-rows plan
(``floor.whole_rows``: the loop's states and the other tiles it holds together)
exceeds UB, a configuration that fits has ``core_rows // n`` chunks for a candidate
``n`` no larger than the largest whose floor with chunks of ``n`` rows
(``whole_rows(..., chunked=True)``: the tiles the region makes and reads only there
are chunk-sized) fits UB; anywhere else the bound is one.
``fadsl tune``'s time bound (``commands/tune_bound.py``) charges that many: the chain
of a wide block's softmax is then bounded near its modelled length, not at one
chunk's.

The rows are those of a dot result the vector cores read (``Lowering.core_shape``);
with several distinct row counts the least of their bounds is taken. A kernel with a
forced ``row_chunk`` (textual IR) gets 1: its chunks are not the planner's choice.
As with the other bounds, ``tune_rank`` compares the time bound with every
configuration it models, and models every configuration if one ever exceeds it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fadsl.ir.expr import Expr
    from fadsl.ir.nodes import Kernel
    from fadsl.target import Target


class LeastChunks:
    """``least(env)``: a lower bound of the row chunks ``KernelModel.at(env)`` uses
    for any of ``kernels`` (as the model holds them: before the passes)."""

    def __init__(self, kernels: list[Kernel], target: Target) -> None:
        self.each = [_Chunks(k, target) for k in kernels]

    def least(self, env: Mapping[str, Any]) -> int:
        return min((c.least(env) for c in self.each), default=1)

    def least_many(self, envs: list[Mapping[str, Any]]) -> list[int]:
        """``[least(e) for e in envs]``, the UB tests of all of them at once (numpy:
        ``footprint_eval.batch``); only those whose whole rows overflow are bounded
        one by one (the same answer: ``tests/commands/test_tune_chunks.py``)."""
        if not self.each:
            return [1] * len(envs)
        each = [c.least_many(envs) for c in self.each]
        return [min(got) for got in zip(*each)]


class _Chunks:
    """The bound for one kernel."""

    def __init__(self, kernel: Kernel, target: Target) -> None:
        self.kernel, self.target = kernel, target
        self.capacity = target.capacity("UB")
        self.rows: list[Expr] = []
        self.whole: Expr | None = None
        self.floor: Expr | None = None
        self.chunked: Expr | None = None
        self._ready = False
        self._batch: Any = None

    def _setup(self, env: Mapping[str, Any]) -> None:
        """The whole-rows UB formula (``planned_chunks``'s) and the core rows."""
        from fadsl.errors import FadslError
        from fadsl.ir import nodes as ir
        from fadsl.plan.memory.whole_rows import whole_rows_ub
        from fadsl.plan.memory.plan_buffers import lower
        from fadsl.plan.schedule.sides import walk
        from fadsl.plan.search.floor import whole_rows

        kernel, target = self.kernel, self.target
        self._ready = True
        loops = [op for op in walk(kernel.body) if isinstance(op, ir.For)]
        if any(lp.row_chunk > 0 for lp in loops):
            return  # forced chunks: not the planner's choice
        try:
            passed, self.whole = whole_rows_ub(kernel, target, env)
            roomy = dataclasses.replace(target, ub_bytes=2**62)
            low = lower(passed, roomy, dict(env))
        except (FadslError, KeyError, TypeError, ValueError):
            self.whole = None  # no bound (1 chunk), as planned_chunks falls back
            return
        self.floor = whole_rows(low, target)
        self.chunked = whole_rows(low, target, chunked=True)
        reads = [d.result for d in low.sides.dots if d.result in low.sides.to_vector]
        shapes = [low.core_shape(v) for v in reads]
        self.rows = list(dict.fromkeys(s[0] for s in shapes if s))

    def least(self, env: Mapping[str, Any]) -> int:
        from fadsl.errors import FadslError
        from fadsl.plan.resources.footprint_eval import exact

        if not self._ready:
            self._setup(env)
        if self.whole is None or self.floor is None or not self.rows:
            return 1
        try:
            if exact(self.whole, env) <= self.capacity:
                return 1  # the model's own test: it charges one chunk
            if exact(self.floor, env) <= self.capacity:
                return 1  # whole rows may fit the exact plan (and the model's)
            counts = [int(exact(r, env)) for r in self.rows]
        except (FadslError, KeyError, TypeError, ValueError):
            return 1  # a size the formula lacks: no bound
        return max(1, min(self._fewest(rows, env) for rows in counts))

    def least_many(self, envs: list[Mapping[str, Any]]) -> list[int]:
        """``[least(e) for e in envs]``: where the whole-rows formula or floor fits UB
        (tested for all at once) 1, elsewhere ``least``."""
        if envs and not self._ready:
            self._setup(envs[0])  # at the first sizes asked, as ``least`` does
        if self.whole is None or self.floor is None or not self.rows:
            return [1] * len(envs)
        roomy = self._roomy(envs)
        return [1 if ok else self.least(e) for ok, e in zip(roomy, envs)]

    def _roomy(self, envs: list[Mapping[str, Any]]) -> list[bool]:
        """Per env: whether the whole-rows formula or its floor fits UB (False where
        that cannot be told at once: ``least`` decides those)."""
        import numpy as np

        from fadsl.errors import FadslError
        from fadsl.plan.resources.footprint_eval import batch

        formulas = {"whole": self.whole, "floor": self.floor}
        names = {str(x) for f in formulas.values() for x in _free(f)}
        try:
            columns = {n: np.array([e[n] for e in envs]) for n in names}
            if any(c.dtype.kind not in "iu" for c in columns.values()):
                return [False] * len(envs)
            if self._batch is None:
                self._batch = batch(formulas)  # type: ignore[arg-type]
            got = self._batch(columns)
        except (FadslError, KeyError, TypeError, ValueError):
            return [False] * len(envs)
        fits = (np.asarray(got["whole"]) <= self.capacity) | (
            np.asarray(got["floor"]) <= self.capacity
        )
        return [bool(x) for x in np.broadcast_to(fits, (len(envs),))]

    def _fewest(self, rows: int, env: Mapping[str, Any]) -> int:
        """The chunks of the largest candidate chunk whose floor fits UB (of the
        largest candidate when none does: the configuration then does not fit)."""
        from fractions import Fraction

        from fadsl.plan.memory.row_chunk import candidates
        from fadsl.plan.resources.footprint_eval import exact
        from fadsl.plan.search.floor import CHUNK

        found = candidates(rows)
        if not found:
            return 1
        if self.chunked is not None:
            for n in found:
                at = {**env, CHUNK.name: Fraction(n, rows)}
                if exact(self.chunked, at) <= self.capacity:
                    return rows // n
        return rows // found[0]


def _free(e: Any) -> set[Any]:
    return set(getattr(e, "free_symbols", ()))


__all__ = ["LeastChunks"]
