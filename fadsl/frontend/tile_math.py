"""The elementwise tile math of ``fd`` (exp, log, tanh, sigmoid, maximum, where, ...).

Each works on a tile (one IR op), on a mod's scalar (``scalar_math``), or eagerly on
numpy arrays (a mod's float64 reference). ``fadsl.frontend.tile_ops`` re-exports them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import sympy

from fadsl.errors import KernelSyntaxError
from fadsl.frontend.ops import (
    Tile,
    as_operand,
    binary_op,
    current,
    emit_op,
    is_scalar,
    promote,
    scalar_operand,
)
from fadsl.ir import nodes as ir
from fadsl.ir.expr import is_int_expr
from fadsl.ir.types import DType


def _eager(*xs: Any) -> bool:
    """True when a mod runs on numpy arrays (the float64 reference), not on tiles.

    Without numpy imported nothing can be a numpy array: building a kernel (compile,
    check) then never imports numpy.
    """
    np = sys.modules.get("numpy")
    if np is None:
        return False
    return not any(isinstance(x, Tile) for x in xs) and any(
        isinstance(x, (np.ndarray, np.generic)) for x in xs
    )


def _unary(
    cls: type[ir.Unary], x: Any, eager: Callable[[Any], Any] | None = None
) -> Tile:
    """``fd.<name>(x)`` for op class ``cls`` (``name`` is its IR name): the op on a tile,
    or on numpy arrays (a mod's float64 reference) ``eager``, by default numpy's
    function of the same name."""
    name = ir.op_name(cls)
    if _eager(x):
        import numpy as np

        return eager(x) if eager is not None else getattr(np, name)(x)
    if not isinstance(x, Tile):
        from fadsl.frontend import scalar_math

        if name in scalar_math.UNARY and scalar_math.is_mod_scalar(x):
            return scalar_math.unary(name, x)  # type: ignore[no-any-return]
        raise KernelSyntaxError(
            f"fd.{name} takes a tile or a scalar (b, h, a loaded value, a number)",
            current().here(),
        )
    if x.dtype.is_int and cls is not ir.Abs and cls is not ir.Neg:
        from fadsl.frontend.tile_ops import cast

        x = cast(x, DType.F32)
    return emit_op(cls, x=x.value)


def exp(x: Tile) -> Tile:
    """Elementwise e**x."""
    return _unary(ir.Exp, x)


def exp2(x: Tile) -> Tile:
    """Elementwise 2**x."""
    return _unary(ir.Exp2, x)


def log(x: Tile) -> Tile:
    """Elementwise natural logarithm."""
    return _unary(ir.Log, x)


def tanh(x: Tile) -> Tile:
    """Elementwise tanh (softcap: ``cap * fd.tanh(s / cap)``)."""
    return _unary(ir.Tanh, x)


def sigmoid(x: Tile) -> Tile:
    """Elementwise logistic sigmoid 1 / (1 + e**-x)."""
    return _unary(ir.Sigmoid, x, _sigmoid64)


def _sigmoid64(x: Any) -> Any:
    """The float64 reference: exp(-log(1 + e**-x)), without overflow for any x."""
    import numpy as np

    return np.exp(-np.logaddexp(0.0, -np.asarray(x, np.float64)))


def sqrt(x: Tile) -> Tile:
    """Elementwise square root."""
    return _unary(ir.Sqrt, x)


def floor(x: Tile) -> Tile:
    """Elementwise floor (the largest integral value <= x)."""
    return _unary(ir.Floor, x)


def abs(x: Tile) -> Tile:  # noqa: A001 - mirrors numpy / torch naming
    """Elementwise |x|."""
    return _unary(ir.Abs, x)


def maximum(a: Any, b: Any) -> Any:
    """Elementwise max of tiles, or max of two scalars (loop bounds)."""
    if _eager(a, b):
        import numpy as np

        return np.maximum(a, b)
    if is_scalar(a) and is_scalar(b):
        from fadsl.frontend import scalar_math

        ea, eb = scalar_operand(a, "maximum"), scalar_operand(b, "maximum")
        if not (is_int_expr(ea) and is_int_expr(eb)):
            return scalar_math.binary("max", ea, eb)
        return sympy.Max(ea, eb)
    return binary_op(ir.Maximum, a, b)


def minimum(a: Any, b: Any) -> Any:
    """Elementwise min of tiles, or min of two scalars (loop bounds)."""
    if _eager(a, b):
        import numpy as np

        return np.minimum(a, b)
    if is_scalar(a) and is_scalar(b):
        from fadsl.frontend import scalar_math

        ea, eb = scalar_operand(a, "minimum"), scalar_operand(b, "minimum")
        if not (is_int_expr(ea) and is_int_expr(eb)):
            return scalar_math.binary("min", ea, eb)
        return sympy.Min(ea, eb)
    return binary_op(ir.Minimum, a, b)


def where(cond: Any, a: Any, b: Any) -> Tile:
    """Per element ``a`` where ``cond`` else ``b`` (numpy broadcasting); with a
    scalar condition and two scalars, one scalar per task.

    Example: ``s = fd.where(kv_idx[None, :] < Skv, s, -fd.inf)``
    """
    if _eager(cond, a, b):
        import numpy as np

        return np.where(cond, a, b)
    if isinstance(cond, bool):
        raise KernelSyntaxError(
            "fd.where needs a mask tile; this condition is a plain Python bool",
            current().here(),
        )
    from fadsl.frontend.conditions import is_condition, spread_like

    if is_condition(cond):  # on b, h or loop variables: the same for every element
        like = a if isinstance(a, Tile) else b
        if not isinstance(like, Tile):  # a scalar select: one value per task
            from fadsl.frontend import scalar_math

            return scalar_math.select(cond, a, b)  # type: ignore[no-any-return]
        cond = spread_like(cond, like)
    ca, cb = promote(as_operand(a), as_operand(b))
    return emit_op(ir.Where, cond=as_operand(cond), a=ca, b=cb)
