"""Impls of the elementwise vector ops: arithmetic, comparisons, logic, where, cast.

Dtype rules (README, docs/variants.md "Semantics"): f16/bf16/fp8 tiles compute in float32 and round the
result to their dtype (round to nearest even, as ``astype`` does); f32 tiles compute in
float32, never float64; integer tiles compute in int64 and store as int32 (wrapping);
masks are numpy bools. An ``Imm`` operand is first converted to the dtype of the tile
it meets. Comparisons give bool and are false when either side is NaN.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.impls import impl
from fadsl.backends.interp.storage import (
    Widened,
    convert_scalar,
    round_f16,
    stored,
    to_f32,
)
from fadsl.errors import ExecutionError, Loc
from fadsl.ir.nodes import (
    Abs,
    Add,
    And,
    Binary,
    Cast,
    Div,
    Eq,
    Exp,
    Exp2,
    Floor,
    FloorDivide,
    Ge,
    Gt,
    Imm,
    Le,
    Log,
    Lt,
    Maximum,
    Minimum,
    Mul,
    Ne,
    Neg,
    Not,
    Operand,
    Or,
    Remainder,
    Sigmoid,
    Sqrt,
    Sub,
    Tanh,
    Unary,
    Value,
    Where,
)
from fadsl.ir.types import DType, TileType
from fadsl.numerics import np_dtype

# ----------------------------------------------------------------------------
# Operands in their compute dtype, results in their storage dtype
# ----------------------------------------------------------------------------


def tile_dtype(*xs: Operand) -> DType:
    for x in xs:
        if isinstance(x, Value) and isinstance(x.type, TileType):
            return x.type.dtype
    raise AssertionError("op without a tile operand passed type checking")


def _rank(v: Value) -> int:
    assert isinstance(v.type, TileType)
    return len(v.type.shape)


def _imm(fr: Frame, x: Imm, dtype: DType, rank: int, loc: Loc) -> Any:
    """An immediate in ``dtype``'s storage type; per-point values shaped [*batch, 1, ...]."""
    value = convert_scalar(fr.scalar(x.expr, loc), dtype, loc)
    if isinstance(value, np.ndarray):
        return value.reshape(value.shape + (1,) * rank)
    return value


def _compute(fr: Frame, x: Operand, dtype: DType, rank: int, loc: Loc) -> Any:
    """An operand in the compute dtype: float32, int64 or bool."""
    if isinstance(x, Value):
        if dtype.is_float:
            return fr.f32(x)
        arr = fr.val(x)
        return arr.astype(np.int64) if dtype.is_int else arr
    value = _imm(fr, x, dtype, rank, loc)
    if dtype.is_float:
        return (
            value.astype(np.float32)
            if isinstance(value, np.ndarray)
            else np.float32(value)
        )
    if dtype.is_int:
        return (
            value.astype(np.int64) if isinstance(value, np.ndarray) else np.int64(value)
        )
    return value


# ----------------------------------------------------------------------------
# Binary arithmetic and comparisons
# ----------------------------------------------------------------------------


def _binary(op: Binary, fr: Frame, fn: Callable[..., Any]) -> Any:
    dtype = tile_dtype(op.lhs, op.rhs)
    result = op.result.type.dtype  # type: ignore[union-attr]
    rank = _rank(op.result)
    a = _compute(fr, op.lhs, dtype, rank, op.loc)
    b = _compute(fr, op.rhs, dtype, rank, op.loc)
    if result is DType.F32 and isinstance(fn, np.ufunc):
        shape = np.broadcast_shapes(np.shape(a), np.shape(b))
        buf = fr.donate(op.lhs, a, shape)
        if buf is None:
            buf = fr.donate(op.rhs, b, shape)
        if buf is not None:
            return fn(a, b, out=buf)
    return stored(fn(a, b), result, temporary=dtype.is_float)


def _int_divisor(op: Binary, b: Any) -> None:
    if np.any(np.asarray(b) == 0):
        raise ExecutionError("integer division by zero", op.loc)


def _divide(op: Binary, fr: Frame, fn: Callable[[Any, Any], Any]) -> np.ndarray:
    """Integer division ops: the divisor must not be zero anywhere."""

    def checked(a: Any, b: Any) -> Any:
        _int_divisor(op, b)
        return fn(a, b)

    return _binary(op, fr, checked)


@impl(Add)
def _add(op: Add, fr: Frame) -> np.ndarray:
    return _binary(op, fr, np.add)


@impl(Sub)
def _sub(op: Sub, fr: Frame) -> np.ndarray:
    return _binary(op, fr, np.subtract)


@impl(Mul)
def _mul(op: Mul, fr: Frame) -> np.ndarray:
    return _binary(op, fr, np.multiply)


@impl(Div)
def _div(op: Div, fr: Frame) -> np.ndarray:
    """True division on floats; on integer tiles C division (truncates toward zero)."""
    if tile_dtype(op.lhs, op.rhs).is_float:
        return _binary(op, fr, np.true_divide)
    return _divide(op, fr, lambda a, b: np.trunc(a / b).astype(np.int64))


@impl(Maximum)
def _maximum(op: Maximum, fr: Frame) -> np.ndarray:
    """NaN propagates (np.maximum), so poisoned data stays visible."""
    return _binary(op, fr, np.maximum)


@impl(Minimum)
def _minimum(op: Minimum, fr: Frame) -> np.ndarray:
    return _binary(op, fr, np.minimum)


@impl(FloorDivide)
def _floor_divide(op: FloorDivide, fr: Frame) -> np.ndarray:
    return _divide(op, fr, np.floor_divide)


@impl(Remainder)
def _remainder(op: Remainder, fr: Frame) -> np.ndarray:
    return _divide(op, fr, np.remainder)


@impl(Lt)
def _lt(op: Lt, fr: Frame) -> np.ndarray:
    return _binary(op, fr, np.less)


@impl(Le)
def _le(op: Le, fr: Frame) -> np.ndarray:
    return _binary(op, fr, np.less_equal)


@impl(Gt)
def _gt(op: Gt, fr: Frame) -> np.ndarray:
    return _binary(op, fr, np.greater)


@impl(Ge)
def _ge(op: Ge, fr: Frame) -> np.ndarray:
    return _binary(op, fr, np.greater_equal)


@impl(Eq)
def _eq(op: Eq, fr: Frame) -> np.ndarray:
    return _binary(op, fr, np.equal)


@impl(Ne)
def _ne(op: Ne, fr: Frame) -> np.ndarray:
    """True when either side is NaN (IEEE)."""
    return _binary(op, fr, np.not_equal)


@impl(And)
def _and(op: And, fr: Frame) -> np.ndarray:
    """Logical and of masks; bitwise and of integer tiles."""
    return _binary(op, fr, np.bitwise_and)


@impl(Or)
def _or(op: Or, fr: Frame) -> np.ndarray:
    return _binary(op, fr, np.bitwise_or)


# ----------------------------------------------------------------------------
# Unary
# ----------------------------------------------------------------------------


def _unary(op: Unary, fr: Frame, fn: Callable[..., Any]) -> Any:
    dtype = tile_dtype(op.x)
    x = _compute(fr, op.x, dtype, _rank(op.x), op.loc)
    if dtype is DType.F32:
        buf = fr.donate(op.x, x, np.shape(x))
        if buf is not None:
            return fn(x, out=buf)
    return stored(fn(x), dtype, temporary=dtype.is_float)


@impl(Exp)
def _exp(op: Exp, fr: Frame) -> np.ndarray:
    return _unary(op, fr, np.exp)


@impl(Exp2)
def _exp2(op: Exp2, fr: Frame) -> np.ndarray:
    return _unary(op, fr, np.exp2)


@impl(Log)
def _log(op: Log, fr: Frame) -> np.ndarray:
    return _unary(op, fr, np.log)


@impl(Tanh)
def _tanh(op: Tanh, fr: Frame) -> np.ndarray:
    return _unary(op, fr, np.tanh)


@impl(Sigmoid)
def _sigmoid(op: Sigmoid, fr: Frame) -> np.ndarray:
    return _unary(op, fr, _sigmoid_steps)


def _sigmoid_steps(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """1 / (1 + exp(-x)) one rounded step at a time, as the generated code computes it
    (Muls by -1, Exp, Adds 1, Div of 1 by it): exp(-x) = inf gives 0, never NaN."""
    t = np.negative(x, out=out)
    np.exp(t, out=t)
    np.add(t, t.dtype.type(1), out=t)
    return np.divide(t.dtype.type(1), t, out=t)


@impl(Sqrt)
def _sqrt(op: Sqrt, fr: Frame) -> np.ndarray:
    return _unary(op, fr, np.sqrt)


@impl(Floor)
def _floor(op: Floor, fr: Frame) -> np.ndarray:
    return _unary(op, fr, np.floor)


@impl(Abs)
def _abs(op: Abs, fr: Frame) -> np.ndarray:
    return _unary(op, fr, np.abs)


@impl(Neg)
def _neg(op: Neg, fr: Frame) -> np.ndarray:
    return _unary(op, fr, np.negative)


@impl(Not)
def _not(op: Not, fr: Frame) -> np.ndarray:
    return np.logical_not(fr.val(op.x))


# ----------------------------------------------------------------------------
# Select and cast
# ----------------------------------------------------------------------------


def _branch(fr: Frame, x: Operand, dtype: DType, rank: int, loc: Loc) -> Any:
    """A where operand: float32 for float dtypes (where only selects, so this is exact),
    the stored values otherwise."""
    if isinstance(x, Value):
        return fr.f32(x) if dtype.is_float else fr.val(x)
    value = _imm(fr, x, dtype, rank, loc)
    return value.astype(np.float32) if dtype.is_float else value


@impl(Where)
def _where(op: Where, fr: Frame) -> Any:
    """np.where; a mask that keeps everything (or nothing) returns that branch as is."""
    dtype = op.result.type.dtype  # type: ignore[union-attr]
    rank = _rank(op.result)
    cond = _branch(fr, op.cond, DType.BOOL, rank, op.loc)
    a = _branch(fr, op.a, dtype, rank, op.loc)
    b = _branch(fr, op.b, dtype, rank, op.loc)
    shape = np.broadcast_shapes(np.shape(cond), np.shape(a), np.shape(b))
    if np.size(cond) * 8 <= np.prod(shape):
        for keep, branch in ((True, a), (False, b)):
            if np.shape(branch) == shape and (
                np.all(cond) if keep else not np.any(cond)
            ):
                return stored(branch, dtype)
    if dtype is DType.F32 and np.shape(a) == shape and fr.k:
        buf = fr.donate(op.a, a, shape)
        out = _mixed_points_where(cond, a if buf is None else buf, b, buf is None, fr.k)
        if out is not None:
            return out
    return stored(np.where(cond, a, b), dtype)


def _mixed_points_where(
    cond: np.ndarray, a: np.ndarray, b: Any, copy: bool, k: int
) -> np.ndarray | None:
    """np.where(cond, a, b) when ``cond`` keeps every element of most points (a causal
    mask off the diagonal): ``a`` (a copy unless ``copy`` is False) with np.where run on
    the other points only. None when ``cond`` varies along several batch axes, or when
    most points mix."""
    if not isinstance(cond, np.ndarray) or cond.ndim != a.ndim:
        return None
    whole = cond.all(axis=tuple(range(k, cond.ndim)))
    varying = [ax for ax in range(k) if whole.shape[ax] > 1]
    if len(varying) != 1:
        return None
    mixed = np.flatnonzero(~whole.reshape(-1))
    if mixed.size * 2 > whole.size:
        return None
    axis = varying[0]
    out = a.copy() if copy else a
    if mixed.size:
        key = (slice(None),) * axis + (mixed,)
        if isinstance(b, np.ndarray) and b.ndim == a.ndim and b.shape[axis] > 1:
            b = b[key]
        out[key] = np.where(cond[key], out[key], b)
    return out


@impl(Cast)
def _cast(op: Cast, fr: Frame) -> np.ndarray:
    """astype with round to nearest even; float to int truncates and saturates, NaN -> 0."""
    src = tile_dtype(op.x)
    dst = op.dtype
    if src is dst:
        return fr.val(op.x)
    if dst is DType.BOOL:
        return fr.val(op.x) != 0
    if dst.is_float:
        if src.is_int:
            return fr.val(op.x).astype(np.float64).astype(np_dtype(dst))
        x = fr.f32(op.x)
        buf = fr.donate(op.x, x, x.shape) if dst is DType.F16 else None
        del x
        if buf is not None:
            return Widened(round_f16(buf, out=buf), dst)
        return stored(fr.f32(op.x), dst)
    x = fr.val(op.x)
    if src.is_float:
        info = np.iinfo(np_dtype(dst))
        wide = np.nan_to_num(np.trunc(to_f32(x).astype(np.float64)), nan=0.0)
        return np.clip(wide, info.min, info.max).astype(np_dtype(dst))
    return x.astype(np.int64).astype(np_dtype(dst))
