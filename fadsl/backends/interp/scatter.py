"""Impl of ScatterAdd: f32 sums into an atomic output at positions from index tiles.

The accumulator is the one ``atomics.py`` keeps for every atomically written output
(zero before the grid, rounded to the output's dtype once after it); ``np.add.at``
adds every element, so elements of one tile (and grid points) that hit the same
position all count. Elements whose index is outside the output are skipped: they are
tail positions, whose values are 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fadsl.backends.interp.atomics import LOCK
from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.impls import impl
from fadsl.ir.nodes import ScatterAdd


@impl(ScatterAdd)
def _scatter_add(op: ScatterAdd, fr: Frame) -> None:
    target = fr.machine.sums[op.dst]
    value = np.asarray(fr.val(op.value), np.float32)
    rank = value.ndim - fr.k
    subs = [_subscript(op, fr, d, rank) for d in range(target.ndim)]
    shape = np.broadcast_shapes(value.shape, *(np.shape(s) for s in subs))
    full = [np.broadcast_to(s, shape) for s in subs]
    inside = np.ones(shape, bool)
    for s, n in zip(full, target.shape):
        inside &= (s >= 0) & (s < n)
    index = tuple(s[inside] for s in full)
    with LOCK:
        np.add.at(target, index, np.broadcast_to(value, shape)[inside])


def _subscript(op: ScatterAdd, fr: Frame, d: int, rank: int) -> Any:
    """Dimension d's positions: an index tile, or a scalar shaped to broadcast."""
    if d in op.axes:
        tile = np.asarray(fr.val(op.at[op.axes.index(d)]))
        return np.rint(tile).astype(np.int64)  # f32 after lower_vector: integers
    x = fr.int_scalar(op.index[d], op.loc, "a scatter_add subscript", collapse=False)
    if isinstance(x, np.ndarray):
        return x.reshape(x.shape + (1,) * rank)
    return x
