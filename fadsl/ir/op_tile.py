"""Tile-shaped ops: row reductions, expand_dims, full, arange, and dot (the cube unit)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fadsl.errors import DTypeError, ShapeError
from fadsl.ir.expr import Expr, as_expr
from fadsl.ir.expr_print import to_text
from fadsl.ir.types import (
    DType,
    ErrorType,
    Shape,
    TileType,
    ValueType,
)
from fadsl.ir.op_base import (
    TypeContext,
    Value,
    ValueOp,
    operand_desc,
    shape_text,
    op_name,
    tile_type,
)

# ----------------------------------------------------------------------------
# Reductions, shape ops, constants
# ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Reduce(ValueOp):
    """Reduce the last axis; a [R, C] tile gives [R]."""

    x: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("x",)

    def infer(self, ctx: TypeContext) -> ValueType:
        t = tile_type(self.x)
        if t is None:
            return ErrorType()
        if t.rank != 2:
            raise ShapeError(
                f"{op_name(type(self))} reduces the rows of a 2-D tile, got {t}",
                self.loc,
            )
        if not t.dtype.is_float:
            raise DTypeError(
                f"{op_name(type(self))} needs a float tile, got {t}", self.loc
            )
        return TileType(t.shape[:1], t.dtype)


@dataclass(frozen=True, slots=True, kw_only=True)
class RowMax(Reduce):
    """out = x.max(axis=-1)"""


@dataclass(frozen=True, slots=True, kw_only=True)
class RowSum(Reduce):
    """out = x.sum(axis=-1), accumulated in the tile's dtype"""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpandDims(ValueOp):
    """out = np.expand_dims(x, axis): x[:, None] is axis 1."""

    x: Value
    axis: int
    OPERANDS: ClassVar[tuple[str, ...]] = ("x",)

    def infer(self, ctx: TypeContext) -> ValueType:
        t = tile_type(self.x)
        if t is None:
            return ErrorType()
        if not 0 <= self.axis <= t.rank:
            raise ShapeError(f"cannot insert axis {self.axis} into {t}", self.loc)
        one: Expr = as_expr(1)
        shape = t.shape[: self.axis] + (one,) + t.shape[self.axis :]
        return TileType(shape, t.dtype)


@dataclass(frozen=True, slots=True, kw_only=True)
class Full(ValueOp):
    """out = np.full(shape, value, dtype)"""

    shape: Shape
    value: Expr
    dtype: DType

    def infer(self, ctx: TypeContext) -> ValueType:
        return TileType(self.shape, self.dtype)


@dataclass(frozen=True, slots=True, kw_only=True)
class Arange(ValueOp):
    """out = start + np.arange(size) as i32: position indices for masks."""

    start: Expr
    size: Expr

    def infer(self, ctx: TypeContext) -> ValueType:
        return TileType((self.size,), DType.I32)


# ----------------------------------------------------------------------------
# Matrix multiply
# ----------------------------------------------------------------------------

_DOT_ACC = {
    DType.F16: (DType.F32,),
    DType.BF16: (DType.F32,),
    DType.F32: (DType.F32,),
    DType.F8E4M3: (DType.F32,),
    DType.F8E5M2: (DType.F32,),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Dot(ValueOp):
    """out = op(a) @ op(b) in acc_dtype; op transposes when asked. Runs on the cube unit.

    ``l0_tile`` = [m, n, k] runs it as sub-dots of m x n x k on the cube
    (``plan/memory/l0_split.py``); empty (the default) lets the planner choose. It changes the
    schedule, never the values."""

    a: Value
    b: Value
    transpose_a: bool = False
    transpose_b: bool = False
    acc_dtype: DType = DType.F32
    l0_tile: Shape = ()
    OPERANDS: ClassVar[tuple[str, ...]] = ("a", "b")

    def infer(self, ctx: TypeContext) -> ValueType:
        ta, tb = tile_type(self.a), tile_type(self.b)
        if ta is None or tb is None:
            return ErrorType()
        if ta.rank != 2 or tb.rank != 2:
            raise ShapeError(
                f"dot takes 2-D tiles, got {operand_desc(self.a)} and {operand_desc(self.b)}",
                self.loc,
                code="dot_rank",
            )
        m, ka = (ta.shape[1], ta.shape[0]) if self.transpose_a else ta.shape
        kb, n = (tb.shape[1], tb.shape[0]) if self.transpose_b else tb.shape
        if ka != kb:
            raise ShapeError(
                f"dot: contraction sizes differ: a is {shape_text(ta.shape)}"
                f"{' (transposed)' if self.transpose_a else ''}, b is {shape_text(tb.shape)}"
                f"{' (transposed)' if self.transpose_b else ''}: {to_text(ka)} vs {to_text(kb)}",
                self.loc,
                hint="for q @ k^T pass transpose_b=True",
                code="dot_contraction",
            )
        _check_dot_dtypes(self, ta.dtype, tb.dtype)
        return TileType((m, n), self.acc_dtype)


def _check_dot_dtypes(op: Dot, a: DType, b: DType) -> None:
    if a is not b:
        raise DTypeError(
            f"dot: operand dtypes differ ({a.value} vs {b.value})",
            op.loc,
            hint="the cube unit multiplies equal dtypes; cast P to the V dtype first",
        )
    accs = _DOT_ACC.get(a)
    if accs is None:
        raise DTypeError(f"dot does not take {a.value} operands", op.loc)
    if op.acc_dtype not in accs:
        raise DTypeError(
            f"dot: {a.value} operands accumulate in "
            f"{' or '.join(x.value for x in accs)}, not {op.acc_dtype.value}",
            op.loc,
            hint="the cube unit accumulates in f32 (L0C); cast the result afterwards",
        )
