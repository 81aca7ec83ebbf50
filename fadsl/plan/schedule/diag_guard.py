"""Causal masks that only the blocks crossing the diagonal need (issue 16, causal).

``where(kv_pos[None, :] <= q_pos[:, None] + offset, s, other)`` (positions from
``arange``s, through casts, ``expand_dims`` and additions of integer scalars; also
``<``, and ``>=`` / ``>`` with the sides swapped) keeps every element of a block whose
last column is at most the first row's ``q_pos + offset``: a block wholly below the
diagonal. Only the blocks that cross it have elements to mask (fully masked blocks are
not visited: the causal KV loop stops before them). The condition is the KV-tail
guard's (``plan/schedule/tail_guard.py``) with a bound that moves with the rows:
``last column > first row + offset`` (``>=`` for ``<``), so the same ``TailGuard``
carries it, with ``row`` naming the row positions: the Ascend C backend adds the first
row of the vector core's half to the bound (``backends/ascendc/vector_guard.py``), and
the kernel model counts the select on the blocks from
``floor((first row + offset + 1) / block_kv)`` on (``partial_blocks``), at the first
vector core's rows (which cross on as many blocks as the second, or one more).
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.plan.schedule.tail_guard import TailGuard, only_for


def diag_guard(
    op: ir.Where,
    defs: Mapping[ir.Value, ir.Op],
    readers: Mapping[ir.Value, list[ir.Op]],
) -> TailGuard | None:
    """The guard of ``op`` when its mask compares column positions with row positions
    plus an integer offset as above and it keeps a tile where the mask holds."""
    cmp = defs.get(op.cond) if isinstance(op.cond, ir.Value) else None
    if not isinstance(op.a, ir.Value) or not isinstance(cmp, ir.Binary):
        return None
    d = diagonal(cmp, defs)
    if d is None:
        return None
    col, row, row_off, strict, col_chain, row_chain = d
    feeders = only_for([cmp, *col_chain], op, readers)
    feeders = _merge(feeders, only_for(row_chain, op, readers, (cmp, *feeders)))
    return TailGuard(op, col, row.start + row_off, strict, feeders, row.result)


_Positions = tuple[ir.Arange, Expr, int, list[ir.Op]]
_Diagonal = tuple[ir.Arange, ir.Arange, Expr, bool, list[ir.Op], list[ir.Op]]


def diagonal(cmp: ir.Binary, defs: Mapping[ir.Value, ir.Op]) -> _Diagonal | None:
    """(column arange, row arange, the integer added to the rows, strict, the column
    and the row chains) when ``cmp`` is ``col <= row + offset`` as above (``<``; ``>=``
    / ``>`` with the sides swapped): row r keeps the columns whose position is at most
    (below, when strict) ``row.start + offset + r``."""
    if not isinstance(cmp, (ir.Lt, ir.Le, ir.Gt, ir.Ge)):
        return None
    lhs, rhs = _positions(cmp.lhs, defs), _positions(cmp.rhs, defs)
    if lhs is None or rhs is None:
        return None
    if isinstance(cmp, (ir.Gt, ir.Ge)):
        lhs, rhs = rhs, lhs  # row >= col: col <= row
    col, col_off, col_axis, col_chain = lhs
    row, row_off, row_axis, row_chain = rhs
    if col_axis != 0 or row_axis != 1 or col_off != 0:
        return None
    return col, row, row_off, isinstance(cmp, (ir.Lt, ir.Gt)), col_chain, row_chain


def _positions(v: object, defs: Mapping[ir.Value, ir.Op]) -> _Positions | None:
    """(the arange, the integer added to it, the axis ``expand_dims`` inserted, the
    ops from ``v`` back to the arange) when ``v`` is such a position tile."""
    if not isinstance(v, ir.Value):
        return None
    chain: list[ir.Op] = []
    offset: Expr = sympy.Integer(0)
    axis = -1
    src = defs.get(v)
    while isinstance(src, (ir.ExpandDims, ir.Cast, ir.Add, ir.Sub)):
        chain.append(src)
        if isinstance(src, ir.ExpandDims):
            axis = src.axis if axis < 0 else axis
            nxt = src.x
        elif isinstance(src, ir.Cast):
            nxt = src.x
        else:
            term = _integer(src.rhs)
            if term is None or not isinstance(src.lhs, ir.Value):
                return None
            offset += term if isinstance(src, ir.Add) else -term
            nxt = src.lhs
        src = defs.get(nxt) if isinstance(nxt, ir.Value) else None
    if not isinstance(src, ir.Arange):
        return None
    chain.append(src)
    return src, offset, axis, chain


def _integer(x: object) -> Expr | None:
    if isinstance(x, ir.Imm) and getattr(x.expr, "is_integer", False):
        return x.expr
    return None


def _merge(a: tuple[ir.Op, ...], b: tuple[ir.Op, ...]) -> tuple[ir.Op, ...]:
    seen = {id(op) for op in a}
    return a + tuple(op for op in b if id(op) not in seen)
