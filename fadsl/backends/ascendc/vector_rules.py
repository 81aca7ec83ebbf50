"""One rule per vector op: the Ascend C calls of its instruction form (vector_forms).

Each rule gets the op, its form, C++ names of operands/result/temporaries and returns
lines of C++. Non-trivial sequences live in fadsl_tile.h; rules only choose the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from fadsl.backends.ascendc.names import BIN, LEVEL2
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType, TileType
from fadsl.plan.vector_forms import Form, elems_per_repeat

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter

Rule = Callable[["VectorEmitter", ir.Op, Form, tuple[str, ...]], list[str]]
RULES: dict[type, Rule] = {}

_UNARY = {
    ir.Exp: "AscendC::Exp",
    ir.Log: "AscendC::Ln",
    ir.Abs: "AscendC::Abs",
    ir.Sqrt: "AscendC::Sqrt",
}
_SCALAR = {
    ir.Add: "AscendC::Adds",
    ir.Mul: "AscendC::Muls",
    ir.Maximum: "AscendC::Maxs",
    ir.Minimum: "AscendC::Mins",
}


def rule(*classes: type) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for c in classes:
            RULES[c] = fn
        return fn

    return register


def tile_dtype(v: ir.Value) -> DType:
    t = v.type
    assert isinstance(t, TileType)
    return t.dtype


@rule(ir.Arange)
def arange(
    e: VectorEmitter, op: ir.Arange, form: Form, temps: tuple[str, ...]
) -> list[str]:
    start = e.names.expr(op.start + e.row_shift(op.result))
    return [
        f"AscendC::CreateVecIndex({e.var(op.result)}, static_cast<int32_t>({start}), "
        f"{e.count(op.result)});"
    ]


@rule(ir.RandomUniform)
def random_uniform(
    e: VectorEmitter, op: ir.RandomUniform, form: Form, temps: tuple[str, ...]
) -> list[str]:
    """Philox on the scalar unit (no 32 x 32 -> 64 multiply on the vector unit)."""
    rows, cols = (e.names.expr(d) for d in e.shape(op.result))
    words = ", ".join(
        f"static_cast<uint32_t>({e.names.expr(x)})"
        for x in (op.seed0, op.seed1, op.offset, op.stream)
    )
    row0 = e.names.expr(op.row_start + e.row_shift(op.result))
    return [
        f"fadsl::PhiloxUniform({e.var(op.result)}, {words}, {row0}, "
        f"{e.names.expr(op.col_start)}, {rows}, {cols});"
    ]


@rule(ir.Cast)
def cast(
    e: VectorEmitter, op: ir.Cast, form: Form, temps: tuple[str, ...]
) -> list[str]:
    src, dst = tile_dtype(op.x), op.dtype
    mode = "CAST_NONE" if dst is DType.F32 else "CAST_RINT"
    return (
        [
            f"AscendC::Cast({e.var(op.result)}, {e.var(op.x)}, AscendC::RoundMode::{mode}, "
            f"{e.count(op.result)});"
        ]
        if src is not dst
        else [
            f"AscendC::Muls({e.var(op.result)}, {e.var(op.x)}, {e.lit(1.0, dst)}, "
            f"{e.count(op.result)});"
        ]
    )


@rule(ir.Full)
def full(
    e: VectorEmitter, op: ir.Full, form: Form, temps: tuple[str, ...]
) -> list[str]:
    return [
        f"AscendC::Duplicate({e.var(op.result)}, {e.names.scalar(op.value, op.dtype)}, "
        f"{e.count(op.result)});"
    ]


@rule(ir.Exp, ir.Log, ir.Abs, ir.Sqrt, ir.Neg, ir.Exp2, ir.Floor)
def unary(
    e: VectorEmitter, op: ir.Unary, form: Form, temps: tuple[str, ...]
) -> list[str]:
    dst, src, n = e.var(op.result), e.var(op.x), e.count(op.result)
    if isinstance(op, ir.Floor):  # float -> float Cast rounds to an integral value
        return [f"AscendC::Cast({dst}, {src}, AscendC::RoundMode::CAST_FLOOR, {n});"]
    if isinstance(op, ir.Neg):
        return [f"AscendC::Muls({dst}, {src}, {e.lit(-1.0, tile_dtype(op.x))}, {n});"]
    if isinstance(op, ir.Exp2):
        return [f"fadsl::Exp2({dst}, {src}, {n});"]
    return [f"{_UNARY[type(op)]}({dst}, {src}, {n});"]


@rule(ir.Tanh)
def tanh(
    e: VectorEmitter, op: ir.Tanh, form: Form, temps: tuple[str, ...]
) -> list[str]:
    return [
        f"fadsl::Tanh({e.var(op.result)}, {e.var(op.x)}, {temps[0]}, {e.count(op.result)});"
    ]


@rule(ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Maximum, ir.Minimum)
def binary(
    e: VectorEmitter, op: ir.Binary, form: Form, temps: tuple[str, ...]
) -> list[str]:
    dst, n, dt = e.var(op.result), e.count(op.result), tile_dtype(op.result)
    name = form.name
    if name == "full":
        return [
            f"AscendC::{LEVEL2[type(op)]}({dst}, {e.var(op.lhs)}, {e.var(op.rhs)}, {n});"
        ]
    if name == "scalar":
        return _scalar(e, op, dst, n, dt)
    if name == "rscalar":
        return [
            f"AscendC::Muls({dst}, {e.var(op.rhs)}, {e.lit(-1.0, dt)}, {n});",
            "AscendC::PipeBarrier<PIPE_V>();",
            f"AscendC::Adds({dst}, {dst}, {e.imm(op.lhs, dt)}, {n});",
        ]
    if name == "rdiv":
        return [
            f"AscendC::Duplicate({temps[0]}, {e.imm(op.lhs, dt)}, {n});",
            "AscendC::PipeBarrier<PIPE_V>();",
            f"AscendC::Div({dst}, {temps[0]}, {e.var(op.rhs)}, {n});",
        ]
    return _broadcast(e, op, form, temps, dst)


def _scalar(e: VectorEmitter, op: ir.Binary, dst: str, n: str, dt: DType) -> list[str]:
    tile, imm = (op.lhs, op.rhs) if isinstance(op.lhs, ir.Value) else (op.rhs, op.lhs)
    assert isinstance(imm, ir.Imm)
    src = e.var(tile)
    if isinstance(op, ir.Sub):
        return [f"AscendC::Adds({dst}, {src}, {e.imm(imm, dt, negate=True)}, {n});"]
    if isinstance(op, ir.Div):
        return [f"AscendC::Muls({dst}, {src}, {e.imm(imm, dt, reciprocal=True)}, {n});"]
    return [f"{_SCALAR[type(op)]}({dst}, {src}, {e.imm(imm, dt)}, {n});"]


def _broadcast(
    e: VectorEmitter, op: ir.Binary, form: Form, temps: tuple[str, ...], dst: str
) -> list[str]:
    shape = e.shape(op.result)
    rows, cols = e.names.expr(shape[0]), e.names.expr(shape[1])
    bin_ = f"fadsl::Bin::{BIN[type(op)]}"
    a_small = e.shape(op.lhs) != shape
    big, small = (op.rhs, op.lhs) if a_small else (op.lhs, op.rhs)
    first = "true" if a_small else "false"
    if form.name == "row_bcast":
        return [
            f"fadsl::RowBroadcast<{bin_}>({dst}, {e.var(big)}, {e.var(small)}, {temps[0]}, "
            f"{rows}, {cols}, {first});"
        ]
    if form.name == "col_bcast":
        return [
            f"fadsl::ColBroadcast<{bin_}>({dst}, {e.var(big)}, {e.var(small)}, {rows}, "
            f"{cols}, {first});"
        ]
    sa = e.shape(op.lhs)
    row, col = (op.lhs, op.rhs) if sa[1] == 1 else (op.rhs, op.lhs)
    row_first = "true" if row is op.lhs else "false"
    return [
        f"fadsl::Outer<{bin_}>({dst}, {e.var(row)}, {e.var(col)}, {temps[0]}, {temps[1]}, "
        f"{rows}, {cols}, {row_first});"
    ]


@rule(ir.RowMax, ir.RowSum)
def reduce(
    e: VectorEmitter, op: ir.Reduce, form: Form, temps: tuple[str, ...]
) -> list[str]:
    shape = e.shape(op.x)
    fn = "fadsl::RowMax" if isinstance(op, ir.RowMax) else "fadsl::RowSum"
    work = temps[0] if temps else e.var(op.x)
    return [
        f"{fn}({e.var(op.result)}, {e.var(op.x)}, {work}, {e.names.expr(shape[0])}, "
        f"{e.names.expr(shape[1])});"
    ]


def check_rules() -> list[str]:
    """Vector op classes without a rule (for the registry completeness test)."""
    from fadsl.plan.vector_forms import _ARITH, _UNARY

    wanted = (
        set(_ARITH)
        | set(_UNARY)
        | {
            ir.Tanh,
            ir.Cast,
            ir.Full,
            ir.Arange,
            ir.RowMax,
            ir.RowSum,
            ir.Where,
            ir.RandomUniform,
        }
    )
    return sorted(c.__name__ for c in wanted if c not in RULES)


# The where rule and its mask helpers live in their own module; importing it registers
# ir.Where in RULES (it needs ``rule`` above, hence the import at the bottom).
from fadsl.backends.ascendc import vector_where  # noqa: E402,F401

__all__ = ["RULES", "rule", "check_rules", "BackendError", "elems_per_repeat"]
