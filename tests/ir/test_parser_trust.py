"""The textual-IR parser never executes what it reads.

Python is put at every token position of a kernel that uses every syntactic form
(inserted before the token, and in place of it); each text must be refused with an
IRParseError, and the payload, which would create a marker file, must never run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fadsl.errors import IRParseError
from fadsl.ir.text.parser import parse_kernel

SAMPLE = Path(__file__).resolve().parents[1] / "ir_samples" / "every_form.fir"
TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|%?[A-Za-z_][A-Za-z0-9_]*|\d+\.\d+|\d+|\+:|\*\*|\.\.|\S'
)
"""Tokens of the textual IR; a string literal is one token (its inside is data)."""


def code_text() -> str:
    """The sample without its comment lines (a payload in a comment is only a comment)."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(ln for ln in lines if not ln.lstrip().startswith("#"))


def payloads(marker: Path) -> list[str]:
    return [
        f"__import__('os').system('touch {marker}')",
        f'__import__("os").system("touch {marker}")',
        f"exec(\"open('{marker}', 'w')\")",
    ]


def test_the_sample_itself_parses() -> None:
    assert parse_kernel(code_text()).name == "every_form"


@pytest.mark.parametrize("mode", ["insert", "replace"])
def test_python_at_every_position_is_a_parse_error_without_side_effects(
    tmp_path: Path, mode: str
) -> None:
    marker = tmp_path / "executed"
    text = code_text()
    tokens = list(TOKEN.finditer(text))
    assert len(tokens) > 200
    for i, m in enumerate(tokens):
        payload = payloads(marker)[i % 3]
        end = m.start() if mode == "insert" else m.end()
        evil = text[: m.start()] + payload + text[end:]
        with pytest.raises(IRParseError):
            parse_kernel(evil, "evil.fir")
    assert not marker.exists()


def test_python_inside_a_string_constant_stays_text(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    payload = f"__import__('os').system('touch {marker}')"
    kernel = parse_kernel(code_text().replace('"v1"', f'"{payload}"'))
    assert dict(kernel.consts)["label"] == payload
    assert not marker.exists()
