"""The UB a kernel's plan needs with every row block held whole (no row chunks),
as a formula over the shape: what ``fadsl/perf/schedule.py`` compares with UB to
count the chunks the planner will make, and tune's chunk bound
(``plan/search/chunks.py``) asks for the same."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from fadsl.ir import nodes as ir
from fadsl.passes import run_pipeline
from fadsl.plan.memory.plan_buffers import lower
from fadsl.target import Target

_WHOLE: dict[tuple[Any, ...], Any] = {}


def whole_rows_ub(
    kernel: ir.Kernel, target: Target, env: Mapping[str, Any]
) -> tuple[ir.Kernel, Any]:
    """(``kernel`` after the passes, the UB formula of its plan with whole rows made
    at the first ``env`` asked for), kept per kernel."""
    key = (id(kernel), target.name)
    cached = _WHOLE.get(key)
    if cached is None or cached[0] is not kernel:
        passed = run_pipeline(kernel, target)
        roomy = dataclasses.replace(target, ub_bytes=2**62)  # whole rows always fit
        plan = lower(passed, roomy, dict(env)).plan
        cached = (kernel, passed, plan.footprint("UB", target.align("UB")))
        _WHOLE[key] = cached
    return cached[1], cached[2]
