"""Scalar index expressions: sympy symbols, integer division helpers, printers, evaluation.

Every size, offset, loop bound and scalar operand in the IR is a sympy expression over
named symbols: shape symbols (B, N, Sq, ...), tile constants (block_q, ...), loop and
grid variables, scalars loaded from tensors (integers) and float scalar parameters.
One name maps to one symbol: integers are created by ``isym``, floats by ``fsym``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import sympy

Expr = sympy.Expr


def isym(name: str) -> sympy.Symbol:
    """The integer symbol ``name`` (shapes, tile sizes, loop variables)."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


def fsym(name: str) -> sympy.Symbol:
    """The float symbol ``name`` (runtime scalar parameters such as ``scale``)."""
    return sympy.Symbol(name, real=True)


class CeilDiv(sympy.Function):
    """ceil(a / b) on non-negative integers."""

    is_integer = True

    @classmethod
    def eval(cls, a: Expr, b: Expr) -> Expr | None:
        if a.is_Integer and b.is_Integer and int(b) != 0:
            return sympy.Integer(-(-int(a) // int(b)))
        if b == 1:
            return a
        return None


class FloorDiv(sympy.Function):
    """floor(a / b) on integers."""

    is_integer = True

    @classmethod
    def eval(cls, a: Expr, b: Expr) -> Expr | None:
        if a.is_Integer and b.is_Integer and int(b) != 0:
            return sympy.Integer(int(a) // int(b))
        if b == 1:
            return a
        return None


def as_expr(value: Any) -> Expr:
    """Coerce a Python number or sympy expression into a sympy expression."""
    if isinstance(value, sympy.Basic):
        return value
    if hasattr(value, "_sympy_"):  # proxies such as the b / h a traced mod receives
        return value._sympy_()
    if isinstance(value, bool):
        return sympy.Integer(int(value))
    if isinstance(value, int):
        return sympy.Integer(value)
    if isinstance(value, float):
        if math.isinf(value):
            return sympy.oo if value > 0 else -sympy.oo
        if value == int(value) and abs(value) < 2**53:
            return sympy.Float(value)
        return sympy.Float(value)
    raise TypeError(f"not an expression: {value!r}")


def is_int_expr(e: Expr) -> bool:
    """True when ``e`` is integer-valued: sympy's own assumption, or (where sympy cannot
    tell, as for ``Mod(x, cdiv(G, block_q))``, whose divisor it cannot prove non-zero)
    a sum, product, ``Mod``, ``Min`` or ``Max`` of integer-valued expressions."""
    if e.is_integer is True:
        return True
    if e.is_Add or e.is_Mul or isinstance(e, (sympy.Mod, sympy.Min, sympy.Max)):
        return all(is_int_expr(a) for a in e.args)
    return False


def free_names(e: Expr) -> frozenset[str]:
    return frozenset(s.name for s in e.free_symbols)


# ----------------------------------------------------------------------------
# Numeric evaluation (interpreter, checker): a closure per expression, no eval()
# ----------------------------------------------------------------------------

Env = Mapping[str, Any]


def evaluate(e: Expr, env: Env) -> Any:
    """Value of ``e`` with symbols taken from ``env`` (ints, floats or numpy arrays)."""
    return compile_expr(e)(env)


@lru_cache(maxsize=4096)
def compile_expr(e: Expr) -> Callable[[Env], Any]:
    return _compile(e)


def _compile(e: Expr) -> Callable[[Env], Any]:
    if e.is_Integer:
        v = int(e)
        return lambda env: v
    if e.is_Number or e in (sympy.oo, -sympy.oo):
        fv = float(e)
        return lambda env: fv
    if e.is_Symbol:
        name = e.name
        return lambda env: env[name]
    args = [_compile(a) for a in e.args]
    op = _OPS.get(type(e).__name__)
    if op is None:
        raise ValueError(f"cannot evaluate {e}")
    return lambda env: op(*[a(env) for a in args])


def _add(*xs: Any) -> Any:
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return total


def _mul(*xs: Any) -> Any:
    total = xs[0]
    for x in xs[1:]:
        total = total * x
    return total


def _pow(a: Any, b: Any) -> Any:
    if isinstance(b, int) and b < 0:
        return 1.0 / (a ** (-b))
    return a**b


def _min(*xs: Any) -> Any:
    out = xs[0]
    for x in xs[1:]:
        out = _np().minimum(out, x) if _is_array(out, x) else min(out, x)
    return out


def _max(*xs: Any) -> Any:
    out = xs[0]
    for x in xs[1:]:
        out = _np().maximum(out, x) if _is_array(out, x) else max(out, x)
    return out


def _np() -> Any:
    """numpy, imported only when an array is met (compile and check use plain ints)."""
    import numpy

    return numpy


def _is_array(a: Any, b: Any) -> bool:
    return hasattr(a, "shape") or hasattr(b, "shape")


def _sqrt(a: Any) -> Any:
    return a**0.5


def _ceiling(a: Any) -> Any:
    if hasattr(a, "shape"):
        import numpy as np

        return np.ceil(a).astype(np.int64)
    return math.ceil(a)


def _floor(a: Any) -> Any:
    if hasattr(a, "shape"):
        import numpy as np

        return np.floor(a).astype(np.int64)
    return math.floor(a)


_OPS: dict[str, Callable[..., Any]] = {
    "Add": _add,
    "Mul": _mul,
    "Pow": _pow,
    "CeilDiv": lambda a, b: -((-a) // b),
    "FloorDiv": lambda a, b: a // b,
    "Mod": lambda a, b: a % b,
    "Min": _min,
    "Max": _max,
    "sqrt": _sqrt,
    "ceiling": _ceiling,
    "floor": _floor,
}
