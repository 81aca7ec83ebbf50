"""Elementwise ops: unary, binary (arithmetic, comparison, logic), where, cast."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fadsl.errors import DTypeError, ShapeError
from fadsl.ir.types import (
    DType,
    ErrorType,
    Shape,
    TileType,
    ValueType,
)
from fadsl.ir.op_base import (
    Operand,
    TypeContext,
    Value,
    ValueOp,
    operand_desc,
    broadcast_shapes,
    is_poisoned,
    op_name,
    tile_type,
)

# ----------------------------------------------------------------------------
# Elementwise
# ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Unary(ValueOp):
    """Elementwise op on one tile; result has the operand's shape and dtype."""

    x: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("x",)
    FLOAT_ONLY: ClassVar[bool] = True

    def infer(self, ctx: TypeContext) -> ValueType:
        t = tile_type(self.x)
        if t is None:
            return ErrorType()
        if self.FLOAT_ONLY and not t.dtype.is_float:
            raise DTypeError(
                f"{op_name(type(self))} needs a float tile, got {t}",
                self.loc,
                hint="cast first, e.g. fd.cast(x, fd.f32)",
            )
        return TileType(t.shape, t.dtype)


@dataclass(frozen=True, slots=True, kw_only=True)
class Exp(Unary):
    """out = exp(x)"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Exp2(Unary):
    """out = 2 ** x"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Log(Unary):
    """out = log(x) (natural)"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tanh(Unary):
    """out = tanh(x)"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Sigmoid(Unary):
    """out = 1 / (1 + exp(-x))"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Sqrt(Unary):
    """out = sqrt(x)"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Floor(Unary):
    """out = floor(x) (the largest integral value <= x, in x's float dtype)"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Abs(Unary):
    """out = |x|"""

    FLOAT_ONLY: ClassVar[bool] = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Neg(Unary):
    """out = -x"""

    FLOAT_ONLY: ClassVar[bool] = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Not(Unary):
    """out = ~x on a bool tile"""

    FLOAT_ONLY: ClassVar[bool] = False

    def infer(self, ctx: TypeContext) -> ValueType:
        t = tile_type(self.x)
        if t is None:
            return ErrorType()
        if t.dtype is not DType.BOOL:
            raise DTypeError(f"~ needs a bool tile (a mask), got {t}", self.loc)
        return TileType(t.shape, t.dtype)


@dataclass(frozen=True, slots=True, kw_only=True)
class Binary(ValueOp):
    """Elementwise op on two operands with numpy broadcasting; at least one is a tile."""

    lhs: Operand
    rhs: Operand
    OPERANDS: ClassVar[tuple[str, ...]] = ("lhs", "rhs")
    RESULT_BOOL: ClassVar[bool] = False
    ALLOWED: ClassVar[str] = "numeric"

    def infer(self, ctx: TypeContext) -> ValueType:
        if is_poisoned(self.lhs, self.rhs):
            return ErrorType()
        dtype, shape = _binary_dtype_shape(self)
        _check_allowed(self, dtype)
        return TileType(shape, DType.BOOL if self.RESULT_BOOL else dtype)


def _binary_dtype_shape(op: Binary) -> tuple[DType, Shape]:
    ta, tb = tile_type(op.lhs), tile_type(op.rhs)
    name = op_name(type(op))
    if ta is None and tb is None:
        raise ShapeError(f"{name} needs at least one tile operand", op.loc)
    if ta is not None and tb is not None:
        if ta.dtype is not tb.dtype:
            raise DTypeError(
                f"{name}: operand dtypes differ: {operand_desc(op.lhs)} "
                f"vs {operand_desc(op.rhs)}",
                op.loc,
                hint="cast one side explicitly, e.g. fd.cast(x, fd.f32)",
                code="dtype_mismatch",
            )
        return ta.dtype, broadcast_shapes(ta.shape, tb.shape, op.loc, name)
    t = ta if ta is not None else tb
    assert t is not None
    return t.dtype, t.shape


def _check_allowed(op: Binary, dtype: DType) -> None:
    allowed = op.ALLOWED
    ok = (
        (allowed == "numeric" and dtype is not DType.BOOL)
        or (allowed == "int" and dtype.is_int)
        or (allowed == "logic" and (dtype is DType.BOOL or dtype.is_int))
        or allowed == "any"
    )
    if not ok:
        raise DTypeError(
            f"{op_name(type(op))} is not defined on {dtype.value} tiles",
            op.loc,
            hint={
                "numeric": "masks (bool tiles) combine with &, | and ~",
                "int": "// and % take integer tiles such as position indices",
                "logic": "& and | take masks; build them with comparisons",
            }.get(allowed),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Add(Binary):
    """out = lhs + rhs"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Sub(Binary):
    """out = lhs - rhs"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Mul(Binary):
    """out = lhs * rhs"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Div(Binary):
    """out = lhs / rhs (true division on float tiles)"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Maximum(Binary):
    """out = max(lhs, rhs)"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Minimum(Binary):
    """out = min(lhs, rhs)"""


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorDivide(Binary):
    """out = lhs // rhs on integer tiles"""

    ALLOWED: ClassVar[str] = "int"


@dataclass(frozen=True, slots=True, kw_only=True)
class Remainder(Binary):
    """out = lhs % rhs on integer tiles (sign of rhs, like numpy)"""

    ALLOWED: ClassVar[str] = "int"


@dataclass(frozen=True, slots=True, kw_only=True)
class Lt(Binary):
    """out = lhs < rhs (bool)"""

    RESULT_BOOL: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Le(Binary):
    """out = lhs <= rhs (bool)"""

    RESULT_BOOL: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Gt(Binary):
    """out = lhs > rhs (bool)"""

    RESULT_BOOL: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Ge(Binary):
    """out = lhs >= rhs (bool)"""

    RESULT_BOOL: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Eq(Binary):
    """out = lhs == rhs (bool)"""

    RESULT_BOOL: ClassVar[bool] = True
    ALLOWED: ClassVar[str] = "any"


@dataclass(frozen=True, slots=True, kw_only=True)
class Ne(Binary):
    """out = lhs != rhs (bool)"""

    RESULT_BOOL: ClassVar[bool] = True
    ALLOWED: ClassVar[str] = "any"


@dataclass(frozen=True, slots=True, kw_only=True)
class And(Binary):
    """out = lhs & rhs (masks)"""

    ALLOWED: ClassVar[str] = "logic"


@dataclass(frozen=True, slots=True, kw_only=True)
class Or(Binary):
    """out = lhs | rhs (masks)"""

    ALLOWED: ClassVar[str] = "logic"


@dataclass(frozen=True, slots=True, kw_only=True)
class Where(ValueOp):
    """out = np.where(cond, a, b) with broadcasting; cond is a bool tile."""

    cond: Operand
    a: Operand
    b: Operand
    OPERANDS: ClassVar[tuple[str, ...]] = ("cond", "a", "b")

    def infer(self, ctx: TypeContext) -> ValueType:
        if is_poisoned(self.cond, self.a, self.b):
            return ErrorType()
        tc = tile_type(self.cond)
        if tc is None or tc.dtype is not DType.BOOL:
            raise DTypeError(
                f"where: the condition must be a bool tile, got {operand_desc(self.cond)}",
                self.loc,
                hint="build the condition with a comparison, e.g. q_idx >= kv_idx",
            )
        ta, tb = tile_type(self.a), tile_type(self.b)
        if ta is not None and tb is not None and ta.dtype is not tb.dtype:
            raise DTypeError(
                f"where: branches differ in dtype: {operand_desc(self.a)} vs "
                f"{operand_desc(self.b)}",
                self.loc,
                hint="cast one branch explicitly",
            )
        shape = tc.shape
        for t in (ta, tb):
            if t is not None:
                shape = broadcast_shapes(shape, t.shape, self.loc, "where")
        dtype = ta.dtype if ta is not None else tb.dtype if tb is not None else None
        if dtype is None:
            raise DTypeError(
                "where: at least one branch must be a tile",
                self.loc,
                hint="use fd.full(shape, value, dtype) for a constant branch",
            )
        return TileType(shape, dtype)


@dataclass(frozen=True, slots=True, kw_only=True)
class Cast(ValueOp):
    """out = x.astype(dtype), float rounding to nearest even."""

    x: Value
    dtype: DType
    OPERANDS: ClassVar[tuple[str, ...]] = ("x",)

    def infer(self, ctx: TypeContext) -> ValueType:
        t = tile_type(self.x)
        if t is None:
            return ErrorType()
        return TileType(t.shape, self.dtype)
