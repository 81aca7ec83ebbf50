"""The cube's load of a KV block that spans several pages (``ir.LoadPages``).

One NZ tile in L1 of ``n * P`` rows receives page ``i`` at rows ``i * P ..``: one
``DataCopy`` (Nd2Nz, ``dstNzC0Stride`` = the tile's rows) per page, each page's number
read from the block table just before its copy. A page none of whose rows is before
the block's bound is neither copied nor looked up (the loop stops there), so the
kernel never reads a block-table column past the sequence's last page. Each read is
guarded (``guards.py``): the column must be in ``[0, MaxPages)`` and the page in
``[0, Pages)``, else ``AscendC::Trap()``. Rows past the bound are zeroed where the
tile is padded with 0 or contracted, as a single-block load's tail is. A block of
the first columns of each row (``k_cache[pages, keys, h, fd.ds(0, Dv)]``: MLA's V, the
latent part of K) copies ``Valid(0, Dv, D)`` columns of each row; columns past them
(none while Dv <= D, which ``fd.attention(v_from_k=True)`` checks) are zeroed.
"""

from __future__ import annotations

import sympy

from fadsl.backends.ascendc import gm, guards
from fadsl.backends.ascendc.names import Names
from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import as_expr, isym
from fadsl.ir.types import TensorType
from fadsl.plan.memory.gm_geometry import strides


def pages_nz(
    kernel: ir.Kernel, op: ir.LoadPages, var: str, zero_tail: bool, names: Names
) -> list[Stmt]:
    """GM pages -> one NZ tile ``var`` in L1 (``zero_tail``: rows past the bound = 0)."""
    src, table = _param(kernel, op.src), _param(kernel, op.table)
    first, rows = op.index[0], op.index[1]
    assert isinstance(first, ir.Point) and isinstance(rows, ir.Slice)
    page = src.type.shape[1]  # type: ignore[union-attr]
    base = op.result.name
    i, pg, col = (isym(f"{base}_{x}") for x in ("page", "page_no", "page_col"))
    valid, n_rows = isym(f"{base}_rows"), isym(f"{base}_page_rows")
    for s in (i, pg, col, valid, n_rows):
        names.local(s.name)
    a = gm.access(src, (ir.Point(pg), ir.Slice(as_expr(0), page)) + op.index[2:], names)
    if a.col_tail and (op.pad is None or op.pad != 0):
        raise BackendError(
            f"a paged load of `{op.src}` with a head-dim tail padded with {op.pad}; "
            "the cube pads with 0",
            op.loc,
            hint="load it with pad=0, or load whole head dims (`:`)",
        )
    ex, tshape = names.expr, table.type.shape  # type: ignore[union-attr]
    flat = sum(
        (e * s for e, s in zip(op.row + (col,), strides(tshape))), sympy.Integer(0)
    )
    stop = rows.size if rows.stop is None else rows.stop
    t = names.symbols
    c0 = f"(32 / sizeof({_ctype(op)}))"
    loop: list[Stmt] = [
        Line(
            f"const int64_t {t[n_rows.name]} = fadsl::Valid({ex(i * page)}, {ex(page)}, {t[valid.name]});"
        ),
        Block(
            f"if ({t[n_rows.name]} <= 0)",
            (Line("break;  // past the sequence's last page: not read"),),
        ),
        Line(f"const int64_t {t[col.name]} = {ex(first.at + i)};"),
        guards.guard(col, tshape[-1], f"{op.table} column", names),
        Line(
            f"const int64_t {t[pg.name]} = static_cast<int64_t>({names.gm(op.table)}.GetValue({ex(flat)}));"
        ),
        guards.guard(pg, src.type.shape[0], f"{op.src} page", names),  # type: ignore[union-attr]
        Line(
            f"fadsl::CopyNdToNz({var}[{t[i.name]} * {ex(page)} * {c0}], "
            f"{names.gm(op.src)}[{a.offset}], static_cast<uint32_t>({t[n_rows.name]}), "
            f"{a.valid_cols}, {a.stride}, {ex(rows.size)});"
        ),
    ]
    out: list[Stmt] = [
        Line(
            f"const int64_t {t[valid.name]} = fadsl::Valid(0, {ex(rows.size)}, {ex(stop)});"
        ),
        Block(
            f"for (int64_t {t[i.name]} = 0; {t[i.name]} < {ex(rows.size)} / {ex(page)}; ++{t[i.name]})",
            tuple(loop),
        ),
    ]
    if a.col_tail:  # a column prefix (MLA's V: K's first Dv): columns past it are 0
        out.append(
            Line(
                f"fadsl::ZeroTailCols({var}, {a.valid_cols}, {a.cols}, {ex(rows.size)});"
            )
        )
    if zero_tail:
        out.append(
            Line(
                f"fadsl::ZeroTailRows({var}, static_cast<uint32_t>({t[valid.name]}), "
                f"{a.cols}, {ex(rows.size)});"
            )
        )
    return [Block("", tuple(out))]


def _param(kernel: ir.Kernel, name: str) -> ir.Param:
    p = next(x for x in kernel.params if x.name == name)
    assert isinstance(p.type, TensorType)
    return p


def _ctype(op: ir.LoadPages) -> str:
    from fadsl.backends.ascendc.names import ctype

    return ctype(op.result.type.dtype)  # type: ignore[union-attr]


__all__ = ["pages_nz"]
