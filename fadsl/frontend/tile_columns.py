"""``take_columns(x, cols)``: columns of a tile picked by an index vector
(``ir.TakeColumns``), for library code such as ``fadsl/lib/rotary.py``."""

from __future__ import annotations

from fadsl.errors import KernelSyntaxError
from fadsl.frontend.ops import Tile, current, emit_op
from fadsl.ir import nodes as ir


def take_columns(x: Tile, cols: Tile) -> Tile:
    """``out[r, c] = x[r, cols[c]]`` for a 2-D tile ``x`` [R, C] and a 1-D integer
    tile ``cols`` [K] with entries in ``[0, C)``; the result is [R, K] in ``x``'s
    dtype (the vector unit's ``Gather`` from UB, one row at a time).

    Example: ``swapped = take_columns(x, (fd.arange(0, D) + D // 2) % D)``
    """
    if not isinstance(x, Tile) or not isinstance(cols, Tile):
        raise KernelSyntaxError(
            "take_columns takes a 2-D tile and a 1-D integer tile of columns",
            current().here(),
        )
    return emit_op(ir.TakeColumns, hint="cols_t", x=x.value, cols=cols.value)
