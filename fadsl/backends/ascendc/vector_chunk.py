"""The row chunk loop of the vector class (the plan: ``plan/memory/row_chunk.py``).

The ops of a chunk region are emitted inside

    for (int64_t rc = 0; rc < ROWS / n; ++rc) { ... }

with every row tile n rows long: chunk-sized tiles from the start of their buffers,
tiles that hold all the core's rows (m, l, acc, the saved alpha) at ``[rc * n * cols]``,
workspace rows at ``row0 + rc * n``. The cross-core waits of the dot results the
region reads go before the loop and the flag sets of the tiles it sends after it: the
cube sets and waits for each flag once per round, whatever the chunks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy

from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.ir import nodes as ir

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter


def begins(e: VectorEmitter, pos: int) -> bool:
    """Starts the region beginning at ``pos``, if any."""
    region = next((c for c in e.vec.chunks if c.start == pos), None)
    if region is None:
        return False
    e.chunk, e.chunk_pre, e.chunk_post = region, [], []
    e.last_loc = None
    _all_dirty(e)  # the previous chunk's (or round's) vector work may be in flight
    return True


def ends(e: VectorEmitter, pos: int) -> bool:
    return e.chunk is not None and e.chunk.end == pos


def finish(e: VectorEmitter, body: list[Stmt]) -> list[Stmt]:
    """The waits, the chunk loop around ``body``, and the flag sets."""
    c = e.chunk
    assert c is not None
    var = _var(e)
    count = f"{e.names.expr(c.core_rows)} / {c.rows}"
    head = f"for (int64_t {var} = 0; {var} < {count}; ++{var})"
    note = Line(f"// the row-wise work in chunks of {c.rows} rows (row_chunk)")
    out = e.chunk_pre + [note, Block(head, tuple(body))] + e.chunk_post
    e.chunk, e.chunk_pre, e.chunk_post = None, [], []
    e.last_loc = None
    _all_dirty(e)
    return out


def before(e: VectorEmitter, stmts: list[Stmt]) -> list[Stmt]:
    """``stmts`` here, or before the chunk loop when emitting one."""
    if e.chunk is None:
        return stmts
    e.chunk_pre += stmts
    return []


def after(e: VectorEmitter, stmts: list[Stmt]) -> list[Stmt]:
    """``stmts`` here, or after the chunk loop when emitting one."""
    if e.chunk is None:
        return stmts
    e.chunk_post += stmts
    return []


def hoisted(e: VectorEmitter, name: str, decl: list[Stmt]) -> list[Stmt]:
    """The declaration of a value kept whole in the region goes before the chunk loop
    (code after the loop reads it)."""
    if e.chunk is None or name not in e.chunk.offset:
        return decl
    e.chunk_pre += decl
    return []


def row0(e: VectorEmitter, first: str) -> str:
    """The first workspace row of this core's part, at the chunk's rows."""
    if e.chunk is None:
        return first
    return f"({first} + {_var(e)} * {e.chunk.rows})"


def offset(e: VectorEmitter, name: str) -> str:
    """``[first element of the chunk]`` for a value kept whole in the region."""
    c = e.chunk
    if c is None or name not in c.offset:
        return ""
    return f"[{_var(e)} * {e.names.expr(c.rows * sympy.sympify(c.offset[name]))}]"


def rows_offset(e: VectorEmitter, v: ir.Value) -> str:
    """``[first element of the chunk]`` of a buffer holding all rows of ``v``."""
    c = e.chunk
    if c is None or not c.is_row(v):
        return ""
    cols = sympy.Mul(*e.low.core_shape(v)[1:])
    return f"[{_var(e)} * {e.names.expr(c.rows * cols)}]"


def _var(e: VectorEmitter) -> str:
    return e.names.m.claim("chunk", "rc", "rc", ("kernel",))


def _all_dirty(e: VectorEmitter) -> None:
    e.dirty |= {b.name for b in e.low.plan.in_space("UB")}


__all__ = [
    "after",
    "before",
    "begins",
    "ends",
    "finish",
    "hoisted",
    "offset",
    "row0",
    "rows_offset",
]
