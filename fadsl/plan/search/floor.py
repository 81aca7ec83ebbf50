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
  (``VectorPlanner._place``), at least as large as the value it starts from.

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
        align = max(target.align("UB"), UB_TILE_ALIGN)
        sums = [sympy.Add(*(round_up(e, align) for e in loop)) for loop in states]
        out["UB"] = sympy.Max(*sums)
    return out


def _carried(lowering: Lowering) -> list[list[Expr]]:
    """Per loop of the vector code: the bytes one vector core holds of each state it
    carries (distinct init values; loops without vector states are left out)."""
    out = []
    for op in walk(lowering.grid.body):
        if not isinstance(op, ir.For):
            continue
        seen: dict[str, Expr] = {}
        for v in op.inits:
            t = v.type if isinstance(v, ir.Value) else None
            if not isinstance(t, TileType) or v.name in seen:
                continue
            if v.name not in lowering.vec.homes:
                continue  # a cube value, or one the vector plan does not hold
            shape = lowering.core_shape(v)
            n: Expr = sympy.Mul(*shape) if shape else sympy.Integer(1)
            seen[v.name] = n * t.dtype.itemsize
        if seen:
            out.append(list(seen.values()))
    return out


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


__all__ = ["floors", "over"]
