"""IR nodes: frozen, typed, one class per op, each with its numpy meaning and type rule.

A Kernel holds parameters and a body of statements. Statements are ops. Ops that
produce a tile have a ``result`` Value; ``infer(ctx)`` computes that result's type
from the operands alone and raises ShapeError/DTypeError at the op's ``loc``.
Every node carries a ``loc`` that is excluded from equality, so a parsed kernel
compares equal to the one it was printed from.

Operands are listed in each class's ``OPERANDS``; every other field except
``result``, ``loc`` and region bodies is an attribute (printed as ``{name = value}``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar, Protocol

from fadsl.errors import DTypeError, Loc, ShapeError
from fadsl.ir.expr import Expr, as_expr, to_text
from fadsl.ir.types import (
    DType,
    ErrorType,
    MemSpace,
    QueueType,
    ScalarType,
    Shape,
    TensorType,
    TileType,
    ValueType,
)

# ----------------------------------------------------------------------------
# Values and operands
# ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Value:
    """An SSA value: a tile (or queue) produced by exactly one op."""

    name: str
    type: ValueType

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True, slots=True)
class Imm:
    """A scalar operand: a number or an expression over symbols (``scale``, ``q0 + 3``)."""

    expr: Expr
    dtype: DType

    def __str__(self) -> str:
        return to_text(self.expr)


Operand = Value | Imm


@dataclass(frozen=True, slots=True)
class Point:
    """Index one position of a dimension (the dimension is dropped)."""

    at: Expr


@dataclass(frozen=True, slots=True)
class Slice:
    """Index ``size`` positions from ``start``; past the extent is a tail.

    With ``stop``, positions at or past ``stop`` are a tail too (a bounded block: one
    sequence of a packed varlen tensor); a bounded block with no position before both
    ``stop`` and the extent touches nothing, wherever it starts.
    """

    start: Expr
    size: Expr
    stop: Expr | None = None


Index = Point | Slice


class ParamKind(Enum):
    IN = "in"
    OUT = "out"
    SCRATCH = "scratch"
    SCALAR = "scalar"


@dataclass(frozen=True, slots=True, kw_only=True)
class Param:
    """A kernel parameter: a GM tensor (in/out/scratch) or a runtime scalar."""

    name: str
    kind: ParamKind
    type: TensorType | ScalarType
    default: Expr | None = None
    """Scalars only: value used when the caller gives none (may use shape symbols)."""
    loc: Loc = field(compare=False)


class TypeContext(Protocol):
    def param(self, name: str, loc: Loc) -> Param: ...


# ----------------------------------------------------------------------------
# Op base classes
# ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Op:
    """Base of all statements."""

    loc: Loc = field(compare=False)
    OPERANDS: ClassVar[tuple[str, ...]] = ()

    def operand_values(self) -> tuple[Value, ...]:
        out: list[Value] = []
        for name in self.OPERANDS:
            v = getattr(self, name)
            if isinstance(v, Value):
                out.append(v)
            elif isinstance(v, tuple):
                out.extend(x for x in v if isinstance(x, Value))
        return tuple(out)

    def results(self) -> tuple[Value, ...]:
        return ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ValueOp(Op):
    """An op with one tile result."""

    result: Value

    def results(self) -> tuple[Value, ...]:
        return (self.result,)

    def infer(self, ctx: TypeContext) -> ValueType:
        raise NotImplementedError


def tile_type(v: Operand) -> TileType | None:
    if isinstance(v, Value) and isinstance(v.type, TileType):
        return v.type
    return None


def is_poisoned(*vs: Operand) -> bool:
    return any(isinstance(v, Value) and isinstance(v.type, ErrorType) for v in vs)


def broadcast_shapes(a: Shape, b: Shape, loc: Loc, what: str) -> Shape:
    """numpy broadcasting on symbolic shapes; dims must be equal or 1."""
    if len(a) != len(b):
        raise ShapeError(
            f"{what}: operands have ranks {len(a)} and {len(b)}",
            loc,
            hint="give both operands the same rank; use x[:, None] to add an axis",
        )
    out = []
    for da, db in zip(a, b):
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            raise ShapeError(
                f"{what}: shapes {_shp(a)} and {_shp(b)} do not broadcast "
                f"({to_text(da)} vs {to_text(db)})",
                loc,
                hint="dimensions must be equal or 1",
            )
    return tuple(out)


def _shp(s: Shape) -> str:
    return "[" + ", ".join(to_text(d) for d in s) + "]"


def _operand_desc(v: Operand) -> str:
    if isinstance(v, Value):
        return f"{v} : {v.type}"
    return f"{v} : {v.dtype.value}"


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
                f"{name}: operand dtypes differ: {_operand_desc(op.lhs)} "
                f"vs {_operand_desc(op.rhs)}",
                op.loc,
                hint="cast one side explicitly, e.g. fd.cast(x, fd.f32)",
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
                f"where: the condition must be a bool tile, got {_operand_desc(self.cond)}",
                self.loc,
                hint="build the condition with a comparison, e.g. q_idx >= kv_idx",
            )
        ta, tb = tile_type(self.a), tile_type(self.b)
        if ta is not None and tb is not None and ta.dtype is not tb.dtype:
            raise DTypeError(
                f"where: branches differ in dtype: {_operand_desc(self.a)} vs "
                f"{_operand_desc(self.b)}",
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
            raise DTypeError(f"{op_name(type(self))} needs a float tile, got {t}", self.loc)
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
    """out = op(a) @ op(b) in acc_dtype; op transposes when asked. Runs on the cube unit."""

    a: Value
    b: Value
    transpose_a: bool = False
    transpose_b: bool = False
    acc_dtype: DType = DType.F32
    OPERANDS: ClassVar[tuple[str, ...]] = ("a", "b")

    def infer(self, ctx: TypeContext) -> ValueType:
        ta, tb = tile_type(self.a), tile_type(self.b)
        if ta is None or tb is None:
            return ErrorType()
        if ta.rank != 2 or tb.rank != 2:
            raise ShapeError(
                f"dot takes 2-D tiles, got {_operand_desc(self.a)} and {_operand_desc(self.b)}",
                self.loc,
            )
        m, ka = (ta.shape[1], ta.shape[0]) if self.transpose_a else ta.shape
        kb, n = (tb.shape[1], tb.shape[0]) if self.transpose_b else tb.shape
        if ka != kb:
            raise ShapeError(
                f"dot: contraction sizes differ: a is {_shp(ta.shape)}"
                f"{' (transposed)' if self.transpose_a else ''}, b is {_shp(tb.shape)}"
                f"{' (transposed)' if self.transpose_b else ''}: {to_text(ka)} vs {to_text(kb)}",
                self.loc,
                hint="for q @ k^T pass transpose_b=True",
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


# ----------------------------------------------------------------------------
# Global memory
# ----------------------------------------------------------------------------


def _index_shape(index: tuple[Index, ...]) -> Shape:
    return tuple(ix.size for ix in index if isinstance(ix, Slice))


def _check_index(
    name: str, index: tuple[Index, ...], ptype: TensorType, loc: Loc
) -> None:
    if len(index) != len(ptype.shape):
        raise ShapeError(
            f"`{name}` has rank {len(ptype.shape)} ({ptype}) but is indexed with "
            f"{len(index)} subscript(s)",
            loc,
            hint="give one index or slice per dimension, e.g. q[b, h, rows, :]",
        )


def _tensor_param(ctx: TypeContext, name: str, loc: Loc) -> Param:
    p = ctx.param(name, loc)
    if not isinstance(p.type, TensorType):
        raise DTypeError(f"`{name}` is a scalar parameter, not a tensor", loc)
    return p


@dataclass(frozen=True, slots=True, kw_only=True)
class Load(ValueOp):
    """out = src[index]; slice positions past the extent read ``pad`` (NaN if None).

    A block whose first position is already past the extent, or a point index out of
    range, is an out-of-bounds read and faults.
    """

    src: str
    index: tuple[Index, ...]
    pad: Expr | None = None
    into: Value | None = None
    """After pipelining: the queue slot (from AllocTensor) that receives the data."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("into",)

    def infer(self, ctx: TypeContext) -> ValueType:
        p = _tensor_param(ctx, self.src, self.loc)
        assert isinstance(p.type, TensorType)
        _check_index(self.src, self.index, p.type, self.loc)
        return TileType(_index_shape(self.index), p.type.dtype)


@dataclass(frozen=True, slots=True, kw_only=True)
class Store(Op):
    """dst[index] = value, writing only positions inside the extent (tails are cut)."""

    dst: str
    index: tuple[Index, ...]
    value: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("value",)

    def check(self, ctx: TypeContext) -> None:
        p = _tensor_param(ctx, self.dst, self.loc)
        assert isinstance(p.type, TensorType)
        if p.kind is ParamKind.IN:
            raise DTypeError(
                f"`{self.dst}` is an input; stores go to outputs",
                self.loc,
                hint=f"declare it as fd.Out(...) or fd.Scratch(...)",
            )
        _check_index(self.dst, self.index, p.type, self.loc)
        t = tile_type(self.value)
        if t is None:
            return
        want = _index_shape(self.index)
        if tuple(t.shape) != tuple(want):
            raise ShapeError(
                f"store to `{self.dst}`: tile {t} does not match the block {_shp(want)}",
                self.loc,
            )
        if t.dtype is not p.type.dtype:
            raise DTypeError(
                f"store to `{self.dst}` ({p.type}): tile is {t.dtype.value}",
                self.loc,
                hint=f"cast first: fd.cast(x, fd.{p.type.dtype.value})",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadScalar(Op):
    """Defines symbol ``name`` = src[index] (all point indices): an integer symbol for
    an integer tensor (loop bounds, block indices), a float one for f32 (ALiBi slopes)."""

    name: str
    src: str
    index: tuple[Expr, ...]

    def check(self, ctx: TypeContext) -> None:
        p = _tensor_param(ctx, self.src, self.loc)
        assert isinstance(p.type, TensorType)
        if len(self.index) != len(p.type.shape):
            raise ShapeError(
                f"`{self.src}` has rank {len(p.type.shape)}, indexed with "
                f"{len(self.index)} subscripts",
                self.loc,
            )
        if not (p.type.dtype.is_int or p.type.dtype is DType.F32):
            raise DTypeError(
                f"scalar loads read integer or f32 tensors; `{self.src}` is "
                f"{p.type.dtype.value}",
                self.loc,
                hint="declare per-head constants such as ALiBi slopes as f32",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class RandomUniform(ValueOp):
    """out[r, c] = uniform [0, 1) f32 from Philox4x32-10 (fadsl.rng.philox_uniform).

    Counter-based: the value at row position ``row_start + r`` and column position
    ``col_start + c`` depends only on the key (``seed0``, ``seed1``), ``offset``,
    ``stream`` and the two positions, never on tiling or order, so interpreter and
    generated code draw bit-identical numbers (dropout masks that can be replayed).
    """

    shape: Shape
    seed0: Expr
    seed1: Expr
    offset: Expr
    stream: Expr
    row_start: Expr
    col_start: Expr

    def infer(self, ctx: TypeContext) -> ValueType:
        if len(self.shape) != 2:
            raise ShapeError(
                f"random_uniform makes 2-D tiles, got shape {_shp(self.shape)}", self.loc
            )
        return TileType(self.shape, DType.F32)


# ----------------------------------------------------------------------------
# Queues (made explicit by passes/pipeline.py; mirror Ascend C TQue one to one)
# ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueAlloc(ValueOp):
    """A queue of ``buffers`` tiles (pipe.InitBuffer(que, buffers, bytes))."""

    tile: TileType
    buffers: int
    position: str

    def infer(self, ctx: TypeContext) -> ValueType:
        return QueueType(self.tile, self.buffers, self.position)


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocTensor(ValueOp):
    """out = queue.AllocTensor(): a free slot, contents undefined (NaN)."""

    queue: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("queue",)

    def infer(self, ctx: TypeContext) -> ValueType:
        assert isinstance(self.queue.type, QueueType)
        return self.queue.type.tile


@dataclass(frozen=True, slots=True, kw_only=True)
class Enqueue(Op):
    """queue.EnQue(x): hand a filled slot to the consumer."""

    queue: Value
    x: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("queue", "x")


@dataclass(frozen=True, slots=True, kw_only=True)
class Dequeue(ValueOp):
    """out = queue.DeQue(): the oldest enqueued slot; faults if the queue is empty."""

    queue: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("queue",)

    def infer(self, ctx: TypeContext) -> ValueType:
        assert isinstance(self.queue.type, QueueType)
        return self.queue.type.tile


@dataclass(frozen=True, slots=True, kw_only=True)
class FreeTensor(Op):
    """queue.FreeTensor(x): release the slot; its contents become undefined."""

    queue: Value
    x: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("queue", "x")


# ----------------------------------------------------------------------------
# Control flow and the kernel
# ----------------------------------------------------------------------------


class LoopKind(Enum):
    SERIAL = "serial"
    PIPELINED = "pipelined"


@dataclass(frozen=True, slots=True, kw_only=True)
class Grid(Op):
    """for vars in product(ranges(extents)), in parallel over AI cores: body."""

    vars: tuple[str, ...]
    extents: tuple[Expr, ...]
    body: tuple[Op, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class For(Op):
    """Sequential loop ``for var in range(start, stop)`` with loop-carried values.

    ``iter_args`` start as ``inits``; each iteration's ``yields`` become the next
    iteration's ``iter_args``; after the loop they are ``results``. A pipelined loop
    with ``stages`` = s overlaps loads of iteration j+1..j+s-1 with compute of j.
    """

    var: str
    start: Expr
    stop: Expr
    kind: LoopKind = LoopKind.SERIAL
    stages: int = 1
    inits: tuple[Value, ...] = ()
    iter_args: tuple[Value, ...] = ()
    body: tuple[Op, ...] = ()
    yields: tuple[Value, ...] = ()
    loop_results: tuple[Value, ...] = ()
    OPERANDS: ClassVar[tuple[str, ...]] = ("inits",)

    def results(self) -> tuple[Value, ...]:
        return self.loop_results


@dataclass(frozen=True, slots=True, kw_only=True)
class Kernel:
    """One kernel: parameters, symbols, tile constants and a body."""

    name: str
    params: tuple[Param, ...]
    shape_syms: tuple[str, ...]
    consts: tuple[tuple[str, int | float | bool | str], ...]
    """Compile-time constants with their chosen values (block sizes, flags)."""
    body: tuple[Op, ...]
    loc: Loc = field(compare=False)

    def param(self, name: str, loc: Loc) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        from fadsl.errors import KernelSyntaxError

        raise KernelSyntaxError(f"kernel `{self.name}` has no parameter `{name}`", loc)

    def const_values(self) -> dict[str, int | float | bool | str]:
        return dict(self.consts)

    @property
    def inputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind is ParamKind.IN)

    @property
    def outputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind is ParamKind.OUT)


def op_name(cls: type) -> str:
    """snake_case textual name of an op class: RowMax -> row_max."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


_ABSTRACT = ("Op", "ValueOp", "Unary", "Binary", "Reduce")


def all_op_classes() -> tuple[type[Op], ...]:
    """Every concrete op class defined in this module, sorted by name."""
    import sys

    module = sys.modules[__name__]
    found = []
    for name, obj in vars(module).items():
        if not isinstance(obj, type) or not issubclass(obj, Op) or name in _ABSTRACT:
            continue
        found.append(obj)
    return tuple(sorted(found, key=lambda c: c.__name__))
