"""A vector core's load of a KV block that spans pages (``ir.LoadPages`` on the AIV).

An int8 cache's pages are dequantised on the vector cores before the cube sees them
(``fadsl/lib/paged_quant.py``), so the load of a paged block runs on an AIV, as CANN's
IncreFlashAttention loads its antiquant KV on the vector cores. Each AIV holds its own
rows ``shift .. shift + size - 1`` of the ``[block_kv, cols]`` block
(``plan/memory/row_split.py``); the rows of page ``i`` of the block that fall in them
(and before the block's bound) are one ``DataCopyPad`` from that page, whose number is
read from the block table just before the copy. As on the cube (``cube_pages.py``), a
page none of whose rows the core needs is neither looked up nor copied, and each
table read is guarded: the column must be in ``[0, MaxPages)`` and the page in
``[0, Pages)``, else ``AscendC::Trap()``. Rows past the bound keep the tile's pad
(``Duplicate`` before the copies, as every padded vector load does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy

from fadsl.backends.ascendc import gm, guards
from fadsl.backends.ascendc.names import ctype
from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, as_expr, evaluate, isym
from fadsl.ir.types import DType, TensorType, TileType
from fadsl.plan.memory.gm_geometry import strides

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter

_GM = "DataCopyExtParams.srcStride/dstStride (GM)"
_UB = "DataCopyExtParams.srcStride/dstStride (UB)"


def copies(
    e: VectorEmitter, op: ir.LoadPages, var: str, shift: Expr | None, size: Expr | None
) -> Block:
    """This core's rows of the paged block ``op`` into the UB tile ``var``."""
    src, table = _param(e, op.src), _param(e, op.table)
    first, rows = op.index[0], op.index[1]
    assert isinstance(first, ir.Point) and isinstance(rows, ir.Slice)
    page = src.type.shape[1]  # type: ignore[union-attr]
    lo = as_expr(0) if shift is None else as_expr(shift)
    n = rows.size if size is None else as_expr(size)
    names, ex, t = e.names, e.names.expr, e.names.symbols
    base = op.result.name
    i, pg, col, bound, r0, r1 = (
        isym(f"{base}_{x}")
        for x in ("page", "page_no", "page_col", "rows", "page_r0", "page_r1")
    )
    for s in (i, pg, col, bound, r0, r1):
        names.local(s.name)
    a = gm.access(src, (ir.Point(pg), ir.Slice(as_expr(0), page)) + op.index[2:], names)
    ct = ctype(_dtype(op))
    _whole_rows(op, a, e)
    flat = sum(
        (x * s for x, s in zip(op.row + (col,), strides(table.type.shape))),  # type: ignore[union-attr]
        sympy.Integer(0),
    )
    stop = rows.size if rows.stop is None else rows.stop
    gap_ub, gap_gm = gm.gaps(a, ct, names)
    dense = a.gap_elems == 0  # a page's rows are contiguous in GM: one burst
    count = "1" if dense else "validRows"
    length = f"validRows * {a.cols}" if dense else a.valid_cols
    copy = Line(
        f"AscendC::DataCopyPad({var}[({t[r0.name]} - {ex(lo)}) * {a.cols}], "
        f"{names.gm(op.src)}[{a.offset} + ({t[r0.name]} - {t[i.name]} * {ex(page)}) * {a.stride}], "
        "AscendC::DataCopyExtParams{"
        f'fadsl::Field<uint16_t>({count}, "DataCopyExtParams.blockCount"), '
        f'fadsl::Field<uint32_t>({length} * sizeof({ct}), "DataCopyExtParams.blockLen"), '
        f"{_u32(gap_gm, _GM)}, {_u32(gap_ub, _UB)}, 0}}, "
        f"AscendC::DataCopyPadExtParams<{ct}>{{false, 0, 0, 0}});"
    )
    body: list[Stmt] = [
        Line(
            f"const int64_t {t[r0.name]} = fadsl::Max<int64_t>({t[i.name]} * {ex(page)}, {ex(lo)});"
        ),
        Line(
            f"const int64_t {t[r1.name]} = fadsl::Min<int64_t>(({t[i.name]} + 1) * {ex(page)}, "
            f"fadsl::Min<int64_t>({ex(lo + n)}, {t[bound.name]}));"
        ),
        Block(
            f"if ({t[r1.name]} <= {t[r0.name]})",
            (Line("break;  // past the sequence's last page: not read"),),
        ),
        Line(f"const int64_t {t[col.name]} = {ex(first.at + i)};"),
        guards.guard(col, table.type.shape[-1], f"{op.table} column", names),  # type: ignore[union-attr]
        Line(
            f"const int64_t {t[pg.name]} = static_cast<int64_t>({names.gm(op.table)}.GetValue({ex(flat)}));"
        ),
        guards.guard(pg, src.type.shape[0], f"{op.src} page", names),  # type: ignore[union-attr]
        Line(f"const int64_t validRows = {t[r1.name]} - {t[r0.name]};"),
        copy,
    ]
    head = (
        f"for (int64_t {t[i.name]} = {ex(lo)} / {ex(page)}; "
        f"{t[i.name]} < {ex(rows.size)} / {ex(page)}; ++{t[i.name]})"
    )
    return Block(
        "",
        (
            Line(
                f"const int64_t {t[bound.name]} = fadsl::Valid(0, {ex(rows.size)}, {ex(stop)});"
            ),
            Block(head, tuple(body)),
        ),
    )


def _whole_rows(op: ir.LoadPages, a: gm.Access, e: VectorEmitter) -> None:
    """DataCopyPad starts each copied row at a 32-byte block of UB, and fadsl's UB tiles
    are dense, as the vector instructions reading them assume: each row of a paged
    tile must be whole 32-byte blocks (an int8 head dim a multiple of 32; a per-token
    scale's [block_kv, Nkv] f32 rows: Nkv a multiple of 8). Rows contiguous in GM are
    one burst per page; a page's first row in the tile is a multiple of 8 rows from
    the core's first, so each burst starts on a block."""
    t = op.result.type
    assert isinstance(t, TileType)
    cols = t.shape[-1]
    fixed = all(  # constexprs only (a tiling field is not known when compiling)
        "." not in e.names.symbols.get(s.name, ".") for s in cols.free_symbols
    )
    width = int(evaluate(cols, e.low.env)) * t.dtype.itemsize if fixed else None
    if width is not None and width % 32 == 0 and not a.col_tail:
        return
    shown = f"{width} bytes" if width is not None else f"{cols} elements"
    if a.col_tail:
        shown += " with a tail of columns"
    quant = any(
        isinstance(p.type, TensorType) and p.type.dtype is DType.I8
        for p in e.low.kernel.params
    )
    raise BackendError(
        f"the pages of `{op.src}` are loaded on the vector cores in rows of {shown}, "
        "not a constant number of whole 32-byte blocks"
        + (
            ", which the Ascend C backend does not generate for an int8 cache"
            if quant
            else ""
        )
        + " (issue 30)",
        op.loc,
        hint="an int8 cache's head dims D and Dv must be multiples of 32, and "
        'kv_scale="token" needs Nkv a multiple of 8 (or use kv_scale="channel", or '
        "run it in the interpreter)",
        code="int8_cache_not_compiled",
    )


def _u32(text: str, name: str) -> str:
    return text if text == "0" else f'fadsl::Field<uint32_t>({text}, "{name}")'


def _param(e: VectorEmitter, name: str) -> ir.Param:
    p = next(x for x in e.low.kernel.params if x.name == name)
    assert isinstance(p.type, TensorType)
    return p


def _dtype(op: ir.LoadPages):  # type: ignore[no-untyped-def]
    t = op.result.type
    assert isinstance(t, TileType)
    return t.dtype


__all__ = ["copies"]
