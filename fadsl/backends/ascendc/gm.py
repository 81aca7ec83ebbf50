"""Global-memory addressing shared by the cube and vector emitters: offsets, strides, tails."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from fadsl.backends.ascendc.names import Names
from fadsl.backends.ascendc.view import Line
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, as_expr
from fadsl.ir.types import TensorType


@dataclass(frozen=True)
class Access:
    """A block of a GM tensor seen as rows x cols, as C++ expressions."""

    offset: str
    """element offset of the block's first element"""
    rows: str
    """rows of the tile (block size)"""
    cols: str
    valid_rows: str
    valid_cols: str
    stride: str
    """GM elements between consecutive rows"""
    col_tail: bool
    """whether the columns can have a tail"""
    gap_elems: Expr
    """GM elements skipped between rows when the columns are whole (stride - cols)"""


def strides(shape: tuple[Expr, ...]) -> list[Expr]:
    out: list[Expr] = []
    acc: Expr = sympy.Integer(1)
    for d in reversed(shape):
        out.append(acc)
        acc = acc * d
    return list(reversed(out))


def access(
    param: ir.Param,
    index: tuple[ir.Index, ...],
    names: Names,
    shift: Expr | None = None,
    size: Expr | None = None,
) -> Access:
    """The rows x cols view of ``param[index]``; the last one or two slices form the tile.

    ``shift`` moves the start of the first sliced dimension and ``size`` replaces its
    length: a vector core's half of a split block.
    """
    t = param.type
    assert isinstance(t, TensorType)
    st = strides(t.shape)
    slices = [(d, ix) for d, ix in enumerate(index) if isinstance(ix, ir.Slice)]
    if not slices or len(slices) > 2:
        raise BackendError(
            f"blocks of `{param.name}` must slice one or two dimensions", param.loc
        )
    starts = {
        d: (ix.at if isinstance(ix, ir.Point) else ix.start)
        for d, ix in enumerate(index)
    }
    sizes = {d: ix.size for d, ix in slices}
    first = slices[0][0]
    if shift is not None:
        starts[first] = starts[first] + shift
    if size is not None:
        sizes[first] = size
    offset = sum((starts[d] * st[d] for d in range(len(index))), sympy.Integer(0))
    cd = slices[-1][0]
    rd = slices[0][0] if len(slices) == 2 else None
    if st[cd] != 1:
        raise BackendError(
            f"the last sliced dimension of `{param.name}` must be contiguous in memory",
            param.loc,
        )

    def valid(d: int) -> str:
        return (
            f"fadsl::Valid({names.expr(starts[d])}, {names.expr(sizes[d])}, "
            f"{names.expr(limit(index[d], t.shape[d]))})"
        )

    col_tail = bounded(index[cd]) or not (
        starts[cd] == 0
        and sizes[cd] == t.shape[cd]
        or whole_blocks(starts[cd], sizes[cd], t.shape[cd])
    )
    return Access(
        offset=names.expr(offset),
        rows="1" if rd is None else names.expr(sizes[rd]),
        cols=names.expr(sizes[cd]),
        valid_rows="1" if rd is None else valid(rd),
        valid_cols=valid(cd) if col_tail else names.expr(sizes[cd]),
        stride=names.expr(st[rd]) if rd is not None else names.expr(sizes[cd]),
        col_tail=col_tail,
        gap_elems=sympy.simplify((st[rd] if rd is not None else sizes[cd]) - sizes[cd]),
    )


def bounded(ix: ir.Index) -> bool:
    """A block with a bound of its own (one sequence of a packed tensor)."""
    return isinstance(ix, ir.Slice) and ix.stop is not None


def limit(ix: ir.Index, extent: Expr) -> Expr:
    """Where a dimension's valid positions end: the extent, or the block's bound."""
    if isinstance(ix, ir.Slice) and ix.stop is not None:
        return sympy.Min(extent, ix.stop)
    return extent


def whole_blocks(start: Expr, size: Expr, extent: Expr) -> bool:
    """Blocks that start at a multiple of their size in an extent that is a multiple of
    it never have a tail (a head's columns of a BSH tensor: h * D +: D of N * D)."""
    if size == 0:
        return False
    ratios = (
        sympy.simplify(as_expr(start) / size),
        sympy.simplify(as_expr(extent) / size),
    )
    return all(r.is_integer for r in ratios)


def gaps(a: Access, ctype: str, names: Names) -> tuple[str, str]:
    """(UB gap in 32-byte blocks, GM gap in bytes) between the rows DataCopyPad moves."""
    if not a.col_tail:
        gm_gap = (
            "0" if a.gap_elems == 0 else f"{names.expr(a.gap_elems)} * sizeof({ctype})"
        )
        return "0", gm_gap
    ub = f"{a.cols} * sizeof({ctype}) / 32 - ({a.valid_cols} * sizeof({ctype}) + 31) / 32"
    return ub, f"({a.stride} - {a.valid_cols}) * sizeof({ctype})"


def load_scalar(kernel: ir.Kernel, op: ir.LoadScalar, names: Names) -> list[Line]:
    """``const T x = srcGm.GetValue(i);``: a scalar the scalar unit reads from GM (loop
    bounds, block indices, slopes); both the cube and the vector cores read their own.
    """
    p = next(x for x in kernel.params if x.name == op.src)
    assert isinstance(p.type, TensorType)
    names.local(op.name)
    flat = names.expr(
        sum((i * s for i, s in zip(op.index, strides(p.type.shape))), sympy.Integer(0))
    )
    ct = "float" if p.type.dtype.is_float else "int64_t"
    return [
        Line(
            f"const {ct} {names.symbols[op.name]} = static_cast<{ct}>("
            f"{op.src}Gm.GetValue({flat}));"
        )
    ]
