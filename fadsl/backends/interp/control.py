"""Impls of control flow: Grid (all points at once) and For (sequential, per-point trips).

``Grid`` runs its body once, in a frame with one batch axis per grid dimension whose
grid variables are int64 arrays (``b`` is ``[B, 1, 1]``): no Python loop over points.

``For`` with bounds that are the same at every point runs each iteration on the whole
batch. When a bound varies (a causal KV loop stops at the diagonal), iteration j runs
only on the points with ``start <= j < stop``. If the bounds vary along one batch axis
(the Q-block axis for causal attention), the loop orders that axis once by (stop
descending, start ascending), so each iteration's active points are a contiguous run
of it and the iteration's frame is a view (stops that already ascend with one start,
as for causal Q blocks, need no reordering: the running points are a suffix); bounds
whose expressions span several axes flatten the batch into one axis first, even where
their values agree (``_bounds``: the layout must not depend on which points a thread's
chunk holds). When every point starts at the same j (causal), the
running points are a prefix that only shrinks: carried values are the previous
iteration's yields, and a point's rows are copied out once, when it stops. Otherwise
carried values live in arrays over all points; an iteration reads its rows and writes
its yields back. A point with no trips keeps its inits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from fadsl.backends.interp.batch import Along, Flat, Fork, Transform
from fadsl.backends.interp import threads
from fadsl.backends.interp.finals import adopt, prefix, retire, span
from fadsl.backends.interp.frame import Frame, agreed, take
from fadsl.backends.interp.machine import Machine
from fadsl.backends.interp.slots import Handle
from fadsl.backends.interp.storage import Widened
from fadsl.backends.interp.impls import impl, run_block
from fadsl.errors import ExecutionError, InternalError
from fadsl.ir.nodes import For, Grid


@impl(Grid)
def _grid(op: Grid, fr: Frame) -> None:
    if fr.k or fr.point_vars:
        raise ExecutionError("a grid must be the outermost loop of the kernel", op.loc)
    extents = tuple(fr.static_int(e, op.loc, "a grid extent") for e in op.extents)
    if any(e < 0 for e in extents):
        raise ExecutionError(f"negative grid extent in {list(extents)}", op.loc)
    if 0 in extents:
        return
    chunks = threads.split(extents, fr.machine.threads)
    if chunks is None:
        _grid_part(op, fr, fr.machine, extents, None)
        return
    axis, ranges = chunks
    machines = [fr.machine.for_chunk() for _ in ranges]
    threads.run_all(
        [
            partial(_grid_part, op, fr, m, extents, (axis, r))
            for m, r in zip(machines, ranges)
        ]
    )
    for m in machines:
        fr.machine.absorb(m)


def _grid_part(
    op: Grid,
    fr: Frame,
    machine: Machine,
    extents: tuple[int, ...],
    part: tuple[int, range] | None,
) -> None:
    """Run the grid body on every point, or on ``part``: a range along one axis."""
    k = len(extents)
    coords = [range(e) for e in extents]
    if part is not None:
        coords[part[0]] = part[1]
    syms = {
        var: np.arange(c.start, c.stop, dtype=np.int64).reshape(
            (1,) * a + (len(c),) + (1,) * (k - a - 1)
        )
        for a, (var, c) in enumerate(zip(op.vars, coords))
    }
    bshape = tuple(len(c) for c in coords)
    body = Frame(machine, fr, Fork(k), bshape, syms, tuple(op.vars))
    run_block(op.body, body)


@impl(For)
def _for(op: For, fr: Frame) -> None:
    start, stop = _bounds(op, fr)
    inits = [fr.raw(v) for v in op.inits]
    if isinstance(start, int) and isinstance(stop, int):
        results = _uniform_loop(op, fr, start, stop, inits)
    else:
        results = _ragged_loop(op, fr, start, stop, inits)
    for v, r in zip(op.loop_results, results):
        fr.set(v, r)


def _bounds(op: For, fr: Frame) -> tuple[int | np.ndarray, int | np.ndarray]:
    """The loop's start and stop: Python ints where every point agrees, except when
    the bounds span several batch axes (their expressions depend on two grid
    variables): such a loop always runs flattened, whatever the values.

    The layout decides which Q blocks share a matmul (``cube._folded_matmul`` folds
    the last grid axis, a flattened loop folds nothing), and a row's bits depend on
    that. A chunk of the grid (``threads.split``) whose points happen to agree on the
    bounds must lay the loop out as the whole grid does: with the same bound
    expressions, the axes they span are the same in every chunk (each keeps two
    points of the split axis), while whether their values agree is not.
    """
    start = fr.int_scalar(op.start, op.loc, "the loop start", collapse=False)
    stop = fr.int_scalar(op.stop, op.loc, "the loop stop", collapse=False)
    if len(_varying_axes(fr, start, stop)) > 1:
        return start, stop
    return (
        agreed(start) if isinstance(start, np.ndarray) else start,
        agreed(stop) if isinstance(stop, np.ndarray) else stop,
    )


def _varying_axes(
    fr: Frame, start: int | np.ndarray, stop: int | np.ndarray
) -> list[int]:
    """The batch axes that the bounds' arrays span."""
    return [
        a
        for a in range(fr.k)
        if any(isinstance(x, np.ndarray) and x.shape[a] > 1 for x in (start, stop))
    ]


def _iteration(
    op: For,
    fr: Frame,
    tr: Transform,
    bshape: tuple[int, ...],
    j: int,
    carried: list[Any],
    collectors: Sequence[np.ndarray | None] = (),
) -> Frame:
    """Run iteration ``j``; ``carried`` is consumed (emptied), so the iteration is the
    only owner of its iter_args and may reuse their memory once they are dead (or
    shares them only with ``collectors``, see ``finals.adopt``)."""
    it = fr.child(tr, bshape, {op.var: j}, (op.var,))
    it.path = fr.path + ((id(op), j),)
    it.collectors = collectors
    for arg, x in zip(op.iter_args, carried):
        it.set(arg, x)
    carried.clear()
    run_block(op.body, it, op.yields, op.iter_args)
    return it


def _uniform_loop(
    op: For, fr: Frame, start: int, stop: int, carried: list[Any]
) -> list[Any]:
    points = int(np.prod(fr.bshape, dtype=np.int64))
    trips = max(0, stop - start)
    fr.machine.count_trips(op, fr.path, points, trips * points, start, stop)
    for j in range(start, stop):
        it = _iteration(op, fr, None, fr.bshape, j, carried)
        carried = [it.raw(y) for y in op.yields]
        del it  # the next iteration must own its iter_args alone
    return carried


def _ragged_loop(
    op: For,
    fr: Frame,
    start: int | np.ndarray,
    stop: int | np.ndarray,
    inits: list[Any],
) -> list[Any]:
    starts = np.broadcast_to(start, fr.bshape)
    stops = np.broadcast_to(stop, fr.bshape)
    lo, hi = int(starts.min()), int(stops.max())
    executed = int(np.maximum(stops - starts, 0).sum())
    fr.machine.count_trips(op, fr.path, starts.size, executed, lo, hi)
    base, axis, starts1, stops1 = _loop_layout(fr, start, stop)
    reorder = None if base is fr else base.tr
    inits = [take(x, reorder) for x in inits]
    if isinstance(start, int) and not any(isinstance(x, Handle) for x in inits):
        tail = bool(stops1.size) and stops1[-1] > stops1[0]  # ascending: a suffix runs
        results = _shrinking_loop(op, base, axis, lo, hi, stops1, inits, tail)
    else:
        results = _selected_loop(op, base, axis, lo, hi, starts1, stops1, inits)
    if base is not fr:
        base.close()
    return [_unordered(x, reorder, fr.bshape) for x in results]


def _shrinking_loop(
    op: For,
    base: Frame,
    axis: int,
    lo: int,
    hi: int,
    stops1: np.ndarray,
    carried: list[Any],
    tail: bool = False,
) -> list[Any]:
    """Every point starts at ``lo``: ordered by stop (descending; ascending when
    ``tail``), the points still running are a prefix (a suffix) of the axis that only
    shrinks. Iteration j runs on those points (a view); the rows of points that stop
    are copied out once, when they stop."""
    n = stops1.size
    carried = [x.narrow() if isinstance(x, Widened) else x for x in carried]
    finals: list[np.ndarray | None] = [None] * len(carried)
    rows = n
    for j in range(lo, hi):
        running = int(np.count_nonzero(stops1 > j))
        if running < rows:
            retire(
                finals,
                carried,
                axis,
                span(running, rows, n, tail),
                n - rows if tail else 0,
                base.bshape,
            )
            rows = running
        if running == 0:
            break
        first = n - running if tail else 0
        tr = None if running == n else Along(axis, slice(first, first + running))
        bshape = base.bshape[:axis] + (running,) + base.bshape[axis + 1 :]
        args = [prefix(x, axis, running, tail) for x in carried]
        carried = []  # the running rows (views) are then the only users of the arrays
        it = _iteration(op, base, tr, bshape, j, args, finals)
        carried = [it.raw(y) for y in op.yields]
        carried = [x.narrow() if isinstance(x, Widened) else x for x in carried]
        it.close()
        del it
        if running == n:
            adopt(finals, carried, base.bshape)
    retire(
        finals,
        carried,
        axis,
        span(0, rows, n, tail),
        n - rows if tail else 0,
        base.bshape,
    )
    return finals


def _selected_loop(
    op: For,
    base: Frame,
    axis: int,
    lo: int,
    hi: int,
    starts1: np.ndarray,
    stops1: np.ndarray,
    inits: list[Any],
) -> list[Any]:
    """Any bounds: iteration j runs on the points with start <= j < stop (a slice of the
    axis when they are contiguous, else a gather); carried values live in arrays over
    all points and each iteration writes its rows back."""
    state = [_Carried.of(x, base) for x in inits]
    for j in range(lo, hi):
        active = np.flatnonzero((starts1 <= j) & (j < stops1))
        if active.size == 0:
            continue
        tr = _selection(axis, active, starts1.size)
        bshape = base.bshape[:axis] + (active.size,) + base.bshape[axis + 1 :]
        it = _iteration(op, base, tr, bshape, j, [c.rows(tr) for c in state])
        ys = [it.raw(y) for y in op.yields]
        it.close()
        ys = [_unshared(y, state) for y in ys]
        for c, y in zip(state, ys):
            c.write(tr, y)
    return [c.final() for c in state]


def _unordered(x: Any, tr: Transform, bshape: tuple[int, ...]) -> Any:
    """A loop result in the layout of the loop's frame (undoing the loop's ordering)."""
    if isinstance(x, Handle):
        return Handle(x.queue, _unordered(x.slot, tr, bshape))
    if isinstance(tr, Along):
        out = np.empty_like(x)
        tr.put(out, x)
        return out
    if isinstance(tr, Flat):
        out = np.empty(bshape + x.shape[1:], x.dtype)
        tr.put(out, x)
        return out
    return x


def _loop_layout(
    fr: Frame, start: int | np.ndarray, stop: int | np.ndarray
) -> tuple[Frame, int, np.ndarray, np.ndarray]:
    """The frame the loop runs its iterations from, the axis they select along, and the
    per-position bounds along it (ordered so active positions are mostly contiguous)."""
    varying = _varying_axes(fr, start, stop)
    if len(varying) == 1:
        axis = varying[0]
        line = tuple(fr.bshape[axis] if a == axis else 1 for a in range(fr.k))
        starts1 = np.broadcast_to(start, line).reshape(-1)
        stops1 = np.broadcast_to(stop, line).reshape(-1)
        order = np.lexsort((starts1, -stops1))
        if (order == np.arange(order.size)).all() or _ascending(starts1, stops1):
            return fr, axis, starts1, stops1
        base = fr.child(Along(axis, order), fr.bshape)
        return base, axis, starts1[order], stops1[order]
    starts1 = np.broadcast_to(start, fr.bshape).reshape(-1)
    stops1 = np.broadcast_to(stop, fr.bshape).reshape(-1)
    order = np.lexsort((starts1, -stops1))
    coords = tuple(c.astype(np.int64) for c in np.unravel_index(order, fr.bshape))
    base = fr.child(Flat(coords), (order.size,))
    return base, 0, starts1[order], stops1[order]


def _ascending(starts1: np.ndarray, stops1: np.ndarray) -> bool:
    """One start and stops that never decrease (causal Q blocks): the running points
    are a suffix of the axis, so the loop needs no reordering."""
    return bool((starts1 == starts1[0]).all() and (np.diff(stops1) >= 0).all())


def _selection(axis: int, active: np.ndarray, size: int) -> Along | None:
    first, last = int(active[0]), int(active[-1])
    if last - first + 1 != active.size:
        return Along(axis, active)
    if first == 0 and last == size - 1:
        return None
    return Along(axis, slice(first, last + 1))


def _unshared(y: Any, state: list[_Carried]) -> Any:
    """A copy of ``y`` if it is a view of carried state (yields that swap values)."""
    if isinstance(y, np.ndarray) and any(np.may_share_memory(y, c.data) for c in state):
        return y.copy()
    return y


@dataclass
class _Carried:
    """A loop-carried value for every point of a ragged loop (in the loop's layout)."""

    data: np.ndarray
    """[*batch, *tile] values, or [*batch] slot indices of a queue tensor."""
    queue: Any = None
    """The QueueRef when the carried value is a queue tensor."""

    @staticmethod
    def of(x: Any, base: Frame) -> _Carried:
        if isinstance(x, Widened):
            x = x.narrow()
        if isinstance(x, np.ndarray):
            return _Carried(
                np.array(np.broadcast_to(x, base.bshape + x.shape[base.k :]))
            )
        if isinstance(x, Handle):
            return _Carried(
                np.array(np.broadcast_to(x.slot, base.bshape), np.int64), x.queue
            )
        raise InternalError(f"cannot carry {type(x).__name__} through a loop")

    def rows(self, tr: Along | None) -> Any:
        data = self.data if tr is None else self.data[_key(tr)]
        return data if self.queue is None else Handle(self.queue, data)

    def write(self, tr: Along | None, y: Any) -> None:
        key = (Ellipsis,) if tr is None else _key(tr)
        if self.queue is None:
            self.data[key] = y
            return
        if not isinstance(y, Handle) or y.queue.key is not self.queue.key:
            raise InternalError("a loop-carried queue tensor changed queue")
        self.data[key] = y.slot

    def final(self) -> Any:
        return self.data if self.queue is None else Handle(self.queue, self.data)


def _key(tr: Along) -> tuple[Any, ...]:
    return (slice(None),) * tr.axis + (tr.sel,)
