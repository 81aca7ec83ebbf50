"""Expression printers: the textual-IR form (parsed back by the IR grammar) and C++."""

from __future__ import annotations

from collections.abc import Mapping

import sympy

from fadsl.ir.expr import CeilDiv, Expr, FloorDiv

# ----------------------------------------------------------------------------
# Text form (used by the IR printer and parsed back by ir/text/grammar.lark)
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
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) > 0:
        # a square tile's element count (D * D) is a power: repeat the factor
        return "(" + " * ".join([_cxx_paren(e.base, names)] * int(e.exp)) + ")"
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
