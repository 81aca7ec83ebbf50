"""Instruction forms of vector ops, and the temporaries each form needs.

A form names how the Ascend C backend computes an op on per-core tiles:

  unary, cast, dup, iota        one level-2 instruction over the whole tile
  philox                        random_uniform: a scalar-unit loop (fadsl::PhiloxUniform)
  gather                        gather: the f32 index cast to an i32 temporary of byte
                                offsets into the window (clamped), then Gather from UB
  full                          binary op, both tiles of the result's shape
  scalar / rscalar / rdiv       binary op with a scalar operand (Adds, Muls, Maxs, Mins)
  row_bcast                     [r, c] op [r, 1]: Brcb the row vector into a [r, 8] block
                                temporary, then level-0 ops with a zero block stride
  col_bcast                     [r, c] op [1, c]: level-0 ops with a zero repeat stride
  outer                         [r, 1] op [1, c]: materialise the [r, 1] side first
  row_reduce                    row max / sum: fold column chunks into a [r, 64] f32
                                temporary, then WholeReduceMax/Sum
                                (rows of whole repeats: BlockReduceMax/Sum levels, then
                                one WholeReduceMax/Sum a row)
  fused                         a comparison evaluated inside the where that reads it
  mask_full / mask_cols / mask_outer
                                a where: Compare (or CompareScalar per row) into a bit
                                mask temporary, then Select
  mask_diag                     a causal diagonal (plan/schedule/diag_guard.py diagonal): a
                                CompareScalar per row against a threshold the scalar
                                unit computes from the positions (no UB read), one
                                barrier, one Select over the tile
  tanh, sigmoid                 Exp, Adds and a Div of a temporary holding a constant
  view                          expand_dims: the same buffer seen with a unit axis
The planner (vector_plan) allocates the temporaries; the backend emits the form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sympy

from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import CeilDiv, Expr, as_expr
from fadsl.ir.op_table import OpTable
from fadsl.ir.types import DType, Shape
from fadsl.plan.schedule.diag_guard import diagonal
from fadsl.plan.memory.instr_counts import DIAG_PITCH, block_levels

REPEAT_BYTES = 256
BLOCK_BYTES = 32


@dataclass(frozen=True)
class TempSpec:
    """A temporary an instruction form needs for the duration of one op."""

    role: str
    """broadcast, reduce-work, mask, dup."""
    shape: Shape
    dtype: DType
    bits: int = 0
    """1 for bit masks."""


@dataclass(frozen=True)
class Form:
    name: str
    temps: tuple[TempSpec, ...] = ()
    select: str = ""
    """For where: tt (two tiles), ts (tile, scalar) or st (scalar, tile)."""


ShapeOf = Callable[[ir.Operand], Shape | None]
FormOf = Callable[[Any, ShapeOf, dict[ir.Value, ir.Op]], Form]
"""(op, per-core shape of an operand, defining op of each value) -> the op's form."""

FORMS: OpTable[FormOf] = OpTable(
    "vector instruction form",
    "FORMS",
    "form",
    "fadsl/plan/memory/vector_forms.py",
    filled_by=(
        __name__,
        "fadsl.plan.memory.scatter_form",
        "fadsl.plan.memory.column_form",
    ),
)
form = FORMS.register
FORMS.not_applicable(ir.Grid, ir.For, why="a loop: the ops of its body have forms")
FORMS.not_applicable(
    ir.Load,
    ir.LoadPages,
    ir.Store,
    ir.AtomicAdd,
    ir.LoadScalar,
    ir.ScalarDef,
    ir.QueueAlloc,
    ir.AllocTensor,
    ir.Enqueue,
    ir.Dequeue,
    ir.FreeTensor,
    why="data movement or queue bookkeeping (vector_io / cube), no vector instruction",
)
FORMS.not_applicable(ir.Dot, why="runs on the cube unit (backends/ascendc/cube.py)")
FORMS.not_applicable(
    ir.DebugPrint,
    ir.DeviceAssert,
    why="passes/strip_debug leaves it out of compiled builds (interpreter only)",
)
FORMS.not_applicable(
    ir.And,
    ir.Or,
    ir.Not,
    ir.FloorDivide,
    ir.Remainder,
    why="passes/lower_vector rewrites it (masks into selects, // and % into f32 ops)",
)

ARITH = (ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Maximum, ir.Minimum)
COMPARE = (ir.Lt, ir.Le, ir.Gt, ir.Ge, ir.Eq, ir.Ne)


def is_compare(op: ir.Op | None) -> bool:
    return isinstance(op, COMPARE)


def form_of(op: ir.Op, shape: ShapeOf, defs: dict[ir.Value, ir.Op]) -> Form:
    """The form of vector op ``op``; ``shape`` gives per-core shapes of operands."""
    fn = FORMS.lookup(type(op))
    if fn is None:
        raise BackendError(
            f"{ir.op_name(type(op))} has no vector instruction form", op.loc
        )
    return fn(op, shape, defs)


_FIXED = {
    **{
        c: "unary" for c in (ir.Exp, ir.Exp2, ir.Log, ir.Abs, ir.Neg, ir.Sqrt, ir.Floor)
    },
    ir.Cast: "cast",
    ir.Full: "dup",
    ir.Arange: "iota",
    ir.RandomUniform: "philox",
    ir.ExpandDims: "view",
    **{c: "fused" for c in COMPARE},
}
"""Ops whose form has no temporaries and depends on nothing but their class."""


@form(*_FIXED)
def _fixed(op: ir.Op, shape: ShapeOf, defs: dict[ir.Value, ir.Op]) -> Form:
    return Form(_FIXED[type(op)])


@form(ir.Gather)
def _gather(op: ir.Gather, shape: ShapeOf, defs: dict[ir.Value, ir.Op]) -> Form:
    """Byte offsets (i32, the result's shape), then one Gather from the window; an
    index read from a tensor is range-checked first (fadsl_tile.h TrapOutside: two
    level-2 ReduceMax with their work buffer and a 64-byte result)."""
    s = _result_shape(op, shape)
    offsets = TempSpec("offsets", s, DType.I32)
    if not op.checks_each_index:
        return Form("gather", (offsets,))
    n = sympy.Mul(*(as_expr(d) for d in s))
    per, block = elems_per_repeat(DType.F32), elems_per_block(DType.F32)
    work = CeilDiv(2 * CeilDiv(n, per), block) * block  # ReduceMax.md, calIndex=false
    top = TempSpec("reduce-top", (as_expr(2 * block),), DType.F32)
    return Form(
        "gather_checked", (offsets, TempSpec("reduce-work", (work,), DType.F32), top)
    )


@form(ir.Tanh, ir.Sigmoid)
def _with_constant(op: ir.Unary, shape: ShapeOf, defs: dict[ir.Value, ir.Op]) -> Form:
    """An Exp sequence dividing a temporary that holds a constant (2s or 1s)."""
    temp = TempSpec("dup", _result_shape(op, shape), _dtype(op))
    return Form(ir.op_name(type(op)), (temp,))


def _dtype(op: ir.ValueOp) -> DType:
    t = op.result.type
    return t.dtype  # type: ignore[union-attr]


def _result_shape(op: ir.ValueOp, shape: ShapeOf) -> Shape:
    s = shape(op.result)
    assert s is not None
    return s


def elems_per_repeat(dtype: DType) -> int:
    return REPEAT_BYTES // dtype.itemsize


def elems_per_block(dtype: DType) -> int:
    return BLOCK_BYTES // dtype.itemsize


@form(ir.RowMax, ir.RowSum)
def _reduce_form(op: ir.Reduce, shape: ShapeOf, defs: dict[ir.Value, ir.Op]) -> Form:
    s = shape(op.x)
    assert s is not None and len(s) == 2
    dt = op.x.type.dtype  # type: ignore[union-attr]
    per = elems_per_repeat(dt)
    if _le(s[1], per):
        return Form("row_reduce")
    return Form("row_reduce", (TempSpec("reduce-work", _reduce_work(s, dt), dt),))


def _reduce_work(s: Shape, dt: DType) -> Shape:
    """The work of fadsl_tile.h RowReduce: where its columns allow BlockReduce levels
    (instr_counts.block_levels), rows x the widths of the levels; else one value per
    row and 256-byte column chunk, each chunk's rows padded to a 32-byte block. With
    the columns unknown here (a tile constant), room for whichever path it takes."""
    per, block = elems_per_repeat(dt), elems_per_block(dt)
    chunks = (CeilDiv(s[1], per), CeilDiv(s[0], block) * block)
    cols = as_expr(s[1])
    if cols.is_Integer:
        levels = block_levels(int(cols), dt.itemsize)
        return (s[0], as_expr(sum(levels))) if levels else chunks
    # the widths sum to at most cols / block + 2 * cols / block**2
    widths = CeilDiv(s[1], block) + 2 * CeilDiv(s[1], block * block)
    return (as_expr(1), _max(chunks[0] * chunks[1], s[0] * widths))


_MAXES: dict[tuple[Any, Any], Expr] = {}
"""sympy.Max of symbolic sizes, by its arguments: building one simplifies (factor_terms
of every pair), about 15 ms each, and tune plans the same symbolic tile shapes at
every configuration (block sizes are symbols in its IR). Sympy expressions are
immutable, so a remembered Max is the one building it again would give."""


def _max(a: Expr, b: Expr) -> Expr:
    k = (a, b)
    out = _MAXES.get(k)
    if out is None:
        if len(_MAXES) > 4096:  # a long-lived process: keep it bounded
            _MAXES.clear()
        out = _MAXES[k] = sympy.Max(a, b)
    return out


def _le(a: Expr, n: int) -> bool:
    a = as_expr(a)
    return bool(a.is_Integer and int(a) <= n)


def _is_row(s: Shape | None, r: Shape) -> bool:
    return (
        s is not None
        and len(s) == 2
        and len(r) == 2
        and s[1] == 1
        and s[0] == r[0]
        and r[1] != 1
    )


def _is_col(s: Shape | None, r: Shape) -> bool:
    return (
        s is not None
        and len(s) == 2
        and len(r) == 2
        and s[0] == 1
        and s[1] == r[1]
        and r[0] != 1
    )


@form(*ARITH)
def _arith_form(op: ir.Binary, shape: ShapeOf, defs: dict[ir.Value, ir.Op]) -> Form:
    sa, sb = shape(op.lhs), shape(op.rhs)
    sr = _result_shape(op, shape)
    dt = _dtype(op)
    if sa is None or sb is None:
        if sa is None and isinstance(op, ir.Div):
            return Form("rdiv", (TempSpec("dup", sr, dt),))
        if sa is None and isinstance(op, ir.Sub):
            return Form("rscalar")
        return Form("scalar")
    if sa == sb == sr:
        return Form("full")
    brcb = TempSpec("broadcast", (sr[0], as_expr(elems_per_block(dt))), dt)
    if (_is_row(sa, sr) and sb == sr) or (_is_row(sb, sr) and sa == sr):
        return Form("row_bcast", (brcb,))
    if (_is_col(sa, sr) and sb == sr) or (_is_col(sb, sr) and sa == sr):
        return Form("col_bcast")
    if (_is_row(sa, sr) and _is_col(sb, sr)) or (_is_col(sa, sr) and _is_row(sb, sr)):
        return Form("outer", (TempSpec("broadcast", sr, dt), brcb))
    raise BackendError(
        f"{ir.op_name(type(op))} of shapes {_text(sa)} and {_text(sb)} has no vector form",
        op.loc,
    )


def _text(s: Shape | None) -> str:
    from fadsl.ir.types import shape_text

    return "scalar" if s is None else shape_text(s)


@form(ir.Where)
def _where_form(op: ir.Where, shape: ShapeOf, defs: dict[ir.Value, ir.Op]) -> Form:
    sr = _result_shape(op, shape)
    dt = _dtype(op)
    cmp = defs.get(op.cond) if isinstance(op.cond, ir.Value) else None
    if not is_compare(cmp):
        raise BackendError(
            "fd.where needs a comparison as its condition here (masks are evaluated by "
            "Compare + Select)",
            op.loc,
            hint="write the condition inline, e.g. fd.where(kv_idx < Skv, s, -fd.inf)",
        )
    assert isinstance(cmp, ir.Binary)
    temps: list[TempSpec] = []
    select = _select_mode(op, shape, sr, dt, temps)
    name = _mask_form(cmp, shape, sr, dt, temps)
    if name == "mask_outer" and select == "ts" and diagonal(cmp, defs) is not None:
        # a mask row per tile row, each padded to whole 32-byte blocks of bits
        temps[-1] = TempSpec(
            "mask", (sr[0], CeilDiv(sr[1], DIAG_PITCH) * DIAG_PITCH), DType.U8, bits=1
        )
        name = "mask_diag"
    return Form(name, tuple(temps), select)


def _select_mode(
    op: ir.Where, shape: ShapeOf, sr: Shape, dt: DType, temps: list[TempSpec]
) -> str:
    sa, sb = shape(op.a), shape(op.b)
    for s in (sa, sb):
        if s is not None and s != sr:
            raise BackendError(
                f"fd.where: a branch of shape {_text(s)} would be broadcast to {_text(sr)}; "
                "the backend selects between tiles of the result's shape",
                op.loc,
                hint="broadcast the branch with arithmetic first (e.g. x + 0 * s)",
            )
    if sa is not None and sb is not None:
        return "tt"
    if sa is not None:
        return "ts"
    temps.append(TempSpec("dup", sr, dt))
    return "st" if sb is not None else "ss"


def _mask_form(
    cmp: ir.Binary, shape: ShapeOf, sr: Shape, dt: DType, temps: list[TempSpec]
) -> str:
    sa, sb = shape(cmp.lhs), shape(cmp.rhs)
    cdt = (cmp.lhs if isinstance(cmp.lhs, ir.Value) else cmp.rhs).type.dtype  # type: ignore[union-attr]
    tiles = [s for s in (sa, sb) if s is not None]
    if all(s == sr for s in tiles):
        temps.append(TempSpec("mask", sr, DType.U8, bits=1))
        return "mask_full"
    if len(sr) == 2 and all(_is_col(s, sr) for s in tiles):
        temps.append(TempSpec("mask", (as_expr(1), sr[1]), DType.U8, bits=1))
        return "mask_cols"
    if (
        len(sr) == 2
        and len(tiles) == 2
        and {_kind(sa, sr), _kind(sb, sr)} == {"row", "col"}
    ):
        temps.append(TempSpec("mask", (as_expr(1), sr[1]), DType.U8, bits=1))
        return "mask_outer"
    if len(sr) == 2 and len(tiles) == 1 and _is_row(tiles[0], sr):
        # a per-row condition ([r, 1] vs a scalar): spread the rows over [r, c] first
        temps.append(TempSpec("broadcast", sr, cdt))
        temps.append(TempSpec("broadcast", (sr[0], as_expr(elems_per_block(cdt))), cdt))
        temps.append(TempSpec("mask", sr, DType.U8, bits=1))
        return "mask_full"
    if len(sr) == 2 and len(tiles) == 2 and (sa == sr or sb == sr):
        other = sb if sa == sr else sa
        if _is_row(other, sr) or _is_col(other, sr):
            temps.append(TempSpec("broadcast", sr, cdt))
            if _is_row(other, sr):
                temps.append(
                    TempSpec("broadcast", (sr[0], as_expr(elems_per_block(cdt))), cdt)
                )
            temps.append(TempSpec("mask", sr, DType.U8, bits=1))
            return "mask_full"
    raise BackendError(
        f"this comparison ({_text(sa)} vs {_text(sb)}) selecting over {_text(sr)} has no "
        "vector form yet",
        cmp.loc,
        hint="compare tiles of the result's shape, a [1, c] row of key positions, a "
        "[r, 1] column with a scalar, or a [r, 1] column against a [1, c] row",
    )


def _kind(s: Shape | None, sr: Shape) -> str:
    if _is_row(s, sr):
        return "row"
    if _is_col(s, sr):
        return "col"
    return "other"


def count(s: Shape) -> Expr:
    return sympy.Mul(*s) if s else sympy.Integer(1)
