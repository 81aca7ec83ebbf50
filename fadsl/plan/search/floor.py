"""Sound lower bounds of a configuration's footprint, without planning it.

``fadsl tune`` asks, for every configuration, whether ``fadsl check`` would accept
it. The planner's choices depend on the sizes (L1 slots, row chunks, sub-dots, pooled
temporaries), so the footprint formulas of one plan are exact only where its choices
stay the same. A *floor* is a formula that no plan of the kernel can go below at any
sizes: a configuration whose floor exceeds a memory's capacity overflows it whatever
the planner chooses, and needs no plan of its own. Every other configuration is
planned exactly. Two floors, each counting only what every plan must hold:

- L1: every L1 buffer of the plan, with one slot. Which buffers the cube keeps in L1
  (one queue per loaded operand, one home per group of operands made by the vector
  cores: ``plan_buffers._cube_buffers``) and their shapes do not depend on the sizes;
  the only size-dependent choice is how many slots a pipelined load keeps
  (``plan/memory/l1_fit.py``: ``stages`` or one).
- UB: for the loop of the grid body with the most, the states its iterations carry
  (``m``, ``l``, ``acc``): each has a slot of its own holding all the vector core's
  rows, never chunked (``plan/memory/row_chunk.py``) nor pooled with temporaries
  (``VectorPlanner._place``), at least as large as the value it starts from; plus
  the largest other tile the loop's body makes after its chunkable region (the
  ``P @ V`` result the output update reads): row chunks never cover it, so it holds
  all the core's rows, in a slot no state shares.

L0 has no floor: a dot that does not fit L0 whole runs as sub-dots (``l0_split.py``).

``fadsl tune`` checks every floor against the exact footprint of each configuration it
plans, and plans every configuration if one ever exceeds it (a change to the planner
the floors did not foresee), so a wrong floor costs time, never a configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.ir.types import TileType
from fadsl.plan.memory.buffer_plan import round_up
from fadsl.plan.schedule.sides import walk

if TYPE_CHECKING:
    from fadsl.plan.memory.plan_buffers import Lowering
    from fadsl.target import Target

UB_TILE_ALIGN = 256
"""The least padding of a UB tile's slot (``plan_buffers.UB_TILE_ALIGN``)."""


def floors(lowering: Lowering, target: Target) -> dict[str, Expr]:
    """Per memory space, a formula every plan of ``lowering``'s kernel (at any sizes)
    needs at least; spaces without one are absent."""
    out: dict[str, Expr] = {}
    l1 = [b for b in lowering.plan.buffers if b.space == "L1"]
    if l1:
        align = target.align("L1")
        out["L1"] = sympy.Add(
            *(round_up(b.slot_bytes(), max(align, b.min_align)) for b in l1)
        )
    states = _carried(lowering)
    if states:
        sums = [sympy.Add(*(_rounded(target, e) for e in loop)) for loop in states]
        out["UB"] = sympy.Max(*sums)
    return out


CHUNK = sympy.Symbol("__chunk_fraction", positive=True)
"""In ``whole_rows(..., chunked=True)``: a chunk's rows over the core's rows."""


def whole_rows(
    lowering: Lowering, target: Target, chunked: bool = False
) -> Expr | None:
    """A floor of the UB of any plan of ``lowering``'s kernel that holds whole rows
    (no row chunks): for the loop with the most, its states and, in slots of their
    own, the other tiles its body holds together; None without vector states. With
    ``chunked``, of a plan with row chunks of ``CHUNK`` times the core's rows: the
    tiles its chunkable region makes and reads only there are that much smaller."""
    mode: Any = CHUNK if chunked else True
    sums = [
        sympy.Add(*(_rounded(target, e) for e in loop))
        for loop in _carried(lowering, everywhere=mode)
    ]
    return sympy.Max(*sums) if sums else None


def _rounded(target: Target, e: Expr) -> Expr:
    return round_up(e, max(target.align("UB"), UB_TILE_ALIGN))


def _carried(lowering: Lowering, everywhere: Any = False) -> list[list[Expr]]:
    """Per loop of the vector code: the bytes one vector core holds of each state it
    carries (distinct init values; loops without vector states are left out), and
    last, when there is one, of the largest tile it makes after its chunkable region
    (``_whole_after``)."""
    out = []
    for op in walk(lowering.grid.body):
        if not isinstance(op, ir.For):
            continue
        seen: dict[str, Expr] = {}
        for v in op.inits:
            if isinstance(v, ir.Value) and v.name not in seen:
                size = _core_bytes(lowering, v)
                if size is not None:
                    seen[v.name] = size
        if seen:
            states = {lowering.vec.homes[n] for n in seen}
            extra = _whole_after(lowering, op, states, everywhere)
            out.append(list(seen.values()) + ([extra] if extra is not None else []))
    return out


def _core_bytes(lowering: Lowering, v: ir.Value) -> Expr | None:
    """Bytes one vector core holds of tile ``v``; None for a value the vector plan
    does not hold (a cube value, a view, a fused comparison) or not a tile."""
    t = v.type
    if not isinstance(t, TileType) or v.name not in lowering.vec.homes:
        return None
    shape = lowering.core_shape(v)
    n: Expr = sympy.Mul(*shape) if shape else sympy.Integer(1)
    return n * t.dtype.itemsize


def _whole_after(
    lowering: Lowering, loop: ir.For, states: set[str], everywhere: Any = False
) -> Expr | None:
    """The most bytes (per vector core) of tiles that ``loop``'s body makes after its
    chunkable region (anywhere in the body when it has none, or with ``everywhere``:
    whole rows) and that are live together, each in a slot of no state (``states``:
    the states' slots at the anchor); None if there are none.

    Row chunks never cover such a tile: it holds all the core's rows. Tiles live
    across one point of the body (made before it, read after it), and a tile sent to
    the cube with the tiles it is made from, are held at once, in distinct slots: the
    bytes held together at each point, the largest of them."""
    from fadsl.plan.memory.row_chunk import Refused, region
    from fadsl.plan.memory.vector_slots import linearize

    points: dict[int, ir.Op] = {}
    linearize(lowering.grid.body, points, [], [0])
    pos_of = {id(op): pos for pos, op in points.items()}
    try:
        first, last = region(loop, lowering.sides, lowering.grid, pos_of)[:2]
    except Refused:
        first, last = -1, -1  # never chunked: every tile of the body holds whole rows
        if everywhere is not True and everywhere:
            return None  # (no chunked plan)
    inside = [
        k for k, op in enumerate(loop.body) if first <= pos_of.get(id(op), -2) <= last
    ]
    if everywhere is not False:
        last = -1
    made: dict[str, tuple[int, Expr]] = {}
    read: dict[str, int] = {}
    vector_read: dict[str, int] = {}
    """The last read by the vector cores (the cube reads a chunked P chunk by chunk)."""
    for k, op in enumerate(loop.body):
        for v in _reads(op):
            read[v.name] = k
            if not isinstance(op, ir.Dot):
                vector_read[v.name] = k
        if isinstance(op, ir.For) or pos_of.get(id(op), -1) <= last:
            continue
        for v in op.results():
            if not isinstance(v, ir.Value) or lowering.vec.homes.get(v.name) in states:
                continue
            size = _core_bytes(lowering, v)
            if size is not None:
                made[v.name] = (k, size)
    for v in loop.yields:
        read[v.name] = len(loop.body)
    if everywhere is not True and everywhere is not False and inside:
        # made and read only inside the region: chunk-sized (row_chunk.py)
        lo, hi = inside[0], inside[-1]
        made = {
            n: (at, e * everywhere if lo <= at and vector_read.get(n, -1) <= hi else e)
            for n, (at, e) in made.items()
        }
    peaks = []
    sent = {v.name for v in lowering.sides.to_cube}
    for k, op in enumerate(loop.body):
        names = [n for n, (at, _) in made.items() if at < k < read.get(n, -1)]
        if any(v.name in sent for v in op.results()):
            # a tile for the cube has a VECOUT queue of its own (vector_plan.py):
            # it is made while the tiles it is made from are held
            here = [v.name for v in (*op.results(), *op.operand_values())]
            names += [n for n in here if n in made and n not in names]
        homes = [lowering.vec.homes[n] for n in names]
        if names and len(set(homes)) == len(homes):  # (else: slots shared, no sum)
            peaks.append(sympy.Add(*(made[n][1] for n in names)))
    sizes = [e for _, e in made.values()] + peaks
    return sympy.Max(*sizes) if sizes else None


def _reads(op: ir.Op) -> list[ir.Value]:
    """The values ``op`` reads (a nested loop: every value its body reads)."""
    if isinstance(op, ir.For):
        return list(op.operand_values()) + [
            v for inner in walk(op.body) for v in inner.operand_values()
        ]
    return list(op.operand_values())


def over(floor: Mapping[str, Expr], target: Target, values: Mapping[str, Any]) -> Any:
    """Which configurations (``values``: numpy columns and scalars) surely overflow a
    memory: some floor exceeds its capacity."""
    import numpy as np

    from fadsl.plan.resources.footprint_eval import batch

    if not floor:
        return np.zeros((), dtype=bool)
    got = batch(dict(floor))(values)
    out = np.zeros((), dtype=bool)
    for space, v in got.items():
        out = out | (np.asarray(v) > target.capacity(space))
    return out


__all__ = ["CHUNK", "floors", "over", "whole_rows"]
