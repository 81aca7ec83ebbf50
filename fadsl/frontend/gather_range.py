"""Interval analysis of a gather's index tile: the smallest and largest value it holds.

Walks the ops that computed the index back to the positions (``q_idx``, ``kv_idx``,
whose ranges ``mods.positions`` records) and to constants, with interval arithmetic on
sympy expressions. ``valid=True`` bounds positions by the sequence end (the values the
scores that are kept can see); ``valid=False`` uses the whole tile (the width of the
window to load). An op the analysis does not know (a value read from a tensor, a
transcendental) gives None: the range is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, FloorDiv

Interval = tuple[Expr, Expr]
Sub = Callable[["ir.Operand"], "Interval | None"]
Defs = dict[str, ir.Op]
Known = dict[str, tuple[Expr, Expr, Expr]]
"""value name -> (lo, hi of the whole tile, hi of the valid positions)."""


def interval(v: ir.Value, defs: Defs, known: Known, valid: bool) -> Interval | None:
    """[lo, hi] of ``v``'s elements, or None where unknown."""
    if v.name in known:
        lo, hi_all, hi_valid = known[v.name]
        return (lo, hi_valid if valid else hi_all)
    op = defs.get(v.name)
    if op is None:
        return None
    sub: Sub = lambda x: _of(x, defs, known, valid)  # noqa: E731
    if isinstance(op, ir.Where):
        return _where(op, sub, defs)
    rule = _RULES.get(type(op))
    return None if rule is None else rule(op, sub)


def _of(x: ir.Operand, defs: Defs, known: Known, valid: bool) -> Interval | None:
    if isinstance(x, ir.Imm):
        return (x.expr, x.expr)
    return interval(x, defs, known, valid)


def _binary(combine: Callable[[Interval, Interval], Interval | None]) -> Callable:
    def rule(op: ir.Binary, sub: Sub) -> Interval | None:
        a, b = sub(op.lhs), sub(op.rhs)
        return None if a is None or b is None else combine(a, b)

    return rule


def _mul(a: Interval, b: Interval) -> Interval | None:
    if b[0] == b[1] and b[0].is_number:
        a, b = b, a
    if not (a[0] == a[1] and a[0].is_number):
        return None
    c = a[0]
    return (c * b[0], c * b[1]) if c >= 0 else (c * b[1], c * b[0])


def _floordiv(a: Interval, b: Interval) -> Interval | None:
    if b[0] == b[1] and b[0].is_number and b[0] > 0:
        return (FloorDiv(a[0], b[0]), FloorDiv(a[1], b[0]))
    return None


def _mod(a: Interval, b: Interval) -> Interval | None:
    if b[0] == b[1] and b[0].is_number and b[0] > 0:
        return (sympy.Integer(0), b[0] - 1)
    return None


def _where(op: ir.Where, sub: Sub, defs: Defs) -> Interval | None:
    """Either branch; a branch the condition bounds (``where(d < 8, d, ...)``: ``d``
    is below 8 where it is taken) within that bound."""
    a, b = sub(op.a), sub(op.b)
    if a is None or b is None:
        return None
    cond = defs.get(op.cond.name) if isinstance(op.cond, ir.Value) else None
    if isinstance(cond, (ir.Lt, ir.Le)) and cond.lhs == op.a:
        c = sub(cond.rhs)
        if c is not None:
            cap = c[1] - 1 if isinstance(cond, ir.Lt) and _is_int(op.a) else c[1]
            a = (a[0], sympy.Min(a[1], cap))
    return (sympy.Min(a[0], b[0]), sympy.Max(a[1], b[1]))


def _is_int(v: ir.Operand) -> bool:
    t = getattr(v, "type", None)
    return bool(getattr(getattr(t, "dtype", None), "is_int", False))


def _same(op: ir.Op, sub: Sub) -> Interval | None:
    return sub(op.x)  # type: ignore[attr-defined]


def _cast(op: ir.Cast, sub: Sub) -> Interval | None:
    x = sub(op.x)
    if x is None or op.dtype.is_float:
        return x
    return (sympy.floor(x[0]), sympy.ceiling(x[1]))  # truncation lies within


def _monotone(fn: Callable[[Expr], Expr]) -> Callable:
    def rule(op: ir.Unary, sub: Sub) -> Interval | None:
        x = sub(op.x)
        return None if x is None else (fn(x[0]), fn(x[1]))

    return rule


def _div(a: Interval, b: Interval) -> Interval | None:
    if b[0] == b[1] and b[0].is_number and b[0] > 0:
        return (a[0] / b[0], a[1] / b[0])
    return None


def _abs(op: ir.Abs, sub: Sub) -> Interval | None:
    x = sub(op.x)
    if x is None:
        return None
    if proven(x[0]):
        return x
    return (sympy.Integer(0), sympy.Max(-x[0], x[1]))


def _log(op: ir.Log, sub: Sub) -> Interval | None:
    x = sub(op.x)
    low = None if x is None else const_bound(x[0], upper=False)
    if x is None or low is None or low <= 0:
        return None
    return (sympy.log(x[0]), sympy.log(x[1]))


def _neg(op: ir.Neg, sub: Sub) -> Interval | None:
    x = sub(op.x)
    return None if x is None else (-x[1], -x[0])


_RULES: dict[type, Callable[..., Interval | None]] = {
    ir.Add: _binary(lambda a, b: (a[0] + b[0], a[1] + b[1])),
    ir.Sub: _binary(lambda a, b: (a[0] - b[1], a[1] - b[0])),
    ir.Mul: _binary(_mul),
    ir.FloorDivide: _binary(_floordiv),
    ir.Remainder: _binary(_mod),
    ir.Minimum: _binary(lambda a, b: (sympy.Min(a[0], b[0]), sympy.Min(a[1], b[1]))),
    ir.Maximum: _binary(lambda a, b: (sympy.Max(a[0], b[0]), sympy.Max(a[1], b[1]))),
    ir.ExpandDims: _same,
    ir.Cast: _cast,
    ir.Neg: _neg,
    ir.Floor: _monotone(sympy.floor),
    ir.Full: lambda op, sub: (op.value, op.value),
    ir.Div: _binary(_div),
    ir.Abs: _abs,
    ir.Log: _log,
    ir.Exp: _monotone(sympy.exp),
    ir.Exp2: _monotone(lambda e: sympy.Integer(2) ** e),
    ir.Sqrt: _monotone(sympy.sqrt),
}
for _cmp in (ir.Lt, ir.Le, ir.Gt, ir.Ge, ir.Eq, ir.Ne):  # a mask, cast: 0 or 1
    _RULES[_cmp] = lambda op, sub: (sympy.Integer(0), sympy.Integer(1))


def constant_width(lo: Expr, hi: Expr, consts: Mapping[Any, Any]) -> Expr | None:
    """``hi - lo + 1`` when it depends on tile constants only (``block_q + block_kv
    - 1``: the same for every task), else None."""
    width = hi - lo + 1  # sympy's own sums cancel the positions' starts
    if not width.free_symbols <= set(consts):
        return None
    value = width.subs(dict(consts))
    return width if value.is_Integer and int(value) > 0 else None


def proven(fact: Expr) -> bool:
    """True where ``fact >= 0`` holds for every value of its symbols: sympy proves
    it from the symbols' assumptions, or a constant lower bound of ``fact`` (``const_bound``) is >= 0.
    """
    low = const_bound(fact, upper=False)
    if low is not None:
        return bool(low >= 0)
    return bool(fact.is_nonnegative)  # no simplify: it takes seconds on log bounds


def const_bound(e: Expr, upper: bool) -> sympy.Rational | None:
    """A constant bound of ``e`` (upper or lower) through Min, Max, + and constant
    factors, where sympy leaves ``Min(15, ...)`` unsimplified; None where unknown."""
    if e.is_number:
        return sympy.Rational(e) if e.is_rational else None
    if isinstance(e, (sympy.Min, sympy.Max)):
        parts = [const_bound(a, upper) for a in e.args]
        known = [p for p in parts if p is not None]
        if isinstance(e, sympy.Min) == upper:  # min's upper / max's lower: any one
            return min(known) if upper and known else (max(known) if known else None)
        return (
            None if len(known) < len(parts) else (max(known) if upper else min(known))
        )
    if isinstance(e, sympy.Add):
        parts = [const_bound(a, upper) for a in e.args]
        return None if None in parts else sum(parts, sympy.Integer(0))
    if isinstance(e, sympy.Mul) and len(e.args) == 2 and e.args[0].is_number:
        c = e.args[0]
        inner = const_bound(e.args[1], upper if c >= 0 else not upper)
        return None if inner is None or not c.is_rational else c * inner
    return None
