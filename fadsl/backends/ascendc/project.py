"""A kernel's whole CANN-style project from the driver's ``Lowered``: emit, render,
in memory."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fadsl.backends.ascendc.emit import Emitted, emit
from fadsl.backends.ascendc.op_package import op_other_files, op_sources
from fadsl.backends.ascendc.render import render_all
from fadsl.driver.binding import Binding
from fadsl.driver.lower import Lowered
from fadsl.ir.nodes import ParamKind
from fadsl.ir.types import TensorType
from fadsl.plan.memory import row_chunk
from fadsl.target import Target
from fadsl.version import __version__

if TYPE_CHECKING:
    from fadsl.plan.memory.buffer_plan import BufferPlan
    from fadsl.plan.resources.check_resources import ResourceReport

HEADER = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "include", "fadsl_tile.h"
)


@dataclass(frozen=True)
class Project:
    files: dict[str, bytes]
    lowered: Lowered
    emitted: Emitted

    @property
    def report(self) -> ResourceReport:
        assert self.lowered.report is not None
        return self.lowered.report

    @property
    def plan(self) -> BufferPlan:
        return self.lowered.plan


def build_project(
    low: Lowered, source: str, out_dir: str, prove_fit: bool = True
) -> Project:
    """Every file of the project of ``low`` (raises its ResourceError if it does not fit).

    ``low`` comes from ``driver.lower.lower`` with a target. ``prove_fit=False`` skips
    the refusal (never the report): only for testing that the CPU runtime enforces the
    chip's memory sizes by itself.
    """
    from fadsl.ir.text.printer import print_kernel
    from fadsl.plan.resources.resource_report import report_json
    from fadsl.plan.memory.l0_split import annotate as annotate_sub_dots
    from fadsl.plan.schedule.ring import annotate

    from fadsl.backends.ascendc.emit import require_codegen

    binding, target = low.binding, low.target
    require_codegen(target, binding.kernel)
    if prove_fit:
        low.require_fit()
    assert low.lowering is not None and low.report is not None
    env = binding.env()
    emitted = emit(low.lowering, os.path.basename(source), env)
    context = _context(binding, target, emitted, source, out_dir)
    context["host_atomic_bytes"] = _host_atomic_bytes(low, emitted, emitted.host)
    context["fits"] = low.error is None
    op_context, op_cxx = op_sources(binding, emitted, context)
    files = render_all(binding.kernel.name, context, op_cxx)
    with open(HEADER, "rb") as f:
        files["include/fadsl_tile.h"] = f.read()
    shown = annotate(binding.kernel, low.lowering.rings)  # the .fir shows the rings
    shown = row_chunk.annotate(shown, low.lowering.vec)  # and the row chunks
    shown = annotate_sub_dots(shown, low.lowering.sub_dots)  # and the sub-dots
    files[f"{binding.kernel.name}.fir"] = print_kernel(shown).encode()
    files.update(op_other_files(binding, op_context, files))
    resources = report_json(
        low.report,
        low.plan,
        target,
        os.path.basename(source),
        binding.shape,
        binding.consts,
    )
    files["resources.json"] = (
        json.dumps(resources, indent=2, sort_keys=True) + "\n"
    ).encode()
    return Project(files, low, emitted)


def _context(
    binding: Binding, target: Target, em: Emitted, source: str, out_dir: str
) -> dict:
    v = em.view
    k = binding.kernel
    prefix, host = em.prefix, em.host
    host_tasks = _host_tasks(binding, em, host)
    fields = [f.key for f in v.tiling if f.key]
    shape = {s: binding.shape[s] for s in em.runtime_syms}
    return {
        "v": v,
        "classes": [c for c in (v.cube, v.vector, v.post) if c is not None],
        "version": __version__,
        "kernel": k.name,
        "source": os.path.basename(source),
        "soc": target.name,
        "t": target,
        "kernel_type": v.kernel_type,
        "guard": f"{prefix}_TILING_H",
        "prefix": prefix,
        "host": host,
        "workspace_per_core": em.workspace_per_group,
        "aic_cores": target.aic_cores,
        "target": target.name,
        "host_tasks": host_tasks,
        "fields": len(fields),
        "field_names": ", ".join(fields),
        "shape": shape,
        "fixed": dict(em.comptime),
        "scalars": {s: binding.scalars[s] for s in em.scalars},
        "inputs": _inputs(binding),
        "input_dims": _input_dims(binding),
        "small_shape": ",".join(
            f"{s}={min(v, 512) if s in ('Sq', 'Skv') else v}" for s, v in shape.items()
        ),
        "outputs": {
            p.name: p.type.dtype.value for p in k.params if p.kind is ParamKind.OUT
        },
        "sets": {n: val for n, val in k.consts},
        "source_rel": os.path.relpath(
            os.path.abspath(source), os.path.abspath(out_dir)
        ),
        "config": ", ".join(f"{n}={val}" for n, val in k.consts)
        + ", "
        + ", ".join(f"{n}={val}" for n, val in em.comptime.items())
        + f", dtype of q: {_dtype(k)}",
    }


def _host_tasks(binding: Binding, em: Emitted, host: str) -> str:
    """The task count as plain host C++ over tiling fields ``t.X``."""
    import sympy

    from fadsl.plan.schedule.phases import split
    from fadsl.plan.schedule.sides import grid_of

    first = grid_of(split(binding.kernel)[0])
    return _host_cxx(binding, em, host, sympy.Mul(*first.extents))


def _host_atomic_bytes(low: Lowered, em: Emitted, host: str) -> str:
    """Bytes of the f32 sums of atomic_add outputs, as host C++ ("" without any)."""
    from fadsl.backends.ascendc.atomic_io import total_bytes

    assert low.lowering is not None
    if not low.lowering.plan.atomics:
        return ""
    return _host_cxx(low.binding, em, host, total_bytes(low.lowering))


def _host_cxx(binding: Binding, em: Emitted, host: str, e: Any) -> str:
    """``e`` as plain host C++ over tiling fields ``t.X``."""
    import sympy

    from fadsl.ir.expr import isym
    from fadsl.ir.expr_print import to_cxx

    k = binding.kernel
    fixed = {isym(n): v for n, v in em.comptime.items()}
    fixed.update(
        {
            isym(n): v
            for n, v in k.consts
            if isinstance(v, int) and not isinstance(v, bool)
        }
    )
    value = sympy.sympify(e).subs(fixed)
    text = to_cxx(value, {s: f"t.{em.names.field(s)}" for s in em.runtime_syms})
    return text.replace("fadsl::CeilDiv<int64_t>", f"{host}CeilDiv")


def _dtype(k: Any) -> str:
    for p in k.params:
        if isinstance(p.type, TensorType):
            return p.type.dtype.value
    return "-"


NUMPY_NAMES = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "i32": "int32",
    "i8": "int8",
    "u8": "uint8",
    "i1": "bool",
    "f8e4m3": "float8_e4m3fn",
    "f8e5m2": "float8_e5m2",
}


def _input_dims(binding: Binding) -> dict[str, list[str]]:
    """Every input's dims as Python expressions over the shape symbols (gen_data.py -s)."""
    return {
        p.name: [str(d) for d in p.type.shape]
        for p in binding.kernel.params
        if p.kind is ParamKind.IN and isinstance(p.type, TensorType)
    }


def _inputs(binding: Binding) -> dict[str, list]:
    """Shape and numpy dtype name of every input (without importing numpy)."""
    from fadsl.ir.expr import evaluate

    env = binding.env()
    return {
        p.name: [
            [int(evaluate(d, env)) for d in p.type.shape],
            NUMPY_NAMES[p.type.dtype.value],
        ]
        for p in binding.kernel.params
        if p.kind is ParamKind.IN and isinstance(p.type, TensorType)
    }
