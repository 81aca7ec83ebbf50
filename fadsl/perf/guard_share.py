"""Which vector ops of a KV iteration run only in some blocks, and in what share.

The Ascend C backend runs a KV-tail select (``plan/schedule/tail_guard.py``) only in the block
that reaches past the bound, and a causal select (``plan/schedule/diag_guard.py``) only in the
blocks that cross the diagonal, each with the ops only its mask reads. The model
counts their work on that share of the blocks: guarded blocks / blocks, an
expression of the task's grid point (``perf/kernel.py`` values it per task).

The model reads the IR before ``lower_vector``, where ``where(a & b, x, y)`` is one
select on an ``and``; the backend runs it as two selects, one per mask (the lowered
IR), each guarded on its own. Here the ``where`` stands for the select on the first
guarded mask and the ``and`` for the other one.
"""

from __future__ import annotations

from typing import Any

import sympy

from fadsl.ir import nodes as ir
from fadsl.perf.cost_work import walk
from fadsl.plan.schedule.diag_guard import diag_guard
from fadsl.plan.schedule.tail_guard import (
    TailGuard,
    in_place_hint,
    partial_blocks,
    row_mask,
    tail_guard,
)

Readers = dict[ir.Value, list[ir.Op]]


_KEPT: dict[tuple[int, int], tuple[ir.Grid, ir.For, dict[int, Any]]] = {}


def tail_times(grid: ir.Grid, loop: ir.For) -> dict[int, Any]:
    """By ``id``: the guarded selects and the ops only their masks read, each with
    the share of the loop's blocks that run them (kept per grid and loop object: the
    model of each planner choice asks again, ``perf/kernel.py``)."""
    hit = _KEPT.get((id(grid), id(loop)))
    if hit is not None and hit[0] is grid and hit[1] is loop:
        return hit[2]
    out = _tail_times(grid, loop)
    _KEPT[(id(grid), id(loop))] = (grid, loop, out)
    return out


def _tail_times(grid: ir.Grid, loop: ir.For) -> dict[int, Any]:
    ops = walk(grid.body)
    defs = {r: op for op in ops for r in op.results()}
    readers: Readers = {}
    for op in ops:
        for v in op.operand_values():
            readers.setdefault(v, []).append(op)
    for op in ops:
        if isinstance(op, ir.For):
            for v in (*op.inits, *op.yields):
                readers.setdefault(v, []).append(op)
    out: dict[int, Any] = {}
    for op in loop.body:
        if not isinstance(op, ir.Where) or not in_place_hint(op, loop.body):
            continue
        stands = [op]
        for g in _guards(op, defs, readers):
            partial = partial_blocks(g, loop)
            if partial is None:
                continue
            trips = sympy.sympify(loop.stop) - sympy.sympify(loop.start)
            share = partial / sympy.Max(1, trips)
            select = stands.pop(0) if stands else None
            feeders = () if row_mask(g.where) else g.feeders  # made in every block
            for f in (*feeders, *((select,) if select is not None else ())):
                out[id(f)] = share
            if g.where is not op:  # one mask of an `and`: the `and` is its select
                stands.append(defs[op.cond])  # type: ignore[index]
    return out


def _guards(
    op: ir.Where, defs: dict[ir.Value, ir.Op], readers: Readers
) -> list[TailGuard]:
    """The guards of ``op``'s select(s): of ``op`` itself, or of one select per mask
    of ``cond = lhs & rhs`` (each seen as ``where(mask, a, b)`` read only there)."""
    found = _find(op, defs, readers)
    if found is not None:
        return [found]
    both = defs.get(op.cond) if isinstance(op.cond, ir.Value) else None
    if not isinstance(both, ir.And):
        return []
    out = []
    for mask in (both.lhs, both.rhs):
        if not isinstance(mask, ir.Value):
            continue
        alone = ir.Where(cond=mask, a=op.a, b=op.b, result=op.result, loc=op.loc)
        g = _find(alone, defs, {**readers, mask: [alone]})
        if g is not None:
            out.append(g)
    return out


def _find(
    op: ir.Where, defs: dict[ir.Value, ir.Op], readers: Readers
) -> TailGuard | None:
    return tail_guard(op, defs, readers) or diag_guard(op, defs, readers)
