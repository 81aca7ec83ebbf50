"""The rows x cols view of a block of a GM tensor, as sympy expressions.

``fd.load(x[b, h, rows, :])`` moves a block whose last sliced dimension is contiguous
(the columns) and whose first sliced dimension, if there are two, gives the rows; rows
lie ``stride`` elements apart in GM. The Ascend C backend (``backends/ascendc/gm.py``)
prints these expressions into DataCopy parameters, and the API field proof
(``api_fields``) bounds the same expressions, so what is proved is what is emitted.

Non-goals: C++ text (backends/ascendc/gm.py), tails and valid lengths.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, as_expr
from fadsl.ir.types import TensorType


@dataclass(frozen=True)
class Geometry:
    """A block of ``param[index]`` seen as rows x cols."""

    starts: dict[int, Expr]
    """First index of every dimension (points and slice starts)."""
    sizes: dict[int, Expr]
    """Length of every sliced dimension."""
    offset: Expr
    """Element offset of the block's first element."""
    row_dim: int | None
    """The dimension of the rows (None for a single sliced dimension: one row)."""
    col_dim: int
    rows: Expr
    cols: Expr
    stride: Expr
    """GM elements between the starts of consecutive rows."""
    col_tail: bool
    """Whether the columns can have a tail (a valid length computed at run time)."""


def strides(shape: tuple[Expr, ...]) -> list[Expr]:
    out: list[Expr] = []
    acc: Expr = sympy.Integer(1)
    for d in reversed(shape):
        out.append(acc)
        acc = acc * d
    return list(reversed(out))


def geometry(
    param: ir.Param,
    index: tuple[ir.Index, ...],
    shift: Expr | None = None,
    size: Expr | None = None,
) -> Geometry:
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
    return Geometry(
        starts,
        sizes,
        offset,
        rd,
        cd,
        sympy.Integer(1) if rd is None else sizes[rd],
        sizes[cd],
        st[rd] if rd is not None else sizes[cd],
        bounded(index[cd])
        or not (
            starts[cd] == 0
            and sizes[cd] == t.shape[cd]
            or whole_blocks(starts[cd], sizes[cd], t.shape[cd])
        ),
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
