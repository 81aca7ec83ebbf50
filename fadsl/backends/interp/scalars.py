"""Impl of ScalarDef: a mod's scalar math (``fd.exp2(-8.0 * (h + 1) / N)``).

The value is computed in float64 and rounded to f32 (i32 for comparisons and ``int``),
as the scalar unit keeps it: a number when it is the same at every grid point, else an
array per point, like a ``load_scalar``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.impls import impl
from fadsl.ir.nodes import ScalarDef
from fadsl.ir.types import DType


def _pow(a: Any, b: Any) -> Any:
    with np.errstate(all="ignore"):
        return np.power(np.asarray(a, np.float64), np.asarray(b, np.float64))


FNS: dict[str, Callable[..., Any]] = {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "sqrt": np.sqrt,
    "abs": np.abs,
    "floor": np.floor,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sigmoid": lambda a: np.exp(-np.logaddexp(0.0, -a)),
    "float": lambda a: a,
    "int": np.trunc,
    "pow": _pow,
    "min": np.minimum,
    "max": np.maximum,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
    "select": lambda c, a, b: np.where(np.asarray(c) != 0, a, b),
}


@impl(ScalarDef)
def _scalar_def(op: ScalarDef, fr: Frame) -> None:
    args = [np.asarray(fr.scalar(a, op.loc), np.float64) for a in op.args]
    # f32 operands, as the scalar unit reads them
    args = [a.astype(np.float32).astype(np.float64) for a in args]
    with np.errstate(all="ignore"):
        value = np.asarray(FNS[op.fn](*args), np.float64)
    if op.dtype is DType.I32:
        value = value.astype(np.int64)
    else:
        value = value.astype(np.float32).astype(np.float64)
    if value.ndim and value.size > 1:
        fr.define(op.name, value)
    else:
        fr.define(op.name, value.reshape(-1)[0].item())
