"""The textual-IR parser: locations, expressions, safety, error messages (.err)."""

from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest
import sympy

from fadsl.errors import DTypeError, FadslError, IRParseError, Loc, ShapeError
from fadsl.ir.expr import CeilDiv, FloorDiv, fsym, isym
from fadsl.ir.expr_print import to_text
from fadsl.ir.nodes import Exp, For, Grid, Load, LoadScalar
from fadsl.ir.text.parser import _lark, parse_expr, parse_kernel

KERNEL = """\
kernel k(
    in q: f16[B, D],
    in cu: i32[B],
    out o: f16[B, D],
    scalar scale: f32 = 0.5,
) consts(bq = 64) {
  grid (i) in (cdiv(B, bq)) {
BODY
  }
}
"""
LOAD = "    %x = load() {src = q, index = [bq*i +: bq, 0 +: D]} : f16[bq, D]"
STORE = "    store(%y) {dst = o, index = [bq*i +: bq, 0 +: D]}"


def kernel_text(*body: str) -> str:
    return KERNEL.replace("BODY", "\n".join(body))


def test_every_node_points_into_the_text() -> None:
    text = kernel_text(LOAD, "    %y = exp(%x) : f16[bq, D]", STORE)
    k = parse_kernel(text, "k.fir")
    grid = k.body[0]
    assert isinstance(grid, Grid)
    load, exp = grid.body[0], grid.body[1]
    assert isinstance(load, Load) and isinstance(exp, Exp)
    assert (exp.loc.file, exp.loc.line, exp.loc.col) == ("k.fir", 9, 4)
    assert exp.loc.text == "    %y = exp(%x) : f16[bq, D]"
    assert exp.loc.end_col == len(exp.loc.text)
    assert (grid.loc.line, k.params[1].loc.line) == (7, 3)


def test_symbols_float_scalars_and_load_scalar() -> None:
    text = kernel_text(
        "    n = load_scalar() {src = cu, index = [i]}",
        "    %x = full() {shape = [n], value = scale, dtype = f32} : f32[n]",
    )
    grid = parse_kernel(text).body[0]
    assert isinstance(grid, Grid)
    scalar, full = grid.body
    assert isinstance(scalar, LoadScalar) and scalar.name == "n"
    assert full.value == fsym("scale")  # type: ignore[attr-defined]
    assert full.shape == (isym("n"),)  # type: ignore[attr-defined]


def test_comments_whitespace_and_keyword_names() -> None:
    text = kernel_text(
        "    # a comment line",
        "    for out in 0 .. 2 {   # `out` is a keyword only in the header",
        "    }",
    )
    grid = parse_kernel(text).body[0]
    assert isinstance(grid, Grid) and isinstance(grid.body[0], For)
    assert grid.body[0].var == "out"


def test_parse_expr_builds_sympy() -> None:
    loc = Loc("<cli>", 1, 0)
    assert (
        parse_expr("cdiv(Sq, block_q) + 1", loc)
        == CeilDiv(isym("Sq"), isym("block_q")) + 1
    )
    assert parse_expr("D**(-0.5)", loc) == isym("D") ** sympy.Float(-0.5)
    assert parse_expr("-inf", loc) == -sympy.oo
    assert parse_expr("s*2", loc, frozenset({"s"})) == 2 * fsym("s")


def test_parse_expr_error_points_into_the_caller_line() -> None:
    loc = Loc("<command line>", 1, 8, text="--set n=cdiv(Sq,)")
    with pytest.raises(IRParseError) as info:
        parse_expr("cdiv(Sq,)", loc)
    assert info.value.loc is not None and info.value.loc.col == 8 + 8


def test_text_is_never_executed(tmp_path) -> None:
    marker = tmp_path / "pwned"
    evil = f"__import__('os').system('touch {marker}')"
    with pytest.raises(FadslError):
        parse_kernel(
            kernel_text(
                f"    %x = full() {{shape = [1], value = {evil}, dtype = f32}}"
                " : f32[1]"
            )
        )
    with pytest.raises(FadslError):
        parse_expr(evil, Loc("<x>", 1))
    assert not marker.exists()


def test_type_errors_are_collected() -> None:
    text = kernel_text(
        LOAD, "    %y = exp(%x) : f32[bq, D]", "    %z = exp(%x) : f16[D, bq]"
    )
    with pytest.raises(DTypeError) as info:
        parse_kernel(text)
    assert "and 1 more error" in info.value.message
    assert any("f16[D, bq]" in n for n in info.value.notes)


def test_rule_errors_use_the_op_rule() -> None:
    with pytest.raises(ShapeError, match="contraction sizes differ"):
        parse_kernel(kernel_text(LOAD, "    %y = dot(%x, %x) : f32[bq, bq]"))


def test_parser_is_built_once() -> None:
    assert _lark() is _lark()


def test_lark_is_imported_lazily() -> None:
    code = (
        "import sys, fadsl.cli, fadsl.ir.text.parser, fadsl.commands.ir_cmd;"
        "print('lark' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "False"


ERROR_CASES = {
    "missing_type": [LOAD.replace(" : f16[bq, D]", ""), STORE],
    "missing_percent": [LOAD.replace("%x =", "x =")],
    "unknown_op": [LOAD, "    %y = row_maxx(%x) : f16[bq]"],
    "missing_brace": [LOAD, "    for j in 0 .. 4 {"],
    "extra_brace": ["  }"],
    "missing_comma": [LOAD.replace("src = q,", "src = q")],
    "undefined_value": ["    %y = exp(%x) : f16[bq, D]"],
    "operand_without_percent": [LOAD, "    %y = exp(x) : f16[bq, D]"],
    "unknown_attribute": [LOAD.replace("index =", "indx =")],
    "declared_type_differs": [LOAD, "    %y = exp(%x) : f32[bq, D]"],
    "value_escapes_loop": [
        "    for j in 0 .. 4 {",
        "  " + LOAD,
        "    }",
        "    %y = exp(%x) : f16[bq, D]",
    ],
    "undefined_symbol": [LOAD.replace("bq*i", "bk*i")],
    "unexpected_character": [LOAD.replace(" : ", " ; ")],
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_error_message(case: str, golden) -> None:
    with pytest.raises(FadslError) as info:
        parse_kernel(kernel_text(*ERROR_CASES[case]), "bad.fir")
    golden(info.value.render() + "\n", "err")


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ("{dtype = true}", "attribute `dtype` of `cast`: expected a name"),
        ("{dtype = f33}", "`f33` is not one of f16, bf16, f32"),
        ("{dtype = f32, dtype = f16}", "attribute `dtype` is given twice"),
        ("", "`cast` needs attribute(s) dtype"),
    ],
)
def test_attribute_values_follow_the_field_type(attrs: str, message: str) -> None:
    text = kernel_text(LOAD, f"    %y = cast(%x) {attrs} : f32[bq, D]")
    with pytest.raises(IRParseError, match=re.escape(message)):
        parse_kernel(text)


def test_wrong_operand_kind_is_a_parse_error() -> None:
    text = kernel_text(LOAD, "    %s = alloc_tensor(%x) : f16[bq, D]")
    with pytest.raises(IRParseError, match="does not take operands of these kinds"):
        parse_kernel(text)


def _random_int_expr(rng: random.Random, depth: int = 0) -> sympy.Expr:
    if depth > 3 or rng.random() < 0.3:
        if rng.random() < 0.6:
            return isym(rng.choice("abc"))
        return sympy.Integer(rng.randint(-5, 5))
    a = _random_int_expr(rng, depth + 1)
    b = _random_int_expr(rng, depth + 1)
    build = rng.choice(
        [
            lambda: a + b,
            lambda: a - b,
            lambda: a * b,
            lambda: -a,
            lambda: a**2,
            lambda: sympy.Min(a, b),
            lambda: sympy.Max(a, b),
            lambda: CeilDiv(a, b) if b != 0 else a,
            lambda: FloorDiv(a, b) if b != 0 else a,
        ]
    )
    return build()  # type: ignore[no-any-return]


def test_index_expressions_round_trip_through_text() -> None:
    rng = random.Random(0)
    loc = Loc("<x>", 1)
    for _ in range(300):
        e = _random_int_expr(rng)
        assert parse_expr(to_text(e), loc) == e, to_text(e)
    a, b = isym("a"), isym("b")
    product = sympy.Mul(-3, a + 1, sympy.Min(a, b) ** -1)  # sympy keeps (a + 1) whole
    assert parse_expr(to_text(product), loc) == product


def test_bad_function_arguments_are_parse_errors() -> None:
    with pytest.raises(IRParseError, match="`mod` cannot take these arguments"):
        parse_expr("mod(a, 0)", Loc("<x>", 1))
