"""Tail selects run only in the block that reaches past the bound (issue 16, item 5).

``plan/schedule/tail_guard.py`` finds the selects whose mask is ``arange < bound``; here the
vector emitter wraps such a select, and the ops whose only use is its mask (the
``arange`` and its cast, which full blocks would compute for nothing), in
``if (last column >= bound)``. A row mask (``q_idx[:, None] < Sq``, form ``mask_full``:
the backward's Q tail) is guarded the same way by the block's last row (issue 27),
but its feeders stay where the program makes them (``tail_guard.row_mask``). The
select must work in place (its result in the buffer
of the branch it keeps): then a skipped select leaves exactly the kept values.
PipeBarriers inside the branch follow the same rule as elsewhere (only before an
instruction that touches a buffer written since the last barrier); after the branch,
the buffers either path may have left unfenced count as written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.ir import nodes as ir
from fadsl.plan.schedule.diag_guard import diag_guard, diagonal
from fadsl.plan.schedule.tail_guard import TailGuard, row_mask, tail_guard

_FINDERS = {
    "mask_cols": tail_guard,
    "mask_full": tail_guard,
    "mask_outer": diag_guard,
    "mask_diag": diag_guard,
}
"""The guard each select form can have: the KV tail (a column mask), the Q tail (a
row mask, form ``mask_full``: ``tail_guard`` finds a guard only where the mask
compares an arange with a bound), the causal diagonal (columns against rows, ``plan/schedule/diag_guard.py``)."""

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter


def find(e: VectorEmitter, body: tuple[ir.Op, ...], first: int) -> dict[int, TailGuard]:
    """The guarded selects of ``body`` by ``id``; ``first`` is the position of
    ``body[0]`` (positions key the vector plan's forms)."""
    out: dict[int, TailGuard] = {}
    pos = first
    mine = {id(op) for op in body}
    for op in body:
        form = e.vec.forms.get(pos)
        find_guard = _FINDERS.get(form.name) if form is not None else None
        if isinstance(op, ir.Where) and find_guard is not None:
            g = find_guard(op, e.sides.defs, e.sides.readers)
            if g is not None and _in_place(e, op):
                feeders = tuple(f for f in g.feeders if id(f) in mine)
                if row_mask(op):  # its feeders stay where the plan put them
                    feeders = ()
                out[id(op)] = dataclasses.replace(g, feeders=feeders)
        pos += 1 + (count(op.body) + 1 if isinstance(op, ir.For) else 0)
    return out


def _in_place(e: VectorEmitter, op: ir.Where) -> bool:
    home = e.vec.homes.get(op.result.name)
    return home is not None and home == e.vec.homes.get(op.a.name)  # type: ignore[union-attr]


def count(body: tuple[ir.Op, ...]) -> int:
    """Positions ``body`` takes in the emitter's walk (a loop: its body and its end)."""
    n = 0
    for op in body:
        n += 1 + (count(op.body) + 1 if isinstance(op, ir.For) else 0)
    return n


def guarded(
    e: VectorEmitter,
    op: ir.Where,
    guard: TailGuard,
    feeders: list[tuple[ir.Op, int]],
    calls: Callable[[], list[Stmt]],
    form: str = "",
) -> list[Stmt]:
    """The declaration of the select's result, then the branch: the deferred
    ``feeders`` (op, position), then the select's own ``calls``. A ``mask_diag``
    select computes its row thresholds itself: the row positions' feeders are not
    emitted (nothing else reads them)."""
    out = e._declare(op.result)
    before = set(e.dirty)
    inner: list[Stmt] = []
    unread = _row_chain(e, op) if form == "mask_diag" else set()
    for f, pos in feeders:
        if id(f) in unread:
            continue
        inner += e._group(f.loc, e._located(f, pos))
    inner += calls()
    e.dirty |= before
    last = e.names.expr(guard.last())
    bound = guard.bound
    if guard.row is not None:  # the diagonal at this vector core's first row
        bound = bound + e.row_shift(guard.row)
    cond = f"{last} {'>=' if guard.strict else '>'} {e.names.expr(bound)}"
    what = (
        "a block that crosses the diagonal has elements to mask"
        if guard.row is not None
        else f"a block that reaches past the bound has {_axis(op)} to mask"
    )
    return out + [
        Line(f"// only {what}"),
        Block(f"if ({cond})", tuple(inner)),
    ]


def _axis(op: ir.Where) -> str:
    """What a tail select masks: rows or columns (``row_mask``)."""
    return "rows" if row_mask(op) else "columns"


def _row_chain(e: VectorEmitter, op: ir.Where) -> set[int]:
    """``id``s of the ops that make a diagonal's row positions."""
    cmp = e.sides.defs.get(op.cond) if isinstance(op.cond, ir.Value) else None
    d = diagonal(cmp, e.sides.defs) if isinstance(cmp, ir.Binary) else None
    return set() if d is None else {id(o) for o in d[5]}
