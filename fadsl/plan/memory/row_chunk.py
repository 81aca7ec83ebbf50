"""Row chunks: the row-wise vector work of a loop body over UB-sized chunks of rows.

A wide KV block (block_kv = 512 on 910B, 256 on 910A/310P) makes S and P tiles that,
whole, do not fit a vector core's UB beside the output accumulator. Every op between
the arrival of S and the hand-over of P maps row r of its inputs to row r of its
output (elementwise ops, row reductions, broadcasts of a [rows] vector, the KV
positions of a [1, block_kv] mask), so the vector code can run that region once per
chunk of rows:

    CrossCoreWaitFlag(S)                      // once: the cube sets it once
    for (rc = 0; rc < ROWS / n; ++rc) {       // n rows of this core's rows per chunk
        DataCopy(s, sWs[(row0 + rc * n) * BLOCK_KV], n * BLOCK_KV);
        ... the softmax on n rows; m, l, acc, alpha at rows rc * n ...
        DataCopy(pWs[(row0 + rc * n) * BLOCK_KV], p, n * BLOCK_KV);
    }
    CrossCoreSetFlag(P)                       // once: the cube waits once

The region of a loop runs from its first vector op (or dot result read by the vector
core) to its last hand-over to the cube (or its last vector op when it hands nothing
over). Values made and used only inside it are chunk-sized (temporaries, the S and P
staging tiles); values that live across it (the loop-carried m, l, acc, a row vector
made in it and read after it) keep all the core's rows and are addressed at the
chunk's rows. What follows the region (the output update, which needs P @ V of all
the rows) is planned whole. ``VectorPlanner`` plans a body with its regions; this
module finds them, checks that their ops are row-wise, and chooses the chunk: the
largest divisor of the core's rows, a multiple of ``CHUNK_ALIGN``, whose plan fits UB
(none when the whole rows fit). The loop's ``row_chunk`` attribute (textual IR)
forces a chunk; a bad value is E90, a loop that cannot be chunked E91.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import sympy

from fadsl.errors import BackendError, ScheduleError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, as_expr, evaluate
from fadsl.ir.types import DType, QueueType, Shape, TileType
from fadsl.plan.memory.row_split import RowSplit, row_split
from fadsl.plan.schedule.sides import CUBE, Sides, walk
from fadsl.plan.memory.vector_slots import VecPlan, linearize

CHUNK_ALIGN = 8
"""Chunk rows are a multiple of 8: the row broadcasts (Brcb) and row reductions work on
8 rows per repeat, and an f32 row vector at a chunk's first row is 32-byte aligned."""

_ROW_WISE = (
    ir.Unary,
    ir.Binary,
    ir.Where,
    ir.Cast,
    ir.Reduce,
    ir.ExpandDims,
    ir.Full,
    ir.Arange,
    ir.LoadScalar,
    ir.ScalarDef,
)


@dataclass(frozen=True)
class ChunkRegion:
    """The program points ``start`` .. ``end`` of ``loop``'s body run per chunk."""

    loop: ir.For
    start: int
    end: int
    rows: int
    """Rows of a chunk."""
    core_rows: Expr
    """Rows of the row block one vector core holds (block_q / 2 on split chips)."""
    block: Expr
    """The row block (block_q)."""
    columns: frozenset[str] = frozenset()
    """1-D values of the block's length used as columns (held whole)."""
    whole_slots: frozenset[str] = frozenset()
    """UB slots whose row tiles hold all the core's rows."""
    offset: dict[str, Expr] = field(default_factory=dict, compare=False, hash=False)
    """Values the region addresses at the chunk's rows (they live in a whole slot),
    each with the elements of one of its rows (the chunk's first element is
    ``rc * rows * offset[name]``)."""

    def covers(self, pos: int) -> bool:
        return self.start <= pos <= self.end

    def is_row(self, v: ir.Operand) -> bool:
        t = _tile(v)
        return (
            t is not None
            and bool(t.shape)
            and t.shape[0] == self.block
            and isinstance(v, ir.Value)
            and v.name not in self.columns
        )

    def chunk_shape(self, core: Shape) -> Shape:
        return (sympy.Integer(self.rows),) + tuple(core[1:])


def _tile(v: ir.Operand) -> TileType | None:
    if not isinstance(v, ir.Value):
        return None
    t = v.type.tile if isinstance(v.type, QueueType) else v.type
    return t if isinstance(t, TileType) else None


class Refused(Exception):
    """Why a region cannot run in chunks (the planner then keeps it whole)."""

    def __init__(self, why: str, loc: Any = None) -> None:
        super().__init__(why)
        self.why = why
        self.loc = loc


# --- finding regions --------------------------------------------------------------
def _analysis(sides: Sides, grid: ir.Grid) -> RowSplit:
    """The row blocks and column vectors, found as on a split chip (also on coupled
    chips, where nothing is split but the rows are chunked all the same)."""
    try:
        return row_split(sides, grid, True)
    except BackendError as exc:
        raise Refused(exc.message, exc.loc) from None


def region(
    loop: ir.For, sides: Sides, grid: ir.Grid, pos_of: dict[int, int]
) -> tuple[int, int, RowSplit]:
    """(first point, last point, row analysis) of ``loop``'s chunkable region."""
    body = loop.body
    vector = [k for k, op in enumerate(body) if _vector_work(op, sides)]
    if not any(isinstance(op, ir.Dot) and op.result in sides.to_vector for op in body):
        raise Refused("its body reads no dot result from the cube", loop.loc)
    sends = [k for k, op in enumerate(body) if set(op.results()) & set(sides.to_cube)]
    first, last = vector[0], (sends[-1] if sends else vector[-1])
    rs = _analysis(sides, grid)
    if len(rs.blocks) != 1:
        raise Refused(
            "its vector tiles have several row blocks "
            f"({', '.join(str(b) for b in rs.blocks)})",
            loop.loc,
        )
    sent = False
    for op in body[first : last + 1]:
        _row_wise(op, sides, rs, sent)
        sent = sent or bool(set(op.results()) & set(sides.to_cube))
    return pos_of[id(body[first])], pos_of[id(body[last])], rs


def _vector_work(op: ir.Op, sides: Sides) -> bool:
    """Whether ``op`` is (or holds) vector work, or is a dot the vector core reads."""
    if isinstance(op, ir.For):
        return any(_vector_work(o, sides) for o in op.body)
    if isinstance(op, ir.Dot):
        return op.result in sides.to_vector
    return sides.op_side.get(id(op)) not in (CUBE, None)


def _row_wise(op: ir.Op, sides: Sides, rs: RowSplit, sent: bool) -> None:
    if not _vector_work(op, sides):
        return
    if isinstance(op, ir.Dot):
        if op.result in sides.to_vector and sent:
            raise Refused(
                f"the dot result %{op.result.name} is read after a hand-over to the "
                "cube in the same round: it needs every row of what was handed over",
                op.loc,
            )
        return
    name = ir.op_name(type(op))
    if isinstance(op, ir.For):
        raise Refused("a loop inside the row-wise region", op.loc)
    if not isinstance(op, _ROW_WISE):
        raise Refused(f"`{name}` does not map rows to rows", op.loc)
    if isinstance(op, ir.Arange) and rs.block_of(op.result) is not None:
        raise Refused(f"`{name}` of row positions inside the region", op.loc)


# --- choosing the chunk -----------------------------------------------------------
def candidates(core_rows: int) -> list[int]:
    """Chunk rows to try, largest first (the whole rows excluded)."""
    return [
        n
        for n in range(core_rows - CHUNK_ALIGN, CHUNK_ALIGN - 1, -CHUNK_ALIGN)
        if core_rows % n == 0
    ]


PlanWith = Callable[[tuple[ChunkRegion, ...]], VecPlan]
"""Plans the vector UB with the given regions (none: whole rows)."""


def plan(
    grid: ir.Grid,
    sides: Sides,
    core_shape: Callable[[ir.Operand], Shape],
    env: dict[str, Any],
    plan_with: PlanWith,
    ub_used: Callable[[VecPlan], int],
    ub_capacity: int,
) -> VecPlan:
    """The vector plan: whole rows when they fit UB (or every loop says row_chunk =
    0 and none can be chunked), else the largest chunk that fits; forced chunks as the
    loops' ``row_chunk`` say."""
    loops = [op for op in walk(grid.body) if isinstance(op, ir.For)]
    forced = [lp for lp in loops if lp.row_chunk > 0]
    pos_of = _positions(grid)
    if forced:
        regions = tuple(
            _forced(lp, sides, grid, pos_of, core_shape, env) for lp in forced
        )
        try:
            return plan_with(tuple(r for r in regions if r is not None))
        except Refused as exc:
            raise _cannot(forced[0], exc) from None
    whole = plan_with(())
    if ub_used(whole) <= ub_capacity:
        return whole
    found = _auto_regions(loops, sides, grid, pos_of, core_shape, env)
    if not found:
        return whole
    best, best_used = whole, ub_used(whole)
    rows = _int(found[0][3], env)
    for n in candidates(rows):
        regions = tuple(_make(*f, n) for f in found)
        if any(not _aligned(r, env) for r in regions):
            continue
        try:
            chunked = plan_with(regions)
        except Refused:
            return best
        used = ub_used(chunked)
        if used <= ub_capacity:
            return chunked
        if used < best_used:
            best, best_used = chunked, used
    return best


def _positions(grid: ir.Grid) -> dict[int, int]:
    points: dict[int, ir.Op] = {}
    linearize(grid.body, points, [], [0])
    return {id(op): pos for pos, op in points.items()}


Found = tuple[ir.For, int, int, Expr, RowSplit]


def _found(
    lp: ir.For,
    sides: Sides,
    grid: ir.Grid,
    pos_of: dict[int, int],
    core_shape: Callable[[ir.Operand], Shape],
) -> Found:
    start, end, rs = region(lp, sides, grid, pos_of)
    block = rs.blocks[0]
    dot = next(d for d in sides.dots if d.result.type.shape[0] == block)  # type: ignore[union-attr]
    core_rows = core_shape(dot.result)[0]
    return (lp, start, end, core_rows, rs)


def _make(
    lp: ir.For, start: int, end: int, core_rows: Expr, rs: RowSplit, n: int
) -> ChunkRegion:
    return ChunkRegion(lp, start, end, n, core_rows, rs.blocks[0], rs.whole)


def _auto_regions(
    loops: list[ir.For],
    sides: Sides,
    grid: ir.Grid,
    pos_of: dict[int, int],
    core_shape: Callable[[ir.Operand], Shape],
    env: dict[str, Any],
) -> list[Found]:
    """The regions of the loops that can be chunked, when they all have the same
    rows per vector core (one chunk is chosen for all); else none."""
    out = []
    for lp in loops:
        try:
            out.append(_found(lp, sides, grid, pos_of, core_shape))
        except Refused:
            continue
    rows = {_int(f[3], env) for f in out}
    return out if len(rows) == 1 else []


def _forced(
    lp: ir.For,
    sides: Sides,
    grid: ir.Grid,
    pos_of: dict[int, int],
    core_shape: Callable[[ir.Operand], Shape],
    env: dict[str, Any],
) -> ChunkRegion | None:
    """The region ``lp.row_chunk`` asks for; None when it is all the core's rows."""
    try:
        found = _found(lp, sides, grid, pos_of, core_shape)
    except Refused as exc:
        raise _cannot(lp, exc) from None
    rows = _int(found[3], env)
    n = lp.row_chunk
    region_ = _make(*found, n)
    if rows % n or n % CHUNK_ALIGN or not _aligned(region_, env):
        ok = ", ".join(
            str(c) for c in candidates(rows) if _aligned(_make(*found, c), env)
        )
        raise ScheduleError(
            f"row_chunk = {n} on loop `{lp.var}`: a chunk must be a multiple of "
            f"{CHUNK_ALIGN} rows that divides the {rows} rows each vector core "
            "holds, with every row tile's chunk a whole number of 32-byte blocks",
            lp.loc,
            hint=f"use one of {ok or 'none (the rows cannot be chunked)'}, or "
            f"{rows} (no chunks), or 0 (the planner's choice)",
            code="ir_row_chunk_value",
        )
    return None if n == rows else region_


def _cannot(lp: ir.For, exc: Refused) -> ScheduleError:
    return ScheduleError(
        f"row_chunk = {lp.row_chunk} cannot be honoured for loop `{lp.var}`: "
        f"{exc.why}",
        exc.loc or lp.loc,
        hint="remove the row_chunk attribute (or set it to 0)",
        code="ir_row_chunk_impossible",
    )


def _aligned(r: ChunkRegion, env: dict[str, Any]) -> bool:
    """Every row tile of the loop has chunks of whole 32-byte blocks."""
    for op in walk(r.loop.body):
        for v in op.results():
            t = _tile(v)
            if t is None or not r.is_row(v):
                continue
            cols = 1
            for d in t.shape[1:]:
                cols *= _int(d, env)
            if t.dtype is not DType.BOOL and r.rows * cols * t.dtype.itemsize % 32:
                return False  # (a bit mask kept whole is refused by the planner)
    return True


def _int(e: Expr, env: dict[str, Any]) -> int:
    return int(evaluate(as_expr(e), env))


def annotate(kernel: ir.Kernel, vec: VecPlan) -> ir.Kernel:
    """``kernel`` with each chunked loop's ``row_chunk`` set, so that its textual IR
    shows the chunk; loops match by variable and line."""
    chosen = {
        (r.loop.var, r.loop.loc.file, r.loop.loc.line): r.rows for r in vec.chunks
    }
    if not chosen:
        return kernel

    def body(ops: tuple[ir.Op, ...]) -> tuple[ir.Op, ...]:
        out = []
        for op in ops:
            if isinstance(op, ir.For):
                n = chosen.get((op.var, op.loc.file, op.loc.line), op.row_chunk)
                op = replace(op, row_chunk=n, body=body(op.body))
            elif isinstance(op, ir.Grid):
                op = replace(op, body=body(op.body))
            out.append(op)
        return tuple(out)

    return replace(kernel, body=body(kernel.body))


__all__ = ["CHUNK_ALIGN", "ChunkRegion", "Refused", "annotate", "candidates", "plan"]
