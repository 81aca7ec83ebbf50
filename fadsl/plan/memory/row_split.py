"""Which rows of each vector tile a vector core (AIV) owns on split chips (910B, A3).

A MIX kernel runs its vector code on two AIVs. Each owns half the rows of every tile
whose first dimension is a *row block*: the row count M of a dot that the vector code
reads. The forward has one (block_q: scores and the output accumulator). The backward
has two: the scores, P and dS are [block_q, block_kv] tiles (row block block_q), while
dK and dV accumulate dots whose M is block_kv ([block_kv, D], row block block_kv).
Each tile is split by its own row block: AIV k owns rows k * R/2 .. (k + 1) * R/2 - 1
of a tile of R rows, so a dot result is copied to each AIV by rows and a vector-made
dot operand is written back by rows, whatever its row block. CANN's
FlashAttentionScoreGrad splits its vector work between the two AIVs by rows the same
way; a cube dot always sees the whole tile in GM.

A third kind: the row count of a dot operand the vector cores make from tiles they
load (an int8 KV cache's pages, dequantised before the cube multiplies them: block_kv
rows). Each AIV loads, converts and sends its half of the rows, as it sends its rows
of P.

One exception: a 1-D vector of R elements that reaches ``x[None, :]`` is a row of
columns (the KV positions of a [block_q, block_kv] mask), not rows: both AIVs hold all
of it. A vector used both ways cannot be split consistently and is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.ir.types import QueueType, Shape, TileType
from fadsl.plan.schedule.sides import CUBE, Sides, walk


@dataclass(frozen=True)
class RowSplit:
    """The row blocks of a kernel's vector tiles and the values held whole."""

    blocks: tuple[Expr, ...] = ()
    """Row blocks split between the AIVs; the first is the primary (``ROWS``)."""
    whole: frozenset[str] = frozenset()
    """1-D values of a row block's length that every AIV holds whole (columns)."""
    shapes: dict[ir.Value, Shape] = field(
        default_factory=dict, init=False, compare=False, hash=False, repr=False
    )
    """``core_shape``'s answers: the planner asks for each value hundreds of times,
    and each answer builds a sympy quotient."""

    @property
    def primary(self) -> Expr | None:
        return self.blocks[0] if self.blocks else None

    def block_of(self, v: ir.Operand) -> Expr | None:
        """The row block ``v`` is split by, or None when each AIV holds all of it."""
        t = _tile(v)
        if t is None or not t.shape or t.shape[0] not in self.blocks:
            return None
        assert isinstance(v, ir.Value)
        return None if v.name in self.whole else t.shape[0]

    def core_shape(self, v: ir.Operand) -> Shape:
        """The part of ``v``'s tile one vector core holds."""
        if isinstance(v, ir.Value):
            got = self.shapes.get(v)
            if got is None:
                got = self.shapes[v] = self._core_shape(v)
            return got
        return self._core_shape(v)

    def _core_shape(self, v: ir.Operand) -> Shape:
        t = _tile(v)
        if t is None:
            return ()
        r = self.block_of(v)
        return tuple(t.shape) if r is None else (r / 2,) + tuple(t.shape[1:])


def _tile(v: ir.Operand) -> TileType | None:
    if not isinstance(v, ir.Value):
        return None
    t = v.type.tile if isinstance(v.type, QueueType) else v.type
    return t if isinstance(t, TileType) else None


def row_split(sides: Sides, grid: ir.Grid, split: bool) -> RowSplit:
    """The row blocks (Ms of the dots the vector code reads, in program order) and the
    column vectors among the tiles of their lengths. Empty on coupled chips."""
    if not split:
        return RowSplit()
    blocks: list[Expr] = []
    for d in sides.dots:
        m = d.result.type.shape[0]  # type: ignore[union-attr]
        if d.result in sides.to_vector and m not in blocks:
            blocks.append(m)
    loaded = _loaded_rows(sides, grid)
    for v in sides.to_cube:  # an operand made from loaded rows (a dequantised K)
        r = _tile(v)
        if r is not None and len(r.shape) == 2 and r.shape[0] in loaded:
            if r.shape[0] not in blocks:
                blocks.append(r.shape[0])
    whole = _columns(sides, grid, tuple(blocks))
    out = RowSplit(tuple(blocks), frozenset(whole))
    _check_consistent(out, grid)
    return out


def _loaded_rows(sides: Sides, grid: ir.Grid) -> set[Expr]:
    """Row counts of the 2-D tiles the vector cores load from GM: a dot operand the
    vector cores make from such rows (an int8 cache's dequantised pages) is split by
    them, each AIV loading, converting and sending its half. Operands built from
    nothing loaded (fd.arange matrices) stay whole on both AIVs, as before."""
    out: set[Expr] = set()
    for op in walk(grid.body):
        if isinstance(op, ir.Load) and sides.side(op) != CUBE:
            t = _tile(op.result)
            if t is not None and len(t.shape) == 2:
                out.add(t.shape[0])
    return out


def _length(v: ir.Value) -> Expr | None:
    t = _tile(v)
    return t.shape[0] if t is not None and len(t.shape) == 1 else None


def _columns(sides: Sides, grid: ir.Grid, blocks: tuple[Expr, ...]) -> set[str]:
    """1-D values of a row block's length that reach ``expand_dims(axis=0)``, followed
    back through the 1-D ops (and queue slots) that make them."""
    todo = [
        op.x
        for op in walk(grid.body)
        if isinstance(op, ir.ExpandDims) and op.axis == 0 and _length(op.x) in blocks
    ]
    seen: set[str] = set()
    while todo:
        v = todo.pop()
        if v.name in seen:
            continue
        seen.add(v.name)
        d = sides.defs.get(v)
        if d is None:
            continue
        _refuse_rows(v, d, sides)
        n = _length(v)
        todo += [u for u in _sources(d) if _length(u) == n]
    return seen


def _sources(op: ir.Op) -> list[ir.Value]:
    if isinstance(op, ir.For):
        return list(op.inits) + list(op.yields)
    return list(op.operand_values())


def _refuse_rows(v: ir.Value, d: ir.Op, sides: Sides) -> None:
    """A column vector that is also a row vector (a row reduction, or x[:, None])."""
    rows = isinstance(d, (ir.Reduce, ir.Dot)) or any(
        isinstance(r, ir.ExpandDims) and r.axis != 0 for r in sides.readers.get(v, [])
    )
    if rows:
        _both_ways(v, d)


def _check_consistent(split: RowSplit, grid: ir.Grid) -> None:
    """A split 1-D result made from a whole (column) operand of the same length."""
    for op in walk(grid.body):
        if isinstance(op, (ir.For, ir.Grid)):
            continue
        for r in op.results():
            if split.block_of(r) is None or _length(r) is None:
                continue
            for u in op.operand_values():
                if _length(u) == _length(r) and u.name in split.whole:
                    _both_ways(u, op)


def _both_ways(v: ir.Value, op: ir.Op) -> None:
    raise BackendError(
        f"`%{v.name}` ({v.type}) is used both as a row vector and as a column vector "
        f"(x[None, :]): its {_length(v)} elements cannot be split between the two vector "
        "cores both ways",
        op.loc,
        hint="build the row and the column vectors separately (e.g. two fd.arange "
        "calls), one for x[:, None] and one for x[None, :]",
        code="vector_rows_and_columns",
    )


__all__ = ["RowSplit", "row_split"]
