"""Back-pressure on one-slot cube -> vector exchanges: the "slot free" flag.

A dot result the vector cores read has one GM workspace slot outside a ring
(``plan/schedule/ring.py``). The cube writes it again in the next iteration of its loop, and
nothing but a vector -> cube hand-over can make the cube wait until the vector cores
have read the previous value. Such a hand-over ``u`` orders the rewrite of ``v`` when

* the vector cores send ``u`` after they read ``v`` (the cube waits for ``u`` of the same
  iteration, after writing ``v`` and before writing it again: FA2's P after S), or
* they send ``u`` before they read ``v`` and the cube waits for ``u`` before it writes ``v``
  (then ``u`` of the next iteration comes after the read of ``v`` and before its
  rewrite: FA2's P @ V result, read by the vector cores after P is sent).

A loop without a ring where no hand-over orders the rewrite of ``v`` (the cube only sends,
e.g. S_j = Q K_j^T reduced by the vector cores into a row accumulator) gets a flag per such
``v``, vector -> cube: each vector core sets it (``CrossCoreSetFlag`` mode 2: the cube's
one wait pairs with a set on each AIV) once it copied its rows of ``v`` into UB; the cube
waits on it before it writes ``v`` in every iteration but the first, and once after the
loop when the loop ran (so no set is left over into the next task, whose first write
would otherwise be unordered). The flag counts in the 16 cross-core flag IDs.
"""

from __future__ import annotations

from fadsl.ir import nodes as ir
from fadsl.plan.schedule.sides import CUBE, Sides, walk

SUFFIX = "_free"
"""The flag of value ``v``'s slot-free hand-over is named ``v + SUFFIX``."""


def free_slots(grid: ir.Grid, sides: Sides, ringed: set[int]) -> dict[str, ir.For]:
    """Dot results (by name) whose one-slot workspace needs a slot-free flag, each with
    the loop (not one of ``ringed``, ids of ring loops) that rewrites it."""
    out: dict[str, ir.For] = {}
    for loop in walk(grid.body):
        if not isinstance(loop, ir.For) or id(loop) in ringed:
            continue
        for at, op in enumerate(loop.body):
            if not isinstance(op, ir.Dot) or op.result not in sides.to_vector:
                continue
            if not _ordered(loop.body, at, op.result.name, sides):
                out[op.result.name] = loop
    return out


def _ordered(body: tuple[ir.Op, ...], at: int, name: str, sides: Sides) -> bool:
    """Whether a vector -> cube hand-over of ``body`` orders the rewrite of ``name``
    (written by ``body[at]``) after the vector cores' read of it."""
    read = _first(body, lambda o: _vector_reads(o, name, sides))
    if read is None:  # read after the loop only: not an exchange of the loop
        return True
    for v in sides.to_cube:
        sent = _first(body, lambda o: any(r == v for x in _all(o) for r in x.results()))
        if sent is None:
            continue
        waited = _first(body, lambda o: _cube_reads(o, v, sides))
        if sent > read or (waited is not None and waited <= at):
            return True
    return False


def _all(op: ir.Op) -> list[ir.Op]:
    return [op] + list(walk(getattr(op, "body", ())))


def _first(body: tuple[ir.Op, ...], pred) -> int | None:  # type: ignore[no-untyped-def]
    return next((i for i, op in enumerate(body) if pred(op)), None)


def _vector_reads(op: ir.Op, name: str, sides: Sides) -> bool:
    return any(
        sides.op_side.get(id(o)) != CUBE
        and any(v.name == name for v in o.operand_values())
        for o in _all(op)
    )


def _cube_reads(op: ir.Op, v: ir.Value, sides: Sides) -> bool:
    return any(isinstance(o, ir.Dot) and v in (o.a, o.b) for o in _all(op))


__all__ = ["SUFFIX", "free_slots"]
