"""The resource report as text: what ``fadsl check`` and ``fadsl compile`` print and
``fd.check(...).table`` holds.

Per memory space the bytes used per core against the capacity; per buffer its core,
memory, shape, dtype, slots, bytes and the user line it comes from; how tasks map to
cores (blockDim); the Ascend C field proof; and the footprint formulas. The JSON form
of the same report is ``resource_report.report_json``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import sympy

from fadsl.ir.expr_print import to_text
from fadsl.ir.types import Shape
from fadsl.plan.memory.buffer_plan import BufferPlan
from fadsl.plan.resources.check_resources import ResourceReport, formula_text
from fadsl.plan.resources.footprint_eval import exact
from fadsl.target import Target


def table(
    report: ResourceReport,
    plan: BufferPlan,
    target: Target,
    source: str,
    shape: Mapping[str, int],
    consts: Mapping[str, Any],
) -> str:
    """The human-readable report; ``source`` is the kernel's file."""
    lines = [_title(report, plan, target, source, shape, consts), ""]
    lines += _space_rows(report) + [""]
    lines += _buffer_rows(report, plan) + [""]
    lines += _core_lines(report, plan)
    lines += [""] + _formula_lines(report, plan, target)
    verdict = "fits" if report.ok else "DOES NOT FIT"
    lines += ["", f"{report.kernel} {verdict} on {target.name}"]
    return "\n".join(lines)


def _title(
    report: ResourceReport,
    plan: BufferPlan,
    target: Target,
    source: str,
    shape: Mapping[str, int],
    consts: Mapping[str, Any],
) -> str:
    chip = (
        "split: 1 AIC + 2 AIV per block"
        if target.split
        else "coupled: cube and vector in one AI Core"
    )
    sizes = ", ".join(f"{k}={v}" for k, v in shape.items())
    values = ", ".join(f"{k}={v}" for k, v in consts.items())
    return (
        f"{report.kernel} ({os.path.basename(source)}) on {target.name} (arch "
        f"{target.arch}, {chip}); kernel type {plan.kernel_type}\n"
        f"shape {sizes}; constants {values}"
    )


def _grid(rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(r, widths))
        ]
        out.append("  ".join(cells).rstrip())
    return out


def _space_rows(report: ResourceReport) -> list[str]:
    rows = [("memory", "core", "used B", "capacity B", "use", "")]
    for s in report.spaces:
        bar = "#" * min(20, round(s.percent / 5)) + ("!" if s.overflow else "")
        rows.append(
            (
                s.space,
                s.core,
                f"{s.used:,}",
                f"{s.capacity:,}",
                f"{s.percent:.1f}%",
                bar,
            )
        )
    return _grid(rows, {2, 3, 4})


_BUFFER_HEAD = ("buffer", "core", "memory", "shape", "dtype", "slots", "bytes")


def _buffer_rows(report: ResourceReport, plan: BufferPlan) -> list[str]:
    rows = [_BUFFER_HEAD + ("source", "role")]
    for u in report.buffers:
        b = u.buffer
        rows.append(
            (
                b.name,
                b.core,
                b.space,
                _shape(b.shape, report.env),
                b.dtype.value,
                str(b.buffers),
                f"{u.bytes:,}",
                b.loc.short() if b.loc else "",
                b.role,
            )
        )
    for w in plan.workspaces:  # per AI core; a ring holds one tile per slot
        rows.append(
            (
                w.name,
                "AIC+AIV",
                "GM",
                _shape(w.shape, report.env),
                w.dtype.value,
                str(w.slots),
                f"{exact(w.bytes(), report.env):,}",
                w.loc.short() if w.loc else "",
                "workspace " + w.role,
            )
        )
    for a in plan.atomics:  # one per launch
        rows.append(
            (
                a.output + "Sum",
                "AIV",
                "GM",
                _shape(a.shape, report.env),
                "f32",
                "1",
                f"{exact(a.bytes(), report.env):,}",
                a.loc.short() if a.loc else "",
                f"atomic sum of `{a.output}`"
                + (" (in place)" if a.direct else ", cast after the grid"),
            )
        )
    return _grid(rows, {5, 6})


def _shape(shape: Shape, env: Mapping[str, Any]) -> str:
    return "[" + ", ".join(str(exact(d, env)) for d in shape) + "]"


def _core_lines(report: ResourceReport, plan: BufferPlan) -> list[str]:
    c = report.cores
    chosen = "asked" if c.requested else f"min(tasks, {c.physical})"
    group = " (each 1 AIC + 2 AIV)" if c.kernel_type.startswith("MIX") else ""
    lines = [
        f"cores: {c.tasks:,} tasks ({to_text(plan.tasks)}); blockDim {c.block_dim} "
        f"= {chosen} of {c.physical} physical {c.unit}{group}; "
        f"{c.tasks_per_core} tasks per core"
    ]
    if plan.workspaces:
        total = report.workspace_bytes * c.block_dim
        lines.append(
            f"GM workspace: {report.workspace_bytes:,} B per block x "
            f"{c.block_dim} blocks = {total:,} B"
        )
    if plan.atomics:
        lines.append(_atomic_line(report, plan))
    for var, where, rows, core_rows in plan.row_chunks:
        whole = exact(core_rows, report.env)
        lines.append(
            f"row chunks: loop `{var}` ({where}) runs the row-wise vector work of "
            f"its body over {rows} of the {whole} rows of each tile at a time, "
            f"{whole // rows} chunks (row_chunk = {rows})"
        )
    if plan.post_tasks is not None:
        lines.append(
            f"post phase: {exact(plan.post_tasks, report.env):,} tasks "
            f"({to_text(plan.post_tasks)}) after SyncAll<false>(), over the "
            f"{2 * c.block_dim} AIVs of the launch"
        )
    lines += list(plan.notes)
    for name, shape, dtype in plan.scratch:
        nbytes = exact(sympy.Mul(*shape) * dtype.itemsize, report.env)
        lines.append(
            f"GM scratch `{name}`: {dtype.value}{_shape(shape, report.env)} = "
            f"{nbytes:,} B (fd.Scratch, allocated with the inputs)"
        )
    return lines + _field_lines(report)


def _atomic_line(report: ResourceReport, plan: BufferPlan) -> str:
    names = ", ".join(f"`{a.output}`" for a in plan.atomics)
    return (
        f"GM atomic sums ({names}): {report.atomic_bytes:,} B per launch after the "
        "per-block workspace; zeroed by the vector cores, then SyncAll, the grid "
        "(SetAtomicAdd<float>), SyncAll, and the cast into the outputs"
    )


def _field_lines(report: ResourceReport) -> list[str]:
    """The API field proof: how many values were bounded, and any out of range."""
    bad = [f for f in report.fields if not f.ok]
    verdict = f"{len(bad)} OUT OF RANGE" if bad else "all in range"
    lines = [
        f"Ascend C fields: {len(report.fields)} computed values bounded against their "
        f"C types and documented ranges; {verdict}"
    ]
    for f in bad:
        d = f.use.field
        lines.append(
            f"  {d.title} = {f.value:,} not in [{d.lo:,}, {d.hi:,}] ({d.ctype}): "
            f"{f.use.what} ({f.use.loc.short() if f.use.loc else ''})"
        )
    return lines


def _formula_lines(
    report: ResourceReport, plan: BufferPlan, target: Target
) -> list[str]:
    lines = ["footprints (bytes per core; padN(x) rounds x up to N B):"]
    for s in report.spaces:
        bufs = plan.in_space(s.space)
        lines.append(f"  {s.space} = {formula_text(bufs, target.align(s.space))}")
    return lines
