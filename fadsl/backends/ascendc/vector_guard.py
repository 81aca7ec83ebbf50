"""KV-tail selects run only in the block that reaches past the bound (issue 16, item 5).

``plan/tail_guard.py`` finds the selects whose mask is ``arange < bound``; here the
vector emitter wraps such a select, and the ops whose only use is its mask (the
``arange`` and its cast, which full blocks would compute for nothing), in
``if (last column >= bound)``. The select must work in place (its result in the buffer
of the branch it keeps): then a skipped select leaves exactly the kept values.
PipeBarriers inside the branch follow the same rule as elsewhere (only before an
instruction that touches a buffer written since the last barrier); after the branch,
the buffers either path may have left unfenced count as written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.ir import nodes as ir
from fadsl.plan.tail_guard import TailGuard, tail_guard

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
        if isinstance(op, ir.Where) and form is not None and form.name == "mask_cols":
            g = tail_guard(op, e.sides.defs, e.sides.readers)
            if g is not None and _in_place(e, op):
                feeders = tuple(f for f in g.feeders if id(f) in mine)
                out[id(op)] = TailGuard(g.where, g.arange, g.bound, g.strict, feeders)
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
) -> list[Stmt]:
    """The declaration of the select's result, then the branch: the deferred
    ``feeders`` (op, position), then the select's own ``calls``."""
    out = e._declare(op.result)
    before = set(e.dirty)
    inner: list[Stmt] = []
    for f, pos in feeders:
        inner += e._group(f.loc, e._located(f, pos))
    inner += calls()
    e.dirty |= before
    last = e.names.expr(guard.last())
    cond = f"{last} {'>=' if guard.strict else '>'} {e.names.expr(guard.bound)}"
    return out + [
        Line("// only a block that reaches past the bound has columns to mask"),
        Block(f"if ({cond})", tuple(inner)),
    ]
