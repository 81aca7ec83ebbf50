"""Buffer planning: every buffer and workspace the generated kernel allocates.

Input: IR after pipeline and lower_vector, a target, and the values of shape symbols
and tile constants (used only to choose among buffers of different sizes; the sizes
stay symbolic). Output: a ``Lowering`` holding the BufferPlan (what the resource
checker sums and the backend declares) plus the decisions the backend needs: the
unit of every op, homes of vector values, instruction forms, temporaries.

Split chips (910B, A3): a MIX kernel. The cube (AIC) holds its operands in L1 (one
queue per operand; pipelined loads keep their ``stages`` slots), one L0A, one L0B and
one L0C queue sized for the largest dot, double-buffered and with Q resident in L0A
where they fit (``l0_plan.py``). Each of the two vector cores (AIV) owns half
the rows of every vector tile whose first dimension is a row block (the M of a dot the
vector code reads; ``row_split.py``): each such tile is halved by its own row block. Dot results reach the vector unit, and vector-made dot operands reach the
cube, through GM workspaces of one slot per AIC.
Coupled chips (910A, 310P): one core holds everything; no row split, no workspaces.

Non-goals: emitting code; choosing block sizes (tune); proving fit (check_resources).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.ir.types import DType, Shape, TileType
from fadsl.plan.resources.gather_notes import gather_notes, scatter_notes
from fadsl.plan.resources.api_fields import field_uses
from fadsl.passes import pad_dims
from fadsl.plan.schedule import phases, ring
from fadsl.plan.memory import row_chunk
from fadsl.plan.resources.footprint_eval import exact
from fadsl.plan.schedule.atomic_plan import atomic_buffers, atomic_sums
from fadsl.plan.schedule.defer import saved_buffers
from fadsl.plan.resources.dot_checks import check_fractal, check_transposed_a
from fadsl.plan.memory.l0_plan import L0Plan, plan_l0
from fadsl.plan.memory.l0_split import SubDots
from fadsl.plan.memory.l1_share import share
from fadsl.plan.search.vec_memo import vector_plan
from fadsl.plan.memory.buffer_plan import Buffer, BufferPlan, Workspace
from fadsl.plan.schedule.sides import CUBE, Sides, classify, grid_of
from fadsl.plan.memory.row_split import RowSplit, row_split
from fadsl.plan.search.memo import planned
from fadsl.plan.memory.vector_plan import VectorPlanner
from fadsl.plan.memory.vector_slots import VecPlan, camel
from fadsl.target import Target

UB_TILE_ALIGN = 256


@dataclass(frozen=True)
class Lowering:
    """Everything the backend needs beyond the IR itself."""

    kernel: ir.Kernel
    target: Target
    plan: BufferPlan
    sides: Sides
    vec: VecPlan
    rows: Expr | None
    """The primary row block (block_q) split between the AIVs (``ROWS``), or None."""
    cube_homes: dict[str, str]
    """cube value -> its L1 buffer name."""
    queues: dict[str, ir.QueueAlloc]
    grid: ir.Grid
    env: dict[str, Any]
    """Values of shape symbols and tile constants the plan was made with."""
    rings: dict[int, ring.Ring] = field(default_factory=dict)
    """Loops whose cube runs ahead (``plan/schedule/ring.py``), by ``id`` of the loop op."""

    resident: dict[str, str] = field(default_factory=dict)
    """Dot A operands kept in L0A for the whole task (value -> L0A buffer, l0_plan)."""

    split: RowSplit = field(default_factory=RowSplit)
    """Every row block split between the AIVs, and the tiles held whole."""

    sub_dots: dict[str, SubDots] = field(default_factory=dict)
    """Dots that run as L0-sized sub-dots (result name -> sizes, ``l0_split.py``)."""

    post: Lowering | None = None
    """The post-phase grid's own plan (``plan/schedule/phases.py``): vector cores only, after
    SyncAll. Its buffers are also in ``plan``, added to the first phase's: the check
    counts both phases' UB as if they were live together (an upper bound)."""
    phase_plan: BufferPlan | None = None
    """With a post phase: the first phase's own plan (``plan`` holds both)."""
    free: dict[str, ir.For] = field(default_factory=dict)
    """One-slot dot results whose rewrite waits for a slot-free flag
    (``plan/sync/slot_free.py``), with the loop that rewrites them."""

    def first_phase(self) -> Lowering:
        """This lowering without its post phase: what the cube and vector classes of
        the first grid declare."""
        if self.post is None or self.phase_plan is None:
            return self
        return replace(self, plan=self.phase_plan, post=None, phase_plan=None)

    def ring_of(self, value: str) -> ring.Ring | None:
        """The ring holding the workspace of exchanged value ``value``, if any."""
        for r in self.rings.values():
            if value in r.slot_values:
                return r
        return None

    @property
    def kernel_grid_body(self) -> tuple[ir.Op, ...]:
        return self.grid.body

    @property
    def vec_loops(self) -> tuple[tuple[int, int, ir.For], ...]:
        return self.vec.loops

    def core_shape(self, v: ir.Operand) -> Shape:
        """The part of ``v``'s tile one vector core holds."""
        return self.split.core_shape(v)


def plan(
    kernel: ir.Kernel, target: Target, env: dict[str, Any] | None = None
) -> BufferPlan:
    return lower(kernel, target, env).plan


def lower(
    kernel: ir.Kernel, target: Target, env: dict[str, Any] | None = None
) -> Lowering:
    env = dict(env or kernel_env(kernel))
    return planned(kernel, target, env, lambda: _lower(kernel, target, env))


def _lower(kernel: ir.Kernel, target: Target, env: dict[str, Any]) -> Lowering:
    kernel = pad_dims.run(kernel, env)
    first, post = phases.split(kernel)
    low = _lower_phase(first, target, env, post is not None)
    scratch = tuple(
        (p.name, p.type.shape, p.type.dtype)  # type: ignore[union-attr]
        for p in kernel.params
        if p.kind is ir.ParamKind.SCRATCH
    )
    low = replace(low, plan=replace(low.plan, scratch=scratch))
    if post is None:
        return low
    after = _lower_phase(post, target, env, True)
    bp = replace(
        low.plan,
        buffers=low.plan.buffers
        + tuple(replace(b, role=f"{b.role}, post phase") for b in after.plan.buffers),
        fields=low.plan.fields + after.plan.fields,
        post_tasks=after.plan.tasks,
    )
    return replace(low, plan=bp, post=after, phase_plan=low.plan)


def _lower_phase(
    kernel: ir.Kernel, target: Target, env: dict[str, Any], sync_all: bool
) -> Lowering:
    """The plan of a kernel with one grid (the first phase, or the post phase);
    ``sync_all``: the kernel calls SyncAll, whose flag IDs the rings leave alone."""
    grid = grid_of(kernel)
    queues = {op.result: op for op in kernel.body if isinstance(op, ir.QueueAlloc)}
    sides = classify(grid, queues)
    check_transposed_a(sides)
    split = row_split(sides, grid, target.split)
    rows = split.primary
    sums = atomic_sums(kernel)
    flags = ring.SYNC_ALL_FIRST_FLAG if sums or sync_all else ring.MAX_FLAGS
    rings = ring.choose(grid, sides, target.split, flags)
    free = ring.free_flags(grid, sides, rings, target.split, flags)
    deferrals = [r.deferral for r in rings.values() if r.deferral is not None]
    vcore = "AIV" if target.split else "AICORE"
    other_ub = tuple(atomic_buffers(sums, vcore, UB_TILE_ALIGN)) + tuple(
        saved_buffers(deferrals, sides, split.core_shape, "AIV", UB_TILE_ALIGN)
    )
    vec = row_chunk.plan(
        grid,
        sides,
        split.core_shape,
        env,
        lambda c: vector_plan(
            (kernel, target, c),
            lambda: VectorPlanner(grid, sides, split.core_shape, queues, c),
            env,
        ),
        lambda v: _ub_used(_ub_buffers(v, vcore) + list(other_ub), target, env),
        target.capacity("UB"),
    )
    cube_bufs, cube_homes, l0 = _cube_buffers(
        sides, grid, queues, target, env, kernel.loc, set(rings)
    )
    buffers = tuple(cube_bufs) + tuple(_ub_buffers(vec, vcore)) + other_ub
    workspaces = _workspaces(sides, rings) if target.split else ()
    tasks = sympy.Mul(*grid.extents)
    kernel_type = (
        ("MIX_AIC_1_2" if sides.dots else "AIV_ONLY") if target.split else "AICORE"
    )
    half = rows / 2 if rows is not None and target.split else None
    bp = BufferPlan(
        kernel.name,
        target.name,
        kernel_type,
        buffers,
        workspaces,
        tasks,
        half,
        atomics=sums,
        row_chunks=tuple(
            (c.loop.var, c.loop.loc.short(), c.rows, c.core_rows) for c in vec.chunks
        ),
        notes=_sub_dot_notes(sides, l0.sub_dots)
        + _free_notes(sides, free)
        + gather_notes(grid, env)
        + scatter_notes(grid, env),
        sub_dots=tuple(
            (d.result.name, d.loc.short(), l0.sub_dots[d.result.name])
            for d in sides.dots
            if d.result.name in l0.sub_dots
        ),
    )
    low = Lowering(
        kernel,
        target,
        bp,
        sides,
        vec,
        rows,
        cube_homes,
        {q.result.name: q for q in queues.values()},
        grid,
        env,
        rings,
        l0.resident,
        split,
        sub_dots=l0.sub_dots,
        free=free,
    )
    return replace(low, plan=replace(bp, fields=field_uses(low)))


def _free_notes(sides: Sides, free: dict[str, ir.For]) -> tuple[str, ...]:
    return tuple(
        f"slot-free flag: %{d.result.name} ({d.loc.short()}) is rewritten every "
        f"iteration of the loop at {free[d.result.name].loc.short()} and the vector "
        "cores send nothing back there: the cube waits for their read of it "
        "(one more cross-core flag, plan/sync/slot_free.py)"
        for d in sides.dots
        if d.result.name in free
    )


def _sub_dot_notes(sides: Sides, subs: dict[str, SubDots]) -> tuple[str, ...]:
    return tuple(
        f"cube sub-dots: %{d.result.name} ({d.loc.short()}) runs as "
        f"{subs[d.result.name].text()}"
        + (
            " (l0_tile of the IR)"
            if d.l0_tile
            else ": its operands or result do not fit L0 whole"
        )
        for d in sides.dots
        if d.result.name in subs
    )


def kernel_env(kernel: ir.Kernel) -> dict[str, Any]:
    return {
        k: v for k, v in kernel.consts if isinstance(v, int) and not isinstance(v, bool)
    }


def _dot_role(v: ir.Value, sides: Sides) -> str:
    for d in sides.dots:
        if d.a == v:
            return "A1"
        if d.b == v:
            return "B1"
    return "A1"


def _cube_buffers(
    sides: Sides,
    grid: ir.Grid,
    queues: dict[ir.Value, ir.QueueAlloc],
    target: Target,
    env: dict[str, Any],
    kernel_loc: Any = None,
    rings: set[int] | None = None,
) -> tuple[list[Buffer], dict[str, str], L0Plan]:
    out: list[Buffer] = []
    homes: dict[str, str] = {}
    core = "AIC" if target.split else "AICORE"
    for q in queues.values():
        if q.position in ("A1", "B1"):
            check_fractal(q.tile, q.loc, env, "the tile", kernel_loc)
            out.append(
                Buffer(
                    camel(q.result.name),
                    "L1",
                    q.position,
                    core,
                    q.tile.shape,
                    q.tile.dtype,
                    q.buffers,
                    "queue",
                    "operand",
                    (),
                    q.loc,
                )
            )
    operands = list(sides.cube_loads) + list(sides.to_cube)
    role = {v.name: _dot_role(v, sides) for v in operands}
    for v in operands:
        t = v.type
        assert isinstance(t, TileType)
        check_fractal(t, sides.defs[v].loc, env, "the dot operand", kernel_loc)
    for group in share(grid, operands, lambda v: _l1_key(v, role), rings or set()):
        v, t = group[0], group[0].type
        assert isinstance(t, TileType)
        name = camel(v.name) + "L1"
        homes.update((u.name, name) for u in group)
        out.append(
            Buffer(
                name,
                "L1",
                role[v.name],
                core,
                t.shape,
                t.dtype,
                1,
                "queue",
                "operand",
                tuple(u.name for u in group),
                sides.defs[v].loc,
            )
        )
    l0 = plan_l0(sides, grid, core, env, target)
    return out + l0.buffers, homes, l0


def _l1_key(v: ir.Value, role: dict[str, str]) -> tuple[object, ...]:
    """Operands share an L1 queue only with the same shape, dtype and position."""
    t = v.type
    assert isinstance(t, TileType)
    return (tuple(t.shape), t.dtype, role[v.name])


def _ub_buffers(vec: VecPlan, core: str) -> list[Buffer]:
    out = []
    for s in vec.slots:
        shape, dtype, bits = s.shape, s.dtype, 0
        if not s.values or sympy.Mul(*shape) * dtype.itemsize != s.bytes:
            shape, dtype = (s.bytes,), DType.U8
        out.append(
            Buffer(
                s.name,
                "UB",
                s.position,
                core,
                tuple(shape),
                dtype,
                s.buffers,
                s.kind,
                s.role,
                tuple(s.values),
                s.loc,
                bits,
                UB_TILE_ALIGN,
            )
        )
    return out


def _ub_used(buffers: list[Buffer], target: Target, env: dict[str, Any]) -> int:
    """UB bytes of ``buffers`` at ``env``, as the resource check sums them."""
    align = target.align("UB")
    return sum(exact(b.bytes(align), env) for b in buffers)


def _workspaces(sides: Sides, rings: dict[int, ring.Ring]) -> tuple[Workspace, ...]:
    """One workspace per exchanged value; a ring value has one slot per ring entry."""
    depth = {v: r.depth for r in rings.values() for v in r.slot_values}
    out = []
    for values, way in (
        (sides.to_vector, "cube -> vector"),
        (sides.to_cube, "vector -> cube"),
    ):
        for v in values:
            t = v.type
            assert isinstance(t, TileType)
            slots = depth.get(v.name, 1)
            note = f"%{v.name} ({way})" + (f", ring of {slots}" if slots > 1 else "")
            out.append(
                Workspace(
                    camel(v.name) + "Ws",
                    t.shape,
                    t.dtype,
                    slots,
                    note,
                    sides.defs[v].loc,
                )
            )
    return tuple(out)


__all__ = ["Lowering", "lower", "plan", "run", "CUBE"]
