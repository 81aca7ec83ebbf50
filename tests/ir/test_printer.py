"""The textual IR printer: golden FA2 text, defaults, literals, determinism."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import sympy

from fadsl.errors import Loc
from fadsl.ir.expr import isym
from fadsl.ir.nodes import Dot, Imm, Mul, Value
from fadsl.ir.text.printer import op_text, print_kernel, value_text
from fadsl.ir.types import DType, ErrorType, MemSpace, QueueType, TileType

LOC = Loc("<test>", 1)
T = TileType((isym("m"), isym("n")), DType.F32)


def _v(name: str, t: object = T) -> Value:
    return Value(name, t)  # type: ignore[arg-type]


def test_fa2_causal(fa2, golden) -> None:
    golden(print_kernel(fa2(True)), "fir")


def test_fa2_noncausal_bf16(fa2, golden) -> None:
    golden(print_kernel(fa2(False, "bf16")), "fir")


def test_default_attributes_are_omitted() -> None:
    op = Dot(a=_v("a"), b=_v("b"), transpose_b=True, result=_v("s"), loc=LOC)
    assert op_text(op) == "%s = dot(%a, %b) {transpose_b = true} : f32[m, n]"
    plain = replace(op, transpose_b=False)
    assert op_text(plain) == "%s = dot(%a, %b) : f32[m, n]"


def test_imm_prints_dtype_only_when_not_implied() -> None:
    implied = Mul(
        lhs=_v("x"), rhs=Imm(sympy.Float(0.5), DType.F32), result=_v("y"), loc=LOC
    )
    explicit = replace(implied, rhs=Imm(sympy.Float(0.5), DType.F16))
    assert op_text(implied) == "%y = mul(%x, 0.5) : f32[m, n]"
    assert op_text(explicit) == "%y = mul(%x, 0.5 : f16) : f32[m, n]"


def test_literals_print_exactly() -> None:
    assert value_text(sympy.oo) == "inf"
    assert value_text(-sympy.oo) == "-inf"
    assert value_text(float("-inf")) == "-inf"
    assert value_text(sympy.Float(0.1)) == "0.1"
    assert value_text(1e-30) == "1e-30"
    assert value_text(True) == "true"
    assert value_text(DType.BOOL) == "i1"


def test_strings_are_quoted_only_when_needed() -> None:
    assert value_text("q") == "q"
    assert value_text("for") == '"for"'
    assert value_text("a b") == '"a b"'


def test_types_print_space_and_queue() -> None:
    placed = TileType((isym("bn"),), DType.F16, MemSpace.UB)
    assert value_text(placed) == "f16[bn] @UB"
    assert value_text(QueueType(placed, 2, "VECIN")) == "queue<VECIN, 2, f16[bn] @UB>"


def test_broken_ir_still_prints() -> None:
    op = Mul(
        lhs=_v("x", ErrorType()), rhs=_v("z"), result=_v("y", ErrorType()), loc=LOC
    )
    assert op_text(op) == "%y = mul(%x, %z) : <error>"


def test_output_does_not_depend_on_hash_seed(fa2) -> None:
    code = (
        "import sys; sys.path.insert(0, 'examples'); import fa2;"
        "from fadsl.ir.text.printer import print_kernel;"
        "print(print_kernel(fa2.fa2.build({'causal': True})), end='')"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONHASHSEED="12345")  # PYTHONPATH: conftest
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == print_kernel(fa2(True))
