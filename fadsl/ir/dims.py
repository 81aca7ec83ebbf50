"""Shape symbols read back from tensor dims: a symbol is known from the first dim that
is ``a * symbol + b`` (integers ``a > 0``, ``b``) once the fixed sizes are put in
(``N``, ``D*N`` with ``D`` fixed, ``B + 1``). The op package's host code and
``fadsl.torch``'s shape inference both read shapes this way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sympy


def linear_source(
    symbol: sympy.Symbol, shapes: Sequence[Sequence[Any]], fixed: Mapping[Any, int]
) -> tuple[int, int, int, int] | None:
    """(tensor, dim, a, b) of the first dim equal to ``a * symbol + b``, or None."""
    for i, dims in enumerate(shapes):
        for j, d in enumerate(dims):
            e = sympy.expand(sympy.sympify(d).subs(fixed))
            if e.free_symbols != {symbol} or not e.is_polynomial(symbol):
                continue
            poly = sympy.Poly(e, symbol)
            if poly.degree() != 1:
                continue
            a, b = (int(c) for c in poly.all_coeffs())
            if a > 0:
                return i, j, a, b
    return None


def solve(
    symbols: Sequence[sympy.Symbol],
    shapes: Sequence[Sequence[Any]],
    values: Sequence[Sequence[int]],
    fixed: Mapping[Any, int],
) -> dict[str, int] | None:
    """Every symbol's value from the tensors' actual dims ``values``; None when one is
    not given by any dim or a dim does not divide."""
    out: dict[str, int] = {}
    for s in symbols:
        found = linear_source(s, shapes, fixed)
        if found is None:
            return None
        i, j, a, b = found
        if j >= len(values[i]) or (values[i][j] - b) % a:
            return None
        out[s.name] = (values[i][j] - b) // a
    return out
