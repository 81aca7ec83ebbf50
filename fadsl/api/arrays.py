"""Arrays handed to the Python API: conversion, shape and dtype inference, checks.

Inputs may be numpy arrays or anything numpy reads through ``__dlpack__`` or
``__array__`` (torch tensors on the CPU included). The shape symbols a call does not
give are read from the arrays' dimensions that are a bare symbol; every array is then
checked against the bound kernel (rank, sizes, dtype) before any work. Inputs not
given are made exactly as ``fadsl run`` makes them from the same seed.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from fadsl.errors import Loc, UsageError
from fadsl.ir.expr_print import to_text
from fadsl.ir.nodes import Kernel, Param, ParamKind
from fadsl.ir.types import DType, TensorType

if TYPE_CHECKING:
    from fadsl.driver.binding import Binding

FLOAT_DTYPES = {"float16": DType.F16, "bfloat16": DType.BF16, "float32": DType.F32}
"""Element dtypes a kernel can be built with, by numpy name."""


def as_array(name: str, value: Any, loc: Loc | None) -> np.ndarray:
    """``value`` as a C-contiguous numpy array (no copy when it already is one)."""
    if not isinstance(value, np.ndarray):
        value = _read(name, value, loc)
    if value.dtype.hasobject:
        raise UsageError(
            f"input `{name}` holds Python objects ({value.dtype}), not numbers",
            loc,
            hint="give a numpy array of the kernel's dtype",
        )
    return value if value.flags.c_contiguous else value.copy(order="C")


def _read(name: str, value: Any, loc: Loc | None) -> np.ndarray:
    if not hasattr(value, "__dlpack__") and not hasattr(value, "__array__"):
        raise UsageError(
            f"input `{name}` is a {type(value).__name__}, not an array",
            loc,
            hint="give a numpy array, or a tensor numpy can read (__array__ or "
            "__dlpack__), e.g. np.asarray(...) of the kernel's dtype",
            code="api_not_an_array",
        )
    detach = getattr(value, "detach", None)  # a tensor that requires grad
    if callable(detach):
        value = detach()
    problem: Exception | None = None
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (TypeError, ValueError, RuntimeError, BufferError) as exc:
            problem = exc
    if hasattr(value, "__array__"):
        try:
            return np.asarray(value)
        except (TypeError, ValueError, RuntimeError) as exc:
            problem = exc
    raise UsageError(
        f"input `{name}`: numpy cannot read this {type(value).__name__}: {problem}",
        loc,
        hint="give a numpy array or a CPU tensor (tensor.cpu()); numpy has no "
        "bfloat16 of its own: pass bf16 data as an ml_dtypes.bfloat16 array",
    )


def element_dtype(
    chosen: Any,
    arrays: Mapping[str, np.ndarray],
    dtype: DType | None,
    loc: Loc | None = None,
) -> DType | None:
    """``dtype`` if given, else that of the arrays of tensors without a fixed dtype,
    which must agree: one that differs from the others is named, measured against the
    kernel's own element dtype (not whichever array came first)."""
    if dtype is not None:
        return dtype
    free = {s.name for s in getattr(chosen, "specs", ()) if s.dtype is None}
    found = {
        name: FLOAT_DTYPES[arr.dtype.name]
        for name, arr in arrays.items()
        if name in free and arr.dtype.name in FLOAT_DTYPES
    }
    if len(set(found.values())) > 1:
        _mixed_dtypes(chosen, arrays, found, loc)
    return next(iter(found.values()), None)


def _mixed_dtypes(
    chosen: Any,
    arrays: Mapping[str, np.ndarray],
    found: Mapping[str, DType],
    loc: Loc | None,
) -> None:
    """Raise for arrays of the kernel's element dtype given in several dtypes."""
    from fadsl.numerics import np_dtype

    own = getattr(chosen, "dtype", None)
    counts = {d: sum(1 for x in found.values() if x is d) for d in found.values()}
    want = own if own in counts else max(counts, key=lambda d: counts[d])
    odd = [n for n, d in found.items() if d is not want]
    same = [n for n, d in found.items() if d is want]
    name = odd[0]
    want_np = np_dtype(want).name
    raise UsageError(
        f"input `{name}` is {arrays[name].dtype.name}, but kernel `{chosen.name}` "
        f"takes {', '.join(f'`{n}`' for n in found)} in one dtype, here {want_np} "
        f"(as {', '.join(f'`{n}`' for n in same)})",
        loc,
        hint=f"convert it ({name}.astype(np.{want_np})), or give every one of them "
        "in the same dtype (the kernel is then built in it)",
        code="api_input_dtype",
    )


def check_names(kernel: Kernel, arrays: Mapping[str, Any], loc: Loc | None) -> None:
    """Every keyword names an input tensor of ``kernel``."""
    params = {p.name: p for p in kernel.params}
    inputs = [p.name for p in kernel.params if p.kind is ParamKind.IN]
    for name in arrays:
        p = params.get(name)
        if p is not None and p.kind is ParamKind.IN:
            continue
        what = (
            f"is {_kind_text(p)} of kernel `{kernel.name}`, not an input"
            if p is not None
            else f"is not a parameter of kernel `{kernel.name}`"
        )
        raise UsageError(
            f"`{name}` {what}",
            loc,
            hint=f"its inputs: {', '.join(inputs) or 'none'}; constants and scalars "
            "go in consts={...}",
            code="api_unknown_input",
        )


def _kind_text(p: Param) -> str:
    return {
        ParamKind.OUT: "an output",
        ParamKind.SCRATCH: "a scratch tensor",
        ParamKind.SCALAR: "a runtime scalar",
    }.get(p.kind, "a parameter")


# ----------------------------------------------------------------------------
# The shape
# ----------------------------------------------------------------------------


def resolve_shape(
    kernel: Kernel,
    defaults: Mapping[str, int],
    shape: Mapping[str, Any] | None,
    arrays: Mapping[str, np.ndarray],
    loc: Loc | None,
) -> dict[str, int]:
    """The shape symbols: ``shape``, then the arrays' dimensions, then (with neither
    given) the kernel's default shape, as ``fadsl run`` without --shape."""
    syms = kernel.shape_syms
    values = _given_shape(kernel, shape, loc)
    if shape is None and not arrays:
        values = {k: v for k, v in defaults.items() if k in syms}
    for p in kernel.params:
        if p.name in arrays:
            values.update(_read_dims(p, arrays[p.name], syms, values, loc))
    values.update(_linear_dims(kernel, arrays, values))
    if "Nkv" in syms and "Nkv" not in values and "N" in values:
        values["Nkv"] = values["N"]
    if "Dv" in syms and "Dv" not in values and "D" in values:
        values["Dv"] = values[
            "D"
        ]  # the value head dim defaults to D (docs/variants.md)
    missing = [s for s in syms if s not in values]
    if missing:
        raise UsageError(
            f"kernel `{kernel.name}`: no value for the shape symbol"
            f"{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
            loc,
            hint=f"give {'them' if len(missing) > 1 else 'it'} in shape={{...}}, or "
            "pass an input whose dimensions hold "
            + ("them" if len(missing) > 1 else "it"),
            code="api_missing_symbol",
        )
    return {s: values[s] for s in syms}


def array_dims(kernel: Kernel, arrays: Mapping[str, np.ndarray]) -> set[str]:
    """The shape symbols some given array's dimensions hold (given, not defaulted)."""
    return {
        to_text(d)
        for p in kernel.params
        if p.name in arrays and isinstance(p.type, TensorType)
        for d in p.type.shape
    }


def _given_shape(
    kernel: Kernel, shape: Mapping[str, Any] | None, loc: Loc | None
) -> dict[str, int]:
    if shape is None:
        return {}
    if not isinstance(shape, Mapping):
        raise UsageError(
            f"shape= takes a dict of shape symbols, not a {type(shape).__name__}",
            loc,
            hint="e.g. shape=dict("
            + ", ".join(f"{s}=..." for s in kernel.shape_syms)
            + ")",
        )
    out = {}
    for name, value in shape.items():
        if name not in kernel.shape_syms:
            raise UsageError(
                f"shape={{{name!r}: ...}}: kernel `{kernel.name}` has no shape symbol "
                f"{name!r}",
                loc,
                hint=f"its shape symbols are {', '.join(kernel.shape_syms)}",
            )
        out[name] = _size(name, value, loc)
    return out


def _size(name: str, value: Any, loc: Loc | None) -> int:
    from fadsl.driver.binding import size_problem

    try:
        size = operator.index(value)
    except TypeError:
        size = None
    if size is None or isinstance(value, bool):
        raise UsageError(
            f"shape={{{name!r}: {value!r}}}: sizes are positive integers", loc
        )
    problem = size_problem(size)
    if problem is not None:
        raise UsageError(
            f"shape={{{name!r}: {value!r}}}: {problem}", loc, code="shape_not_positive"
        )
    return size


def _read_dims(
    p: Param,
    arr: np.ndarray,
    syms: tuple[str, ...],
    known: Mapping[str, int],
    loc: Loc | None,
) -> dict[str, int]:
    """Shape symbols that are whole dimensions of ``p``, read from ``arr``."""
    dims = p.type.shape if isinstance(p.type, TensorType) else ()
    if arr.ndim != len(dims):
        raise UsageError(
            f"input `{p.name}` has {arr.ndim} dimensions {list(arr.shape)}, but "
            f"`{p.name}` is [{', '.join(to_text(d) for d in dims)}]",
            loc,
            hint=f"give `{p.name}` with {len(dims)} dimensions",
        )
    from fadsl.driver.binding import size_problem

    out = {}
    for axis, (d, size) in enumerate(zip(dims, arr.shape)):
        name = to_text(d)
        if name in syms and name not in known and name not in out:
            problem = size_problem(int(size))
            if problem is not None:
                raise UsageError(
                    f"input `{p.name}` {list(arr.shape)} gives {name}={size} (its "
                    f"dimension {axis}): {problem}",
                    loc,
                    hint=f"give `{p.name}` with at least one row along {name}",
                    code="shape_not_positive",
                )
            out[name] = int(size)
    return out


def _linear_dims(
    kernel: Kernel, arrays: Mapping[str, np.ndarray], known: Mapping[str, int]
) -> dict[str, int]:
    """Symbols read from dims ``a * symbol + b`` once the known sizes and the integer
    constants are put in (``B + 1`` of cu_seqlens, ``N * D`` with ``D`` known), as
    the op package's host code reads them (``fadsl/ir/dims.py``)."""
    from fadsl.ir.dims import linear_source
    from fadsl.ir.expr import isym

    given = [p for p in kernel.params if p.name in arrays]
    shapes = [p.type.shape if isinstance(p.type, TensorType) else () for p in given]
    fixed = {isym(k): v for k, v in kernel.consts if type(v) is int}
    out: dict[str, int] = {}
    for _ in kernel.shape_syms:  # each round may make another symbol linear
        fixed.update({isym(k): v for k, v in {**known, **out}.items()})
        for s in kernel.shape_syms:
            if s in known or s in out:
                continue
            found = linear_source(isym(s), shapes, fixed)
            if found is None:
                continue
            i, j, a, b = found
            size = arrays[given[i].name].shape[j]
            if (size - b) % a == 0 and size > b:
                out[s] = (size - b) // a
    return out


# ----------------------------------------------------------------------------
# The arrays against the bound kernel
# ----------------------------------------------------------------------------


def check_arrays(
    binding: Binding, arrays: Mapping[str, np.ndarray], loc: Loc | None
) -> None:
    """Each given array has its parameter's exact shape and dtype."""
    from fadsl.numerics import np_dtype
    from fadsl.io.runio import param_shape

    env = binding.env()
    bound = ", ".join(f"{k}={v}" for k, v in binding.shape.items())
    for p in binding.kernel.params:
        if p.name not in arrays or not isinstance(p.type, TensorType):
            continue
        arr, want = arrays[p.name], param_shape(p, env)
        if tuple(arr.shape) != want:
            dims = ", ".join(to_text(d) for d in p.type.shape)
            raise UsageError(
                f"input `{p.name}` has the shape {list(arr.shape)}, but kernel "
                f"`{binding.kernel.name}` takes `{p.name}` as [{dims}] = {list(want)}",
                loc,
                notes=(f"the shape symbols: {bound}",),
                hint="give arrays of matching sizes, or the shape symbols in shape=",
                code="api_input_shape",
            )
        dtype = np_dtype(p.type.dtype)
        if arr.dtype != dtype:
            fixed = _fixed_dtype(binding, p)
            raise UsageError(
                f"input `{p.name}` is {arr.dtype.name}, but kernel "
                f"`{binding.kernel.name}` takes `{p.name}` as {dtype.name}",
                loc,
                hint=f"convert it ({p.name}.astype(np.{dtype.name}))"
                + (
                    f"; `{p.name}` is always {dtype.name}"
                    if fixed
                    else ", or build the kernel in the data's dtype with "
                    "dtype='fp16' / 'bf16' / 'fp32'"
                ),
                code="api_input_dtype",
            )


def _fixed_dtype(binding: Binding, p: Param) -> bool:
    """Whether ``p``'s dtype is its own (``fd.In(..., dtype=fd.i32)``, a textual-IR
    kernel's), not the element dtype that ``dtype=`` changes."""
    if binding.kdef is None:
        return True
    spec = next((s for s in binding.kdef.specs if s.name == p.name), None)
    return spec is None or spec.dtype is not None


def with_seeded(
    binding: Binding, given: dict[str, np.ndarray], seed: int
) -> dict[str, np.ndarray]:
    """The given inputs plus the missing ones, seeded as ``fadsl run --seed`` does;
    inputs derived from others (an attention block mask) are derived from these."""
    from fadsl.io.input_checks import check_index_inputs
    from fadsl.io.runio import check_sizes, make_inputs, tensor_params

    names = [p.name for p in tensor_params(binding.kernel, ParamKind.IN)]
    if not given:
        return make_inputs(binding, seed)
    if all(n in given for n in names):
        check_sizes(binding)
        merged = dict(given)
    else:
        merged = {**make_inputs(binding, seed), **given}
        derived = set(getattr(binding.kdef, "derived", ()) or ()) - set(given)
        if derived:
            made = binding.kdef.derived_inputs(binding.shape, binding.consts, merged)  # type: ignore[union-attr]
            merged.update({k: v for k, v in made.items() if k in derived})
    check_index_inputs(binding, merged)
    return {n: merged[n] for n in names}
