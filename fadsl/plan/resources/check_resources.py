"""Resource check: prove that every planned on-chip buffer fits the chosen chip.

Input: a BufferPlan (``plan_buffers``: every UB/L1/L0 buffer per core, shapes symbolic in
the block sizes, ``buffers`` = stages for multi-buffered queues, implicit temporaries as
their own buffers, rows already split between the two AIVs on split chips), a Target and
the values of the shape and block-size symbols.
Output: a ResourceReport: per memory space the sympy footprint (each slot padded to the
space's alignment, ``BufferPlan.footprint``), its value, the capacity and the percentage;
per buffer its bytes; how tasks map onto cores (blockDim); every integer the kernel
passes to an Ascend C parameter with its value (``api_fields``, ``field_check``); the
queue buffers per TPipe event-ID pool (``event_pool``). ``explain`` turns a failing
report into one ResourceError naming every overflowing memory, the formula, the
numbers, every buffer with its source line, the largest block size that fits and an
alternative.
``run(kernel, target)`` is the pass form: plan, check, return the kernel unchanged.

Non-goals: deciding buffers (plan_buffers), bounding GM workspaces (reported only),
ranking configurations (cost_model), pipelining (the planner already counts the slots).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import sympy

from fadsl.errors import ErrorGroup, Loc, ResourceError
from fadsl.ir.expr import Expr
from fadsl.ir.expr_print import to_text
from fadsl.ir.nodes import Kernel
from fadsl.plan.memory.buffer_plan import SPACES, Buffer, BufferPlan
from fadsl.plan.sync import event_pool
from fadsl.plan.resources import field_check, resource_hints, unit_errors
from fadsl.plan.resources.field_check import FieldValue
from fadsl.plan.resources.footprint_eval import exact
from fadsl.target import Target


@dataclass(frozen=True)
class SpaceUse:
    """One memory space of one core: formula, bytes used and capacity."""

    space: str
    core: str
    """AIV / AIC on split chips, AICORE on coupled chips."""
    formula: Expr
    """Padded bytes, symbolic in shape and block-size symbols."""
    used: int
    capacity: int

    @property
    def percent(self) -> float:
        return 100.0 * self.used / self.capacity

    @property
    def overflow(self) -> bool:
        return self.used > self.capacity


@dataclass(frozen=True)
class BufferUse:
    buffer: Buffer
    bytes: int
    """Padded bytes of all slots."""


@dataclass(frozen=True)
class CoreUse:
    """How tasks (grid points) map onto physical cores."""

    kernel_type: str
    tasks: int
    block_dim: int
    physical: int
    unit: str
    """What ``physical`` counts: AIC, AIV or AI Core."""
    requested: bool
    """True when blockDim was asked for (--block-dim) rather than chosen."""

    @property
    def tasks_per_core(self) -> int:
        return -(-self.tasks // max(self.block_dim, 1))

    @property
    def ok(self) -> bool:
        return 0 < self.block_dim <= self.physical


@dataclass(frozen=True)
class ResourceReport:
    """Everything ``fadsl check`` prints, for one kernel, target and binding."""

    kernel: str
    target: str
    env: Mapping[str, Any]
    spaces: tuple[SpaceUse, ...]
    buffers: tuple[BufferUse, ...]
    workspace_bytes: int
    """GM workspace per block (all slots)."""
    cores: CoreUse
    unsupported: tuple[Buffer, ...] = ()
    """Buffers whose dtype the unit that uses them does not take on this target."""
    fields: tuple[FieldValue, ...] = ()
    """Every integer passed to an Ascend C parameter, with its value (field_check)."""
    pools: tuple[event_pool.PoolUse, ...] = ()
    """Queue buffers per TPipe event-ID pool (event_pool)."""
    atomic_bytes: int = 0
    """GM of the f32 sums of ``atomic_add`` outputs, for the whole launch."""

    @property
    def ok(self) -> bool:
        return (
            self.cores.ok
            and not self.overflowing()
            and not self.unsupported
            and all(f.ok for f in self.fields)
            and all(p.ok for p in self.pools)
        )

    def overflowing(self) -> tuple[SpaceUse, ...]:
        return tuple(s for s in self.spaces if s.overflow)

    def space(self, name: str) -> SpaceUse:
        return next(s for s in self.spaces if s.space == name)


# ----------------------------------------------------------------------------
# The check
# ----------------------------------------------------------------------------


def check(
    plan: BufferPlan,
    target: Target,
    env: Mapping[str, Any],
    block_dim: int | None = None,
) -> ResourceReport:
    """Evaluate ``plan`` at ``env`` against ``target``; never raises on overflow."""
    spaces = tuple(_space_use(plan, target, s, env) for s in SPACES)
    buffers = tuple(
        BufferUse(b, exact(b.bytes(target.align(b.space)), env)) for b in plan.buffers
    )
    ws = sum((exact(w.bytes(), env) for w in plan.workspaces), 0)
    return ResourceReport(
        plan.kernel,
        target.name,
        dict(env),
        spaces,
        buffers,
        ws,
        core_use(plan, target, env, block_dim),
        unsupported_dtypes(plan, target),
        field_check.evaluate(plan.fields, env),
        event_pool.pools(plan, target),
        atomic_bytes(plan, env),
    )


def atomic_bytes(plan: BufferPlan, env: Mapping[str, Any]) -> int:
    """Bytes of the f32 sum regions, each aligned to ``atomic_plan.GM_ALIGN``."""
    from fadsl.plan.schedule.atomic_plan import GM_ALIGN

    sizes = (exact(a.bytes(), env) for a in plan.atomics)
    return sum(-(-n // GM_ALIGN) * GM_ALIGN for n in sizes)


_STORAGE_ONLY = ("u8", "i1")
"""Byte pools and bit masks: raw storage, not operands of an arithmetic unit."""


def unsupported_dtypes(plan: BufferPlan, target: Target) -> tuple[Buffer, ...]:
    """Cube operands (L0A/L0B) and vector tiles (UB) whose dtype the unit lacks."""
    out = []
    for b in plan.buffers:
        dt = b.dtype.value
        if b.space in ("L0A", "L0B") and b.holds:  # a byte queue of several dtypes
            bad = [t for t in b.holds if t.value not in target.cube_dtypes]
            out += [replace(b, dtype=t) for t in bad]
        elif b.space in ("L0A", "L0B") and dt not in target.cube_dtypes:
            out.append(b)
        elif b.space == "UB" and dt not in target.vector_dtypes + _STORAGE_ONLY:
            out.append(b)
    return tuple(out)


def _space_use(
    plan: BufferPlan, target: Target, space: str, env: Mapping[str, Any]
) -> SpaceUse:
    formula = plan.footprint(space, target.align(space))
    return SpaceUse(
        space,
        target.core_of(space),
        formula,
        exact(formula, env),
        target.capacity(space),
    )


def core_use(
    plan: BufferPlan,
    target: Target,
    env: Mapping[str, Any],
    block_dim: int | None = None,
) -> CoreUse:
    """blockDim = min(tasks, physical cores of the kernel type) unless one is asked for."""
    tasks = exact(plan.tasks, env)
    physical, unit = target.physical_cores(plan.kernel_type)
    chosen = min(tasks, physical) if block_dim is None else block_dim
    return CoreUse(
        plan.kernel_type, tasks, chosen, physical, unit, block_dim is not None
    )


def tunable_names(kernel: Kernel) -> tuple[str, ...]:
    """Integer constants of the kernel other than ``stages``: the block sizes."""
    return tuple(
        k
        for k, v in kernel.consts
        if isinstance(v, int) and not isinstance(v, bool) and k != "stages"
    )


# ----------------------------------------------------------------------------
# Explaining a failing report
# ----------------------------------------------------------------------------


def explain(
    report: ResourceReport,
    plan: BufferPlan,
    target: Target,
    tunable: Sequence[str],
    kernel_loc: Loc | None,
    replan: resource_hints.Replan | None = None,
    hints: bool = True,
) -> ResourceError | None:
    """One ResourceError for all overflowing spaces, the core limit and unsupported
    dtypes; None if everything fits. ``replan`` (the kernel's plan at other sizes)
    lets the hint confirm each suggested size with that size's own plan; without
    ``hints`` an overflow has no hint (searching sizes that fit is the slow part)."""
    group = ErrorGroup()
    file = _file_name(plan, kernel_loc)
    over = report.overflowing()
    if over:
        group.add(
            _memory_error(
                over, report, plan, target, tunable, file, kernel_loc, replan, hints
            )
        )
    if not report.cores.ok:
        group.add(unit_errors.core_error(report, target, file, kernel_loc))
    for err in unit_errors.dtype_errors(report, target, file):
        group.add(err)
    for err in field_check.errors(report, plan, target.name, file, tunable, kernel_loc):
        group.add(err)
    for err in event_pool.errors(report.pools, report.kernel, target, file, kernel_loc):
        group.add(err)
    try:
        group.raise_if_any()
    except ResourceError as err:
        return err
    return None


def _file_name(plan: BufferPlan, kernel_loc: Loc | None) -> str:
    locs = [kernel_loc] if kernel_loc is not None else [b.loc for b in plan.buffers]
    return locs[0].short().rsplit(":", 1)[0] if locs else "<unknown file>"


_PER = {
    "AIV": "per vector core (AIV)",
    "AIC": "per cube core (AIC)",
    "AICORE": "per AI Core",
}


def _memory_error(
    over: tuple[SpaceUse, ...],
    report: ResourceReport,
    plan: BufferPlan,
    target: Target,
    tunable: Sequence[str],
    file: str,
    kernel_loc: Loc | None,
    replan: resource_hints.Replan | None,
    hints: bool = True,
) -> ResourceError:
    worst = max(over, key=lambda u: u.percent)
    inside = {
        u.space: [b for b in report.buffers if b.buffer.space == u.space] for u in over
    }
    biggest = max(inside[worst.space], key=lambda b: b.bytes).buffer
    names = ", ".join(u.space for u in over)
    head = (
        f"{names} overflow in kernel `{report.kernel}` ({file}) on {target.name}: "
        + "; ".join(
            f"{u.space} needs {u.used:,} B > {u.capacity:,} B {_PER[u.core]}"
            for u in over
        )
    )
    notes: list[str] = []
    for u in over:
        notes.append(_formula_note(u, inside[u.space], report, target))
        notes.append(_buffers_note(u.space, inside[u.space]))
    hint = (
        resource_hints.hint(over, report, plan, target, tunable, replan)
        if hints
        else None
    )
    return ResourceError(
        head, biggest.loc or kernel_loc, hint, notes, code="resource_overflow"
    )


def expr_text(e: Expr | int) -> str:
    """IR text of a size (``block_q/2``), or sympy's when it uses ceiling/floor."""
    expr = sympy.sympify(e)
    try:
        return to_text(expr)
    except ValueError:
        return sympy.sstr(expr)


def formula_text(buffers: Sequence[Buffer], align: int) -> str:
    """``2*pad32(2*D*block_kv) + pad256(...)``: the footprint, one term per buffer
    (each slot padded to the memory's alignment or the buffer's own, if larger)."""
    terms = []
    for b in buffers:
        pad = max(align, getattr(b, "min_align", 0))
        slot = f"pad{pad}({sympy.sstr(b.slot_bytes())})"
        terms.append(f"{b.buffers}*{slot}" if b.buffers > 1 else slot)
    return " + ".join(terms) if terms else "0"


def _formula_note(
    use: SpaceUse, inside: list[BufferUse], report: ResourceReport, target: Target
) -> str:
    align = target.align(use.space)
    split = ", rows split between the 2 AIVs" if use.core == "AIV" else ""
    names = sorted(s.name for s in sympy.sympify(use.formula).free_symbols)
    if "stages" in report.env and "stages" not in names:
        names.append("stages")
    at = ", ".join(f"{n}={report.env[n]}" for n in names if n in report.env)
    numbers = " + ".join(f"{u.bytes:,}" for u in inside)
    total = f" = {use.used:,} B" if len(inside) > 1 else " B"
    return (
        f"{use.space} {_PER[use.core]}{split}; padN(x) rounds x up to N B:\n"
        f"{use.space} = {formula_text([u.buffer for u in inside], align)}"
        f"\n    = {numbers}{total} at {at}"
    )


def _buffers_note(space: str, inside: list[BufferUse]) -> str:
    rows = []
    for u in sorted(inside, key=lambda u: -u.bytes):
        b = u.buffer
        shape = ", ".join(expr_text(d) for d in b.shape)
        slots = f" x{b.buffers}" if b.buffers > 1 else ""
        rows.append(
            (
                b.name,
                f"{b.dtype.value}[{shape}]{slots}",
                f"{u.bytes:,} B",
                b.loc.short() if b.loc else "",
                b.role,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [
        f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}  "
        f"{r[3]:<{widths[3]}}  {r[4]}".rstrip()
        for r in rows
    ]
    return f"buffers in {space}:\n" + "\n".join(lines)
