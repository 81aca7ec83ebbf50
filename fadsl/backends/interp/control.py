"""Impls of control flow: Grid (all points at once) and For (sequential, per-point trips).

``Grid`` runs its body once, in a frame whose grid variables are int64 arrays over all
points, never looping over points in Python.

``For`` with bounds that are the same at every point runs each iteration on the whole
batch. When a bound varies (a causal KV loop stops at the diagonal), iteration j runs
only on the points with ``start <= j < stop``: the points are ordered once per loop by
(stop descending, start ascending), so the active points of an iteration are usually a
contiguous run and the iteration's frame is a slice (views, no copies); otherwise it is
gathered. Loop-carried values live in arrays over the loop's points; each iteration
reads its rows and writes its yields back. A point with no trips keeps its inits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fadsl.backends.interp.frame import Frame, Handle, Selection
from fadsl.backends.interp.impls import impl, run_block
from fadsl.errors import ExecutionError, InternalError
from fadsl.ir.nodes import For, Grid


@impl(Grid)
def _grid(op: Grid, fr: Frame) -> None:
    if fr.n != 1 or fr.point_vars:
        raise ExecutionError("a grid must be the outermost loop of the kernel", op.loc)
    extents = [fr.static_int(e, op.loc, "a grid extent") for e in op.extents]
    if any(e < 0 for e in extents):
        raise ExecutionError(f"negative grid extent in {extents}", op.loc)
    total = int(np.prod(extents, dtype=np.int64))
    if total == 0:
        return
    coords = np.indices(extents, dtype=np.int64).reshape(len(extents), total)
    syms = dict(zip(op.vars, coords))
    body = Frame(fr.machine, fr, None, total, syms, tuple(op.vars), fork=True)
    run_block(op.body, body)


@impl(For)
def _for(op: For, fr: Frame) -> None:
    start = fr.int_scalar(op.start, op.loc, "the loop start")
    stop = fr.int_scalar(op.stop, op.loc, "the loop stop")
    inits = [fr.raw(v) for v in op.inits]
    if isinstance(start, int) and isinstance(stop, int):
        results = _uniform_loop(op, fr, start, stop, inits)
    else:
        results = _ragged_loop(op, fr, start, stop, inits)
    for v, r in zip(op.loop_results, results):
        fr.set(v, r)


def _iteration(op: For, fr: Frame, sel: Selection, n: int, j: int, carried: list[Any]) -> Frame:
    it = fr.child(sel, n, {op.var: j}, (op.var,))
    for arg, x in zip(op.iter_args, carried):
        it.set(arg, x)
    run_block(op.body, it)
    return it


def _uniform_loop(op: For, fr: Frame, start: int, stop: int, carried: list[Any]) -> list[Any]:
    trips = max(0, stop - start)
    stats = fr.machine.stats(op.var)
    stats.executed += trips * fr.n
    stats.rectangle += trips * fr.n
    for j in range(start, stop):
        it = _iteration(op, fr, None, fr.n, j, carried)
        carried = [it.raw(y) for y in op.yields]
    return carried


def _ragged_loop(
    op: For, fr: Frame, start: int | np.ndarray, stop: int | np.ndarray, inits: list[Any]
) -> list[Any]:
    n = fr.n
    starts = np.broadcast_to(np.asarray(start, np.int64), (n,))
    stops = np.broadcast_to(np.asarray(stop, np.int64), (n,))
    lo, hi = int(starts.min()), int(stops.max())
    stats = fr.machine.stats(op.var)
    stats.executed += int(np.maximum(stops - starts, 0).sum())
    stats.rectangle += n * max(0, hi - lo)
    order = np.lexsort((starts, -stops))
    identity = bool((order == np.arange(n)).all())
    base = fr if identity else fr.child(order, n)
    if not identity:
        starts, stops = starts[order], stops[order]
    state = [_Carried.of(x if identity else _take_all(x, order), n) for x in inits]
    for j in range(lo, hi):
        active = np.flatnonzero((starts <= j) & (j < stops))
        if active.size == 0:
            continue
        sel = _contiguous(active, n)
        it = _iteration(op, base, sel, active.size, j, [c.rows(sel) for c in state])
        ys = [it.raw(y) for y in op.yields]
        it.close()
        ys = [_unshared(y, state) for y in ys]
        for c, y in zip(state, ys):
            c.write(sel, y)
    if identity:
        return [c.final() for c in state]
    base.close()
    return [c.final(order) for c in state]


def _contiguous(active: np.ndarray, n: int) -> Selection:
    first, last = int(active[0]), int(active[-1])
    if last - first + 1 != active.size:
        return active
    if first == 0 and last == n - 1:
        return None
    return slice(first, last + 1)


def _take_all(x: Any, order: np.ndarray) -> Any:
    if isinstance(x, np.ndarray) and x.shape[0] > 1:
        return x[order]
    if isinstance(x, Handle) and isinstance(x.slot, np.ndarray):
        return Handle(x.queue, x.slot[order])
    return x


def _unshared(y: Any, state: list[_Carried]) -> Any:
    """A copy of ``y`` if it is a view of carried state (yields that swap values)."""
    if isinstance(y, np.ndarray) and any(np.may_share_memory(y, c.data) for c in state):
        return y.copy()
    return y


@dataclass
class _Carried:
    """A loop-carried value for every point of a ragged loop (in the loop's order)."""

    data: np.ndarray
    """[n, *tile] values, or [n] slot indices of a queue tensor."""
    handle_of: Any = None
    """The QueueRef when the carried value is a queue tensor."""

    @staticmethod
    def of(x: Any, n: int) -> _Carried:
        if isinstance(x, np.ndarray):
            return _Carried(np.array(np.broadcast_to(x, (n,) + x.shape[1:])))
        if isinstance(x, Handle):
            return _Carried(np.array(np.broadcast_to(x.slot, (n,)), np.int64), x.queue)
        raise InternalError(f"cannot carry {type(x).__name__} through a loop")

    def rows(self, sel: Selection) -> Any:
        data = self.data if sel is None else self.data[sel]
        return data if self.handle_of is None else Handle(self.handle_of, data)

    def write(self, sel: Selection, y: Any) -> None:
        key = slice(None) if sel is None else sel
        if self.handle_of is None:
            self.data[key] = y
            return
        if not isinstance(y, Handle) or y.queue.key is not self.handle_of.key:
            raise InternalError("a loop-carried queue tensor changed queue")
        self.data[key] = y.slot

    def final(self, order: np.ndarray | None = None) -> Any:
        data = self.data
        if order is not None:
            data = np.empty_like(data)
            data[order] = self.data
        if self.handle_of is None:
            return data
        return Handle(self.handle_of, data)
