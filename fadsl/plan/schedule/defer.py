"""The deferred output update: the vector cores run the steps on P @ V one iteration
late (CANN's order: perf/native.py), so that they never wait for the cube's P @ V.

In fa2's KV loop the vector cores make P_j and send it to the cube, which computes
P_j @ V_j. Without deferral they then wait for it to update ``acc``; the cube, for its
part, waits for P_{j+1} while they do. With the update deferred, iteration j of the
vector program is: wait for S_j, softmax, send P_j, then the update of iteration j - 1
(``acc = PV_{j-1} + acc * alpha_{j-1}``), whose P @ V the cube made while the vector
cores ran the softmax of S_j. After the loop, the update of its last iteration runs.

The deferred steps are the vector ops that read a stage-B dot result (P @ V), or a value
a deferred op made, or a loop-carried value whose next value a deferred op makes (acc).
A loop qualifies when (with its ring, ``plan/schedule/ring.py``):

1. it has a ring (the cube runs ahead), and the deferred ops are vector ops that make
   tiles (no store, loop or dot among them, no dot reads what they make);
2. they come after every other vector op of the body (the expand_dims views aside: they
   emit nothing), so they follow the hand-over of every vector-made dot operand;
3. every value made in the iteration that they read is a tile made by a vector op of
   the body (``alpha``): it is kept for one iteration in a buffer of two slots (slot
   ``(j - start) % 2``), which the resource check counts; no other loop-carried value
   is read.

Why two workspace slots for each exchange of stage B (P, and P @ V) are enough: the
vector cores now write P_{j+1} before they wait for P_j @ V_j, so the cube may not have
read P_j yet, and the cube may write P_{j+1} @ V_{j+1} before the vector cores read
P_j @ V_j. P_{j+1} goes to the other slot; that slot held P_{j-1}, which the cube read
before it made P_{j-1} @ V_{j-1}, which the vector cores read (in iteration j) before
writing P_{j+1}. Likewise P_{j+2} @ V_{j+2} (same slot as P_j @ V_j) follows P_{j+2},
which follows the read of P_j @ V_j. The CPU runtime checks this at run time (a slot
overwritten before its consumer released it stops the kernel).

The loop's ``defer_update`` attribute (textual IR) forces it on (``true``: E85 when the
loop does not qualify) or off (``false``); unset, the planner defers where it qualifies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.expr import CeilDiv, Expr
from fadsl.ir.types import Shape, TileType
from fadsl.plan.memory.buffer_plan import Buffer
from fadsl.plan.schedule.sides import CUBE, Sides
from fadsl.plan.memory.vector_forms import elems_per_repeat
from fadsl.plan.memory.vector_slots import camel

SAVED_SLOTS = 2
"""Slots of the buffer keeping a saved value (alpha) for one iteration."""


@dataclass(frozen=True)
class Deferral:
    """The steps of one loop that run one iteration late."""

    first: int
    """Index in the loop body of the first deferred op; every vector op from there on
    is deferred (condition 2)."""
    ops: frozenset[int]
    """ids of the deferred ops."""
    saved: tuple[ir.Value, ...]
    """Values made in the iteration that the deferred ops read (alpha): each kept for
    one iteration in a buffer of ``SAVED_SLOTS`` slots."""
    values: tuple[str, ...]
    """Exchanges of stage B (P, P @ V) that get a workspace slot per ring entry."""


def split(loop: ir.For, sides: Sides, ahead: frozenset[int]) -> Deferral | str:
    """The deferred steps of ``loop`` (whose stage-A cube ops are ``ahead``), or why
    there are none."""
    body = loop.body
    back = {
        op.result
        for op in body
        if isinstance(op, ir.Dot)
        and id(op) not in ahead
        and op.result in sides.to_vector
    }
    if not back:
        return "no result of the dots that wait for the vector cores goes back to them"
    late, deferred = _late_ops(loop, sides, back)
    if not deferred:
        return (
            "no vector op reads the result of the dots that wait for the vector cores"
        )
    first = min(deferred)
    problem = _check_ops(loop, sides, late, deferred, first)
    if problem:
        return problem
    saved = _saved(loop, sides, late, deferred, first)
    if isinstance(saved, str):
        return saved
    made = {r for op in body for r in op.results()}
    values = tuple(v.name for v in sides.to_vector if v in back) + tuple(
        v.name for v in sides.to_cube if v in made
    )
    return Deferral(first, frozenset(id(body[i]) for i in deferred), saved, values)


def _late_ops(
    loop: ir.For, sides: Sides, back: set[ir.Value]
) -> tuple[set[ir.Value], set[int]]:
    """(values the deferred ops make or read late, indices of the deferred ops)."""
    carried = {y: a for a, y in zip(loop.iter_args, loop.yields)}
    late = set(back)
    deferred: set[int] = set()
    changed = True
    while changed:
        changed = False
        for i, op in enumerate(loop.body):
            if i in deferred or sides.op_side.get(id(op)) == CUBE:
                continue
            if not set(op.operand_values()) & late:
                continue
            deferred.add(i)
            changed = True
            for r in op.results():
                late.add(r)
                if r in carried:
                    late.add(carried[r])
    return late, deferred


def _check_ops(
    loop: ir.For, sides: Sides, late: set[ir.Value], deferred: set[int], first: int
) -> str:
    """Conditions 1 and 2 (empty when they hold)."""
    for i, op in enumerate(loop.body):
        if i in deferred:
            if not isinstance(op, ir.ValueOp) or isinstance(op, ir.Dot):
                return (
                    f"{ir.op_name(type(op))} at line {op.loc.line} would run one "
                    "iteration late; only tile ops can"
                )
            if op.result in sides.to_cube:
                return f"the cube reads %{op.result.name}, made from P @ V"
        elif i > first and sides.op_side.get(id(op)) != CUBE:
            if not isinstance(op, ir.ExpandDims) or op.x in late:
                return (
                    f"%{_name(op)} (line {op.loc.line}) follows the update of the "
                    "output but does not depend on it"
                )
    return ""


def _saved(
    loop: ir.For, sides: Sides, late: set[ir.Value], deferred: set[int], first: int
) -> tuple[ir.Value, ...] | str:
    """Condition 3: the values of the iteration the deferred ops read."""
    made_at = {r: i for i, op in enumerate(loop.body) for r in op.results()}
    out: list[ir.Value] = []
    for i in sorted(deferred):
        for v in loop.body[i].operand_values():
            while isinstance(sides.defs.get(v), ir.ExpandDims):
                v = sides.defs[v].x  # type: ignore[attr-defined]
            if v in late or v in out:
                continue
            if v in loop.iter_args:
                return f"the update reads the loop-carried %{v.name} of its iteration"
            at = made_at.get(v)
            if at is None:
                if _inside(loop, v):
                    return f"the update reads %{v.name}, made in a nested region"
                continue  # made before the loop: it does not change
            op = loop.body[at]
            if sides.op_side.get(id(op)) == CUBE or not isinstance(v.type, TileType):
                return f"the update reads %{v.name}, which is not a vector tile"
            out.append(v)
    return tuple(out)


def saved_stride(v: ir.Value, core_shape: Callable[[ir.Value], Shape]) -> Expr:
    """Elements from one slot of saved value ``v``'s buffer to the next (its elements
    on this core, rounded up to whole 256-byte repeats so each slot starts aligned)."""
    t = v.type
    assert isinstance(t, TileType)
    per = elems_per_repeat(t.dtype)
    return CeilDiv(sympy.Mul(*core_shape(v)), per) * per


def saved_buffer(v: ir.Value) -> str:
    """Plan name of the buffer keeping saved value ``v``."""
    return camel(v.name) + "PrevBuf"


def saved_buffers(
    deferrals: Iterable[Deferral],
    sides: Sides,
    core_shape: Callable[[ir.Value], Shape],
    core: str,
    align: int,
) -> list[Buffer]:
    """The UB buffers of the saved values: ``SAVED_SLOTS`` slots each."""
    out = []
    for d in deferrals:
        for v in d.saved:
            t = v.type
            assert isinstance(t, TileType)
            n = SAVED_SLOTS * saved_stride(v, core_shape)
            role = "state"
            out.append(
                Buffer(
                    saved_buffer(v),
                    "UB",
                    "VECCALC",
                    core,
                    (n,),
                    t.dtype,
                    1,
                    "tbuf",
                    role,
                    (v.name,),
                    sides.defs[v].loc,
                    0,
                    align,
                )
            )
    return out


def _inside(loop: ir.For, v: ir.Value) -> bool:
    from fadsl.plan.schedule.sides import walk

    return any(v in op.results() for op in walk(loop.body))


def _name(op: ir.Op) -> str:
    rs = op.results()
    return rs[0].name if rs else ir.op_name(type(op))


__all__ = [
    "SAVED_SLOTS",
    "Deferral",
    "saved_buffer",
    "saved_buffers",
    "saved_stride",
    "split",
]
