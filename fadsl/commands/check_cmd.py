"""``fadsl check``: prove that a kernel's on-chip buffers fit a chip, before any codegen.

Prints, per memory space, the bytes used per core against the capacity; per buffer its
core, memory, shape, dtype, slots, bytes and the user line it comes from; how tasks map
to cores (blockDim); and the footprint formulas. ``--json`` prints the same for tools.
Exit 0 when everything fits, 1 with a ResourceError on stderr when it does not.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, Any

from fadsl.commands import common, flags
from fadsl.errors import UsageError

if TYPE_CHECKING:
    from fadsl.commands.common import Binding
    from fadsl.ir.nodes import Kernel
    from fadsl.ir.types import Shape
    from fadsl.plan.buffer_plan import BufferPlan
    from fadsl.plan.check_resources import ResourceReport
    from fadsl.target import Target


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_kernel_args(p)
    common.add_target_arg(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--block-dim",
        type=flags.integer,
        metavar="N",
        help="ask for this blockDim instead of min(tasks, physical cores)",
    )


def main(args: argparse.Namespace) -> int:
    from fadsl.plan.check_resources import check, explain, tunable_names
    from fadsl.target import resolve

    from fadsl.plan.plan_buffers import plan as plan_at

    if args.block_dim is not None and args.block_dim < 1:
        raise UsageError(
            f"--block-dim {args.block_dim}: a launch needs at least one block",
            hint="leave it out to use min(tasks, physical cores)",
        )
    target = resolve(args.target, args.target_file)
    binding = common.build(args)
    kernel = prepare(binding.kernel, target)
    plan = plan_at(kernel, target, binding.env())
    report = check(plan, target, binding.env(), args.block_dim)
    if args.json:
        print(json.dumps(as_json(report, plan, target, binding), indent=2))
    else:
        print(table(report, plan, target, binding))
    err = explain(
        report,
        plan,
        target,
        tunable_names(kernel),
        kernel.loc,
        lambda env: plan_at(kernel, target, env),
    )
    if err is not None:
        raise err
    return 0


def planned(
    kernel: Kernel, target: Target, env: dict[str, Any]
) -> tuple[Kernel, BufferPlan]:
    """The kernel after the passes that precede buffer planning, and its BufferPlan."""
    from fadsl.plan.plan_buffers import plan

    lowered = prepare(kernel, target)
    return lowered, plan(lowered, target, env)


def prepare(kernel: Kernel, target: Target) -> Kernel:
    """Run the pipeline's passes up to (not including) plan_buffers/check_resources."""
    from fadsl.passes import PIPELINE

    for p in PIPELINE:
        if p.NAME in ("plan_buffers", "check_resources"):
            break
        kernel = p.run(kernel, target)
    return kernel


# ----------------------------------------------------------------------------
# Text
# ----------------------------------------------------------------------------


def table(
    report: ResourceReport, plan: BufferPlan, target: Target, binding: Binding
) -> str:
    """The human-readable report (see module docstring)."""
    lines = [_title(report, plan, target, binding), ""]
    lines += _space_rows(report) + [""]
    lines += _buffer_rows(report, plan) + [""]
    lines += _core_lines(report, plan)
    lines += [""] + _formula_lines(report, plan, target)
    verdict = "fits" if report.ok else "DOES NOT FIT"
    lines += ["", f"{report.kernel} {verdict} on {target.name}"]
    return "\n".join(lines)


def _title(
    report: ResourceReport, plan: BufferPlan, target: Target, binding: Binding
) -> str:
    chip = (
        "split: 1 AIC + 2 AIV per block"
        if target.split
        else "coupled: cube and vector in one AI Core"
    )
    shape = ", ".join(f"{k}={v}" for k, v in binding.shape.items())
    consts = ", ".join(f"{k}={v}" for k, v in binding.consts.items())
    src = os.path.basename(binding.kernel.loc.file)
    return (
        f"{report.kernel} ({src}) on {target.name} (arch {target.arch}, {chip}); "
        f"kernel type {plan.kernel_type}\nshape {shape}; constants {consts}"
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


def _buffer_rows(report: ResourceReport, plan: BufferPlan) -> list[str]:
    from fadsl.plan.footprint_eval import exact

    rows = [
        (
            "buffer",
            "core",
            "memory",
            "shape",
            "dtype",
            "slots",
            "bytes",
            "source",
            "role",
        )
    ]
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
    return _grid(rows, {5, 6})


def _shape(shape: Shape, env: dict[str, Any]) -> str:
    return "[" + ", ".join(str(v) for v in _shape_values(shape, env)) + "]"


def _shape_values(shape: Shape, env: dict[str, Any]) -> list[int]:
    from fadsl.plan.footprint_eval import exact

    return [exact(d, env) for d in shape]


def _core_lines(report: ResourceReport, plan: BufferPlan) -> list[str]:
    from fadsl.ir.expr_print import to_text

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
    return lines + _field_lines(report)


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
    from fadsl.plan.check_resources import formula_text

    lines = ["footprints (bytes per core; padN(x) rounds x up to N B):"]
    for s in report.spaces:
        bufs = plan.in_space(s.space)
        lines.append(f"  {s.space} = {formula_text(bufs, target.align(s.space))}")
    return lines


# ----------------------------------------------------------------------------
# JSON
# ----------------------------------------------------------------------------


def as_json(
    report: ResourceReport, plan: BufferPlan, target: Target, binding: Binding
) -> dict[str, Any]:
    from fadsl.plan.resource_report import report_json

    return report_json(
        report, plan, target, binding.kernel.loc.file, binding.shape, binding.consts
    )
