"""The resource report as plain data (``fadsl check --json``, ``resources.json``)."""

from __future__ import annotations

from typing import Any

from fadsl.plan.memory.buffer_plan import BufferPlan
from fadsl.plan.resources.check_resources import (
    BufferUse,
    ResourceReport,
    expr_text,
    formula_text,
)
from fadsl.plan.resources.footprint_eval import exact
from fadsl.target import Target


def report_json(
    report: ResourceReport,
    plan: BufferPlan,
    target: Target,
    file: str,
    shape: dict[str, int],
    consts: dict[str, Any],
) -> dict[str, Any]:
    """Every fact of the report; ``file`` as the caller wants it shown (a basename in
    generated projects, so they do not depend on where the repository lives)."""
    c = report.cores
    out = {
        "kernel": report.kernel,
        "file": file,
        "target": target.name,
        "kernel_type": plan.kernel_type,
        "shape": shape,
        "constants": consts,
        "fits": report.ok,
        "spaces": [_space_json(s, plan, target) for s in report.spaces],
        "buffers": [_buffer_json(u, report.env) for u in report.buffers],
        "workspaces": [
            {
                "name": w.name,
                "shape": [expr_text(d) for d in w.shape],
                "dtype": w.dtype.value,
                "slots": w.slots,
                "role": w.role,
            }
            for w in plan.workspaces
        ],
        "unsupported_dtypes": [
            {"buffer": b.name, "space": b.space, "dtype": b.dtype.value}
            for b in report.unsupported
        ],
        "api_fields": [
            {
                "call": f.use.field.call,
                "field": f.use.field.name,
                "ctype": f.use.field.ctype,
                "range": [f.use.field.lo, f.use.field.hi],
                "formula": expr_text(f.use.value),
                "value": f.value,
                "ok": f.ok,
                "what": f.use.what,
                "source": f.use.loc.short() if f.use.loc else None,
            }
            for f in report.fields
        ],
        "workspace_bytes_per_block": report.workspace_bytes,
        "cores": {
            "tasks": c.tasks,
            "block_dim": c.block_dim,
            "physical": c.physical,
            "unit": c.unit,
            "tasks_per_core": c.tasks_per_core,
            "requested": c.requested,
            "ok": c.ok,
        },
    }
    if plan.atomics:  # only kernels with atomic_add have these keys
        out["atomic_sums"] = [
            {
                "output": a.output,
                "shape": [expr_text(d) for d in a.shape],
                "in_place": a.direct,
                "bytes": exact(a.bytes(), report.env),
            }
            for a in plan.atomics
        ]
        out["atomic_bytes"] = report.atomic_bytes
    if plan.row_chunks:  # only kernels whose vector rows run in chunks
        out["row_chunks"] = [
            {
                "loop": var,
                "source": where,
                "rows": rows,
                "rows_per_vector_core": exact(core_rows, report.env),
            }
            for var, where, rows, core_rows in plan.row_chunks
        ]
    if plan.sub_dots:  # only kernels with a dot that does not fit L0 whole
        out["sub_dots"] = [
            {
                "dot": name,
                "source": where,
                "m": s.m,
                "n": s.n,
                "k": s.k,
                "counts": list(s.counts),
            }
            for name, where, s in plan.sub_dots
        ]
    if plan.notes:
        out["notes"] = list(plan.notes)
    return out


def _space_json(s: Any, plan: BufferPlan, target: Target) -> dict[str, Any]:
    return {
        "space": s.space,
        "core": s.core,
        "used": s.used,
        "capacity": s.capacity,
        "percent": round(s.percent, 2),
        "overflow": s.overflow,
        "formula": formula_text(plan.in_space(s.space), target.align(s.space)),
        "expr": str(s.formula),
    }


def _buffer_json(u: BufferUse, env: dict[str, Any]) -> dict[str, Any]:
    b = u.buffer
    return {
        "name": b.name,
        "core": b.core,
        "space": b.space,
        "position": b.position,
        "shape": [expr_text(d) for d in b.shape],
        "shape_values": [exact(d, env) for d in b.shape],
        "dtype": b.dtype.value,
        "slots": b.buffers,
        "bytes": u.bytes,
        "role": b.role,
        "kind": b.kind,
        "values": list(b.values),
        "source": b.loc.short() if b.loc else None,
    }
