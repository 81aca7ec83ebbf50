"""``lower(binding) -> Lowered``: the whole pipeline, run once.

The steps, in order (each is what the next one reads):

1. the pass pipeline (``fadsl.passes.PIPELINE``: strip_debug, infer_types, pipeline,
   lower_vector): IR to IR, target-independent; the interpreter runs its output;
2. the lint (``passes/lint.py``) of the kernel as written: warnings, and an error
   for an output nothing writes;
3. with a target, the buffer plan (``plan_buffers.lower``): needs the bound shape
   and tile sizes, decides every buffer the generated kernel declares;
4. with a target, the resource proof (``check_resources.check`` then ``explain``):
   the plan summed per memory and evaluated; an overflow is kept as
   ``Lowered.error``, raised by whoever needs the kernel to fit (check, compile).

Steps 3 and 4 are driver steps, not passes: they need values the IR does not hold
(the shape, the chip) and produce a plan and a report, not IR.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from fadsl.driver.binding import Binding
from fadsl.ir.nodes import Kernel

if TYPE_CHECKING:
    from fadsl.errors import FadslError, ResourceError
    from fadsl.plan.memory.buffer_plan import BufferPlan
    from fadsl.plan.resources.check_resources import ResourceReport
    from fadsl.passes.lint import LintWarning
    from fadsl.plan.memory.plan_buffers import Lowering
    from fadsl.target import Target


@dataclass(frozen=True)
class Lowered:
    """A bound kernel after the pipeline: its IR, plan, proof and warnings."""

    binding: Binding
    ir: Kernel
    """The IR after the pass pipeline: what the interpreter runs."""
    warnings: tuple[LintWarning, ...]
    lowering: Lowering | None = None
    """The buffer plan and the backend's decisions (None without a target)."""
    report: ResourceReport | None = None
    """Bytes per memory and buffer, cores, fields (None without a target)."""
    error: ResourceError | None = None
    """Why the kernel does not fit (None: it fits, or nothing was checked)."""
    as_written: Kernel | None = None
    """The kernel before its L1 loads were single-buffered (``plan/memory/l1_fit.py``), when
    they were; ``binding.kernel`` and ``ir`` are then the single-buffered ones."""

    @property
    def target(self) -> Target:
        if self.binding.target is None:
            raise ValueError("this binding has no target")  # a caller's bug
        return self.binding.target

    @property
    def plan(self) -> BufferPlan:
        if self.lowering is None:
            raise ValueError("lowered without a target: there is no buffer plan")
        return self.lowering.plan

    @property
    def fits(self) -> bool:
        return self.report is not None and self.error is None

    def require_fit(self) -> None:
        """Raise the ResourceError that explains why the kernel does not fit."""
        if self.error is not None:
            raise self.error

    def lint_text(self) -> list[str]:
        """The rendered warnings, with 'warning' in place of the error title."""
        from fadsl.passes.lint import as_text

        return [as_text(w) for w in self.warnings]

    def plan_at(self, env: Mapping[str, Any]) -> BufferPlan:
        """The buffer plan of the same kernel at other sizes (``fadsl tune``, hints),
        with its L1 loads single-buffered at the sizes where the driver would."""
        from fadsl.plan.memory.l1_fit import l1_fits_plan, passed, single_buffered
        from fadsl.plan.memory.plan_buffers import plan

        target, at = self.target, dict(env)
        written = self.as_written or self.binding.kernel
        double = self.ir if self.as_written is None else passed(written, target)
        bp = plan(double, target, at)
        if l1_fits_plan(bp, target, at):
            return bp
        single, notes = single_buffered(written)
        if not notes:
            return bp
        alt = plan(passed(single, target), target, at)
        if not l1_fits_plan(alt, target, at):
            return bp
        return replace(alt, notes=alt.notes + notes)

    def check_at(
        self, env: Mapping[str, Any], block_dim: int | None = None
    ) -> ResourceReport:
        """The resource report of the plan at ``env`` (never raises on overflow)."""
        from fadsl.plan.resources.check_resources import check

        return check(self.plan_at(env), self.target, env, block_dim)


def whole_pages(kernel: Kernel) -> None:
    """A paged load's rows are whole pages at the kernel's own tile constants
    (``LoadPages.check_whole_pages``); tune and the overflow hints plan other sizes
    without this check."""
    from fadsl.ir import nodes as ir
    from fadsl.ir.expr import as_expr, evaluate

    env = {k: v for k, v in kernel.consts if isinstance(v, int)}
    params = {p.name: p for p in kernel.params}
    for op in _walk(kernel.body):
        if isinstance(op, ir.LoadPages):
            rows = op.index[1].size  # type: ignore[union-attr]
            page = params[op.src].type.shape[1]  # type: ignore[union-attr]
            try:
                size = int(evaluate(as_expr(rows), env))
            except (KeyError, TypeError, ValueError):
                continue
            op.check_whole_pages(size, int(page))


def _walk(body: tuple[Any, ...]) -> Any:
    for op in body:
        yield op
        yield from _walk(getattr(op, "body", ()))


def _passes(kernel: Kernel, target: Target) -> Kernel:
    from fadsl.passes import run_pipeline

    return run_pipeline(kernel, target)


def run_passes(binding: Binding, until: str | None = None) -> Kernel:
    """The pass pipeline over the bound kernel, stopping after pass ``until``."""
    from fadsl.passes import run_pipeline

    return run_pipeline(
        binding.kernel, binding.target, until=until, keep_debug=binding.debug
    )


def lower(
    binding: Binding,
    *,
    plan: bool = True,
    block_dim: int | None = None,
    hints: bool = True,
) -> Lowered:
    """Run the pipeline once; with a target (and ``plan``), plan and prove fit.

    ``block_dim`` asks for a launch width other than min(tasks, physical cores).
    Errors in the kernel raise; an overflow does not (see ``Lowered.error``), and
    has no hint without ``hints`` (which only saves the search for sizes that fit).
    """
    from fadsl.errors import ErrorGroup
    from fadsl.passes.lint import unwritten_outputs, warnings

    kernel = run_passes(binding)
    ErrorGroup(unwritten_outputs(binding.kernel)).raise_if_any()
    whole_pages(kernel)
    found = tuple(warnings(binding.kernel))
    if binding.target is None or not plan:
        return Lowered(binding, kernel, found)
    from fadsl.driver.tensor_grads import refuse_scatter

    refuse_scatter(kernel)  # captured-tensor gradients: interpreter only (issue 29)
    # an L1 overflow is usually answered by single-buffered loads: the hints (a
    # search over other block sizes, each planned) only for the plan that is kept
    low = _prove(Lowered(binding, kernel, found), block_dim, hints=False)
    if low.error is None:
        return low
    if _l1_over(low):
        alt = _single_buffered(low, block_dim, hints)
        if alt is not None:
            return alt
    return _explained(low) if hints else low


COMPILE_TARGET = "ascend910b1"
"""The chip ``fadsl compile`` plans for when no --target is given."""


def compile_refusal(binding: Binding) -> FadslError | None:
    """Why ``fadsl compile`` refuses ``binding``'s tile constants on every built-in
    chip: the error its plan or proof gives on compile's default chip, or None when
    some chip takes them. The interpreter runs constants the cube cannot take (a
    block of 100 rows); ``fadsl run`` warns with this, from the same checks."""
    from fadsl.target import builtin_names, get

    first = _refusal(replace(binding, target=get(COMPILE_TARGET)), True)
    if first is None:
        return None
    for name in builtin_names():
        if (
            name != COMPILE_TARGET
            and _refusal(replace(binding, target=get(name))) is None
        ):
            return None
    return first


def _refusal(binding: Binding, hints: bool = False) -> FadslError | None:
    from fadsl.errors import FadslError, InternalError

    try:
        return lower(binding, hints=hints).error
    except InternalError:
        raise
    except FadslError as err:
        return err


def _l1_over(low: Lowered) -> bool:
    assert low.report is not None
    return any(s.space == "L1" for s in low.report.overflowing())


def _single_buffered(
    low: Lowered, block_dim: int | None, hints: bool = True
) -> Lowered | None:
    """``low`` planned again with its L1 loads single-buffered (``plan/memory/l1_fit.py``)
    if that makes L1 fit; None if it does not."""
    from fadsl.plan.memory.l1_fit import single_buffered

    kernel, notes = single_buffered(low.binding.kernel)
    if not notes:
        return None
    binding = replace(low.binding, kernel=kernel)
    first = Lowered(binding, run_passes(binding), low.warnings)
    alt = _prove(first, block_dim, notes, low.binding.kernel, hints)
    return None if _l1_over(alt) else alt


def _prove(
    low: Lowered,
    block_dim: int | None,
    notes: tuple[str, ...] = (),
    as_written: Kernel | None = None,
    hints: bool = True,
) -> Lowered:
    from fadsl.plan.resources.check_resources import check
    from fadsl.plan.memory.plan_buffers import lower as plan_buffers

    target, env = low.target, low.binding.env()
    lowering = plan_buffers(low.ir, target, env)
    if notes:
        plan = replace(lowering.plan, notes=lowering.plan.notes + notes)
        lowering = replace(lowering, plan=plan)
    report = check(lowering.plan, target, env, block_dim)
    done = Lowered(
        low.binding, low.ir, low.warnings, lowering, report, None, as_written
    )
    return _explained(done, hints)


def _explained(low: Lowered, hints: bool = True) -> Lowered:
    """``low`` with the error that explains its overflow (None when it fits), with
    the block sizes that would fit when ``hints``."""
    from fadsl.plan.resources.check_resources import explain, tunable_names

    assert low.report is not None and low.lowering is not None
    error = explain(
        low.report,
        low.lowering.plan,
        low.target,
        tunable_names(low.ir),
        low.binding.kernel.loc,
        low.plan_at,
        hints,
    )
    return replace(low, error=error)
