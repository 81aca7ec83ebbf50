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


def rotate_at(
    x: Any,
    cos: Any,
    sin: Any,
    rows: Any,
    d: Any,
    half: Any,
    interleaved: bool,
    one: bool = False,
) -> Any:
    """``x`` [rows, D] rotated at the table rows ``rows`` (``fd.ds`` of positions, as
    many as ``x`` has rows; with ``one``, a single position for every row); ``cos`` /
    ``sin`` the f32 tables [MaxPos, half]. Returns an f32 [rows, D] tile.

    ``rotate_with`` for a kernel that also runs attention, where L1 queues are scarce
    (each freed buffer holds one of the AIC's 8 MTE1_MTE2 event IDs,
    plan/sync/event_pool.py): the tables are loaded D columns wide (zero past
    ``half``, a column tail) and expanded by a [D, D] matrix, so that the tables and
    ``x`` are cube operands of one shape used one after the other, as are the
    expansion and the pair swap: each pair shares one L1 queue."""
    rotary_dim = 2 * half
    col = fd.arange(0, d)[:, None]
    ones = fd.full((d, 1), 1.0, fd.f32)
    inside = col < rotary_dim
    pair, partner, sign = _pairing(col, ones, half, rotary_dim, interleaved)
    keep = fd.where(
        fd.arange(0, d)[None, :] < rotary_dim, 0.0, fd.full((1, d), 1.0, fd.f32)
    )
    if one:
        cos_full, sin_full = _one_position(cos, sin, rows, d, half, pair, inside)
        cos_full = cos_full + keep
    else:
        cols = fd.ds(0, d, half)
        pick = (pair == fd.arange(0, d)[None, :]) & inside
        expand_t = fd.where(pick, fd.full((d, d), 1.0, fd.f32), 0.0)  # [D, D]
        cos_t = fd.load(cos[rows, cols], pad=0)
        cos_full = fd.dot(cos_t, expand_t, transpose_b=True) + keep
        sin_t = fd.load(sin[rows, cols], pad=0)
        sin_full = fd.dot(sin_t, expand_t, transpose_b=True)
    swap = (fd.arange(0, d)[None, :] == partner) & inside
    swap_t = fd.where(swap, sign + fd.zeros((d, d), fd.f32), 0.0)  # [D, D]
    xf = fd.cast(x, fd.f32)
    return xf * cos_full + fd.dot(xf, swap_t, transpose_b=True) * sin_full


def _one_position(
    cos: Any, sin: Any, rows: Any, d: Any, half: Any, pair: Any, inside: Any
) -> tuple[Any, Any]:
    """The table rows of one position expanded to [1, D] on the vector unit: each
    column's entry picked from the [1, half] row by a [D, half] 0/1 matrix and a row
    sum (exact: one non-zero term). A dot of one row would make 1 a row block that
    the two vector cores of a split chip split (plan/memory/row_split.py)."""
    pick = (pair == fd.arange(0, half)[None, :]) & inside
    expand = fd.where(pick, fd.full((d, half), 1.0, fd.f32), 0.0)  # [D, half]
    cos_row = fd.load(cos[rows, :], pad=0)  # [1, half]
    sin_row = fd.load(sin[rows, :], pad=0)
    cos_full = fd.row_sum(expand * cos_row)[None, :]
    sin_full = fd.row_sum(expand * sin_row)[None, :]
    return cos_full, sin_full


def _pairing(
    col: Any, ones: Any, half: int, rotary_dim: int, interleaved: bool
) -> tuple[Any, Any, Any]:
    """For each column c < rotary_dim: its table column, its partner and the sign of
    the partner's term."""
    if interleaved:
        odd = col % 2
        return col // 2, col + 1 - 2 * odd, fd.where(odd == 0, -ones, ones)
    return col % half, (col + half) % rotary_dim, fd.where(col < half, -ones, ones)
