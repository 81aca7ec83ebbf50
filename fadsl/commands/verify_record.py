"""The same-precision error ``fadsl verify`` bounds with: recomputed or checked.

The tolerance rule allows ``2 * same-precision error + atol``, so a run folder whose
meta.json records a huge same-precision error would pass anything. With
``--kernel-file`` the error is recomputed from the inputs the expected run folder
holds (the kernel's own same-precision reference against its float64 reference);
without it the recorded number is used only when it is plausible: a finite number
>= 0, smaller than the largest |value| of the expected output (a reference off by as
much as the output itself would accept any output of that size).
"""

from __future__ import annotations

import argparse
import math
import os
from typing import TYPE_CHECKING, Any

from fadsl.errors import UsageError

if TYPE_CHECKING:
    from fadsl.driver.binding import Binding
    from fadsl.driver.source import KernelSource


def recorded(
    meta: dict[str, Any] | None, name: str, expected: Any, folder: str
) -> float | None:
    """The expected run's recorded same-precision error of ``name``, refused when it
    is not plausible; None when there is no record."""
    import numpy as np

    entry = ((meta or {}).get("check") or {}).get(name)
    if not isinstance(entry, dict) or entry.get("same_precision_error") is None:
        return None
    value = entry["same_precision_error"]
    path = os.path.join(folder, "meta.json")
    finite = np.abs(expected[np.isfinite(expected)].astype(np.float64))
    largest = float(finite.max()) if finite.size else 0.0
    problem = None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        problem = f"is {value!r}, not a number"
    elif not math.isfinite(value) or value < 0:
        problem = "is not a finite number >= 0"
    elif value > 0 and value >= largest:
        problem = (
            f"is at least the largest |value| of the expected output ({largest:.4g}); "
            f"2 x {value:.4g} would accept any output of that size"
        )
    if problem is not None:
        raise UsageError(
            f"{path}: the same-precision error recorded for `{name}` ({value!r}) "
            f"{problem}",
            hint="pass --kernel-file with the kernel's .py file to recompute it "
            "from the inputs the run folder holds, or run the kernel again",
            code="verify_implausible_record",
        )
    return float(value)


def recompute(
    args: argparse.Namespace, folder: str, meta: dict[str, Any]
) -> dict[str, float]:
    """Same-precision error of every output, from the kernel's references run on the
    inputs recorded in ``folder`` (its meta.json gives the shape, constants and
    scalars)."""
    from fadsl.io import runio

    binding = _binding(args, meta, folder)
    inputs = runio.read_inputs(folder, binding)
    outputs = {
        name: runio.read_bin(
            os.path.join(folder, entry["file"]), _np_dtype(entry), f"expected `{name}`"
        ).reshape(entry.get("shape") or -1)
        for name, entry in meta["params"].items()
        if entry["kind"] == "out"
    }
    check = runio.check_outputs(binding, inputs, outputs)
    if check is None:
        raise UsageError(
            f"--kernel-file {args.kernel_file}: kernel `{binding.kernel.name}` has no "
            "float64 reference, so its same-precision error cannot be recomputed",
            hint="leave --kernel-file out to use the error the run folder records",
        )
    return {
        v.name: v.same_precision_error or 0.0
        for v in check.verdicts
        if v.same_precision_error is not None
    }


def _np_dtype(entry: dict[str, Any]) -> Any:
    from fadsl.numerics import dtype_of_name, np_dtype

    return np_dtype(dtype_of_name(entry["dtype"]))


def _binding(args: argparse.Namespace, meta: dict[str, Any], folder: str) -> Binding:
    """The kernel bound as the run that wrote ``folder`` was: its dtype is the one
    whose parameter dtypes match the record."""
    from fadsl.commands import common
    from fadsl.driver.source import load_source, select
    from fadsl.ir.types import CLI_DTYPES

    src = load_source(args.kernel_file)
    chosen = select(src, args.kernel or _recorded_name(meta, src))
    sets = [f"{k}={_text(v)}" for k, v in (meta.get("consts") or {}).items()]
    sets += [f"{k}={v!r}" for k, v in (meta.get("scalars") or {}).items()]
    shape = ",".join(f"{k}={v}" for k, v in (meta.get("shape") or {}).items())
    for dtype in (None,) + CLI_DTYPES:
        ns = argparse.Namespace(sets=sets, dtype=dtype, shape=shape or None)
        binding = common.bind(chosen, ns, need_shape=bool(shape))
        if _dtypes_match(binding, meta):
            return binding
    raise UsageError(
        f"--kernel-file {args.kernel_file}: kernel `{binding.kernel.name}` in no dtype "
        f"has the parameter dtypes {os.path.join(folder, 'meta.json')} records",
        hint="give the kernel file of the run that wrote the expected folder",
    )


def _recorded_name(meta: dict[str, Any], src: KernelSource) -> str | None:
    name = meta.get("kernel")
    return name if isinstance(name, str) and name in src.names else None


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _dtypes_match(binding: Binding, meta: dict[str, Any]) -> bool:
    from fadsl.numerics import np_dtype
    from fadsl.io.runio import tensor_params

    recorded = meta["params"]
    return all(
        recorded[p.name]["dtype"] == np_dtype(p.type.dtype).name
        for p in tensor_params(binding.kernel, *_kinds())
        if p.name in recorded
    )


def _kinds() -> tuple[Any, ...]:
    from fadsl.ir.nodes import ParamKind

    return (ParamKind.IN, ParamKind.OUT)
