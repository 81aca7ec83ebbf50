"""Random fd.attention variants: score_mod / mask_mod bodies and keyword choices.

Bodies are drawn from what FlexAttention users write in mods (docs/variants.md): ``+ - *
/``, comparisons, ``& | ~`` on masks, ``fd.where``, ``fd.exp`` / ``fd.tanh`` /
``fd.abs`` / ``fd.minimum`` / ``fd.maximum`` and Python numbers, over ``score``, ``b``,
``h``, ``q_idx`` and ``kv_idx``. ``variants`` builds a whole file; ``broken_variants``
then applies one typical mistake or a random token edit. Integer ``//`` and ``%`` on
position tiles, and masks of ``b`` / ``h`` alone, are refused by fadsl today (a clean
BackendError / KernelSyntaxError), so they are among the breakages, not the valid mods.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hypothesis import strategies as st

from fuzz_programs import token_edit

POSITIONS = ("q_idx", "kv_idx", "(q_idx - kv_idx)", "(kv_idx - q_idx)")
NUMBERS = ("0.5", "2", "1.5", "3", "0.125", "256", "-1")
SHAPE_ARG = "B=1,N=2,Sq=40,Skv=24,D=16"

FILE = """\
import numpy as np

import fadsl as fd

{defs}
kernel = fd.attention(name="variant"{keywords})
"""


def _position(draw: Callable) -> str:  # type: ignore[type-arg]
    """An integer expression of q_idx or kv_idx (and maybe the head or batch)."""
    term = draw(st.sampled_from(POSITIONS))
    if draw(st.integers(0, 3)) == 0:
        term = f"({term} + {draw(st.sampled_from(('h', 'b', 'h * 8')))})"
    if draw(st.booleans()):
        term = (
            f"{term} {draw(st.sampled_from(('*', '+', '-')))} "
            f"{draw(st.sampled_from(('2', '3', '16')))}"
        )
    return term


def _score(draw: Callable, depth: int = 0) -> str:  # type: ignore[type-arg]
    """A float expression that uses ``score``."""
    if depth > 2 or draw(st.integers(0, 3)) == 0:
        return "score"
    inner = _score(draw, depth + 1)
    kind = draw(st.sampled_from(("arith", "position", "unary", "where", "minmax")))
    if kind == "arith":
        op = draw(st.sampled_from(("+", "-", "*", "/")))
        return f"({inner} {op} {draw(st.sampled_from(NUMBERS))})"
    if kind == "position":
        return f"({inner} - {draw(st.sampled_from(NUMBERS))} * ({_position(draw)}))"
    if kind == "unary":  # no exp: nested, it overflows and the variant fails by numbers
        return f"fd.{draw(st.sampled_from(('tanh', 'abs')))}({inner})"
    if (
        kind == "where"
    ):  # -inf only outermost: `-inf * -1` would be +inf, NaN after softmax
        fill = "-fd.inf" if depth == 0 else "-1e4"
        return f"fd.where({_mask(draw, depth + 1)}, {inner}, {fill})"
    fn = draw(st.sampled_from(("minimum", "maximum")))
    return f"fd.{fn}({inner}, {draw(st.sampled_from(NUMBERS))})"


def _mask(draw: Callable, depth: int = 0) -> str:  # type: ignore[type-arg]
    """A boolean expression of positions."""
    op = draw(st.sampled_from(("<", "<=", ">", ">=", "==", "!=")))
    cmp = f"({_position(draw)} {op} {draw(st.sampled_from(NUMBERS[1:]))})"
    if depth > 1 or draw(st.booleans()):
        return cmp
    other = _mask(draw, depth + 1)
    return draw(
        st.sampled_from((f"({cmp} & {other})", f"({cmp} | {other})", f"~{cmp}"))
    )


@st.composite
def variants(draw: Callable) -> str:  # type: ignore[type-arg]
    """A file defining ``kernel = fd.attention(...)`` with random mods and keywords."""
    defs, keywords = [], []
    if draw(st.booleans()):
        defs.append(
            f"def smod(score, b, h, q_idx, kv_idx):\n    return {_score(draw)}\n"
        )
        keywords.append("score_mod=smod")
    if draw(st.booleans()):
        defs.append(f"def mmod(b, h, q_idx, kv_idx):\n    return {_mask(draw)}\n")
        keywords.append("mask_mod=mmod")
    extras = {
        "causal=True": st.booleans(),
        "softcap=20.0": st.booleans(),
        "window=(8, 0)": st.booleans(),
        "return_lse=True": st.booleans(),
    }
    keywords += [k for k, on in extras.items() if draw(on)]
    if "causal=True" in keywords and "window=(8, 0)" in keywords:
        keywords.remove("window=(8, 0)")
    keywords.append(f'dtype="{draw(st.sampled_from(("fp16", "bf16", "fp32")))}"')
    text = ", ".join(keywords)
    return FILE.format(defs="\n\n".join(defs), keywords=f", {text}" if text else "")


BREAKAGES: dict[str, Callable[[str], str]] = {
    "returns_mask": lambda s: re.sub(r"(def smod.*\n    return ).*", r"\1score > 0", s),
    "returns_number": lambda s: re.sub(r"(def smod.*\n    return ).*", r"\g<1>1.0", s),
    "mask_returns_score": lambda s: re.sub(
        r"(def mmod.*\n    return ).*", r"\1(q_idx - kv_idx) * 0.5", s
    ),
    "numpy_call": lambda s: s.replace("return score", "return np.exp(score)", 1),
    "math_call": lambda s: s.replace("import numpy as np", "import math", 1).replace(
        "return score", "return math.tanh(score)", 1
    ),
    "undefined_name": lambda s: s.replace("return ", "return undefined_thing + ", 1),
    "wrong_arity": lambda s: s.replace(
        "(score, b, h, q_idx, kv_idx)", "(score, q_idx)", 1
    ).replace("(b, h, q_idx, kv_idx)", "(q_idx, kv_idx)", 1),
    "bad_keyword": lambda s: s.replace(
        'name="variant"', 'name="variant", causall=True', 1
    ),
    "bad_window": lambda s: s.replace(
        'name="variant"', 'name="variant", window=(-5, 2)', 1
    ),
    "bad_name": lambda s: s.replace('name="variant"', 'name="variant/x"', 1),
    "bad_dtype": lambda s: re.sub(r'dtype="\w+"', 'dtype="fp64"', s, count=1),
    "io_in_mod": lambda s: s.replace(
        "return ", "open('/nonexistent/x')\n    return ", 1
    ),
    "head_only_mask": lambda s: re.sub(r"(def mmod.*\n    return ).*", r"\1h < 1", s),
    "integer_division": lambda s: s.replace("q_idx", "(q_idx // 2)", 1),
}


@st.composite
def broken_variants(draw: Callable) -> str:  # type: ignore[type-arg]
    """A variant file with one mistake (or a random token edit)."""
    src = draw(variants())
    name = draw(st.sampled_from(sorted(BREAKAGES) + ["token_edit"]))
    if name == "token_edit":
        return token_edit(draw, src)
    return BREAKAGES[name](src)
