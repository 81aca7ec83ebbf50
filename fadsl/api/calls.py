"""The Python API: ``fd.interpret``, ``fd.check``, ``fd.compile``, ``fd.sim``,
``fd.verify`` (docs/api.md).

Each call binds the kernel through the same driver as the command line
(``fadsl/driver``) and raises the same ``FadslError``s, located at the caller's line;
the traceback stops at this module (set ``FADSL_DEBUG=1`` for fadsl's own frames).
"""

from __future__ import annotations

import functools
import operator
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from fadsl.errors import FadslError, Loc, UsageError
from fadsl.progress import ProgressArg, reporter

if TYPE_CHECKING:
    import numpy as np

    from fadsl.api.results import CheckReport, Project
    from fadsl.driver.binding import Binding
    from fadsl.numerics import Verdict
    from fadsl.target import Target

F = TypeVar("F", bound=Callable[..., Any])


def boundary(fn: F) -> F:
    """FadslErrors leave the API without fadsl's frames (unless FADSL_DEBUG=1)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except FadslError as err:
            if os.environ.get("FADSL_DEBUG") == "1":
                raise
            if err.loc is None:  # an argument's error (a path, a target): the call
                err.loc = _caller()
            raise err.with_traceback(None) from None

    return call  # type: ignore[return-value]


@boundary
def interpret(
    kernel: Any,
    *,
    shape: Mapping[str, int] | None = None,
    consts: Mapping[str, Any] | None = None,
    dtype: Any = None,
    seed: int = 0,
    **inputs: Any,
) -> dict[str, np.ndarray]:
    """Run ``kernel`` in the numpy interpreter; its outputs by name.

    ``inputs`` are numpy arrays or tensors (``__array__`` / ``__dlpack__``); the ones
    left out are made from ``seed`` as ``fadsl run --seed`` makes them, so with no
    inputs the outputs equal ``fadsl run``'s bit for bit. ``block_mask=`` (what
    ``fd.create_block_mask`` returns) gives an attention kernel's block-mask inputs.
    """
    from fadsl.api.arrays import with_seeded
    from fadsl.backends.interp.interpreter import interpret as run
    from fadsl.driver.lower import lower

    loc = _caller()
    binding, given = _bind(kernel, shape, consts, dtype, None, inputs, loc)
    feed = with_seeded(binding, given, _seed(seed, loc))
    low = lower(binding)
    _warn(low.lint_text())
    return _outputs(binding, run(low.ir, binding.env(), feed).outputs)


@boundary
def check(
    kernel: Any,
    *,
    target: str = "ascend910b1",
    shape: Mapping[str, int] | None = None,
    consts: Mapping[str, Any] | None = None,
    dtype: Any = None,
) -> CheckReport:
    """The resource proof (``fadsl check``): ``.fits``, ``.memories``, ``.table``
    (the text the CLI prints), ``.explanation`` (why not, "" when it fits).
    Without ``shape``, the kernel's default shape. An overflow is reported, not
    raised; errors in the kernel or the arguments raise."""
    from fadsl.api.results import check_report
    from fadsl.driver.lower import lower

    loc = _caller()
    binding, _ = _bind(kernel, shape, consts, dtype, _target(target, loc), {}, loc)
    return check_report(lower(binding))


@boundary
def compile(
    kernel: Any,
    *,
    target: str = "ascend910b1",
    consts: Mapping[str, Any] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    shape: Mapping[str, int] | None = None,
    dtype: Any = None,
    debug: bool = False,
) -> Project:
    """Write the Ascend C project (``fadsl compile``) into ``out_dir`` (default
    ``generated/<kernel>``), after the resource proof; a kernel that does not fit
    raises its ResourceError and writes nothing. ``shape`` (default: the kernel's
    default shape) sizes the proof and the host program's default run. ``debug=True``
    keeps ``fd.debug_print`` / ``fd.device_assert`` (``fadsl compile --debug``)."""
    from dataclasses import replace

    from fadsl.api.results import Project, check_report
    from fadsl.backends.ascendc.project import build_project
    from fadsl.driver.lower import lower
    from fadsl.io.outputs import check_output_dir, write_folder

    loc = _caller()
    binding, _ = _bind(kernel, shape, consts, dtype, _target(target, loc), {}, loc)
    binding = replace(binding, debug=bool(debug))
    out = os.fspath(out_dir) if out_dir is not None else None
    out = out or os.path.join("generated", binding.kernel.name)
    check_output_dir(out, "out_dir=")
    project = build_project(lower(binding), binding.kernel.loc.file, out)
    write_folder(project.files, out)
    return Project(out, tuple(sorted(project.files)), check_report(project.lowered))


@boundary
def sim(
    kernel: Any,
    *,
    shape: Mapping[str, int] | None = None,
    consts: Mapping[str, Any] | None = None,
    dtype: Any = None,
    seed: int = 0,
    target: str = "ascend910b1",
    timeout: float = 600.0,
    progress: ProgressArg = None,
    sanitize: bool = False,
    profile: bool | str | os.PathLike[str] = False,
    debug: bool = False,
    **inputs: Any,
) -> dict[str, np.ndarray]:
    """Build the generated Ascend C with fadsl's CPU runtime (needs cmake and g++),
    run it and return its outputs (``fadsl sim``). ``profile``: a folder (``True``:
    ``<kernel>-profile`` in the working directory) that receives what ``fadsl sim
    --profile`` writes: the executed instructions timed pipe by pipe, MODELLED
    (trace.json, profile.txt, profile.json, profile.svg; docs/cost-model.md,
    "The timer"). Inputs as for ``interpret``;
    without inputs and ``shape``, sim's default shape (the kernel's, Sq and Skv
    capped at 512), as ``fadsl sim`` without --shape. Progress (lowering, building,
    running: seconds and tasks done) goes to the ``fadsl.sim`` logger; ``progress=True``
    also shows it on stderr as ``fadsl sim`` does, a text stream shows it there,
    ``False`` turns it off (fadsl/progress.py). ``sanitize=True`` runs it under the
    runtime's sanitizer (``fadsl sim --sanitize``): a report raises ``ExecutionError``
    naming the generated and the DSL lines. ``debug=True`` keeps ``fd.debug_print`` and
    ``fd.device_assert`` as ``AscendC::printf`` / ``ascendc_assert`` (``fadsl sim
    --debug``): their lines go to stdout, a failed assert raises ``ExecutionError``."""
    from dataclasses import replace

    from fadsl.api.arrays import with_seeded
    from fadsl.backends.sim import run as sim_run
    from fadsl.backends.sim.progress import SEQ_CAP, SEQ_SYMBOLS

    loc = _caller()
    report = reporter("sim", progress)  # a bad progress= fails before any work
    if shape is None and not inputs:
        defaults = getattr(kernel, "default_shape", None) or None
        shape = defaults and {
            k: min(v, SEQ_CAP) if k in SEQ_SYMBOLS else v for k, v in defaults.items()
        }
    chip = _target(target, loc)
    binding, given = _bind(kernel, shape, consts, dtype, chip, inputs, loc)
    binding = replace(binding, debug=bool(debug))
    feed = with_seeded(binding, given, _seed(seed, loc))
    file = binding.kernel.loc.file
    if not profile:
        run = sim_run.simulate(
            binding, feed, file, True, timeout, report, sanitize=bool(sanitize)
        )
        return _outputs(binding, run.outputs)
    from fadsl.backends.sim.recording import record_rows, recording
    from fadsl.perf.costs import cost_table
    from fadsl.perf.timer.profile import write_profile

    folder = f"{binding.kernel.name}-profile" if profile is True else os.fspath(profile)
    with recording() as path:
        run = sim_run.simulate(
            binding, feed, file, True, timeout, report, sanitize=bool(sanitize)
        )
        rows = record_rows(path)
    os.makedirs(folder, exist_ok=True)
    shape_text = ",".join(f"{k}={v}" for k, v in binding.shape.items())
    title = f"{binding.kernel.name} [{shape_text}] on {chip.name}"
    write_profile(folder, rows, cost_table(chip), title)
    return _outputs(binding, run.outputs)


# ----------------------------------------------------------------------------
# Arguments
# ----------------------------------------------------------------------------


def _caller() -> Loc | None:
    """The user's line that called the API (the innermost frame outside fadsl)."""
    from fadsl.frontend.source import user_frame_loc

    return user_frame_loc()


def _bind(
    kernel: Any,
    shape: Mapping[str, int] | None,
    consts: Mapping[str, Any] | None,
    dtype: Any,
    target: Any,
    inputs: Mapping[str, Any],
    loc: Loc | None,
) -> tuple[Binding, dict[str, np.ndarray]]:
    """The driver's Binding of ``kernel`` for these arguments, and the given arrays."""
    from fadsl.api.arrays import (
        array_dims,
        as_array,
        check_arrays,
        check_names,
        element_dtype,
        resolve_shape,
    )
    from fadsl.driver.binding import API, bind

    chosen = _kernel(kernel, loc)
    block_mask = inputs.get("block_mask")
    inputs = {n: v for n, v in inputs.items() if n != "block_mask"}
    arrays = {name: as_array(name, v, loc) for name, v in inputs.items()}
    sets = {name: (value, loc) for name, value in _consts(consts, loc).items()}
    elem = element_dtype(chosen, arrays, _dtype(dtype, loc), loc)

    def rule(k: Any, defaults: Mapping[str, int]) -> dict[str, int]:
        check_names(k, arrays, loc)
        values = resolve_shape(k, defaults, shape, arrays, loc)
        if (check_given := getattr(chosen, "check_given_shape", None)) is not None:
            given = set(defaults) if shape is None and not arrays else set(shape or {})
            check_given(given | array_dims(k, arrays))
        return values

    binding = bind(chosen, rule, sets, elem, target, API)
    if block_mask is not None:
        from fadsl.frontend.block_mask_inputs import block_mask_inputs

        arrays.update(
            block_mask_inputs(
                block_mask, binding.kdef, binding.shape, binding.consts, loc
            )
        )
    check_arrays(binding, arrays, loc)
    return binding, arrays


def _kernel(kernel: Any, loc: Loc | None) -> Any:
    from fadsl.frontend.kernel import KernelDef
    from fadsl.ir.nodes import Kernel

    if isinstance(kernel, (KernelDef, Kernel)):
        return kernel
    raise UsageError(
        f"expected a kernel, got {type(kernel).__name__}",
        loc,
        hint="pass what @fd.kernel or fd.attention(...) returns",
    )


def _consts(consts: Mapping[str, Any] | None, loc: Loc | None) -> dict[str, Any]:
    if consts is None:
        return {}
    if not isinstance(consts, Mapping):
        raise UsageError(
            f"consts= takes a dict of tile constants and scalars, not a "
            f"{type(consts).__name__}",
            loc,
            hint="e.g. consts=dict(block_q=64, causal=True)",
        )
    return dict(consts)


def _dtype(dtype: Any, loc: Loc | None) -> Any:
    """``dtype`` as an element DType: fd.f16 / fd.bf16 / fd.f32 or their names."""
    from fadsl.driver.binding import element_dtype
    from fadsl.ir.types import CLI_DTYPES

    if dtype is None:
        return None
    parsed = element_dtype(dtype)
    if parsed is None:
        raise UsageError(
            f"dtype={dtype!r}: expected one of {', '.join(CLI_DTYPES)}",
            loc,
            hint="or fd.f16, fd.bf16, fd.f32; leave it out for the kernel's own",
        )
    return parsed


def _target(target: Any, loc: Loc | None) -> Target:
    """A built-in chip by name, a chip description (a .json path), or a Target."""
    from fadsl.target import Target, get, load_file

    if isinstance(target, Target):
        return target
    if isinstance(target, os.PathLike) or str(target).endswith(".json"):
        return load_file(os.fspath(target))
    if not isinstance(target, str) or not target.strip():
        raise UsageError(
            f"target={target!r}: expected a chip name such as 'ascend910b1'", loc
        )
    try:
        return get(target)
    except UsageError as err:
        hint = (err.hint or "").replace("pass --target-file", "give its path")
        raise UsageError(
            f"target={target!r}: {err.message}", loc, hint=hint, code=err.code
        ) from None


def _seed(seed: Any, loc: Loc | None) -> int:
    try:
        value = operator.index(seed)
    except TypeError:
        value = -1
    if isinstance(seed, bool) or value < 0:
        raise UsageError(
            f"seed={seed!r}: expected an integer >= 0", loc, hint="e.g. seed=0"
        )
    return value


def _warn(lines: list[str]) -> None:
    import warnings

    for line in lines:
        warnings.warn(line, FadslWarning, stacklevel=4)


class FadslWarning(UserWarning):
    """A lint warning of a kernel run through the API (rendered like an error)."""


def _outputs(binding: Binding, produced: Mapping[str, Any]) -> dict[str, np.ndarray]:
    from fadsl.ir.nodes import ParamKind

    return {
        p.name: produced[p.name]
        for p in binding.kernel.params
        if p.kind is ParamKind.OUT and p.name in produced
    }


@boundary
def verify(
    actual: Any,
    expected: Any,
    dtype: Any = None,
    *,
    same_precision: Any = None,
    name: str = "output",
) -> Verdict:
    """The tolerance rule (README, ``fadsl.numerics``) applied to ``actual`` against
    the float64 reference ``expected``: ``max|actual - expected| <= 2 *
    max|same_precision - expected| + atol(dtype)``, without the first term when no
    same-precision result is given; NaN fails. ``dtype``: the output's (default: that
    of ``actual``). Returns a ``Verdict``: ``.passed``, ``.max_abs``, ``.bound``,
    ``.line()``."""
    from fadsl.api.arrays import FLOAT_DTYPES, as_array
    from fadsl.numerics import compare

    loc = _caller()
    got = as_array("actual", actual, loc)
    ref = as_array("expected", expected, loc)
    same = (
        None
        if same_precision is None
        else as_array("same_precision", same_precision, loc)
    )
    for label, arr in (("expected", ref), ("same_precision", same)):
        if arr is not None and arr.shape != got.shape:
            raise UsageError(
                f"fd.verify: `actual` has the shape {list(got.shape)} but `{label}` "
                f"has {list(arr.shape)}",
                loc,
                hint="compare an output with the reference of the same output",
            )
    elem = _dtype(dtype, loc) if dtype is not None else FLOAT_DTYPES.get(got.dtype.name)
    if elem is None:
        raise UsageError(
            f"fd.verify: `actual` is {got.dtype.name}; give the output's dtype",
            loc,
            hint="dtype='fp16', 'bf16' or 'fp32' (the tolerance depends on it)",
        )
    return compare(name, got, ref, same, elem)
