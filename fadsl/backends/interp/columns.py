"""Impl of TakeColumns: columns of a tile picked by an index vector, range-checked."""

from __future__ import annotations

import numpy as np

from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.impls import impl
from fadsl.errors import ExecutionError
from fadsl.ir.nodes import TakeColumns


@impl(TakeColumns)
def _take_columns(op: TakeColumns, fr: Frame) -> np.ndarray:
    x = np.asarray(fr.val(op.x))
    cols = np.asarray(fr.val(op.cols))
    idx = cols.astype(np.int64)
    width = x.shape[-1]
    bad = (idx < 0) | (idx >= width) | (idx != cols)
    if bad.any():
        at = bad.reshape(bad.shape[: fr.k] + (-1,)).any(axis=-1)
        raise ExecutionError(
            f"a column index {cols[bad].flat[0]!r} is outside the {width} columns of "
            f"the tile it picks from, at {fr.describe(at)}",
            op.loc,
            hint="build the index from fd.arange(0, C) with + - * // % so that every "
            "entry is an integer in [0, C)",
            code="gather_index_out_of_range",
        )
    k = fr.k
    if all(n == 1 for n in idx.shape[:k]):  # one index vector for every point
        return np.take(x, idx.reshape(-1), axis=-1)
    batch = np.broadcast_shapes(x.shape[:k], idx.shape[:k])
    xb = np.broadcast_to(x, batch + x.shape[k:])
    ib = np.broadcast_to(idx[..., None, :], batch + (x.shape[-2], idx.shape[-1]))
    return np.take_along_axis(xb, ib, axis=-1)
