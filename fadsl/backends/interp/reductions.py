"""Impls of row reductions, shape ops and constants: RowMax, RowSum, ExpandDims, Full,
Arange."""

from __future__ import annotations

from typing import Any

import numpy as np

from fadsl.backends.interp.elementwise import tile_dtype
from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.impls import impl
from fadsl.backends.interp.storage import Widened, convert_scalar, round_to, stored
from fadsl.errors import ExecutionError, Loc
from fadsl.ir.nodes import Arange, ExpandDims, Full, RowMax, RowSum
from fadsl.ir.types import DType
from fadsl.numerics import np_dtype

# ----------------------------------------------------------------------------
# Row reductions
# ----------------------------------------------------------------------------


@impl(RowMax)
def _row_max(op: RowMax, fr: Frame) -> Any:
    """Exact in any dtype; NaN propagates; an empty row gives -inf."""
    dtype = tile_dtype(op.x)
    x = fr.f32(op.x)
    if x.shape[-1] == 0:
        return np.full(x.shape[:-1], -np.inf, np_dtype(dtype))
    return stored(np.max(x, axis=-1), dtype)


@impl(RowSum)
def _row_sum(op: RowSum, fr: Frame) -> Any:
    """f32: float32 accumulation (numpy's pairwise sum). f16/bf16: in the tile's dtype.

    The narrow dtypes reduce as a vector unit does: the upper half of the row is added
    to the lower half, each partial sum rounded to the dtype, until one column is left.
    """
    dtype = tile_dtype(op.x)
    x = fr.f32(op.x)
    if dtype is DType.F32:
        return np.add.reduce(x, axis=-1, dtype=np.float32)
    if x.shape[-1] == 0:
        return np.zeros(x.shape[:-1], np_dtype(dtype))
    while x.shape[-1] > 1:
        half = (x.shape[-1] + 1) // 2
        low, high = x[..., :half], x[..., half:]
        if high.shape[-1] < half:
            high = np.concatenate([high, np.zeros_like(low[..., :1])], axis=-1)
        x = round_to(low + high, dtype)
    return stored(x[..., 0], dtype)


# ----------------------------------------------------------------------------
# Shape ops and constants
# ----------------------------------------------------------------------------


@impl(ExpandDims)
def _expand_dims(op: ExpandDims, fr: Frame) -> Any:
    """A view; a widened f16 value stays widened."""
    raw = fr.raw(op.x)
    axis = op.axis + fr.k
    if isinstance(raw, Widened):
        return Widened(np.expand_dims(raw.wide, axis), raw.dtype)
    return np.expand_dims(fr.val(op.x), axis)


def tile_shape(fr: Frame, shape: tuple[Any, ...], loc: Loc) -> tuple[int, ...]:
    dims = tuple(fr.static_int(d, loc, "a tile size") for d in shape)
    if any(d < 0 for d in dims):
        raise ExecutionError(f"negative tile size in {list(dims)}", loc)
    return dims


@impl(Full)
def _full(op: Full, fr: Frame) -> np.ndarray:
    shape = tile_shape(fr, op.shape, op.loc)
    value = convert_scalar(fr.scalar(op.value, op.loc), op.dtype, op.loc)
    if isinstance(value, np.ndarray):
        per_point = value.reshape(value.shape + (1,) * len(shape))
        return np.broadcast_to(per_point, value.shape + shape).copy()
    return np.full((1,) * fr.k + shape, value, np_dtype(op.dtype))


@impl(Arange)
def _arange(op: Arange, fr: Frame) -> np.ndarray:
    start = fr.int_scalar(op.start, op.loc, "the arange start")
    (size,) = tile_shape(fr, (op.size,), op.loc)
    offsets = np.arange(size, dtype=np.int64)
    if isinstance(start, np.ndarray):
        return (start[..., None] + offsets).astype(np.int32)
    return (start + offsets).astype(np.int32).reshape((1,) * fr.k + (size,))
