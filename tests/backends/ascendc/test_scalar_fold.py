"""Scalars over compile-time symbols are folded (issue 12, defect 10).

The error catalogue's kernel multiplies scores by ``D**-0.5``; D is a ``constexpr`` of
the generated kernel, so the backend computes the factor itself. A scalar over a
symbol known only at run time is refused at the user's line, with a hint.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fadsl.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "errors"))
from catalogue import BASE  # noqa: E402


def test_a_power_of_a_compile_time_symbol_is_folded(tmp_path: Path) -> None:
    (tmp_path / "attn.py").write_text(BASE, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "attn.py"), "-o", str(out)]) == 0
    kernel = (out / "attn_kernel.cpp").read_text()
    assert "AscendC::Muls(s, dot, 0.125f /* D**(-0.5) */, ROWS * BLOCK_KV);" in kernel


def test_a_power_of_a_run_time_symbol_is_refused_at_the_users_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = BASE.replace("* D**-0.5", "* Sq**-0.5")
    (tmp_path / "attn.py").write_text(text, encoding="utf-8")
    assert main(["compile", str(tmp_path / "attn.py"), "-o", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "the scalar Sq**(-0.5) cannot be computed in the kernel: Sq is only " in err
    assert "attn.py:25:17" in err
    assert "hint: compute it on the host: make it a scalar parameter" in err
