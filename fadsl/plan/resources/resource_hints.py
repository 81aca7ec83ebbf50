"""Hints for an overflow error: what to change so that the kernel fits.

A helper of ``check_resources``. In order: the largest multiple of 16 of the dominant
block size that fits with the others fixed (solved with sympy by ``footprint_eval``),
single buffering (``stages=1``), the other block size, and -- when no single change is
enough -- the pair of smaller block sizes with the most work per iteration that fits.

Non-goals: the error text around the hint (check_resources), evaluating formulas.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import sympy

from fadsl.ir.expr import Expr, isym
from fadsl.plan.memory.buffer_plan import SPACES, BufferPlan
from fadsl.plan.resources.footprint_eval import (
    STEP,
    batch,
    exact,
    largest_fit,
    ranked_pairs,
)
from fadsl.target import Target

if TYPE_CHECKING:
    from fadsl.plan.resources.check_resources import ResourceReport, SpaceUse

Replan = Callable[[dict[str, Any]], BufferPlan]
"""The plan of the same kernel at other sizes (the planner sizes some buffers by
comparing numbers, so a suggestion is confirmed with its own plan)."""
TRIES = 4
"""Suggestions confirmed with their own plan before giving up on that kind of fix."""


def hint(
    over: tuple[SpaceUse, ...],
    report: ResourceReport,
    plan: BufferPlan,
    target: Target,
    tunable: Sequence[str],
    replan: Replan | None = None,
) -> str | None:
    """The dominant block size's largest fit, then stages=1, the other block size, and
    (when no single change is enough) the best pair of smaller block sizes."""
    env = dict(report.env)
    limits = [(u.formula, u.capacity) for u in over]
    used = set().union(*(sympy.sympify(u.formula).free_symbols for u in over))
    present = [n for n in tunable if n in env and isym(n) in used]
    fits = {n: _confirmed_fit(limits, n, env, target, replan) for n in present}
    ranked = sorted(
        present, key=lambda n: (fits[n] is None, _excess_halved(limits, env, n), n)
    )
    parts = [_fit_text(limits, n, fits[n], env) for n in ranked[:1]]
    parts.append(_stages_text(over, report, plan, target))
    parts += [_fit_text(limits, n, fits[n], env) for n in ranked[1:2]]
    if len(ranked) >= 2 and all(fits[n] is None for n in ranked[:2]):
        parts.append(_pair_text(plan, target, ranked[0], ranked[1], env, replan))
    text = "; or ".join(p for p in parts if p)
    return text or None


def _fits(env: dict[str, Any], plan: BufferPlan, target: Target) -> bool:
    return all(
        exact(plan.footprint(s, target.align(s)), env) <= target.capacity(s)
        for s in SPACES
    )


def _confirmed_fit(
    limits: list[tuple[Expr, int]],
    name: str,
    env: dict[str, Any],
    target: Target,
    replan: Replan | None,
) -> int | None:
    """largest_fit, stepped down until the configuration's own plan agrees."""
    best = largest_fit(limits, name, env)
    if best is None or replan is None:
        return best
    for value in range(best, max(0, best - STEP * TRIES), -STEP):
        trial = {**env, name: value}
        if _fits(trial, replan(trial), target):
            return value
    return None


def _excess_halved(
    limits: list[tuple[Expr, int]], env: dict[str, Any], name: str
) -> int:
    """Bytes above capacity, summed over spaces, once ``name`` is halved."""
    trial = {**env, name: max(STEP, env[name] // 2)}
    return sum(max(0, exact(f, trial) - cap) for f, cap in limits)


def _fit_text(
    limits: list[tuple[Expr, int]], name: str, best: int | None, env: dict[str, Any]
) -> str:
    used = set().union(*(sympy.sympify(f).free_symbols for f, _ in limits))
    fixed = ", ".join(
        f"{n}={v}" for n, v in sorted(env.items()) if n != name and isym(n) in used
    )
    fixed = f" with {fixed}" if fixed else ""
    if best is None:
        return f"no multiple of {STEP} for {name} fits{fixed}"
    return f"{name} <= {best} fits{fixed} (--set {name}={best})"


def _stages_text(
    over: tuple[SpaceUse, ...], report: ResourceReport, plan: BufferPlan, target: Target
) -> str | None:
    stages = report.env.get("stages")
    if not isinstance(stages, int) or stages <= 1:
        return None
    after = {}
    for u in over:
        align = target.align(u.space)
        multi = [b for b in plan.in_space(u.space) if b.buffers == stages]
        saved = sum(
            exact(b.bytes(align), report.env) * (stages - 1) // stages for b in multi
        )
        after[u.space] = u.used - saved
    if all(after[u.space] == u.used for u in over):
        return None
    fits = all(after[u.space] <= u.capacity for u in over)
    sizes = ", ".join(f"{k} {v:,} B" for k, v in after.items())
    verdict = "fits" if fits else "not enough alone"
    return f"--set stages=1 (single buffering: {sizes}; {verdict})"


def _pair_text(
    plan: BufferPlan,
    target: Target,
    a: str,
    b: str,
    env: dict[str, Any],
    replan: Replan | None,
) -> str | None:
    formulas = {s: plan.footprint(s, target.align(s)) for s in SPACES}
    caps = {s: target.capacity(s) for s in SPACES}
    for va, vb in ranked_pairs(batch(formulas), caps, a, b, env, TRIES):
        trial = {**env, a: va, b: vb}
        if replan is None or _fits(trial, replan(trial), target):
            return f"both smaller: --set {a}={va} --set {b}={vb} fits every memory"
    return f"no multiples of {STEP} for {a} and {b} fit"
