"""fadsl: FlashAttention-family kernels for Ascend NPUs, written as Python tile programs.

Public surface (``import fadsl as fd``): the ``kernel`` decorator and parameter
annotations, tile ops, loop constructors, dtypes, ``attention`` for variants, and the
Python API ``interpret``, ``check``, ``compile``, ``sim``, ``verify`` (docs/api.md).
"""

from __future__ import annotations

import importlib

from fadsl.errors import FadslError
from fadsl.frontend.dtypes import (
    bf16,
    bool_,
    f16,
    f32,
    float8_e4m3,
    float8_e5m2,
    i32,
    i8,
    inf,
)
from fadsl.frontend.kernel import In, KernelDef, Out, Scalar, Scratch, kernel
from fadsl.frontend.loops import grid, pipelined, serial
from fadsl.version import __version__

API = ("interpret", "check", "compile", "sim", "verify")
"""The Python API (fadsl/api/calls.py, docs/api.md), loaded on first use."""

_LAZY: dict[str, str] = {
    **{name: "fadsl.api.calls" for name in API},
    "attention": "fadsl.frontend.attention",
    "attention_backward": "fadsl.frontend.attention_bwd",
    "tensor": "fadsl.frontend.mods",
    **{
        n: "fadsl.frontend.block_mask"
        for n in ("BlockMask", "create_block_mask", "and_masks", "or_masks")
    },
    **{n: "fadsl.frontend.scalar_math" for n in ("log2", "sin", "cos", "shape")},
    "debug_print": "fadsl.frontend.debug_ops",
    "device_assert": "fadsl.frontend.debug_ops",
    "ds": "fadsl.frontend.ops",
    "pages": "fadsl.frontend.ops",
    **{
        name: "fadsl.frontend.tile_ops"
        for name in (
            "abs arange atomic_add cast cdiv dot exp exp2 floor floordiv full load "
            "load_scalar log maximum minimum random_uniform row_max row_sum sigmoid "
            "sqrt store tanh where zeros"
        ).split()
    },
}
"""Names whose modules import sympy (the IR's expressions), numpy or the whole
pipeline: loaded on first use, so that ``import fadsl`` and ``@fd.kernel`` stay light
(``tests/test_light_imports.py``). Kernel bodies run only when a kernel is built."""


def __getattr__(name: str) -> object:
    """The lazy names above, and ``fd.numerics`` (numpy), on first use."""
    if name == "numerics":
        return importlib.import_module("fadsl.numerics")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fadsl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"numerics"})


__all__ = [
    "numerics",
    "interpret",
    "check",
    "compile",
    "sim",
    "verify",
    "FadslError",
    "attention",
    "attention_backward",
    "BlockMask",
    "create_block_mask",
    "and_masks",
    "or_masks",
    "atomic_add",
    "debug_print",
    "device_assert",
    "tensor",
    "random_uniform",
    "In",
    "KernelDef",
    "Out",
    "Scalar",
    "Scratch",
    "kernel",
    "grid",
    "pipelined",
    "serial",
    "abs",
    "arange",
    "bf16",
    "bool_",
    "cast",
    "cdiv",
    "dot",
    "ds",
    "exp",
    "exp2",
    "f16",
    "f32",
    "float8_e4m3",
    "float8_e5m2",
    "floor",
    "floordiv",
    "full",
    "i32",
    "i8",
    "inf",
    "load",
    "load_scalar",
    "log",
    "log2",
    "maximum",
    "minimum",
    "pages",
    "row_max",
    "row_sum",
    "shape",
    "sigmoid",
    "sin",
    "cos",
    "sqrt",
    "store",
    "tanh",
    "where",
    "zeros",
    "__version__",
]
