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
    return bool(e.is_integer)


def free_names(e: Expr) -> frozenset[str]:
    return frozenset(s.name for s in e.free_symbols)


# ----------------------------------------------------------------------------
# Text form (used by the IR printer and parsed back by ir/grammar.lark)
# ----------------------------------------------------------------------------

_PREC_ADD, _PREC_MUL, _PREC_POW, _PREC_ATOM = 1, 2, 3, 4


def to_text(e: Expr) -> str:
    """Canonical text of an expression, parseable by the IR grammar."""
    return _text(e)[0]


def _num_text(e: Expr) -> str:
    if e is sympy.oo:
        return "inf"
    if e is -sympy.oo:
        return "-inf"
    if e.is_Integer:
        return str(int(e))
    if e.is_Rational:
        return f"{int(e.p)}/{int(e.q)}"
    return repr(float(e))


def _text(e: Expr) -> tuple[str, int]:
    if e.is_Number or e in (sympy.oo, -sympy.oo):
        s = _num_text(e)
        prec = _PREC_ADD if s.startswith("-") or "/" in s else _PREC_ATOM
        return s, prec
    if e.is_Symbol:
        return e.name, _PREC_ATOM
    if isinstance(e, sympy.Add):
        return _add_text(e), _PREC_ADD
    if isinstance(e, sympy.Mul):
        return _mul_text(e)
    if isinstance(e, sympy.Pow):
        base, bp = _text(e.base)
        exp, ep = _text(e.exp)
        base = base if bp >= _PREC_ATOM else f"({base})"
        exp = exp if ep >= _PREC_ATOM else f"({exp})"
        return f"{base}**{exp}", _PREC_POW
    return _call_text(e), _PREC_ATOM


_CALL_NAMES = {
    "CeilDiv": "cdiv",
    "FloorDiv": "floordiv",
    "Mod": "mod",
    "Min": "min",
    "Max": "max",
    "sqrt": "sqrt",
}


def _call_text(e: Expr) -> str:
    name = _CALL_NAMES.get(type(e).__name__)
    if name is None:
        raise ValueError(f"expression {e} uses {type(e).__name__}, not in the IR")
    args = ", ".join(_text(a)[0] for a in _ordered_args(e))
    return f"{name}({args})"


def _ordered_args(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, (sympy.Min, sympy.Max)):
        return tuple(sorted(e.args, key=sympy.default_sort_key))
    return tuple(e.args)


def _add_text(e: sympy.Add) -> str:
    terms = list(e.as_ordered_terms())
    out = _text(terms[0])[0]
    for t in terms[1:]:
        coeff, rest = t.as_coeff_Mul()
        if coeff.is_negative:
            out += " - " + _wrap(-t, _PREC_ADD + 1)
        else:
            out += " + " + _wrap(t, _PREC_ADD + 1)
    return out


def _mul_text(e: sympy.Mul) -> tuple[str, int]:
    coeff, rest = e.as_coeff_Mul()
    if coeff == -1:
        return "-" + _wrap(rest, _PREC_MUL + 1), _PREC_ADD
    num: list[str] = []
    den: list[str] = []
    for f in sympy.Mul.make_args(e):
        if isinstance(f, sympy.Pow) and f.exp == -1:
            den.append(_wrap(f.base, _PREC_POW))
        elif f.is_Rational and not f.is_Integer:
            num.append(str(int(f.p))) if f.p != 1 else None
            den.append(str(int(f.q)))
        else:
            num.append(_wrap(f, _PREC_MUL))
    text = "*".join(num) if num else "1"
    for d in den:
        text += "/" + d
    prec = _PREC_ADD if text.startswith("-") else _PREC_MUL
    return text, prec


def _wrap(e: Expr, need: int) -> str:
    s, p = _text(e)
    return s if p >= need else f"({s})"


# ----------------------------------------------------------------------------
# C++ form (used by the Ascend C backend)
# ----------------------------------------------------------------------------


CXX_INT = "int64_t"


def to_cxx(e: Expr, names: Mapping[str, str] | None = None) -> str:
    """C++ text of an integer expression; ``names`` renames symbols (e.g. to constants).

    Integer helpers print as ``fadsl::CeilDiv<int64_t>(a, b)`` / ``fadsl::Min`` /
    ``fadsl::Max`` (fadsl_tile.h), floor division as C division (non-negative operands).
    """
    return _cxx(e, names or {})


def _cxx(e: Expr, names: Mapping[str, str]) -> str:
    if e.is_Integer:
        return str(int(e))
    if e.is_Number:
        return repr(float(e)) + "f"
    if e.is_Symbol:
        return names.get(e.name, e.name)
    if isinstance(e, sympy.Add):
        return _cxx_add(e, names)
    if isinstance(e, sympy.Mul):
        return _cxx_mul(e, names)
    if isinstance(e, CeilDiv):
        a, b = (_cxx(x, names) for x in e.args)
        return f"fadsl::CeilDiv<{CXX_INT}>({a}, {b})"
    if isinstance(e, FloorDiv):
        a, b = (_cxx(x, names) for x in e.args)
        return f"(({a}) / ({b}))"
    if isinstance(e, sympy.Mod):
        a, b = (_cxx(x, names) for x in e.args)
        return f"(({a}) % ({b}))"
    if isinstance(e, (sympy.Min, sympy.Max)):
        fn = f"fadsl::{'Min' if isinstance(e, sympy.Min) else 'Max'}<{CXX_INT}>"
        args = [_cxx(x, names) for x in _ordered_args(e)]
        text = args[0]
        for a in args[1:]:
            text = f"{fn}({text}, {a})"
        return text
    raise ValueError(f"cannot print {e} as C++")


def _cxx_add(e: sympy.Add, names: Mapping[str, str]) -> str:
    terms = list(e.as_ordered_terms())
    out = _cxx(terms[0], names)
    for t in terms[1:]:
        coeff, _ = t.as_coeff_Mul()
        if coeff.is_negative:
            out += " - " + _cxx_paren(-t, names)
        else:
            out += " + " + _cxx_paren(t, names)
    return f"({out})"


def _cxx_mul(e: sympy.Mul, names: Mapping[str, str]) -> str:
    coeff, rest = e.as_coeff_Mul()
    if coeff == -1:
        return f"-{_cxx_paren(rest, names)}"
    return " * ".join(_cxx_paren(f, names) for f in sympy.Mul.make_args(e))


def _cxx_paren(e: Expr, names: Mapping[str, str]) -> str:
    s = _cxx(e, names)
    if isinstance(e, sympy.Mul) or (e.is_Number and float(e) < 0):
        return f"({s})"
    return s


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


# ----------------------------------------------------------------------------
# Parsing expression text (scalar defaults, --set values): ast-based, never eval()
# ----------------------------------------------------------------------------


class ExprSyntaxError(ValueError):
    """Expression text that is not a valid scalar expression."""


INT_BITS = 63
"""Integers written in expression text must fit a signed 64-bit C++ integer."""


def checked_int(digits: str) -> Expr:
    """The integer literal ``digits``, refused when it does not fit in 64 bits."""
    if len(digits.lstrip("0")) > 19 or int(digits) >= 2**INT_BITS:
        raise ExprSyntaxError(f"the integer {digits[:24]}{'...' if len(digits) > 24 else ''} "
                              "does not fit in 64 bits")
    return sympy.Integer(int(digits))


def checked_pow(base: Expr, exp: Expr) -> Expr:
    """``base ** exp`` from text, refusing a constant power too large to compute."""
    if base.is_Rational and exp.is_Integer and exp != 0:
        largest = max(abs(int(base.p)), int(base.q))
        if largest > 1 and abs(int(exp)) * math.log2(largest) >= INT_BITS:
            shown = str(base) if base.is_Integer and base > 0 else f"({base})"
            raise ExprSyntaxError(f"{shown}**{exp} does not fit in 64 bits")
    return base**exp


def check_defined(e: Expr, text: str) -> Expr:
    """``e``, unless it is undefined (0**-1, inf - inf), not real (sqrt(-1)), or holds
    a number no 64-bit float can (1e308*2, 1e-320/1e10)."""
    if e.has(sympy.zoo, sympy.nan, sympy.I):
        raise ExprSyntaxError(f"`{text}` is undefined: it evaluates to {e}")
    for f in e.atoms(sympy.Float):
        x = float(f)
        if math.isinf(x) or (x == 0.0 and not f.is_zero):
            raise ExprSyntaxError(f"`{text}` does not fit a 64-bit float: {f}")
    return e


def parse_expr_text(text: str, float_names: frozenset[str] = frozenset()) -> Expr:
    """Parse ``text`` such as ``"D ** -0.5"`` or ``"cdiv(Sq, 128)"`` into sympy.

    Names in ``float_names`` become float symbols, all others integer symbols.
    Only numbers, names, + - * / // % **, unary minus and the calls cdiv, floordiv,
    mod, min, max, sqrt are accepted; nothing is executed.
    """
    import ast

    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise ExprSyntaxError(f"not an expression: {shown!r} ({exc.msg[:80]})") from None
    return check_defined(_from_ast(tree.body, float_names), text.strip())


_AST_BINOPS: dict[str, Callable[[Expr, Expr], Expr]] = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mult": lambda a, b: a * b,
    "Div": lambda a, b: a / b,
    "FloorDiv": lambda a, b: FloorDiv(a, b),
    "Mod": lambda a, b: sympy.Mod(a, b),
    "Pow": checked_pow,
}
_AST_CALLS: dict[str, Callable[..., Expr]] = {
    "cdiv": lambda a, b: CeilDiv(a, b),
    "floordiv": lambda a, b: FloorDiv(a, b),
    "mod": lambda a, b: sympy.Mod(a, b),
    "min": lambda *a: sympy.Min(*a),
    "max": lambda *a: sympy.Max(*a),
    "sqrt": lambda a: sympy.sqrt(a),
}


def _from_ast(node: Any, float_names: frozenset[str]) -> Expr:
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        if isinstance(node.value, bool):
            raise ExprSyntaxError("booleans are not scalar expressions")
        if isinstance(node.value, int):
            return checked_int(str(node.value))
        return as_expr(node.value)
    if isinstance(node, ast.Name):
        if node.id == "inf":
            return sympy.oo
        return fsym(node.id) if node.id in float_names else isym(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _from_ast(node.operand, float_names)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op).__name__ in _AST_BINOPS:
        a = _from_ast(node.left, float_names)
        b = _from_ast(node.right, float_names)
        return _AST_BINOPS[type(node.op).__name__](a, b)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        fn = _AST_CALLS.get(node.func.id)
        if fn is not None and not node.keywords:
            return fn(*(_from_ast(a, float_names) for a in node.args))
    raise ExprSyntaxError(f"unsupported syntax in expression: {ast.unparse(node)!r}")
