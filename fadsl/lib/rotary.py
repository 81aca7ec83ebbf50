"""Rotary position embedding of a tile, written in the DSL (``rotary="interleaved" |
"half"`` of ``fd.attention(..., append_kv=True)``; docs/decode.md).

A row ``x`` of head dim ``D`` at position ``p`` becomes, for the first ``rotary_dim``
columns taken in pairs (``(2i, 2i + 1)`` interleaved, GPT-J; ``(i, i + rotary_dim / 2)``
half, GPT-NeoX)::

    out[a] = x[a] * cos[p, i] - x[b] * sin[p, i]
    out[b] = x[b] * cos[p, i] + x[a] * sin[p, i]

and the columns past ``rotary_dim`` unchanged (FlashAttention's ``apply_rotary_emb``).
The vector unit has no column permutation, so the pairing is a product on the cube:
``out = x * C + (x @ W) * S`` with ``W`` the signed pair swap (a 0 / +-1 matrix, exact
in f32) and ``C`` / ``S`` the tables' rows expanded to ``D`` columns by a 0/1 matrix;
both matrices are built from ``fd.arange`` (no extra inputs). Frames in this file count
as user code.

Backends: the interpreter and the generated Ascend C (``fadsl sim``). The two matrices
are vector-made cube operands that both vector cores of a split chip hold whole; each
sends half their rows to the cube (``backends/ascendc/vector_io.py``).
"""

from __future__ import annotations

from typing import Any

import fadsl as fd


def rotate(
    x: Any, cos_t: Any, sin_t: Any, d: Any, rotary_dim: Any, interleaved: bool
) -> Any:
    """``x`` [rows, D] rotated at each row's position; ``cos_t`` / ``sin_t`` are the
    f32 table rows of those positions, [rows, rotary_dim / 2] (or [1, ...] when every
    row sits at one position). Returns an f32 [rows, D] tile."""
    return rotate_with(x, cos_t, sin_t, pairing(d, rotary_dim, interleaved))


def pairing(d: Any, rotary_dim: Any, interleaved: bool) -> tuple[Any, Any, Any]:
    """The matrices of ``rotate_with``: the table expansion [D, R] and the signed pair
    swap [D, D] (both transposed, as B operands), and the row of 1s past rotary_dim.
    Made once per task, they serve every rotation of it."""
    half = rotary_dim // 2
    col = fd.arange(0, d)[:, None]  # output column c, as a row of the B^T matrices
    ones = fd.full((d, 1), 1.0, fd.f32)
    inside = col < rotary_dim
    pair, partner, sign = _pairing(col, ones, half, rotary_dim, interleaved)
    pick = (pair == fd.arange(0, half)[None, :]) & inside
    expand_t = fd.where(pick, fd.full((d, half), 1.0, fd.f32), 0.0)  # [D, R]
    swap = (fd.arange(0, d)[None, :] == partner) & inside
    swap_t = fd.where(swap, sign + fd.zeros((d, d), fd.f32), 0.0)  # [D, D]
    row = fd.arange(0, d)[None, :]
    keep = fd.where(row < rotary_dim, 0.0, fd.full((1, d), 1.0, fd.f32))
    return expand_t, swap_t, keep


def rotate_with(x: Any, cos_t: Any, sin_t: Any, mats: tuple[Any, Any, Any]) -> Any:
    """``rotate`` with the matrices of ``pairing``."""
    expand_t, swap_t, keep = mats
    cos_full = fd.dot(cos_t, expand_t, transpose_b=True) + keep
    sin_full = fd.dot(sin_t, expand_t, transpose_b=True)
    xf = fd.cast(x, fd.f32)
    return xf * cos_full + fd.dot(xf, swap_t, transpose_b=True) * sin_full


def _pairing(
    col: Any, ones: Any, half: int, rotary_dim: int, interleaved: bool
) -> tuple[Any, Any, Any]:
    """For each column c < rotary_dim: its table column, its partner and the sign of
    the partner's term."""
    if interleaved:
        odd = col % 2
        return col // 2, col + 1 - 2 * odd, fd.where(odd == 0, -ones, ones)
    return col % half, (col + half) % rotary_dim, fd.where(col < half, -ones, ones)
