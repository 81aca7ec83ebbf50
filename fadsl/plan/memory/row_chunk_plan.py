"""How ``VectorPlanner`` places values inside a row chunk region (``row_chunk.py``).

Inside a region the row tiles made and used only there are chunk-sized and live in
buffers addressed from their start. A row tile that lives across the region (made
before it and read in it, or made in it and read after it, or loop-carried) holds
all the core's rows and is addressed at the chunk's rows; so is any value computed
in place into its buffer (same shape, same rows). Such a value must hold its buffer
for the whole region: each chunk runs the region's points again, so a buffer taken
at a later point would be overwritten by an earlier point of the next chunk. Hence:
a whole value made in the region takes a buffer free at the region's first point,
or computes in place only into a loop-carried state buffer.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.types import DType, TileType
from fadsl.plan.memory.row_chunk import ChunkRegion, Refused
from fadsl.plan.memory.vector_slots import Slot

REPEAT_BYTES = 256
"""Slack after a row vector's buffer kept whole in a region: an instruction whose
count is padded to whole 256-byte repeats (a Compare over a chunk's row vector) reads
up to one repeat past the chunk, which at the last chunk is past the core's rows."""

if TYPE_CHECKING:
    from fadsl.plan.memory.vector_plan import VectorPlanner


def chunk_place(p: VectorPlanner, r: ir.Value, pos: int) -> int:
    """The point from which ``r``'s buffer must be free; records chunk-sized values."""
    region = p.region
    if region is None or not region.is_row(r):
        return pos
    if p.end_of(r) <= region.end:
        p.chunked.add(r.name)
        return pos
    sides = p.sides
    crosses = r in sides.to_vector or r in sides.to_cube
    stored = any(isinstance(x, ir.Store) for x in sides.readers.get(r, []))
    t = r.type
    if crosses or stored or (isinstance(t, TileType) and t.dtype is DType.BOOL):
        raise Refused(
            f"%{r.name} is made in the row-wise region and read after it, but it is "
            "a queue tile or a bit mask, which cannot be kept whole beside the chunks",
            p.sides.defs[r].loc,
        )
    return region.start


def chunk_end(p: VectorPlanner, v: ir.Value, start: int, end: int) -> int:
    """``end`` of a value made in a region, or the region's end for a dot operand
    the region sends to the cube: the vector core reads it no later than that
    (the cube's dot after the region reads the workspace copy)."""
    if v not in p.sides.to_cube:
        return end
    for region in p.chunks:
        if region.covers(start):
            return min(end, region.end)
    return end


def chunk_may_share(p: VectorPlanner, r: ir.Value, slot: Slot) -> bool:
    """Whether ``r`` may be computed in place into ``slot`` (see the module doc)."""
    region = p.region
    if region is None or not region.is_row(r) or r.name in p.chunked:
        return True
    return slot.role == "state"


def chunk_regions(p: VectorPlanner) -> tuple[ChunkRegion, ...]:
    """The regions with the buffers and values addressed at the chunk's rows."""
    out = []
    for region in p.chunks:
        refs = _referenced(p, region)
        home = {v.name: p.home.get(p.find_root(v)) for v in refs}
        whole = {
            home[v.name].name  # type: ignore[union-attr]
            for v in refs
            if v.name not in p.chunked and home[v.name] is not None
        }
        offset = {
            v.name: sympy.Mul(*p.core_shape(v)[1:])
            for v in refs
            if home[v.name] is not None and home[v.name].name in whole  # type: ignore[union-attr]
        }
        out.append(replace(region, whole_slots=frozenset(whole), offset=offset))
        vectors = {
            home[v.name].name  # type: ignore[union-attr]
            for v in refs
            if len(p.core_shape(v)) == 1 and home[v.name] is not None
        }
        for slot in p.slots:
            if slot.name in whole & vectors and slot.kind == "tbuf":
                slot.bytes = slot.bytes + REPEAT_BYTES
    return tuple(out)


def _referenced(p: VectorPlanner, region: ChunkRegion) -> list[ir.Value]:
    """Row values the region's ops make or read (views followed to their source)."""
    seen: dict[str, ir.Value] = {}
    for pos in range(region.start, region.end + 1):
        op = p.points.get(pos)
        if op is None or isinstance(op, (ir.For, ir.Grid)):
            continue
        for v in list(op.results()) + p._read(op, pos):
            base = p._unview(v)
            if region.is_row(base):
                seen.setdefault(base.name, base)
    return list(seen.values())


__all__ = ["chunk_end", "chunk_may_share", "chunk_place", "chunk_regions"]
