"""One rule per vector op: the Ascend C calls of its instruction form (vector_forms).

Each rule gets the op, its form, C++ names of operands/result/temporaries and returns
lines of C++: a few level-2 calls, or one call of a fadsl_tile.h helper for sequences
that need loops or repeat parameters.
``RULES`` applies to every op class with a vector form (``FORMS``): each has a rule
here (or, for ``where``, in vector_where.py) or is marked not applicable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from fadsl.backends.ascendc.names import CMPMODE
from fadsl.ir import nodes as ir
from fadsl.ir.op_table import OpTable
from fadsl.ir.types import DType, TileType
from fadsl.plan.memory.vector_forms import FORMS, Form

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter

Rule = Callable[["VectorEmitter", ir.Op, Form, tuple[str, ...]], list[str]]
RULES: OpTable[Rule] = OpTable(
    "Ascend C vector rule",
    "RULES",
    "rule",
    "fadsl/backends/ascendc/vector_rules.py",
    filled_by=(
        __name__,
        "fadsl.backends.ascendc.vector_where",
        "fadsl.backends.ascendc.vector_columns",
    ),
    scope=FORMS,
)
rule = RULES.register
RULES.not_applicable(
    ir.ExpandDims, why="form `view`: the same buffer seen with a unit axis"
)
RULES.not_applicable(
    ir.ScatterAdd,
    why="form `scatter_sum`: a store to GM, emitted by backends/ascendc/scatter_io.py",
)
RULES.not_applicable(
    *CMPMODE, why="form `fused`: the where that reads it emits the Compare (names.py)"
)

_BINARY = {
    # op: (level-2 call on two tiles, fadsl::Bin of the broadcast helpers, the call
    # with a scalar operand: tile - s is Adds of -s, tile / s is Muls of 1 / s)
    ir.Add: ("Add", "ADD", "Adds"),
    ir.Sub: ("Sub", "SUB", "Adds"),
    ir.Mul: ("Mul", "MUL", "Muls"),
    ir.Div: ("Div", "DIV", "Muls"),
    ir.Maximum: ("Max", "MAX", "Maxs"),
    ir.Minimum: ("Min", "MIN", "Mins"),
}


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


@rule(ir.Gather)
def gather(
    e: VectorEmitter, op: ir.Gather, form: Form, temps: tuple[str, ...]
) -> list[str]:
    """Byte offsets of the index into the window (``index - base``, clamped to the
    window, times the element width) in an i32 temporary, then the level-2 Gather
    (asc-devkit kernel_operator_vec_gather_intf.h: offsets in bytes from src)."""
    off, n = temps[0], e.count(op.result)
    dt = tile_dtype(op.result)
    width = e.shape(op.table)[0]
    idx = e.var(op.index)
    if tile_dtype(op.index) is DType.F32:
        cast = f"AscendC::Cast({off}, {idx}, AscendC::RoundMode::CAST_RINT, {n});"
    else:
        cast = f"AscendC::Adds({off}, {idx}, static_cast<int32_t>(0), {n});"
    step = "AscendC::PipeBarrier<PIPE_V>();"
    return _gather_guard(e, op, temps) + [
        cast,
        step,
        f"AscendC::Adds({off}, {off}, static_cast<int32_t>(-({e.names.expr(op.base)})), {n});",
        step,
        f"AscendC::Maxs({off}, {off}, static_cast<int32_t>(0), {n});",
        step,
        f"AscendC::Mins({off}, {off}, static_cast<int32_t>({e.names.expr(width)} - 1), {n});",
        step,
        f"AscendC::Muls({off}, {off}, static_cast<int32_t>({dt.itemsize}), {n});",
        step,
        f"AscendC::Gather({e.var(op.result)}, {e.var(op.table)}, "
        f"{off}.ReinterpretCast<uint32_t>(), static_cast<uint32_t>(0), "
        f"static_cast<uint32_t>({n}));",
    ]


def _gather_guard(e: VectorEmitter, op: ir.Gather, temps: tuple[str, ...]) -> list[str]:
    """``Trap()`` unless the index range lies in the tensor: none where the frontend
    proved it, a scalar test of the range it computed, or (an index read from a
    tensor) fadsl_tile.h ``TrapOutside`` over the tile's indices, as f32 integers."""
    if op.proven:
        return []
    if op.checks_each_index:
        return _each_index_guard(e, op, temps)
    assert op.lo is not None and op.hi is not None
    lo, hi, ext = (e.names.expr(x) for x in (op.lo, op.hi, op.extent))
    return [
        f"if (({lo}) < 0 || ({hi}) >= ({ext})) {{  // fadsl guard: `{op.src}` index",
        "    AscendC::Trap();",
        "}",
    ]


def _each_index_guard(
    e: VectorEmitter, op: ir.Gather, temps: tuple[str, ...]
) -> list[str]:
    off, work, top = temps
    n, idx = e.count(op.result), e.var(op.index)
    ext = e.names.expr(op.extent)
    lines = []
    if tile_dtype(op.index) is not DType.F32:  # exact below 2**24, as lower_vector
        idx = f"{off}.ReinterpretCast<float>()"
        lines += [
            f"AscendC::Cast({idx}, {e.var(op.index)}, AscendC::RoundMode::CAST_NONE, {n});",
            "AscendC::PipeBarrier<PIPE_V>();",
        ]
    call = (
        f"fadsl::TrapOutside({idx}, {off}.ReinterpretCast<float>(), {work}, {top}, "
        f"{n}, {ext});  // fadsl guard: `{op.src}` indices"
    )
    return lines + [call]


@rule(ir.Cast)
def cast(
    e: VectorEmitter, op: ir.Cast, form: Form, temps: tuple[str, ...]
) -> list[str]:
    src, dst = tile_dtype(op.x), op.dtype
    # widening casts are exact and take CAST_NONE only (Cast.md: int8_t -> half)
    mode = "CAST_NONE" if dst is DType.F32 or src is DType.I8 else "CAST_RINT"
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


def _level2(e: VectorEmitter, op: ir.Unary, call: str) -> list[str]:
    """One level-2 unary instruction ``call(dst, src, count)`` over the tile."""
    return [f"{call}({e.var(op.result)}, {e.var(op.x)}, {e.count(op.result)});"]


@rule(ir.Exp)
def exp(e: VectorEmitter, op: ir.Exp, form: Form, temps: tuple[str, ...]) -> list[str]:
    return _level2(e, op, "AscendC::Exp")


@rule(ir.Log)
def log(e: VectorEmitter, op: ir.Log, form: Form, temps: tuple[str, ...]) -> list[str]:
    return _level2(e, op, "AscendC::Ln")


@rule(ir.Abs)
def abs_(e: VectorEmitter, op: ir.Abs, form: Form, temps: tuple[str, ...]) -> list[str]:
    return _level2(e, op, "AscendC::Abs")


@rule(ir.Sqrt)
def sqrt(
    e: VectorEmitter, op: ir.Sqrt, form: Form, temps: tuple[str, ...]
) -> list[str]:
    return _level2(e, op, "AscendC::Sqrt")


@rule(ir.Exp2)
def exp2(
    e: VectorEmitter, op: ir.Exp2, form: Form, temps: tuple[str, ...]
) -> list[str]:
    return _level2(e, op, "fadsl::Exp2")


@rule(ir.Floor)
def floor(
    e: VectorEmitter, op: ir.Floor, form: Form, temps: tuple[str, ...]
) -> list[str]:
    """A float -> float Cast rounds to an integral value."""
    return [
        f"AscendC::Cast({e.var(op.result)}, {e.var(op.x)}, "
        f"AscendC::RoundMode::CAST_FLOOR, {e.count(op.result)});"
    ]


@rule(ir.Neg)
def neg(e: VectorEmitter, op: ir.Neg, form: Form, temps: tuple[str, ...]) -> list[str]:
    minus_one = e.lit(-1.0, tile_dtype(op.x))
    return [
        f"AscendC::Muls({e.var(op.result)}, {e.var(op.x)}, {minus_one}, "
        f"{e.count(op.result)});"
    ]


@rule(ir.Tanh)
def tanh(
    e: VectorEmitter, op: ir.Tanh, form: Form, temps: tuple[str, ...]
) -> list[str]:
    return [
        f"fadsl::Tanh({e.var(op.result)}, {e.var(op.x)}, {temps[0]}, {e.count(op.result)});"
    ]


@rule(ir.Sigmoid)
def sigmoid(
    e: VectorEmitter, op: ir.Sigmoid, form: Form, temps: tuple[str, ...]
) -> list[str]:
    """1 / (1 + exp(-x)), the sequence of asc-devkit's own Sigmoid (sigmoid_impl.h) in
    level-2 calls; ``temps[0]`` holds the 1s that Div divides."""
    dst, n, dt = e.var(op.result), e.count(op.result), tile_dtype(op.x)
    return [
        f"AscendC::Muls({dst}, {e.var(op.x)}, {e.lit(-1.0, dt)}, {n});",
        f"AscendC::Duplicate({temps[0]}, {e.lit(1.0, dt)}, {n});",
        "AscendC::PipeBarrier<PIPE_V>();",
        f"AscendC::Exp({dst}, {dst}, {n});",
        "AscendC::PipeBarrier<PIPE_V>();",
        f"AscendC::Adds({dst}, {dst}, {e.lit(1.0, dt)}, {n});",
        "AscendC::PipeBarrier<PIPE_V>();",
        f"AscendC::Div({dst}, {temps[0]}, {dst}, {n});",
    ]


@rule(*_BINARY)
def binary(
    e: VectorEmitter, op: ir.Binary, form: Form, temps: tuple[str, ...]
) -> list[str]:
    dst, n, dt = e.var(op.result), e.count(op.result), tile_dtype(op.result)
    name = form.name
    if name == "full":
        call = _BINARY[type(op)][0]
        return [f"AscendC::{call}({dst}, {e.var(op.lhs)}, {e.var(op.rhs)}, {n});"]
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
    value = e.imm(
        imm, dt, negate=isinstance(op, ir.Sub), reciprocal=isinstance(op, ir.Div)
    )
    return [f"AscendC::{_BINARY[type(op)][2]}({dst}, {e.var(tile)}, {value}, {n});"]


def _broadcast(
    e: VectorEmitter, op: ir.Binary, form: Form, temps: tuple[str, ...], dst: str
) -> list[str]:
    shape = e.shape(op.result)
    rows, cols = e.names.expr(shape[0]), e.names.expr(shape[1])
    bin_ = f"fadsl::Bin::{_BINARY[type(op)][1]}"
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
