"""The vector rule of ``where``: a Compare into a bit mask, then a Select.

The forms come from vector_forms: ``mask_full`` compares [r, c] tiles (a broadcast side
spread over a temporary first); ``mask_cols`` compares [1, c] rows once and selects every
row with that mask; ``mask_outer`` compares a [1, c] row against each value of a [r, 1]
column with CompareScalar, one row at a time (causal and sliding-window masks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fadsl.backends.ascendc.names import CMPMODE, FLIPPED, ctype
from fadsl.backends.ascendc.vector_rules import rule, tile_dtype
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType
from fadsl.plan.vector_forms import Form

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
    return _mask_outer(e, op, cmp, form, temps)


def _cmp_dtype(cmp: ir.Binary) -> DType:
    v = cmp.lhs if isinstance(cmp.lhs, ir.Value) else cmp.rhs
    assert isinstance(v, ir.Value)
    return tile_dtype(v)


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
    if len(rest) > 1:
        x, y, more = _materialise(e, cmp, shape, rest)
        lines += more
    padded = e.padded_count(op.result, _cmp_dtype(cmp))
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
    lines = [
        f"AscendC::Duplicate({tmp}, {e.lit(0.0, dt)}, {e.names.count(shape)});",
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
    lines.append(_compare(e, cmp, mask, x, y, e.padded(shape[1], _cmp_dtype(cmp))))
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
