"""fadsl: FlashAttention-family kernels for Ascend NPUs, written as Python tile programs.

Public surface (``import fadsl as fd``): the ``kernel`` decorator and parameter
annotations, tile ops, loop constructors, dtypes, ``attention`` for variants, and the
Python API ``interpret``, ``check``, ``compile``, ``sim``, ``verify`` (docs/api.md).
"""

from __future__ import annotations

from fadsl.errors import FadslError
from fadsl.frontend.attention import attention
from fadsl.frontend.attention_bwd import attention_backward
from fadsl.frontend.tile_ops import atomic_add
from fadsl.frontend.kernel import In, KernelDef, Out, Scalar, Scratch, kernel
from fadsl.frontend.loops import grid, pipelined, serial
from fadsl.frontend.mods import tensor
from fadsl.frontend.ops import (
    bf16,
    bool_,
    ds,
    f16,
    f32,
    float8_e4m3,
    float8_e5m2,
    i32,
    inf,
    pages,
)
from fadsl.frontend.tile_ops import (
    abs,
    arange,
    cast,
    cdiv,
    dot,
    exp,
    exp2,
    floor,
    floordiv,
    full,
    load,
    load_scalar,
    log,
    maximum,
    minimum,
    random_uniform,
    row_max,
    row_sum,
    sigmoid,
    sqrt,
    store,
    tanh,
    where,
    zeros,
)
from fadsl.version import __version__

API = ("interpret", "check", "compile", "sim", "verify")
"""The Python API (fadsl/api/calls.py, docs/api.md), loaded on first use."""


def __getattr__(name: str) -> object:
    """What pulls in numpy or the whole pipeline loads on first use: ``fd.numerics``
    and the API functions (``fd.interpret``, ...), so ``import fadsl`` stays light."""
    if name == "numerics":
        import fadsl.numerics as module

        return module
    if name in API:
        from fadsl.api import calls

        return getattr(calls, name)
    raise AttributeError(f"module 'fadsl' has no attribute {name!r}")


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
    "atomic_add",
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
    "inf",
    "load",
    "load_scalar",
    "log",
    "maximum",
    "minimum",
    "pages",
    "row_max",
    "row_sum",
    "sigmoid",
    "sqrt",
    "store",
    "tanh",
    "where",
    "zeros",
    "__version__",
]
