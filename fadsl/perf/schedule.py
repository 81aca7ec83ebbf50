"""The schedule decisions of a generated kernel, as the model reads them from the IR.

The emitter turns the KV loop into the cube and vector programs the IR and the plan
decide; the model (``perf/kernel.py``, ``perf/timeline_schedule.py``) must follow the
same decisions, or a change to the generated schedule would not show in the figures.
``schedule_of`` is the one place that reads them (docs/cost-model.md, "What the model
reads from the IR"):

- ``stages``: the KV loop's ``fd.pipelined(..., stages=s)``; loads go through queues of
  s slots, issued s - 1 iterations ahead (the pipeline pass);
- ``ring``: workspace slots of the results the cube makes without vector input
  (stage A: S = Q K^T). With R >= 2 the cube issues stage A (with the loads only it
  reads, K) R - 1 iterations ahead of the rest of the iteration, as passes/ring.py
  emits it; a stage-A workspace write waits until its slot's value of R iterations
  back was read; the other hand-overs keep one slot;
- ``defer_update``: the vector core runs the steps on the cube's stage-B result (the
  read of P V and the update) one iteration late, after the next softmax (the order
  of CANN's 3-deep ring, perf/native.py), when the IR's dependencies allow it; those
  results then get two slots;
- ``round_blocks``: KV blocks per cube/vector hand-over. A round of k blocks is modelled
  as one iteration with the KV block constant k times larger (flags, loop control and
  the output rescale once per round; the cube's sub-blocks are one dot);
- ``resident_l0``: dot operands made outside the KV loop (Q) stay in L0A/L0B, so MTE1
  moves only the operands that change per iteration;
- ``l0_buffers``: L0A/L0B/L0C depth. With depth b, MTE1 may fill L0 for dot n only after
  the cube finished dot n - b, and the cube may start dot n only after Fixpipe drained
  the result of dot n - b from L0C;
- ``shared_q_blocks``: Q blocks whose tasks share one K/V load (the two vector cores of
  an AI core on neighbouring Q blocks). Modelled as one task with the Q block constant
  that many times larger (each vector core then owns one whole Q block).
- ``row_chunks``: chunks the vector cores run the row-wise work of the KV loop body in
  (``plan/memory/row_chunk.py``: S in, softmax, P out, when whole rows do not fit UB). The
  element work is the same; each op of that region, with its PipeBarrier, is issued
  once per chunk (``planned_chunks`` reads the planner's choice at the model's sizes).

The fields are read from the KV loop's attributes of the same names when the IR
carries them (issue 16: ``stages`` always, the others as the IR gains them; ``ring``
and ``defer_update`` are the planner's choice, ``plan/schedule/ring.py`` and ``plan/schedule/defer.py``,
when ``schedule_of`` is given the grid and the target, as ``KernelModel`` does; without
them a ring of 0, "the planner chooses", counts as 1) and default to the generated kernel before issue 16 (ring 1, 1 block per
round, Q moved to L0 every iteration, L0 depth 1, no sharing, no deferral). A test or a
what-if passes a ``Schedule`` to ``KernelModel`` directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from fadsl.errors import UsageError
from fadsl.ir import nodes as ir
from fadsl.ir.op_base import Slice
from fadsl.plan.memory.whole_rows import whole_rows_ub
from fadsl.plan.memory.l0_split import SubDotKey, as_key
from fadsl.target import Target


@dataclass(frozen=True)
class Schedule:
    """What the model needs to know of the generated KV loop's schedule."""

    stages: int = 1
    ring: int = 1
    round_blocks: int = 1
    resident_l0: bool = False
    l0_buffers: int = 1
    shared_q_blocks: int = 1
    defer_update: bool = False
    row_chunks: int = 1
    sub_dots: tuple[SubDotKey, ...] = ()
    """Dots run as sub-dots (``plan/memory/l0_split.py``; ``planned_sub_dots``)."""

    @property
    def lead(self) -> int:
        """Iterations the cube runs ahead of the vector cores."""
        return max(1, self.ring) - 1

    def describe(self) -> str:
        return (
            f"stages {self.stages}, ring {self.ring}, {self.round_blocks} KV block(s) "
            f"per round, loop-invariant dot operands "
            f"{'resident in L0' if self.resident_l0 else 'moved to L0 every iteration'}, "
            f"L0 depth {self.l0_buffers}, {self.shared_q_blocks} Q block(s) per K/V load"
            + (", update deferred" if self.defer_update else "")
            + (
                f", vector rows in {self.row_chunks} chunks"
                if self.row_chunks > 1
                else ""
            )
            + "".join(
                f", %{k[0]} as {k[1]}x{k[2]}x{k[3]} sub-dots" for k in self.sub_dots
            )
        )


def schedule_of(
    loop: ir.For, grid: ir.Grid | None = None, target: Target | None = None
) -> Schedule:
    """The schedule the IR gives the KV loop ``loop`` (see the module docstring).

    With ``grid`` and ``target``, ``ring`` is the depth the planner gives the loop
    (``plan/schedule/ring.py``: the loop's attribute if set, else its own choice), as the
    generated kernel has it."""
    values: dict[str, int | bool] = {"stages": max(1, loop.stages)}
    for f in fields(Schedule):
        if f.name != "stages" and getattr(loop, f.name, None) is not None:
            values[f.name] = getattr(loop, f.name)
    if grid is not None and target is not None and hasattr(loop, "ring"):
        chosen = _planned(grid, loop, target)
        values["ring"] = chosen.depth if chosen else 1
        values["defer_update"] = bool(chosen and chosen.deferral)
    return Schedule(**values)  # type: ignore[arg-type]


def planned_l0(
    grid: ir.Grid,
    loop: ir.For,
    target: Target,
    env: Mapping[str, Any],
    l0: Any = None,
) -> tuple[bool, int]:
    """(resident_l0, l0_buffers) as the planner decides them at ``env``
    (``plan/memory/l0_plan.py``). The depth is 2 when L0B and L0C have two slots and L0A has
    two or serves at most one dot of the loop (the dots between two of its uses then
    free it, as with Q resident and P @ V the only dot loading L0A). ``l0``: the
    planner's ``L0Plan`` at ``env`` (``l0_plan_at``), when the caller has it."""
    l0 = l0 if l0 is not None else l0_plan_at(grid, target, env)
    bufs, resident = l0.buffers, l0.resident
    depth = {b.name: b.buffers for b in bufs}
    a_dots = [
        op for op in loop.body if isinstance(op, ir.Dot) and op.a.name not in resident
    ]
    a_ok = depth.get("aL0", 2) == 2 or len(a_dots) <= 1
    two = depth.get("bL0") == 2 and depth.get("cL0") == 2 and a_ok
    return bool(resident), 2 if two else 1


_CHUNKS: dict[tuple[Any, ...], Any] = {}


def planned_chunks(kernel: ir.Kernel, target: Target, env: Mapping[str, Any]) -> int:
    """Row chunks per vector core the planner gives the KV loop at ``env`` (1: whole
    rows), from the buffer plan the generated kernel is made from. The exact plan is
    made only where the whole rows' UB formula overflows (tune asks for many sizes)."""
    from fadsl.errors import FadslError
    from fadsl.ir.expr import evaluate
    from fadsl.plan.resources.footprint_eval import exact
    from fadsl.plan.memory.plan_buffers import lower

    try:
        passed, whole = whole_rows_ub(kernel, target, env)
        if exact(whole, env) <= target.capacity("UB"):
            return 1
        key = (id(kernel), target.name, tuple(sorted(env.items())))
        if key not in _CHUNKS:
            chunks = lower(passed, target, dict(env)).vec.chunks
            _CHUNKS[key] = max(
                (int(evaluate(c.core_rows, dict(env))) // c.rows for c in chunks),
                default=1,
            )
        return int(_CHUNKS[key])
    except (FadslError, KeyError, TypeError, ValueError):
        return 1


def l0_plan_at(
    grid: ir.Grid, target: Target, env: Mapping[str, Any], sides: Any = None
) -> Any:
    """The planner's ``L0Plan`` of the grid's cube core at ``env``; ``sides``: the
    grid's ``classify(grid, {})`` when the caller keeps it."""
    from fadsl.plan.memory.l0_plan import plan_l0
    from fadsl.plan.schedule.sides import classify

    core = "AIC" if target.split else "AICORE"
    sides = sides if sides is not None else classify(grid, {})
    return plan_l0(sides, grid, core, dict(env), target)


def planned_sub_dots(
    grid: ir.Grid, target: Target, env: Mapping[str, Any], l0: Any = None
) -> tuple[SubDotKey, ...]:
    """The dots the planner splits at ``env`` (``plan/memory/l0_split.py``), as the
    Schedule carries them; ``l0`` as for ``planned_l0``."""
    l0 = l0 if l0 is not None else l0_plan_at(grid, target, env)
    subs = l0.sub_dots
    return tuple(as_key(name, s) for name, s in sorted(subs.items()))


def planned_ring(grid: ir.Grid, loop: ir.For, target: Target) -> int:
    """The workspace ring depth the planner gives ``loop`` (1: no ring)."""
    chosen = _planned(grid, loop, target)
    return chosen.depth if chosen else 1


def _planned(grid: ir.Grid, loop: ir.For, target: Target) -> Any:
    """The planner's ``Ring`` of ``loop`` (depth and deferral), None without one."""
    from fadsl.plan.schedule import ring
    from fadsl.plan.schedule.sides import classify

    return ring.choose(grid, classify(grid, {}), target.split).get(id(loop))


def block_constant(
    ops: tuple[ir.Op, ...], var_names: set[str], consts: set[str]
) -> str:
    """The tile constant sizing the loads of ``ops`` whose block moves with one of
    ``var_names`` (``block_kv`` for the KV loop's K/V, ``block_q`` for the grid's Q);
    '' when there is none."""
    for op in ops:
        if not isinstance(op, ir.Load):
            continue
        for ix in op.index:
            if not isinstance(ix, Slice):
                continue
            moving = {str(v) for v in getattr(ix.start, "free_symbols", ())}
            if moving & var_names:
                found = {str(v) for v in getattr(ix.size, "free_symbols", ())} & consts
                if len(found) == 1:
                    return found.pop()
    return ""


def scaled_env(
    env: Mapping[str, Any],
    plan: Schedule,
    grid: ir.Grid,
    loop: ir.For,
    kernel: ir.Kernel,
) -> dict[str, Any]:
    """``env`` with the KV block constant times ``round_blocks`` and the Q block
    constant times ``shared_q_blocks`` (see the module docstring)."""
    out = dict(env)
    consts = {k for k, v in kernel.consts if isinstance(v, int)}
    for factor, ops, names, what in (
        (plan.round_blocks, loop.body, {loop.var}, "KV"),
        (plan.shared_q_blocks, grid.body, set(grid.vars), "Q"),
    ):
        if factor == 1:
            continue
        name = block_constant(ops, names, consts)
        if not name:
            raise UsageError(
                f"the kernel model cannot find the {what} block constant of "
                f"`{kernel.name}` to model {factor} blocks per step",
                kernel.loc,
            )
        out[name] = int(out[name]) * factor
    return out
