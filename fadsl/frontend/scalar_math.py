"""Math on the scalars a mod sees: ``b``, ``h``, loaded scalars and shape symbols.

``fd.exp2(-8.0 * (h + 1) / N)`` (ALiBi's slope from the head) is the same for every
score of a task. ``+ - * /`` of such scalars stay sympy expressions, which the backends
compute where they are used; what an expression cannot say (exp, exp2, log, log2,
sqrt, abs, floor, sin, cos, tanh, sigmoid, ``**``, min / max / ``//`` / ``%`` of
floats, a select, a comparison as a number, a cast) becomes a ``scalar_def`` op (fadsl/ir/op_scalar.py) binding a
fresh symbol: computed by the scalar unit, once per task after hoist_scalars.
"""

from __future__ import annotations

import math
from typing import Any

import sympy
from sympy.logic.boolalg import Boolean

from fadsl.errors import KernelSyntaxError, UsageError
from fadsl.frontend import ops
from fadsl.ir import nodes as ir
from fadsl.ir.expr import CeilDiv, Expr, FloorDiv, as_expr, fsym, is_int_expr, isym
from fadsl.ir.types import DType

UNARY = ("exp", "exp2", "log", "log2", "sqrt", "abs", "floor")
UNARY += ("sin", "cos", "tanh", "sigmoid")
"""fd.<name> of a scalar: a scalar_def of the same name."""


_CMP = {
    "StrictLessThan": "lt",
    "LessThan": "le",
    "StrictGreaterThan": "gt",
    "GreaterThan": "ge",
    "Equality": "eq",
    "Unequality": "ne",
}
_PY = {
    "exp": math.exp,
    "exp2": lambda x: 2.0**x,
    "log": math.log,
    "log2": math.log2,
    "sqrt": math.sqrt,
    "abs": abs,
    "floor": math.floor,
    "sin": math.sin,
    "cos": math.cos,
    "tanh": math.tanh,
    "sigmoid": lambda x: 0.5 * (1.0 + math.tanh(0.5 * x)),
}


def is_mod_scalar(x: Any) -> bool:
    """A scalar value in a traced kernel or mod: not a tile, not a condition."""
    if isinstance(x, (ops.Tile, bool, Boolean)):
        return False
    return isinstance(x, (int, float, sympy.Expr)) or hasattr(x, "_sympy_")


def define(fn: str, args: tuple[Any, ...], dtype: DType = DType.F32) -> Any:
    """Emit ``name = scalar_def(fn, args)`` and return the symbol (as a ModScalar)."""
    from fadsl.frontend.mods import ModScalar

    t = ops.current()
    exprs = tuple(materialize(as_expr(a)) for a in args)
    name = t.builder.fresh(fn + "_s")
    t.builder.emit(ir.ScalarDef, t.here(), name=name, fn=fn, args=exprs, dtype=dtype)
    return ModScalar(fsym(name) if dtype is DType.F32 else isym(name))


def unary(fn: str, x: Any) -> Any:
    """fd.exp / exp2 / log / log2 / sqrt / abs / floor / sin / cos / tanh / sigmoid
    of a scalar."""
    e = as_expr(x)
    if e.is_Number:
        try:
            return _PY[fn](float(e))
        except (ValueError, OverflowError):
            pass  # log(-1), exp(1000): as the chip computes it
    if fn in ("abs", "floor") and is_int_expr(e):
        return _wrap(sympy.Max(e, -e) if fn == "abs" else e)
    return define(fn, (e,))


def log2(x: Any) -> Any:
    """Elementwise base-2 logarithm (a tile: ``log(x) * (1 / ln 2)``) or of a scalar."""
    from fadsl.frontend import tile_ops

    if tile_ops._eager(x):
        import numpy as np

        return np.log2(x)  # type: ignore[no-any-return]
    if isinstance(x, ops.Tile):
        return tile_ops.log(x) * (1.0 / math.log(2.0))
    if is_mod_scalar(x):
        return unary("log2", x)  # type: ignore[no-any-return]
    raise KernelSyntaxError(
        f"fd.log2 takes a tile or a scalar, not {type(x).__name__}",
        ops.current().here(),
        code="mod_math_unsupported",
    )


def sin(x: Any) -> Any:
    """Elementwise sine: of a scalar (``b``, ``h``, a loaded value, a shape symbol) by
    the scalar unit once per task; of a tile (``q_idx``, ``kv_idx``, ``score``) by a
    vector-unit sequence (fadsl/frontend/tile_trig.py)."""
    return _trig("sin", x)


def cos(x: Any) -> Any:
    """Elementwise cosine: of a scalar (``b``, ``h``, a loaded value, a shape symbol)
    by the scalar unit once per task; of a tile (``q_idx``, ``kv_idx``, ``score``) by a
    vector-unit sequence (fadsl/frontend/tile_trig.py)."""
    return _trig("cos", x)


def _trig(name: str, x: Any) -> Any:
    from fadsl.frontend import tile_ops

    if tile_ops._eager(x):
        import numpy as np

        return getattr(np, name)(x)
    if is_mod_scalar(x):
        return unary(name, x)
    if isinstance(x, ops.Tile):
        from fadsl.frontend.tile_trig import sin_cos

        return sin_cos(x, cos=name == "cos")
    raise KernelSyntaxError(
        f"fd.{name} takes a tile or a scalar (b, h, a loaded value, a number), "
        f"not {type(x).__name__}",
        ops.current().here(),
        code="mod_math_unsupported",
    )


def power(a: Any, b: Any) -> Any:
    """``a ** b`` of scalars: exact for constants, else a scalar_def (f32)."""
    ea, eb = as_expr(a), as_expr(b)
    if ea.is_Number and eb.is_Number:
        return _wrap(ea**eb)
    return define("pow", (ea, eb))


def binary(fn: str, a: Any, b: Any) -> Any:
    """min / max of scalars: sympy Min / Max of integers, else a scalar_def."""
    ea, eb = as_expr(a), as_expr(b)
    if is_int_expr(ea) and is_int_expr(eb):
        return _wrap(sympy.Min(ea, eb) if fn == "min" else sympy.Max(ea, eb))
    return define(fn, (ea, eb))


def select(cond: Any, a: Any, b: Any) -> Any:
    """fd.where of a scalar condition between two scalars."""
    ea, eb = as_expr(a), as_expr(b)
    c = truth(cond)
    dtype = DType.I32 if is_int_expr(ea) and is_int_expr(eb) else DType.F32
    return define("select", (c, ea, eb), dtype)


def truth(cond: Any) -> Expr:
    """A scalar condition as an integer 0 / 1 expression."""
    if isinstance(cond, bool) or cond is sympy.true or cond is sympy.false:
        return sympy.Integer(int(bool(cond)))
    name = type(cond).__name__
    if name in _CMP:
        return as_expr(define(_CMP[name], (cond.lhs, cond.rhs), DType.I32))
    parts = [truth(x) for x in getattr(cond, "args", ())]
    if isinstance(cond, sympy.And):
        return sympy.Min(*parts)
    if isinstance(cond, sympy.Or):
        return sympy.Max(*parts)
    if isinstance(cond, sympy.Not):
        return 1 - parts[0]
    raise KernelSyntaxError(
        f"the condition `{cond}` is not a comparison of scalars",
        ops.current().here(),
        hint="compare with < <= > >= == != and combine with & | ~",
        code="mod_math_unsupported",
    )


def cast(x: Any, dtype: DType) -> Any:
    """fd.cast of a scalar: to a float (f32 on the scalar unit) or an integer
    (truncated toward zero, as torch's .to(torch.int32))."""
    e = as_expr(x)
    if dtype.is_int:
        return _wrap(e) if is_int_expr(e) else define("int", (e,), DType.I32)
    if is_int_expr(e):
        return define("float", (e,))
    return _wrap(e)


def eager_cast(x: Any, dtype: DType) -> Any:
    """fd.cast in a mod's numpy run: integers truncate toward zero (f64 kept for
    floats: the reference's precision)."""
    import numpy as np

    if dtype.is_int:
        return np.trunc(np.asarray(x, np.float64)).astype(np.int64)
    return np.asarray(x, np.float64)


def _wrap(e: Any) -> Any:
    from fadsl.frontend.mods import ModScalar

    return ModScalar(e) if isinstance(e, sympy.Expr) and not e.is_Number else e


def materialize(e: Expr) -> Expr:
    """``e`` with every part the IR's scalar expressions cannot print (a power other
    than 1/x, min / max / // / % of floats) computed by a scalar_def."""
    if e.is_Atom:
        return e
    if isinstance(e, sympy.Pow) and e.exp == -1:
        return sympy.Pow(materialize(e.base), -1)
    if isinstance(e, sympy.Pow):
        if e.base.is_Number and e.exp.is_Number:
            return e
        return as_expr(define("pow", (e.base, e.exp)))
    args = [materialize(a) for a in e.args]
    if isinstance(e, (sympy.Add, sympy.Mul)):
        return e.func(*args)
    ints = all(is_int_expr(a) for a in args)
    if isinstance(e, (FloorDiv, CeilDiv, sympy.Mod, sympy.Min, sympy.Max)) and ints:
        return e.func(*args)
    if isinstance(e, (sympy.Min, sympy.Max)):
        out = args[0]
        for a in args[1:]:
            out = as_expr(
                define("min" if isinstance(e, sympy.Min) else "max", (out, a))
            )
        return out
    if isinstance(e, FloorDiv):
        return as_expr(define("floor", (args[0] / args[1],)))
    if isinstance(e, sympy.Mod):
        a, b = args
        return a - b * as_expr(define("floor", (a / b,)))
    if isinstance(e, sympy.floor):
        return as_expr(define("floor", (args[0],)))
    raise KernelSyntaxError(
        f"the scalar `{e}` uses {type(e).__name__}, which a kernel cannot compute",
        ops.current().here(),
        hint="use + - * / // % **, fd.exp, fd.exp2, fd.log, fd.log2, fd.sqrt, "
        "fd.abs, fd.floor, fd.minimum, fd.maximum, fd.where, fd.cast",
        code="mod_math_unsupported",
    )


def tile_power(a: Any, b: Any) -> ops.Tile:
    """``a ** b`` with a tile: repeated products for a constant integer exponent
    (|b| <= 8), ``fd.sqrt`` for 0.5, else ``exp2(b * log2(a))`` (a positive base)."""
    from fadsl.frontend import tile_ops

    if isinstance(a, ops.Tile) and not isinstance(b, ops.Tile):
        e = as_expr(b)
        if e.is_Integer and 0 < abs(int(e)) <= 8:
            out = a
            for _ in range(abs(int(e)) - 1):
                out = out * a
            return out if int(e) > 0 else 1.0 / out
        if e == sympy.Rational(1, 2) or (e.is_Number and float(e) == 0.5):
            return tile_ops.sqrt(a)
    if not isinstance(a, ops.Tile):
        e = as_expr(a)
        if e.is_Number and not float(e) > 0:
            raise KernelSyntaxError(
                f"`{e} ** tile`: a constant base must be positive",
                ops.current().here(),
                hint="write the power as fd.exp2(tile * fd.log2(base)) for base > 0",
                code="mod_math_unsupported",
            )
        log_a = math.log2(float(e)) if e.is_Number else log2(a)
        return tile_ops.exp2(b * log_a)
    return tile_ops.exp2(b * log2(a))


class _Shape:
    """``fd.shape.N``, ``fd.shape.Sq``, ...: a shape symbol inside a mod (a runtime
    integer when traced, the bound value in an eager run)."""

    NAMES = ("B", "N", "Nkv", "Sq", "Skv", "D", "Dv")

    def __getattr__(self, name: str) -> Any:
        if name not in self.NAMES:
            raise AttributeError(
                f"fd.shape has no symbol {name!r}; a mod reads {', '.join(self.NAMES)}"
            )
        from fadsl.frontend.mods import _EAGER_SHAPE, ModScalar

        bound = _EAGER_SHAPE.get()
        if bound is not None:
            value = bound.get(name, bound.get("D") if name == "Dv" else None)
            if value is None:
                raise UsageError(
                    f"fd.shape.{name} has no value in this run",
                    None,
                    code="mod_math_unsupported",
                )
            return int(value)
        ops.current()  # only inside a kernel or a mod
        return ModScalar(isym(name))


shape = _Shape()
