"""Masks that only a block reaching past a bound needs (issue 16, item 5).

``where(arange(start, size)[None, :] < bound, x, other)`` keeps every column of a
block that ends before ``bound``: only the block that reaches past it (the KV tail)
has columns to mask. The Ascend C backend runs such a select, and the ops whose only
use is its mask (the ``arange``, its casts and the compare), under
``if (start + size - 1 >= bound)``; the kernel model (``perf/timeline_steps.py``)
counts their work only on the blocks that take that branch. Both read the structure
from here, so the model counts what the code runs.

The backend adds one condition of its own: the select must work in place (its result
shares the buffer of the branch it keeps), or the skipped path would leave the result
unwritten; ``in_place_hint`` is the same test on the IR (the kept branch dies at the
select), for the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr


@dataclass(frozen=True)
class TailGuard:
    """A select that only the block past ``bound`` needs."""

    where: ir.Where
    arange: ir.Arange
    bound: Expr
    strict: bool
    """``<`` (else ``<=``)."""
    feeders: tuple[ir.Op, ...]
    """Ops read only by this select's mask, in program order of the chain
    (arange, casts and expand_dims, compare): run only under the guard."""
    row: ir.Value | None = None
    """A causal diagonal's row positions (``plan/schedule/diag_guard.py``): the bound is
    then that of the first row, and a vector core adds its first row to it."""

    def last(self) -> Expr:
        """The position of the block's last column."""
        return self.arange.start + self.arange.size - 1


def tail_guard(
    op: ir.Where,
    defs: Mapping[ir.Value, ir.Op],
    readers: Mapping[ir.Value, list[ir.Op]],
) -> TailGuard | None:
    """The guard of ``op`` when its mask is ``arange < integer bound`` (through casts
    and ``expand_dims``) and it keeps a tile where the mask holds; else None."""
    cmp = defs.get(op.cond) if isinstance(op.cond, ir.Value) else None
    if not isinstance(cmp, (ir.Lt, ir.Le)) or not isinstance(cmp.rhs, ir.Imm):
        return None
    if not isinstance(op.a, ir.Value) or not isinstance(cmp.lhs, ir.Value):
        return None
    bound = cmp.rhs.expr
    if not getattr(bound, "is_integer", False):
        return None
    chain: list[ir.Op] = [cmp]
    src = defs.get(cmp.lhs)
    while isinstance(src, (ir.ExpandDims, ir.Cast)):
        chain.append(src)
        src = defs.get(src.x) if isinstance(src.x, ir.Value) else None
    if not isinstance(src, ir.Arange):
        return None
    chain.append(src)
    feeders = only_for(chain, op, readers)
    return TailGuard(op, src, bound, isinstance(cmp, ir.Lt), feeders)


def row_mask(where: ir.Where) -> bool:
    """Whether ``where``'s mask is a column of row positions (``q_idx[:, None] <
    Sq``: shape [rows, 1]). Such a guard keeps its feeders (the row positions'
    arange and cast) where the program makes them: the vector plan gave their
    buffers for that point, and moving them to the select may overwrite a value
    still live there (issue 27: the softcap backward's derivative). Only the select
    runs under the guard."""
    cond = where.cond
    t = cond.type if isinstance(cond, ir.Value) else None
    shape = getattr(t, "shape", ())
    return len(shape) == 2 and str(shape[1]) == "1"


def only_for(
    chain: list[ir.Op],
    where: ir.Where,
    readers: Mapping[ir.Value, list[ir.Op]],
    also: tuple[ir.Op, ...] = (),
) -> tuple[ir.Op, ...]:
    """The ops of ``chain`` (compare first, arange last) whose results only the
    chain, ``where`` and the ops ``also`` read, in program order (arange first)."""
    inside: set[int] = {id(where), *(id(op) for op in also)}
    out: list[ir.Op] = []
    for op in chain:
        uses = [r for v in op.results() for r in readers.get(v, [])]
        if not uses or any(id(r) not in inside for r in uses):
            break
        inside.add(id(op))
        out.append(op)
    return tuple(reversed(out))


def in_place_hint(op: ir.Where, body: tuple[ir.Op, ...]) -> bool:
    """Whether the kept branch dies at ``op`` (no later op of ``body`` or its loops'
    yields reads it) and has its shape and dtype: the vector planner then puts the
    result in the branch's buffer (``plan/memory/vector_plan.py``, ``_in_place``)."""
    kept = op.a
    if not isinstance(kept, ir.Value) or kept.type != op.result.type:
        return False
    after = False
    for inner in body:
        if inner is op:
            after = True
            continue
        if after and kept in _reads(inner):
            return False
    return after


def _reads(op: ir.Op) -> list[ir.Value]:
    if isinstance(op, ir.For):
        out = list(op.inits) + list(op.yields)
        for inner in op.body:
            out += _reads(inner)
        return out
    return list(op.operand_values())


def partial_blocks(guard: TailGuard, loop: ir.For) -> Expr | None:
    """How many of ``loop``'s blocks take the guarded branch, when the arange is the
    loop's block (starts at ``loop.var * size``); None otherwise. Block j needs the
    mask when ``j*size + size - 1 >= bound`` (``> bound`` for ``<=``), that is for
    every j from ``floor(bound / size)`` (``floor((bound + 1) / size)``) on, counted
    from the loop's start (split-KV's parts start at their own block)."""
    size = sympy.sympify(guard.arange.size)
    start = sympy.sympify(guard.arange.start)
    var = next((s for s in start.free_symbols if str(s) == loop.var), None)
    if var is None or sympy.simplify(start - var * size) != 0:
        return None
    edge = guard.bound if guard.strict else guard.bound + 1
    first, n = sympy.sympify(loop.start), sympy.sympify(loop.stop)
    cut = sympy.Max(first, sympy.Min(n, sympy.Max(0, sympy.floor(edge / size))))
    return sympy.Max(0, n - cut)
