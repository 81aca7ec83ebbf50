"""Impl of RandomUniform: Philox4x32-10 uniforms per element position (fadsl.rng)."""

from __future__ import annotations

import numpy as np

from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.impls import impl
from fadsl.backends.interp.reductions import tile_shape
from fadsl.ir.nodes import RandomUniform
from fadsl.rng import philox_uniform


def _batched(fr: Frame, x: int | np.ndarray) -> int | np.ndarray:
    """A per-point scalar shaped [*batch, 1, 1] to broadcast against [*batch, r, c]."""
    return x.reshape(x.shape + (1, 1)) if isinstance(x, np.ndarray) else x


@impl(RandomUniform)
def _random_uniform(op: RandomUniform, fr: Frame) -> np.ndarray:
    """The same bits as fadsl::PhiloxUniform: a pure function of key, counter, position."""
    rows, cols = tile_shape(fr, op.shape, op.loc)
    value = {}
    for name in ("seed0", "seed1", "offset", "stream", "row_start", "col_start"):
        value[name] = _batched(fr, fr.int_scalar(getattr(op, name), op.loc, name))
    row = value["row_start"] + np.arange(rows, dtype=np.int64)[:, None]
    col = value["col_start"] + np.arange(cols, dtype=np.int64)[None, :]
    u = philox_uniform(
        value["seed0"], value["seed1"], value["offset"], value["stream"], row, col
    )
    return u if u.ndim == fr.k + 2 else u.reshape((1,) * fr.k + u.shape)
