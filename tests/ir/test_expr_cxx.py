"""C++ printing of integer expressions: floor division and modulo bind as one operand."""

from __future__ import annotations

from fadsl.ir.expr import FloorDiv, isym
from fadsl.ir.expr_print import to_cxx


def test_floor_division_inside_a_product_is_parenthesised() -> None:
    h, n, nkv, d = (isym(x) for x in ("h", "N", "Nkv", "D"))
    text = to_cxx(d * FloorDiv(h, FloorDiv(n, nkv)))
    # left-to-right C++ would read D * h / (N / Nkv) as (D * h) / (N / Nkv)
    assert text in ("D * ((h) / (((N) / (Nkv))))", "((h) / (((N) / (Nkv)))) * D")
    env = {"h": 5, "N": 8, "Nkv": 2, "D": 64}
    assert eval(text.replace("/", "//"), {}, env) == 64 * (5 // 4)


def test_a_square_tiles_element_count_prints_as_a_product() -> None:
    # a [D, D] tile (the rotary pairing matrix) has D**2 elements: sympy keeps a Pow
    d, b = isym("D"), isym("block_q")
    text = to_cxx(d * d * b)
    assert eval(text, {}, {"D": 64, "block_q": 16}) == 64 * 64 * 16
    assert eval(to_cxx((d + 1) ** 3), {}, {"D": 3}) == 64
