"""Rotary position embedding of a tile, written in the DSL (``rotary="interleaved" |
"half"`` of ``fd.attention(..., append_kv=True)``; docs/decode.md).

A row ``x`` of head dim ``D`` at position ``p`` becomes, for the first ``rotary_dim``
columns taken in pairs (``(2i, 2i + 1)`` interleaved, GPT-J; ``(i, i + rotary_dim / 2)``
half, GPT-NeoX)::

    out[a] = x[a] * cos[p, i] - x[b] * sin[p, i]
    out[b] = x[b] * cos[p, i] + x[a] * sin[p, i]

and the columns past ``rotary_dim`` unchanged (FlashAttention's ``apply_rotary_emb``).
Both pairings are column maps of a tile (``take_columns``, the vector unit's
``Gather`` from UB, one row at a time): ``out = x * C + x[:, partner] * S`` with
``C`` / ``S`` the tables' rows picked to ``D`` columns (``cos[p, pair(c)]``, 1 past
``rotary_dim``; ``sign(c) * sin[p, pair(c)]``, 0 past it). The column maps are [D]
index vectors made by ``fd.arange``: no extra inputs, no cube, no [D, D] matrix
(which at D = 128 overflowed 910B's UB, E31). Every product is exact but the final
``x * C + x' * S`` in f32, as before. Frames in this file count as user code.
"""

from __future__ import annotations

from typing import Any

import fadsl as fd
from fadsl.frontend.tile_columns import take_columns


def rotate(
    x: Any, cos_t: Any, sin_t: Any, d: Any, rotary_dim: Any, interleaved: bool
) -> Any:
    """``x`` [rows, D] rotated at each row's position; ``cos_t`` / ``sin_t`` are the
    f32 table rows of those positions, [rows, rotary_dim / 2] (or [1, ...] when every
    row sits at one position). Returns an f32 [rows, D] tile."""
    pair, partner, cmul, cadd, smul = column_maps(d, rotary_dim // 2, interleaved)
    cos_full = take_columns(cos_t, pair) * cmul[None, :] + cadd[None, :]
    sin_full = take_columns(sin_t, pair) * smul[None, :]
    xf = fd.cast(x, fd.f32)
    return xf * cos_full + take_columns(xf, partner) * sin_full


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
    ``sin`` the f32 tables [MaxPos, half]. Returns an f32 [rows, D] tile. Rows past
    the tables' end read 0 (the new tokens' tail rows, never stored or seen)."""
    cos_t = fd.load(cos[rows, :], pad=0)  # [rows, half], or [1, half] with one
    sin_t = fd.load(sin[rows, :], pad=0)
    return rotate(x, cos_t, sin_t, d, 2 * half, interleaved)


def column_maps(d: Any, half: Any, interleaved: bool) -> tuple[Any, ...]:
    """The [D] vectors of ``rotate``: each column's table column and partner (itself
    past rotary_dim), and the f32 factors of the picked cos (1 inside, 0 past), the
    cos addend (0 inside, 1 past) and the picked sin (the partner term's sign inside,
    0 past)."""
    rotary_dim = 2 * half
    col = fd.arange(0, d)
    ones = fd.full((d,), 1.0, fd.f32)
    inside = col < rotary_dim
    if interleaved:
        odd = col % 2
        pair, partner = col // 2, col + 1 - 2 * odd
        sign = fd.where(odd == 0, -ones, ones)
    else:
        pair, partner = col % half, (col + half) % rotary_dim
        sign = fd.where(col < half, -ones, ones)
    pair = fd.where(inside, pair, 0)
    partner = fd.where(inside, partner, col)
    cmul = fd.where(inside, ones, 0.0)
    cadd = fd.where(inside, 0.0, ones)
    smul = fd.where(inside, sign, 0.0)
    return pair, partner, cmul, cadd, smul
