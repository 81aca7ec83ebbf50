"""Impls of global-memory access: Load, Store, LoadScalar.

Indices are evaluated per grid point. A point index outside ``[0, extent)``, or a
non-empty slice whose start is outside ``[0, extent)`` (a whole block out of range), is
an out-of-bounds access and raises ExecutionError naming the parameter, the dimension,
the value, the extent and one offending point. Slice positions past the extent are a
tail: loads fill them with ``pad`` (NaN, or the integer poison, when it is None) and
stores skip them. When several points store to the same position, the last point of
the batch wins (a race between cores; the kernel is wrong).

A block is gathered with one numpy indexing expression on the parameter with its dims
reordered (points, then slices whose start varies per point, then slices whose start is
the same everywhere): per-point indices become broadcast index arrays, uniform slices
stay basic slices, and a fully uniform block is a view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.impls import impl
from fadsl.backends.interp.queues import write_slot
from fadsl.backends.interp.storage import convert_scalar, nan_of
from fadsl.errors import ExecutionError, Loc
from fadsl.ir.expr_print import to_text
from fadsl.ir.nodes import (
    Index,
    Load,
    LoadScalar,
    Param,
    ParamKind,
    Point,
    Store,
    viewed,
)
from fadsl.ir.types import DType, TensorType


@dataclass
class GmBlock:
    """The positions one Load or Store touches, for every point of a frame."""

    order: tuple[int, ...]
    """Dims of the parameter in indexing order: points, varying slices, uniform slices."""
    index: tuple[Any, ...]
    """numpy index into ``param.transpose(order)``."""
    k: int
    """Batch axes of the frame."""
    batched: bool
    """The index has per-point arrays, so the indexed block starts with batch axes."""
    to_tile: tuple[int, ...]
    """Axes of the indexed block (batch first) in the tile's dim order."""
    vsizes: tuple[int, ...]
    """Sizes of the varying slices."""
    cut: tuple[tuple[int, int], ...]
    """(size, size inside the extent) of every uniform slice."""
    valid: np.ndarray | None
    """Where varying slices have a tail: [*batch, *vsizes] mask of positions inside."""


def _gm(
    fr: Frame, name: str, view: Any = None, loc: Loc | None = None
) -> tuple[Param, np.ndarray]:
    """The parameter and its array, both seen with ``view`` (a load's or store's)."""
    arr = fr.machine.gm[name]
    if view is None:
        return fr.machine.params[name], arr
    return viewed(fr.machine.params[name], view), arr.reshape(
        tuple(fr.static_int(d, loc, "a view dimension") for d in view)  # type: ignore[arg-type]
    )


def _check_range(
    fr: Frame,
    x: int | np.ndarray,
    p: Param,
    dim: int,
    what: str,
    access: str,
    loc: Loc,
    extent: int | None = None,
) -> None:
    if extent is None:
        extent = fr.machine.gm[p.name].shape[dim]
    if isinstance(x, int):
        if 0 <= x < extent:
            return
    elif x.size == 0 or (int(x.min()) >= 0 and int(x.max()) < extent):
        return
    bad = (np.asarray(x) < 0) | (np.asarray(x) >= extent)
    value = int(np.asarray(x).flat[int(np.argmax(bad))])
    assert isinstance(p.type, TensorType)
    dim_name = to_text(p.type.shape[dim])
    raise ExecutionError(
        f"out-of-bounds {access} of `{p.name}`: {what} {value} in dimension {dim} "
        f"({dim_name}) is outside [0, {extent}) at {fr.describe(bad)}",
        loc,
        hint=(
            "blocks must start inside the tensor (a tail past the end is fine); "
            "bound the loop with cdiv(extent, block)"
            if what == "block start"
            else "check the index expression against the tensor's shape"
        ),
    )


def plan_block(
    fr: Frame,
    p: Param,
    index: tuple[Index, ...],
    access: str,
    loc: Loc,
    shape: tuple[int, ...] | None = None,
) -> GmBlock:
    """``shape``: the dims ``index`` indexes (a view's), by default the array's."""
    if shape is None:
        shape = fr.machine.gm[p.name].shape
    points: list[tuple[int, Any]] = []
    varying: list[tuple[int, np.ndarray, int]] = []
    uniform: list[tuple[int, int, int]] = []
    for dim, ix in enumerate(index):
        if isinstance(ix, Point):
            at = fr.int_scalar(ix.at, loc, "an index")
            _check_range(fr, at, p, dim, "index", access, loc, shape[dim])
            points.append((dim, at))
            continue
        start = fr.int_scalar(ix.start, loc, "a block start")
        size = fr.static_int(ix.size, loc, "a block size")
        limit: int | np.ndarray = shape[dim]
        bound = ix.stop
        if bound is not None:
            start, limit = _bounded(fr, bound, start, shape[dim], loc)
        if size > 0:
            first = start if bound is None else np.where(start < limit, start, 0)
            _check_range(fr, first, p, dim, "block start", access, loc, shape[dim])
        if isinstance(start, np.ndarray):
            varying.append((dim, start, size, limit))
        else:
            uniform.append((dim, start, size, int(limit)))
    kv = len(varying)
    idx: list[Any] = []
    batched = False
    for _, at in points:
        if isinstance(at, np.ndarray):
            idx.append(at.reshape(at.shape + (1,) * kv))
            batched = True
        else:
            idx.append(at)
    valid = None
    for t, (dim, start, size, limit) in enumerate(varying):
        tail = [1] * kv
        tail[t] = size
        rows = (start[..., None] + np.arange(size)).reshape(start.shape + tuple(tail))
        if int(start.max()) + size > int(np.min(limit)):
            bound = np.reshape(limit, np.shape(limit) + (1,) * kv)
            inside = rows < bound
            valid = inside if valid is None else valid & inside
            rows = np.clip(rows, 0, shape[dim] - 1)
        idx.append(rows)
        batched = True
    cut = []
    for dim, start, size, limit in uniform:
        stop = min(start + size, limit)
        kept = max(stop - start, 0)
        idx.append(slice(start, start + kept) if kept else slice(0, 0))
        cut.append((size, kept))
    order = tuple(d for d, _ in points) + tuple(d for d, _, _, _ in varying)
    order += tuple(d for d, _, _, _ in uniform)
    sliced = [d for d, _, _, _ in varying] + [d for d, _, _, _ in uniform]
    k = fr.k
    to_tile = tuple(range(k)) + tuple(k + sliced.index(d) for d in sorted(sliced))
    vsizes = tuple(size for _, _, size, _ in varying)
    if valid is not None:
        arrays = [ix for ix in idx if isinstance(ix, np.ndarray)]
        valid = np.broadcast_to(valid, np.broadcast_shapes(*(a.shape for a in arrays)))
    return GmBlock(order, tuple(idx), k, batched, to_tile, vsizes, tuple(cut), valid)


def _bounded(
    fr: Frame, stop: Any, start: int | np.ndarray, extent: int, loc: Loc
) -> tuple[int | np.ndarray, int | np.ndarray]:
    """(start, limit) of a bounded block: positions below ``min(extent, stop)`` exist.
    A per-point bound makes the start per point too (one array shape for both)."""
    bound = fr.int_scalar(stop, loc, "a block bound")
    limit = np.minimum(bound, extent)
    if not isinstance(limit, np.ndarray):
        return start, int(limit)
    shape = np.broadcast_shapes(np.shape(start), limit.shape)
    return np.broadcast_to(start, shape).astype(np.int64), np.broadcast_to(limit, shape)


def transposed(arr: np.ndarray, order: tuple[int, ...]) -> np.ndarray:
    return arr if order == tuple(range(arr.ndim)) else arr.transpose(order)


def _gather(arr: np.ndarray, block: GmBlock, fill: Any) -> np.ndarray:
    data = transposed(arr, block.order)[block.index]
    if not block.batched:
        data = data.reshape((1,) * block.k + data.shape)
    lead = block.k + len(block.vsizes)
    if any(size != kept for size, kept in block.cut):
        full = tuple(size for size, _ in block.cut)
        padded = np.full(data.shape[:lead] + full, fill, data.dtype)
        padded[
            (slice(None),) * lead + tuple(slice(0, kept) for _, kept in block.cut)
        ] = data
        data = padded
    if block.valid is not None:
        data[~block.valid] = fill
    if block.to_tile != tuple(range(data.ndim)):
        data = np.ascontiguousarray(data.transpose(block.to_tile))
    return data


def in_block_order(block: GmBlock, value: np.ndarray) -> np.ndarray:
    """A tile's data in the block's index order, uniform tails cut (what is written)."""
    inverse = tuple(int(i) for i in np.argsort(block.to_tile))
    value = value.transpose(inverse)
    lead = block.k + len(block.vsizes)
    return value[(slice(None),) * lead + tuple(slice(0, kept) for _, kept in block.cut)]


def _scatter(arr: np.ndarray, block: GmBlock, value: np.ndarray) -> None:
    value = in_block_order(block, value)
    lead = block.k + len(block.vsizes)
    target = transposed(arr, block.order)
    arrays = [ix for ix in block.index if isinstance(ix, np.ndarray)]
    bshape = (
        np.broadcast_shapes(*(a.shape[: block.k] for a in arrays)) if arrays else ()
    )
    bshape = bshape or (1,) * block.k
    value = _last_writer(value, bshape)
    if not block.batched:
        target[block.index] = value.reshape(value.shape[block.k :])
        return
    value = np.broadcast_to(value, bshape + value.shape[block.k :])
    if block.valid is None:
        target[block.index] = value
        return
    valid = block.valid
    advanced = [
        np.broadcast_to(ix, valid.shape)[valid] if isinstance(ix, np.ndarray) else ix
        for ix in block.index
        if not isinstance(ix, slice)
    ]
    slices = [ix for ix in block.index if isinstance(ix, slice)]
    target[tuple(advanced + slices)] = np.broadcast_to(
        value, valid.shape + value.shape[lead:]
    )[valid]


def _last_writer(value: np.ndarray, bshape: tuple[int, ...]) -> np.ndarray:
    """Where several points write one position (index size 1), the last point's value."""
    for axis, size in enumerate(bshape):
        if size == 1 and value.shape[axis] > 1:
            value = value[(slice(None),) * axis + (slice(-1, None),)]
    return value


def _fill(fr: Frame, op: Load, dtype: DType) -> Any:
    if op.pad is None:
        return nan_of(dtype)
    value = convert_scalar(fr.scalar(op.pad, op.loc), dtype, op.loc)
    if isinstance(value, np.ndarray):
        raise ExecutionError("the pad value differs between grid points", op.loc)
    return value


@impl(Load)
def _load(op: Load, fr: Frame) -> Any:
    """Gather a block per point; an input block whose indices are uniform is a view."""
    p, arr = _gm(fr, op.src, op.view, op.loc)
    assert isinstance(p.type, TensorType)
    dtype = p.type.dtype
    block = plan_block(fr, p, op.index, "read", op.loc, arr.shape)
    fill = _fill(fr, op, dtype)
    data = _gather(arr, block, fill)
    if op.into is not None:
        return write_slot(fr, op.into, data, op.loc)
    if p.kind is not ParamKind.IN:
        return data.copy() if np.shares_memory(data, arr) else data
    if dtype.is_float and dtype is not DType.F32 and fr.path:
        # In a loop, blocks of the input are read again and again: gather float32
        # blocks from one float32 copy of it. Outside loops (a Q tile) each block is
        # read once, and widening the gathered block costs the same without holding a
        # float32 copy of the whole input (16 MB for FA2's q at S=4096, N=8).
        machine, name, fill32 = fr.machine, op.src, np.float32(fill)
        fr.set_recipe(
            op.result,
            lambda: _gather(machine.gm_f32(name).reshape(arr.shape), block, fill32),
        )
    return data


@impl(Store)
def _store(op: Store, fr: Frame) -> None:
    p, arr = _gm(fr, op.dst, op.view, op.loc)
    block = plan_block(fr, p, op.index, "write", op.loc, arr.shape)
    _scatter(arr, block, fr.val(op.value))


@impl(LoadScalar)
def _load_scalar(op: LoadScalar, fr: Frame) -> None:
    """Bind symbol ``op.name`` to a number (uniform) or an array per point: int64 for
    integer tensors, float64 holding the f32 value for f32 ones."""
    p, arr = _gm(fr, op.src)
    idx = []
    for dim, e in enumerate(op.index):
        at = fr.int_scalar(e, op.loc, "an index")
        _check_range(fr, at, p, dim, "index", "read", op.loc)
        idx.append(at)
    value = arr[tuple(idx)]
    kind = np.float64 if value.dtype.kind == "f" else np.int64
    if isinstance(value, np.ndarray) and value.ndim and value.size > 1:
        fr.define(op.name, value.astype(kind))
    else:
        fr.define(op.name, kind(np.asarray(value).reshape(-1)[0]).item())
