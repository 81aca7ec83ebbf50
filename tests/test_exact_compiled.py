"""``footprint_eval.exact`` evaluates each formula as one generated Python function
(``_compiled``): the values of the nested closures it replaced (``_closure``, kept
as its fallback), on every operation exact() knows and on the footprints, step work
and call counts of fa2's cost model and tune's chunk bound, at several sizes."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest
import sympy

from fadsl import target as targets
from fadsl.driver.source import load_source, select
from fadsl.ir.expr import CeilDiv, FloorDiv, isym
from fadsl.perf.kernel import KernelModel
from fadsl.plan.resources import footprint_eval as fe
from fadsl.plan.search.chunks import LeastChunks

SIZES = [
    dict(B=1, N=2, Sq=1024, Skv=768, D=128, block_q=128, block_kv=256, stages=2),
    dict(B=2, N=8, Sq=8192, Skv=8192, D=64, block_q=272, block_kv=512, stages=1),
    dict(B=1, N=1, Sq=300, Skv=200, D=96, block_q=16, block_kv=48, stages=2),
]


def _formulas() -> list[sympy.Expr]:
    t = targets.get("ascend910b1")
    kernel = select(load_source("examples/fa2.py"), "fa2").build(
        {"stages": 2, "causal": True}
    )
    model = KernelModel(kernel, t)
    out: list[sympy.Expr] = [*model.grid.extents, model.loop.start, model.loop.stop]
    for s in (*model.before, *model.body, *model.after):
        out += list(s.work.values())
        for c in s.calls:
            out += [getattr(c, f.name) for f in dataclasses.fields(c)]
    least = LeastChunks([model.kernel], t).each[0]
    least.least({**SIZES[0], "scale": 0.088})
    out += [least.whole, least.floor, least.chunked]
    a, b = isym("block_q"), isym("D")
    out.append(
        CeilDiv(a, 16) * 16
        + FloorDiv(b, 3)
        + sympy.Mod(a, 7)
        + sympy.Min(a, b, 100)
        + sympy.Max(a - 5, b)
        + sympy.ceiling(a / 3)
        + sympy.floor(b * sympy.Rational(5, 7))
        + a ** -2
        + b**2
        - 3
    )
    exprs = [sympy.sympify(e) for e in out if isinstance(e, (int, sympy.Basic))]
    return [e for e in exprs if not e.is_Integer]


def test_generated_functions_give_the_closures_values() -> None:
    formulas = _formulas()
    assert len(formulas) > 50
    kinds = {type(x).__name__ for f in formulas for x in sympy.preorder_traversal(f)}
    assert {"Add", "Mul", "Pow", "ceiling", "CeilDiv", "Min", "Max", "Mod"} <= kinds
    compared = 0
    for env in SIZES:
        env = {**env, "scale": Fraction(11, 125), "b": 0, "h": 1, "i": 2, "j": 1}
        for f in formulas:
            try:
                want = fe._closure(f)(env)
            except (KeyError, ValueError):
                with pytest.raises((KeyError, ValueError)):
                    fe._compiled(f)(env)
                continue
            got = fe._compiled(f)(env)
            assert got == want and type(got) is type(want), sympy.sstr(f)
            compared += 1
    assert compared > 100


def test_an_unknown_operation_is_refused_as_before() -> None:
    with pytest.raises(ValueError, match="cannot evaluate"):
        fe.exact(sympy.sin(isym("D")), {"D": 1})
