"""IR values, operands, parameters and the Op base classes with shared typing helpers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar, Protocol

from fadsl.errors import Loc, ShapeError
from fadsl.ir.expr import Expr
from fadsl.ir.expr_print import to_text
from fadsl.ir.types import (
    shape_text,
    DType,
    ErrorType,
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

    def __hash__(self) -> int:
        """The name's hash: values are dict keys in every pass and in the interpreter,
        and hashing the type (a tuple of sympy shapes and enums) on each lookup was
        half the interpreter's per-op overhead. Equal values have equal names."""
        return hash(self.name)

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
    alias: str | None = None
    """Outputs only: the input whose memory this output is (an in-place update, such
    as ``append_kv``'s caches): it starts as that input's data. The kernel reads the
    input and writes the output, never a position of both (ir/aliases.py)."""


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
                f"{what}: shapes {shape_text(a)} and {shape_text(b)} do not broadcast "
                f"({to_text(da)} vs {to_text(db)})",
                loc,
                hint="dimensions must be equal or 1",
            )
    return tuple(out)


def operand_desc(v: Operand) -> str:
    if isinstance(v, Value):
        return f"{v} : {v.type}"
    return f"{v} : {v.dtype.value}"


def op_name(cls: type) -> str:
    """snake_case textual name of an op class: RowMax -> row_max."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()
