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
from dataclasses import dataclass, field
from typing import Any

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, as_expr, evaluate
from fadsl.ir.types import DType, Shape, TileType
from fadsl.plan.memory import l0_split
from fadsl.plan.memory.buffer_plan import Buffer, round_up
from fadsl.plan.sync.event_pool import que_max_event
from fadsl.plan.memory.l0_split import SubDots
from fadsl.plan.schedule.sides import Sides
from fadsl.plan.memory.vector_slots import camel, smax
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


@dataclass(frozen=True)
class L0Plan:
    """The L0 buffers, the resident A operands (value -> its L0A buffer name) and the
    dots that run as sub-dots (result name -> sizes, ``l0_split.py``)."""

    buffers: list[Buffer]
    resident: dict[str, str]
    sub_dots: dict[str, SubDots] = field(default_factory=dict)


def l0_buffers(
    sides: Sides, grid: ir.Grid, core: str, env: dict[str, Any], target: Target
) -> tuple[list[Buffer], dict[str, str]]:
    """The L0 buffers and the resident A operands (value -> its L0A buffer name)."""
    p = plan_l0(sides, grid, core, env, target)
    return p.buffers, p.resident


def plan_l0(
    sides: Sides, grid: ir.Grid, core: str, env: dict[str, Any], target: Target
) -> L0Plan:
    """Resident operands, sub-dots and the L0 queues at the plan's sizes.

    As before sub-dots existed: A operands stay resident where every dot then fits
    whole. A dot that does not fit whole is split (``l0_split.py``), keeping the
    resident operands if the split allows it, else without them."""
    if not sides.dots:
        return L0Plan([], {})
    a_of = {d.a for d in sides.dots}
    candidates = [v for v in resident_candidates(sides, grid) if v in a_of]
    resident = candidates
    if candidates and not _fits_whole(sides.dots, candidates, env, target):
        resident = []
    subs = _sub_dots(sides.dots, resident, env, target)
    chosen = subs is not None and all(
        d.l0_tile or d.result.name not in subs for d in sides.dots
    )
    if not chosen:  # a dot must be split: keep the resident operands if it can
        for attempt in (candidates, []) if candidates else ([],):
            subs = _sub_dots(sides.dots, attempt, env, target)
            if subs is not None:
                resident = attempt
                break
    if subs is None:  # nothing fits: the checker reports the whole dots' overflow
        subs = _sub_dots(sides.dots, resident, env, target, auto=False) or {}
    return _queues(sides, resident, subs, core, env, target)


def _free_l0a(resident: list[ir.Value], env: dict[str, Any], target: Target) -> int:
    res = sum(_pad(_tile_bytes(v), "L0A", target, env) for v in resident)
    return target.capacity("L0A") - res


def _fits_whole(
    dots: list[ir.Dot], resident: list[ir.Value], env: dict[str, Any], target: Target
) -> bool:
    """Whether the moved A operands fit L0A beside the resident ones, one slot each."""
    free = _free_l0a(resident, env, target)
    return all(
        _pad(_bytes_of(*_a_shape(d)), "L0A", target, env) <= free
        for d in dots
        if d.a not in resident
    )


def _sub_dots(
    dots: list[ir.Dot],
    resident: list[ir.Value],
    env: dict[str, Any],
    target: Target,
    auto: bool = True,
) -> dict[str, SubDots] | None:
    """The dots that run as sub-dots (``l0_tile`` of a ``.fir``, or, with ``auto``,
    those that do not fit whole in one slot); None if one fits in no sub-dot size."""
    free = _free_l0a(resident, env, target)
    if free < 0:
        return None
    caps_bc = (target.capacity("L0B"), target.capacity("L0C"))
    out: dict[str, SubDots] = {}
    for d in dots:
        whole = l0_split.extents(d, env)
        if whole is None:
            continue
        fixed = d.a in resident or d.transpose_a
        caps = (None if d.a in resident else free,) + caps_bc
        if d.l0_tile:
            s = l0_split.given(d, whole, fixed, env)
        elif not auto:
            continue
        else:
            one = l0_split.SubDots(*whole, whole)
            if l0_split.fits(d, one, caps, 1):
                continue
            found = l0_split.choose(d, whole, caps, fixed)
            if found is None:
                return None
            s = found
        if s.split:
            out[d.result.name] = s
    return out


def _queues(
    sides: Sides,
    resident: list[ir.Value],
    subs: dict[str, SubDots],
    core: str,
    env: dict[str, Any],
    target: Target,
) -> L0Plan:
    """The resident buffers and the shared L0A/L0B/L0C queues, sized for each dot's
    sub-dot (or the whole dot), double-buffered where two slots fit."""
    moved = [d for d in sides.dots if d.a not in resident]
    res_bytes = target.capacity("L0A") - _free_l0a(resident, env, target)

    def pick(base: Pick, dims: tuple[int, int]) -> Pick:
        def shape(d: ir.Dot) -> tuple[Shape, DType]:
            full, dtype = base(d)
            s = subs.get(d.result.name)
            if s is None:
                return full, dtype
            sizes = (s.m, s.n, s.k)
            return (
                tuple(
                    sympy.Integer(sizes[i]) if sizes[i] != s.whole[i] else e
                    for i, e in zip(dims, full)
                ),
                dtype,
            )

        return shape

    pick_a = pick(_a_shape, (0, 2))
    pick_b = pick(_b_shape, (2, 1))
    pick_c = pick(_c_shape, (0, 1))
    a_bytes = max(
        (_pad(_bytes_of(*pick_a(d)), "L0A", target, env) for d in moved), default=0
    )
    depth = {
        "L0A": _depth(a_bytes, res_bytes, target.capacity("L0A")),
        "L0B": _depth(
            _largest(sides.dots, pick_b, "L0B", target, env),
            0,
            target.capacity("L0B"),
        ),
        "L0C": _depth(
            _largest(sides.dots, pick_c, "L0C", target, env),
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
    for space, pos, name, pk, dots in (
        ("L0A", "A2", "aL0", pick_a, moved),
        ("L0B", "B2", "bL0", pick_b, list(sides.dots)),
        ("L0C", "CO1", "cL0", pick_c, list(sides.dots)),
    ):
        if dots:
            out.append(_shared(space, pos, name, pk, dots, core, depth[space], env))
    return L0Plan(out, homes, subs)


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
    kinds = tuple(sorted({pick(d)[1] for d in dots}, key=lambda t: t.value))
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
        holds=kinds if dtype is DType.U8 else (),
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


__all__ = ["L0Plan", "l0_buffers", "plan_l0", "resident_candidates"]
