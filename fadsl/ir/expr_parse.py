"""Parsing expression text (scalar defaults, --set values): ast-based, never eval()."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import sympy

from fadsl.ir.expr import CeilDiv, Expr, FloorDiv, as_expr, fsym, isym

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
        raise ExprSyntaxError(
            f"the integer {digits[:24]}{'...' if len(digits) > 24 else ''} "
            "does not fit in 64 bits"
        )
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
        raise ExprSyntaxError(
            f"not an expression: {shown!r} ({exc.msg[:80]})"
        ) from None
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
