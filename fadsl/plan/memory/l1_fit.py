"""L1: the loads of a pipelined loop lose their double buffering where both slots do
not fit (issue 16, "Long KV rounds").

At block_kv = 512 (D = 128, fp16) a K or V block is 128 KiB; two slots of each, Q and
the P received from the vector cores need 672 KiB of a 910B's 512 KiB L1. When the
plan of a kernel overflows L1, the driver (``driver/lower.py``) plans it again with
every pipelined loop whose loads go to L1 at ``stages = 1`` (the loads are then issued
in their own iteration, not one ahead) and keeps that plan if L1 fits. The loop's
``stages`` in the textual IR and ``fadsl check`` (a note, and each queue's slots) show
what was chosen; the tile constant keeps its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from fadsl.ir import nodes as ir
from fadsl.passes.pipeline import queue_position
from fadsl.plan.memory.buffer_plan import BufferPlan
from fadsl.target import Target

_SINGLE: dict[int, tuple[ir.Kernel, tuple[ir.Kernel, tuple[str, ...]]]] = {}


def single_buffered(kernel: ir.Kernel) -> tuple[ir.Kernel, tuple[str, ...]]:
    """``kernel`` with its pipelined loops that load into L1 at one stage, and a note
    per loop changed (none changed: the kernel itself and no notes). The same object
    each time for the same kernel object, so that what is kept per kernel after the
    passes (``passed``) is found again."""
    hit = _SINGLE.get(id(kernel))
    if hit is None or hit[0] is not kernel:
        hit = (kernel, _single_buffered(kernel))
        _SINGLE[id(kernel)] = hit
    return hit[1]


def _single_buffered(kernel: ir.Kernel) -> tuple[ir.Kernel, tuple[str, ...]]:
    notes: list[str] = []

    def body(ops: tuple[ir.Op, ...]) -> tuple[ir.Op, ...]:
        out = []
        for op in ops:
            if isinstance(op, (ir.Grid, ir.For)):
                op = replace(op, body=body(op.body))
            if isinstance(op, ir.For) and op.stages > 1 and _loads_l1(op):
                notes.append(
                    f"L1: the loads of loop `{op.var}` ({op.loc.short()}) are "
                    f"single-buffered (stages {op.stages} -> 1): their "
                    f"{op.stages} slots do not fit L1"
                )
                op = replace(op, stages=1)
            out.append(op)
        return tuple(out)

    changed = replace(kernel, body=body(kernel.body))
    return (changed, tuple(notes)) if notes else (kernel, ())


def fit(
    kernel: ir.Kernel, target: Target, env: Mapping[str, Any]
) -> tuple[ir.Kernel, tuple[str, ...]]:
    """The kernel (before the passes) whose L1 loads the plan at ``env`` keeps
    double-buffered where they fit: ``kernel`` itself, or its single-buffered form
    with the notes when only that fits L1 (what ``driver/lower.py`` chooses)."""
    if l1_fits(kernel, target, env):
        return kernel, ()
    alt, notes = single_buffered(kernel)
    if notes and l1_fits(alt, target, env):
        return alt, notes
    return kernel, ()


def l1_fits(kernel: ir.Kernel, target: Target, env: Mapping[str, Any]) -> bool:
    """Whether the plan of ``kernel`` (before the passes) at ``env`` fits L1."""
    from fadsl.plan.memory.plan_buffers import plan

    bp = plan(passed(kernel, target), target, dict(env))
    return l1_fits_plan(bp, target, env)


_PASSED: dict[tuple[int, str], tuple[ir.Kernel, ir.Kernel]] = {}


def passed(kernel: ir.Kernel, target: Target) -> ir.Kernel:
    """``kernel`` after the passes, kept per kernel (the model asks at many sizes)."""
    from fadsl.passes import run_pipeline

    key = (id(kernel), target.name)
    hit = _PASSED.get(key)
    if hit is None or hit[0] is not kernel:
        hit = (kernel, run_pipeline(kernel, target))
        _PASSED[key] = hit
    return hit[1]


def l1_fits_plan(bp: BufferPlan, target: Target, env: Mapping[str, Any]) -> bool:
    from fadsl.plan.resources.footprint_eval import exact

    need = exact(bp.footprint("L1", target.align("L1")), dict(env))
    return int(need) <= target.capacity("L1")


def _loads_l1(loop: ir.For) -> bool:
    return any(
        isinstance(op, ir.Load) and queue_position(op.result, loop.body) in ("A1", "B1")
        for op in loop.body
    )


__all__ = ["fit", "l1_fits", "l1_fits_plan", "passed", "single_buffered"]
