"""Columns of a tile picked by an index vector: ``out[r, c] = x[r, cols[c]]``.

Rotary embeddings pair each column of a row with a partner column (``(2i, 2i + 1)``
interleaved, ``(i, i + rotary_dim / 2)`` half) and expand a table row of
``rotary_dim / 2`` entries to ``D`` columns; both are column maps of a tile
(``fadsl/lib/rotary.py``). On the chip: the vector unit's level-2 ``Gather`` from UB,
one row at a time, with the byte offsets of ``cols`` in an i32 temporary
(``backends/ascendc/vector_columns.py``), no cube and no [D, D] matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fadsl.errors import DTypeError, ShapeError
from fadsl.ir.op_base import TypeContext, Value, ValueOp, tile_type
from fadsl.ir.types import DType, ErrorType, TileType, ValueType

__all__ = ["TakeColumns"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TakeColumns(ValueOp):
    """out[r, c] = x[r, cols[c]]: ``x`` a 2-D tile [R, C], ``cols`` a 1-D integer
    tile [K] of columns in ``[0, C)`` (after ``lower_vector`` an f32 tile of
    integers, exact below 2**24); the result is [R, K] in ``x``'s dtype. An index
    outside ``[0, C)`` is an error in the interpreter; the chip would read another
    row's element."""

    x: Value
    cols: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("x", "cols")

    def infer(self, ctx: TypeContext) -> ValueType:
        t, ix = tile_type(self.x), tile_type(self.cols)
        if t is None or ix is None:
            return ErrorType()
        if t.rank != 2 or ix.rank != 1:
            raise ShapeError(
                f"take_columns picks columns of a 2-D tile by a 1-D index, got ranks "
                f"{t.rank} and {ix.rank}",
                self.loc,
                code="index_rank",
            )
        if not (ix.dtype.is_int or ix.dtype is DType.F32):
            raise DTypeError(
                f"a column index is an integer tile, got {ix.dtype.value}",
                self.loc,
                hint="cast it: fd.cast(x, fd.i32)",
                code="dtype_mismatch",
            )
        return TileType((t.shape[0], ix.shape[0]), t.dtype)
