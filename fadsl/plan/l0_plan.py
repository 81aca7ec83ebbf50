"""The cube core's L0A, L0B and L0C buffers: sizes, depths, and operands kept resident.

One L0A, one L0B and one L0C queue serve every dot, each sized for the largest dot that
uses it. Two decisions are made at the plan's block sizes, where they fit (issue 16):

* a resident A operand: a dot's A tile loaded into L1 outside the loop the dot runs in
  (Q of FlashAttention) is moved into its own L0A buffer once per task instead of once
  per iteration (``LoadA`` before the loop, the dots read it in place);
* double buffering: a queue gets two slots (``InitBuffer`` num = 2) when two of them fit
  its memory, so the next dot's ``LoadData`` or ``Mmad`` need not wait for the previous
  ``Mmad`` or ``Fixpipe`` to free the only slot.

L0A/L0B buffers share the AIC's ``M_MTE1`` event pool (``event_pool.py``): the planner
keeps their slots within it. The resource checker proves what is chosen, symbolically.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, as_expr, evaluate
from fadsl.ir.types import DType, Shape, TileType
from fadsl.plan.buffer_plan import Buffer, round_up
from fadsl.plan.event_pool import que_max_event
from fadsl.plan.sides import Sides
from fadsl.plan.vector_slots import camel, smax
from fadsl.target import Target

Pick = Callable[[ir.Dot], tuple[Shape, DType]]


def resident_candidates(sides: Sides, grid: ir.Grid) -> list[ir.Value]:
    """A operands loaded into L1 at the task's top level and read only as the A operand
    of dots inside a loop (so a per-iteration LoadA repeats the same move)."""
    top = {r for op in grid.body for r in op.results()}
    looped = {id(d) for op in grid.body if isinstance(op, ir.For) for d in _dots(op)}
    out = []
    for v in sides.cube_loads:
        readers = sides.readers.get(v, [])
        if v not in top or not readers:
            continue
        if all(
            isinstance(r, ir.Dot) and r.a == v and r.b != v and not r.transpose_a
            for r in readers
        ) and all(id(r) in looped for r in readers):
            out.append(v)
    return out


def _dots(loop: ir.For) -> list[ir.Dot]:
    out: list[ir.Dot] = []
    for op in loop.body:
        if isinstance(op, ir.Dot):
            out.append(op)
        elif isinstance(op, ir.For):
            out += _dots(op)
    return out


def l0_buffers(
    sides: Sides, grid: ir.Grid, core: str, env: dict[str, Any], target: Target
) -> tuple[list[Buffer], dict[str, str]]:
    """The L0 buffers and the resident A operands (value -> its L0A buffer name)."""
    if not sides.dots:
        return [], {}
    a_of = {d.a for d in sides.dots}
    resident = [v for v in resident_candidates(sides, grid) if v in a_of]
    moved = [d for d in sides.dots if d.a not in resident]
    res_bytes = sum(_pad(_tile_bytes(v), "L0A", target, env) for v in resident)
    a_bytes = max(
        (_pad(_bytes_of(*_a_shape(d)), "L0A", target, env) for d in moved), default=0
    )
    if resident and res_bytes + a_bytes > target.capacity("L0A"):
        resident, moved = [], list(sides.dots)
        res_bytes = 0
        a_bytes = max(_pad(_bytes_of(*_a_shape(d)), "L0A", target, env) for d in moved)
    depth = {
        "L0A": _depth(a_bytes, res_bytes, target.capacity("L0A")),
        "L0B": _depth(
            _largest(sides.dots, _b_shape, "L0B", target, env),
            0,
            target.capacity("L0B"),
        ),
        "L0C": _depth(
            _largest(sides.dots, _c_shape, "L0C", target, env),
            0,
            target.capacity("L0C"),
        ),
    }
    pool = que_max_event(target.arch) - (
        3 if core == "AIC" and target.arch == 2201 else 0
    )
    while (
        depth["L0A"] + depth["L0B"] + len(resident) > pool
        and max(depth["L0A"], depth["L0B"]) > 1
    ):
        depth["L0A" if depth["L0A"] > 1 else "L0B"] -= 1
    out: list[Buffer] = []
    homes: dict[str, str] = {}
    for v in resident:
        t = v.type
        assert isinstance(t, TileType)
        name = camel(v.name) + "L0"
        homes[v.name] = name
        out.append(
            Buffer(
                name,
                "L0A",
                "A2",
                core,
                t.shape,
                t.dtype,
                1,
                "queue",
                "operand (resident)",
                (v.name,),
                sides.defs[v].loc,
            )
        )
    for space, pos, name, pick, dots in (
        ("L0A", "A2", "aL0", _a_shape, moved),
        ("L0B", "B2", "bL0", _b_shape, list(sides.dots)),
        ("L0C", "CO1", "cL0", _c_shape, list(sides.dots)),
    ):
        if dots:
            out.append(_shared(space, pos, name, pick, dots, core, depth[space], env))
    return out, homes


def _depth(slot: int, fixed: int, capacity: int) -> int:
    return 2 if slot and fixed + 2 * slot <= capacity else 1


def _shared(
    space: str,
    pos: str,
    name: str,
    pick: Pick,
    dots: list[ir.Dot],
    core: str,
    depth: int,
    env: dict[str, Any],
) -> Buffer:
    """One queue serving ``dots``: its size is the largest, symbolically."""
    best = max(dots, key=lambda d: _num(_bytes_of(*pick(d)), env))
    shape, dtype = pick(best)
    counts = {sympy.Mul(*pick(d)[0]) for d in dots}
    same = len({pick(d)[1] for d in dots}) == 1
    if len(counts) > 1:
        shape = (
            (smax(counts),) if same else (smax({_bytes_of(*pick(d)) for d in dots}),)
        )
        dtype = dtype if same else DType.U8
    role = "operand" if space != "L0C" else "result"
    return Buffer(
        name,
        space,
        pos,
        core,
        shape,
        dtype,
        depth,
        "queue",
        role,
        tuple(d.result.name for d in dots),
        best.loc,
    )


def _largest(
    dots: list[ir.Dot], pick: Pick, space: str, target: Target, env: dict[str, Any]
) -> int:
    return max(_pad(_bytes_of(*pick(d)), space, target, env) for d in dots)


def _pad(e: Expr, space: str, target: Target, env: dict[str, Any]) -> int:
    return int(_num(round_up(e, target.align(space)), env))


def _tile_bytes(v: ir.Value) -> Expr:
    t = v.type
    assert isinstance(t, TileType)
    return _bytes_of(tuple(t.shape), t.dtype)


def _a_shape(d: ir.Dot) -> tuple[Shape, DType]:
    t = d.a.type
    assert isinstance(t, TileType)
    return (tuple(reversed(t.shape)) if d.transpose_a else tuple(t.shape)), t.dtype


def _b_shape(d: ir.Dot) -> tuple[Shape, DType]:
    t = d.b.type
    assert isinstance(t, TileType)
    return (tuple(reversed(t.shape)) if d.transpose_b else tuple(t.shape)), t.dtype


def _c_shape(d: ir.Dot) -> tuple[Shape, DType]:
    t = d.result.type
    assert isinstance(t, TileType)
    return tuple(t.shape), t.dtype


def _bytes_of(shape: Shape, dtype: DType) -> Expr:
    return sympy.Mul(*shape) * dtype.itemsize


def _num(e: Expr, env: dict[str, Any]) -> float:
    try:
        return float(evaluate(as_expr(e), env))
    except (KeyError, TypeError, ValueError):
        return 0.0


__all__ = ["l0_buffers", "resident_candidates"]
