"""Random and mutated textual IR.

The corpus is the printed IR of ``examples/fa2.py`` (as read, causal and not, and
after the whole pass pipeline, which adds queues and memory spaces) plus every
``tests/ir_samples/*.fir``. ``mutated_ir`` applies a few edits to one of them: replace,
delete, duplicate or insert a token, delete, duplicate or swap lines, or put Python in
some position. ``random_ir`` is a soup of IR tokens or arbitrary characters.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
FA2 = ROOT / "examples" / "fa2.py"
SAMPLES = sorted((ROOT / "tests" / "ir_samples").glob("*.fir"))

TOKEN = re.compile(
    r"%?[A-Za-z_][A-Za-z0-9_]*|\d+\.\d+(e[+-]?\d+)?|\d+|\+:|\*\*|\.\.|\S"
)

SMALL_NUMBERS = ("0", "1", "2", "3", "-1", "17", "64", "0.5", "-inf", "inf")
"""Numbers for IR that the interpreter runs: any of them keeps an example quick."""
HUGE_NUMBERS = ("99999999999999999999", "1e308", "1e-320", "123456789012", "-99999")
WORDS = (
    "kernel",
    "in",
    "out",
    "scratch",
    "scalar",
    "consts",
    "symbols",
    "grid",
    "for",
    "iter",
    "yield",
    "queue",
    "pipelined",
    "serial",
    "true",
    "false",
    "none",
    "f16",
    "bf16",
    "f32",
    "i32",
    "i1",
    "u8",
    "UB",
    "L1",
    "L0A",
    "L0C",
    "GM",
    "VECIN",
    "VECOUT",
    "load",
    "store",
    "dot",
    "exp",
    "cast",
    "full",
    "where",
    "row_max",
    "row_sum",
    "expand_dims",
    "arange",
    "alloc_tensor",
    "enqueue",
    "dequeue",
    "free_tensor",
    "queue_alloc",
    "load_scalar",
    "mul",
    "add",
    "lt",
    "cdiv",
    "floordiv",
    "mod",
    "min",
    "max",
    "sqrt",
    "src",
    "dst",
    "index",
    "pad",
    "dtype",
    "shape",
    "value",
    "axis",
    "stages",
    "transpose_b",
    "start",
    "size",
    "tile",
    "buffers",
    "position",
    "D",
    "Sq",
    "block_q",
    "i",
    "j",
    "b",
    "%qt",
    "%s",
    "%m",
    "%x",
    "%slot",
    '"text"',
)
PUNCT = (
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "<",
    ">",
    ",",
    ":",
    "=",
    "+:",
    "..",
    "**",
    "+",
    "-",
    "*",
    "/",
    "@",
    "#",
    "\n",
    "%",
)
PYTHON = (
    "__import__('os').system('touch PWNED')",
    "exec('1')",
    'eval("1+1")',
    "lambda: 0",
    "open('/etc/passwd').read()",
    "[x for x in ()]",
)


@functools.lru_cache(maxsize=None)
def corpus() -> tuple[str, ...]:
    """The IR texts that mutations start from."""
    from fadsl.frontend.kernel import KernelDef
    from fadsl.ir.text.printer import print_kernel
    from fadsl.passes import run_pipeline
    from fadsl.driver.source import load_source

    (fa2,) = [d for d in load_source(str(FA2)).defs if isinstance(d, KernelDef)]
    kernels = [fa2.build({"causal": c}) for c in (False, True)]
    texts = [print_kernel(k) for k in kernels]
    texts.append(print_kernel(run_pipeline(kernels[1])))
    texts += [p.read_text(encoding="utf-8") for p in SAMPLES]
    return tuple(texts)


def _edit(draw: Callable, text: str, numbers: tuple[str, ...]) -> str:  # type: ignore[type-arg]
    tokens = list(TOKEN.finditer(text))
    if not tokens:
        return text + draw(st.sampled_from(WORDS))
    m = tokens[draw(st.integers(0, len(tokens) - 1))]
    pool = WORDS + PUNCT + numbers
    action = draw(
        st.sampled_from(
            (
                "replace",
                "replace",
                "number",
                "delete",
                "duplicate",
                "insert",
                "lines",
                "python",
            )
        )
    )
    if action == "replace":
        return text[: m.start()] + draw(st.sampled_from(pool)) + text[m.end() :]
    if action == "number":
        return text[: m.start()] + draw(st.sampled_from(numbers)) + text[m.end() :]
    if action == "delete":
        return text[: m.start()] + text[m.end() :]
    if action == "duplicate":
        return text[: m.end()] + " " + m.group(0) + text[m.end() :]
    if action == "insert":
        return text[: m.start()] + draw(st.sampled_from(pool)) + " " + text[m.start() :]
    if action == "python":
        return text[: m.start()] + draw(st.sampled_from(PYTHON)) + text[m.end() :]
    return _edit_lines(draw, text)


def _edit_lines(draw: Callable, text: str) -> str:  # type: ignore[type-arg]
    lines = text.split("\n")
    i = draw(st.integers(0, len(lines) - 1))
    j = draw(st.integers(0, len(lines) - 1))
    action = draw(st.sampled_from(("delete", "duplicate", "swap")))
    if action == "delete":
        del lines[i]
    elif action == "duplicate":
        lines.insert(j, lines[i])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


@st.composite
def mutated_ir(draw: Callable, huge: bool = True) -> str:  # type: ignore[type-arg]
    """One corpus text with 1-3 edits; ``huge=False`` keeps numbers small."""
    text = draw(st.sampled_from(corpus()))
    numbers = SMALL_NUMBERS + (HUGE_NUMBERS if huge else ())
    for _ in range(draw(st.integers(1, 3))):
        text = _edit(draw, text, numbers)
    return text


def random_ir() -> st.SearchStrategy[str]:
    """Token soup that starts like a kernel, or arbitrary text."""
    soup = st.lists(
        st.sampled_from(WORDS + PUNCT + SMALL_NUMBERS + HUGE_NUMBERS), max_size=60
    ).map(lambda ts: "kernel k(" + " ".join(ts))
    return st.one_of(soup, st.text(max_size=200))
