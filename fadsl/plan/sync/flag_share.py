"""Which cube/vector exchanges share one cross-core flag ID, and how many IDs a kernel
needs once they do.

A flag is a counter (``CrossCoreSetFlag`` increments it, ``CrossCoreWaitFlag`` waits
until it is positive and decrements it; asc-devkit CrossCoreSetFlag(ISASI).md). Two
exchanges of the same direction, made in different loops, whose lifetimes never
overlap and that no ring loop holds both (``plan/memory/l1_share.py``), can use one
ID: on each core every Set (or Wait) of the first value comes before any of the
second's in program order, so the k-th Wait still pairs with the k-th Set. Their GM
workspaces stay separate. Ring values (one ID per slot) and slot-free flags
(``plan/sync/slot_free.py``) keep IDs of their own.

The schedule's flag budget (``plan/schedule/ring.py``, E94) and the backend's ID
assignment (``backends/ascendc/flag_ids.py``) both count through this module, so a
kernel the checker passes is a kernel the backend can number. Five sibling KV loops of
three exchanges each need 3 IDs once shared (``tests/passes/test_flag_share.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fadsl.ir import nodes as ir
from fadsl.plan.memory.l1_share import share
from fadsl.plan.schedule.sides import Sides

if TYPE_CHECKING:
    from fadsl.plan.schedule.ring import Ring


def ring_values(rings: dict[int, Ring]) -> set[str]:
    """Names of the exchanges with a slot (and flag ID) per ring entry."""
    return {name for r in rings.values() for name in r.slot_values}


def shared_ids(grid: ir.Grid, sides: Sides, rings: dict[int, Ring]) -> dict[str, str]:
    """Exchanged value -> the first value of its group (same direction, made in
    different loops, lifetimes that never overlap, no ring loop holding both); ring
    values are never shared and are absent."""
    ringed = ring_values(rings)
    values = [
        v for v in list(sides.to_vector) + list(sides.to_cube) if v.name not in ringed
    ]
    cube = {v.name for v in sides.to_cube}
    key = lambda v: v.name in cube  # noqa: E731  (the direction)
    groups = share(grid, values, key, set(rings), same_loop=False)
    return {v.name: g[0].name for g in groups for v in g}


def ids_needed(
    grid: ir.Grid, sides: Sides, rings: dict[int, Ring], free: int = 0
) -> int:
    """Cross-core flag IDs of the kernel: one per ring slot, one per group of shared
    exchanges, and ``free`` slot-free flags."""
    slots = sum(r.depth * len(r.slot_values) for r in rings.values())
    groups = set(shared_ids(grid, sides, rings).values())
    return slots + len(groups) + free


__all__ = ["ids_needed", "ring_values", "shared_ids"]
