"""Gather by computed index: a tile of a captured tensor's values picked by an index tile.

A mod that reads ``rel_bias[q_idx - kv_idx + off]`` or ``offsets[document_id[q_idx]]``
indexes an extra tensor with a tile that is neither ``q_idx`` nor ``kv_idx`` itself. The
frontend (``fadsl/frontend/mod_gather.py``) loads the window of the tensor the indices
can reach (a ``Load`` of ``W`` consecutive elements, ``W`` a constant the resource check
sizes) and emits this op, which picks elements of that window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fadsl.errors import DTypeError, ShapeError
from fadsl.ir.expr import Expr
from fadsl.ir.op_base import TypeContext, Value, ValueOp, tile_type
from fadsl.ir.types import DType, ErrorType, TileType, ValueType

__all__ = ["Gather"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Gather(ValueOp):
    """out = table[clip(index - base, 0, W - 1)], ``table`` a [W] tile holding elements
    ``base .. base + W - 1`` of a row of ``src`` (whose length is ``extent``).

    ``index`` is an integer tile, or after ``lower_vector`` (which moves integer
    tiles to the f32 vector unit, exact below 2**24) an f32 tile of integers.

    Range check, per task: with ``lo`` and ``hi`` (the smallest and largest index the
    valid positions of the tile can produce, proven by the frontend's interval
    analysis) the run stops unless ``0 <= lo`` and ``hi < extent``; without them (an
    index read from a tensor), unless every index is in ``[0, extent)``. The clip only
    keeps positions past the sequence end (whose scores are discarded) inside the
    window.
    """

    table: Value
    index: Value
    base: Expr
    extent: Expr
    src: str
    lo: Expr | None = None
    hi: Expr | None = None
    proven: bool = False
    """The frontend proved ``0 <= lo`` and ``hi < extent``: no check at run time."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("table", "index")

    @property
    def checks_each_index(self) -> bool:
        """No proven or bounded range (an index read from a tensor): the kernel checks
        the tile's smallest and largest index itself."""
        return not self.proven and (self.lo is None or self.hi is None)

    def infer(self, ctx: TypeContext) -> ValueType:
        t, ix = tile_type(self.table), tile_type(self.index)
        if t is None or ix is None:
            return ErrorType()
        if t.rank != 1:
            raise ShapeError(
                f"gather reads a 1-D window of `{self.src}`, got a rank-{t.rank} tile",
                self.loc,
                code="index_rank",
            )
        if not (ix.dtype.is_int or ix.dtype is DType.F32):
            raise DTypeError(
                f"a gather index is an integer tile, got {ix.dtype.value}",
                self.loc,
                hint="cast it: fd.cast(x, fd.i32)",
                code="dtype_mismatch",
            )
        return TileType(ix.shape, t.dtype)
