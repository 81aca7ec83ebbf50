"""The vector rule of ``where``: a Compare into a bit mask, then a Select.

The forms come from vector_forms: ``mask_full`` compares [r, c] tiles (a broadcast side
spread over a temporary first); ``mask_cols`` compares [1, c] rows once and selects every
row with that mask; ``mask_outer`` compares a [1, c] row against each value of a [r, 1]
column with CompareScalar, one row at a time (causal and sliding-window masks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy

from fadsl.backends.ascendc import vector_chunk
from fadsl.backends.ascendc.names import CMPMODE, FLIPPED, ctype
from fadsl.backends.ascendc.vector_rules import rule, tile_dtype
from fadsl.backends.ascendc.view import Line
from fadsl.ir import nodes as ir
from fadsl.ir.expr import CeilDiv, Expr, as_expr, evaluate
from fadsl.ir.types import DType
from fadsl.plan.schedule.diag_guard import diagonal
from fadsl.plan.memory.instr_counts import DIAG_PITCH
from fadsl.plan.memory.vector_forms import Form, elems_per_repeat

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter


@rule(ir.Where)
def where(
    e: VectorEmitter, op: ir.Where, form: Form, temps: tuple[str, ...]
) -> list[str]:
    cmp = e.sides.defs[op.cond]  # type: ignore[index]
    assert isinstance(cmp, ir.Binary)
    if form.name == "mask_full":
        return _mask_full(e, op, cmp, form, temps)
    if form.name == "mask_cols":
        return _mask_cols(e, op, cmp, form, temps)
    if form.name == "mask_diag":
        return _mask_diag(e, op, cmp, form, temps)
    return _mask_outer(e, op, cmp, form, temps)


def _cmp_dtype(cmp: ir.Binary) -> DType:
    v = cmp.lhs if isinstance(cmp.lhs, ir.Value) else cmp.rhs
    assert isinstance(v, ir.Value)
    return tile_dtype(v)


def _pad_lanes(e: VectorEmitter, v: ir.Operand | None, n: Expr, dt: DType) -> list[str]:
    """Write the pad lanes a padded Compare of ``n`` elements of ``v`` reads.

    A level-2 Compare/CompareScalar computes whole 256-byte repeats (Compare.md), and
    on A2/A3 the level-0 form's mask is a reserved parameter that has no effect
    (CompareScalar.md), so a count that is not a whole number of repeats is rounded up
    and the lanes [n, padded) are read too. Their mask bits are never selected, but
    nothing wrote them: zero them. A whole tile's pad lies past its last element, so it
    is zeroed right before the Compare. A row-chunk view ``x[rc * c]`` reads the rows
    of the next chunk and, for the last chunk, past the tile: before the chunk loop, the
    whole slot's window is zeroed when the value is made inside the loop (its rows are
    written chunk by chunk, after that), else only what lies past its rows.
    """
    if not isinstance(v, ir.Value):
        return []
    per = elems_per_repeat(dt)
    n = as_expr(n)
    count = int(evaluate(n, e.low.env))
    if count % per == 0:
        return []
    pad = CeilDiv(n, per) * per - n
    zero = e.lit(0.0, dt)
    name = v.name
    while name in e.vec.views:
        name = e.vec.views[name]
    shift = vector_chunk.offset(e, name)
    c = e.chunk
    if not shift or c is None:
        return _zero_at(e, e.var(v), n, pad, zero, dt)
    base = e.var(v)[: -len(shift)]
    whole = c.core_rows * sympy.sympify(c.offset[name])
    made = e.sides.defs.get(v)  # type: ignore[call-overload]
    inside = made is not None and c.start <= e.at.get(id(made), -1) <= c.end
    if inside:
        stmts = [
            f"AscendC::Duplicate({base}, {zero}, {e.names.expr(whole + pad)});",
            _BARRIER,
        ]
    else:
        stmts = _zero_at(e, base, whole, pad, zero, dt)
    vector_chunk.before(e, [Line(x) for x in stmts])
    return []


def _zero_at(
    e: VectorEmitter, var: str, start: Expr, n: Expr, zero: str, dt: DType
) -> list[str]:
    first = int(evaluate(as_expr(start), e.low.env)) * dt.itemsize
    if first % 32:  # Duplicate's destination must start 32-byte aligned: left unwritten
        return []
    s, k = e.names.expr(as_expr(start)), e.names.expr(as_expr(n))
    return [f"AscendC::Duplicate({var}[{s}], {zero}, {k});", _BARRIER]


# the Compare reads what the Duplicate wrote
_BARRIER = "AscendC::PipeBarrier<PIPE_V>();"


def _compare(
    e: VectorEmitter,
    cmp: ir.Binary,
    mask: str,
    a: str | None,
    b: str | None,
    count: str,
) -> str:
    """Compare into a bit mask; a None side is the comparison's scalar."""
    mode = CMPMODE[type(cmp)]
    dt = _cmp_dtype(cmp)
    if a is not None and b is not None:
        return f"AscendC::Compare({mask}, {a}, {b}, AscendC::CMPMODE::{mode}, {count});"
    if a is not None:
        return (
            f"AscendC::CompareScalar({mask}, {a}, {e.imm(cmp.rhs, dt)}, "
            f"AscendC::CMPMODE::{mode}, {count});"
        )
    return (
        f"AscendC::CompareScalar({mask}, {b}, {e.imm(cmp.lhs, dt)}, "
        f"AscendC::CMPMODE::{FLIPPED[mode]}, {count});"
    )


def _select(
    e: VectorEmitter,
    op: ir.Where,
    form: Form,
    dst: str,
    mask: str,
    a: str | None,
    b: str | None,
    dup: str | None,
    count: str,
) -> list[str]:
    dt = tile_dtype(op.result)
    if form.select == "tt":
        return [
            f"AscendC::Select({dst}, {mask}, {a}, {b}, "
            f"AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, {count});"
        ]
    if form.select == "ts":
        return [
            f"AscendC::Select({dst}, {mask}, {a}, {e.imm(op.b, dt)}, "
            f"AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, {count});"
        ]
    other = b if form.select == "st" else e.imm(op.b, dt)
    mode = (
        "VSEL_TENSOR_TENSOR_MODE" if form.select == "st" else "VSEL_TENSOR_SCALAR_MODE"
    )
    return [
        f"AscendC::Select({dst}, {mask}, {dup}, {other}, AscendC::SELMODE::{mode}, "
        f"{count});"
    ]


def _branch_vars(
    e: VectorEmitter, op: ir.Where, form: Form, temps: tuple[str, ...]
) -> tuple[str | None, str | None, str | None, list[str]]:
    a = e.var(op.a) if isinstance(op.a, ir.Value) else None
    b = e.var(op.b) if isinstance(op.b, ir.Value) else None
    pre: list[str] = []
    dup = None
    if form.select in ("st", "ss"):
        dup = temps[0]
        pre.append(
            f"AscendC::Duplicate({dup}, {e.imm(op.a, tile_dtype(op.result))}, "
            f"{e.count(op.result)});"
        )
    return a, b, dup, pre


def _mask_full(
    e: VectorEmitter, op: ir.Where, cmp: ir.Binary, form: Form, temps: tuple[str, ...]
) -> list[str]:
    a, b, dup, lines = _branch_vars(e, op, form, temps)
    rest = temps[1:] if dup else temps
    mask = rest[-1]
    shape = e.shape(op.result)
    x = e.var(cmp.lhs) if isinstance(cmp.lhs, ir.Value) else None
    y = e.var(cmp.rhs) if isinstance(cmp.rhs, ir.Value) else None
    dt = _cmp_dtype(cmp)
    n = sympy.Mul(*shape)
    if len(rest) > 1:
        x, y, more = _materialise(e, cmp, shape, rest)
        lines += more
        big = cmp.rhs if e.shape(cmp.lhs) != tuple(shape) else cmp.lhs
        lines += _pad_lanes(e, big, n, dt)
    else:
        lines += _pad_lanes(e, cmp.lhs, n, dt) + _pad_lanes(e, cmp.rhs, n, dt)
    padded = e.padded_count(op.result, dt)
    lines.append(_compare(e, cmp, mask, x, y, padded))
    lines.append("AscendC::PipeBarrier<PIPE_V>();")
    return lines + _select(
        e, op, form, e.var(op.result), mask, a, b, dup, e.count(op.result)
    )


def _materialise(
    e: VectorEmitter, cmp: ir.Binary, shape: tuple, temps: tuple[str, ...]
) -> tuple[str, str, list[str]]:
    """Spread the broadcast side of a comparison over a [rows, cols] temporary."""
    tmp = temps[0]
    rows, cols = e.names.expr(shape[0]), e.names.expr(shape[1])
    tiles = [v for v in (cmp.lhs, cmp.rhs) if isinstance(v, ir.Value)]
    small = next(v for v in tiles if e.shape(v) != tuple(shape))
    lhs_small = small is cmp.lhs
    dt = _cmp_dtype(cmp)
    lines = [  # its pad lanes too: the padded Compare reads them
        f"AscendC::Duplicate({tmp}, {e.lit(0.0, dt)}, "
        f"{e.padded(sympy.Mul(*shape), dt)});",
        "AscendC::PipeBarrier<PIPE_V>();",
    ]
    if e.shape(small)[1] == 1:
        lines.append(
            f"fadsl::RowBroadcast<fadsl::Bin::ADD>({tmp}, {tmp}, {e.var(small)}, "
            f"{temps[1]}, {rows}, {cols}, false);"
        )
    else:
        lines.append(
            f"fadsl::ColBroadcast<fadsl::Bin::ADD>({tmp}, {tmp}, {e.var(small)}, "
            f"{rows}, {cols}, false);"
        )
    lines.append("AscendC::PipeBarrier<PIPE_V>();")
    big = cmp.rhs if lhs_small else cmp.lhs
    big_var = e.var(big) if isinstance(big, ir.Value) else None  # None: the scalar side
    x, y = (tmp, big_var) if lhs_small else (big_var, tmp)
    return x, y, lines


def _row_loop(
    e: VectorEmitter,
    op: ir.Where,
    form: Form,
    mask: str,
    a: str | None,
    b: str | None,
    dup: str | None,
    cols: str,
) -> list[str]:
    at = f"r * {cols}"
    sel = _select(
        e,
        op,
        form,
        f"{e.var(op.result)}[{at}]",
        mask,
        None if a is None else f"{a}[{at}]",
        None if b is None else f"{b}[{at}]",
        None if dup is None else f"{dup}[{at}]",
        cols,
    )
    return sel


def _mask_cols(
    e: VectorEmitter, op: ir.Where, cmp: ir.Binary, form: Form, temps: tuple[str, ...]
) -> list[str]:
    a, b, dup, lines = _branch_vars(e, op, form, temps)
    mask = temps[-1]
    shape = e.shape(op.result)
    rows, cols = e.names.expr(shape[0]), e.names.expr(shape[1])
    x = e.var(cmp.lhs) if isinstance(cmp.lhs, ir.Value) else None
    y = e.var(cmp.rhs) if isinstance(cmp.rhs, ir.Value) else None
    dt = _cmp_dtype(cmp)
    lines += _pad_lanes(e, cmp.lhs, shape[1], dt) + _pad_lanes(e, cmp.rhs, shape[1], dt)
    lines.append(_compare(e, cmp, mask, x, y, e.padded(shape[1], dt)))
    lines.append("AscendC::PipeBarrier<PIPE_V>();")
    body = _row_loop(e, op, form, mask, a, b, dup, cols)
    lines.append(("for (int64_t r = 0; r < " + rows + "; ++r)", tuple(body)))  # type: ignore[arg-type]
    return lines


def _mask_outer(
    e: VectorEmitter, op: ir.Where, cmp: ir.Binary, form: Form, temps: tuple[str, ...]
) -> list[str]:
    a, b, dup, lines = _branch_vars(e, op, form, temps)
    mask = temps[-1]
    shape = e.shape(op.result)
    rows, cols = e.names.expr(shape[0]), e.names.expr(shape[1])
    row_is_lhs = e.shape(cmp.lhs)[1] == 1
    row, col = (cmp.lhs, cmp.rhs) if row_is_lhs else (cmp.rhs, cmp.lhs)
    mode = CMPMODE[type(cmp)]
    mode = FLIPPED[mode] if row_is_lhs else mode
    dt = _cmp_dtype(cmp)
    ct = ctype(dt)
    lines += [
        "// the row values are read by the scalar unit: wait for the vector unit",
        "fadsl::SetWaitFlag<AscendC::HardEvent::V_S>();",
    ]
    lines += _pad_lanes(e, col, shape[1], dt)
    body = [
        f"const {ct} rowValue = {e.var(row)}.GetValue(r);",
        f"AscendC::CompareScalar({mask}, {e.var(col)}, rowValue, AscendC::CMPMODE::{mode}, "
        f"{e.padded(shape[1], dt)});",
        "AscendC::PipeBarrier<PIPE_V>();",
    ]
    body += _row_loop(e, op, form, mask, a, b, dup, cols)
    body.append("AscendC::PipeBarrier<PIPE_V>();")
    lines.append(("for (int64_t r = 0; r < " + rows + "; ++r)", tuple(body)))  # type: ignore[arg-type]
    return lines


def _mask_diag(
    e: VectorEmitter, op: ir.Where, cmp: ir.Binary, form: Form, temps: tuple[str, ...]
) -> list[str]:
    """A causal diagonal (``plan/schedule/diag_guard.py`` diagonal): row r keeps the columns
    whose position is at most (below) the row's, ``first + r``, a threshold the scalar
    unit computes (no read of UB, no V -> S wait): a CompareScalar per row into its own
    row of mask bits (``DIAG_PITCH`` aligned), one barrier, and one Select over the
    tile where the rows' bits are contiguous (else one a row)."""
    d = diagonal(cmp, e.sides.defs)
    assert d is not None and isinstance(op.a, ir.Value)
    col, row, offset, strict, _, _ = d
    mask = temps[-1]
    shape = e.shape(op.result)
    rows, cols = e.names.expr(shape[0]), e.names.expr(shape[1])
    dt = _cmp_dtype(cmp)
    pitch = CeilDiv(shape[1], DIAG_PITCH) * DIAG_PITCH // 8
    first = row.start + offset + e.row_shift(row.result)
    first_s = vector_chunk.row0(e, e.names.expr(first))
    mode = "LT" if strict else "LE"
    col_v = next(
        v for v in (cmp.lhs, cmp.rhs) if isinstance(v, ir.Value) and e.shape(v)[0] == 1
    )
    lines = _pad_lanes(e, col_v, shape[1], dt)
    compare = (
        f"AscendC::CompareScalar({mask}[r * {e.names.expr(pitch)}], {e.var(col_v)}, "
        f"static_cast<{ctype(dt)}>({first_s} + r), AscendC::CMPMODE::{mode}, "
        f"{e.padded(shape[1], dt)});"
    )
    lines.append(("for (int64_t r = 0; r < " + rows + "; ++r)", (compare,)))  # type: ignore[arg-type]
    lines.append("AscendC::PipeBarrier<PIPE_V>();")
    dst, a = e.var(op.result), e.var(op.a)
    if int(evaluate(shape[1], e.low.env)) % DIAG_PITCH == 0:
        return lines + _select(
            e, op, form, dst, mask, a, None, None, e.count(op.result)
        )
    at = f"r * {cols}"
    row_mask = f"{mask}[r * {e.names.expr(pitch)}]"
    sel = _select(e, op, form, f"{dst}[{at}]", row_mask, f"{a}[{at}]", None, None, cols)
    lines.append(("for (int64_t r = 0; r < " + rows + "; ++r)", tuple(sel)))  # type: ignore[arg-type]
    return lines
