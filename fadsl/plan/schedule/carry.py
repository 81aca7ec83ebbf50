"""The ring carried across tasks (CANN's cross-task preload, issue 27): the cube issues
the next task's first stage-A iterations (its Q load, K loads and S = Q K^T) while the
vector cores still run the last iterations of the task before.

Within one task a ring loop (``plan/schedule/ring.py``) runs stage A of iteration
``j + lead`` before stage B of ``j``; at the task's end the next task's vector cores
would wait for its whole prologue (Q load, K load, the S dots, the flag). With the ring
carried, stage A of iteration ``j + lead`` of the *core's iteration stream* is issued
before stage B of ``j``, across the task boundary: in task t's last ``lead``
iterations the cube runs stage A of task t + 1's first ``lead`` iterations.

Slots are then counted over the core's stream, not per task: slot
``(ringBase + j - start) % depth`` on both cores, ``ringBase`` the iterations of this
loop the core ran in its earlier tasks. Ring's slot argument holds unchanged: stage A
of stream iteration g is still issued after stage B of g - lead - 1, which waited for
the vector operand made after every stage-A result of g - lead - 1 and before was read.

A grid qualifies when (1) its body holds exactly one ring loop at the top level; (2)
every cube op before it is an L1 load whose readers are stage-A ops of that loop only
(Q: the next task's Q may replace the current one once the current task's stage A is
all issued); (3) the task has no cube op after the loop, no GM scalar read or scalar
definition before the loop (the next task's would have to be evaluated early); (4) the loop
keeps ``stages = 1`` (a deeper pipeline prefetches before the loop); (5) no one-slot exchange needs a slot-free flag, and the kernel has no ``atomic_add``
phases. Anything else keeps the per-task ring.
"""

from __future__ import annotations

from collections.abc import Iterable

from fadsl.ir import nodes as ir
from fadsl.plan.schedule.ring import Ring
from fadsl.plan.schedule.sides import CUBE, Sides, walk

BASE = "ringBase"
"""The C++ local (and the name bound in expressions) of the core's count of the
carried loop's iterations in its earlier tasks."""


def carried(
    body: tuple[ir.Op, ...],
    rings: dict[int, Ring],
    sides: Sides,
    free: Iterable[str] = (),
    atomics: bool = False,
) -> Ring | None:
    """The ring of grid ``body`` carried across tasks, or None (see the module doc)."""
    if atomics or list(free):
        return None
    loops = [i for i, op in enumerate(body) if isinstance(op, ir.For) and id(op) in rings]
    nested = [op for op in walk(body) if isinstance(op, ir.For) and id(op) in rings]
    if len(loops) != 1 or len(nested) != 1:
        return None
    at = loops[0]
    ring = rings[id(body[at])]
    if ring.loop.stages > 1:  # its K/V prefetch prologue would run before the loop
        return None
    before, after = body[:at], body[at + 1 :]
    for op in walk(before):
        if isinstance(op, (ir.LoadScalar, ir.ScalarDef, ir.For)):
            return None
        if sides.op_side.get(id(op)) == CUBE and not _stage_a_load(op, ring, sides):
            return None
    if any(sides.op_side.get(id(op)) == CUBE for op in walk(after)):
        return None
    return ring


def carried_grid(grid: ir.Grid, split_chip: bool) -> Ring | None:
    """``carried`` for a grid as the cost model sees it (before the passes): its
    rings, sides and slot-free flags as the planner chooses them."""
    from fadsl.plan.schedule.ring import choose
    from fadsl.plan.schedule.sides import classify
    from fadsl.plan.sync.slot_free import free_slots

    sides = classify(grid, {})
    rings = choose(grid, sides, split_chip)
    if not rings:
        return None
    atomics = any(isinstance(op, ir.AtomicAdd) for op in walk(grid.body))
    free = free_slots(grid, sides, set(rings))
    return carried(grid.body, rings, sides, free, atomics)


def _stage_a_load(op: ir.Op, ring: Ring, sides: Sides) -> bool:
    """A cube L1 load read only by stage-A ops of ``ring``'s loop."""
    if not isinstance(op, ir.Load) or op.into is not None:
        return False
    readers = sides.readers.get(op.result, [])
    return bool(readers) and all(id(r) in ring.stages.ahead for r in readers)


__all__ = ["BASE", "carried", "carried_grid"]
