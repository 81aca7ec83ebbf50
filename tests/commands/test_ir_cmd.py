"""``fadsl ir``: .py and .fir inputs, --set/--dtype, --after, and its errors."""

from __future__ import annotations

from pathlib import Path

from fadsl.cli import main
from fadsl.ir.text.parser import parse_kernel
from fadsl.ir.text.printer import print_kernel

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")
SAMPLE = ROOT / "tests" / "ir_samples" / "varlen.fir"


def run(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = main(["ir", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_prints_a_python_kernel_with_constants_and_dtype(capsys) -> None:
    code, out, _ = run(capsys, FA2, "--set", "causal=true", "--dtype", "bf16")
    assert code == 0
    assert out.startswith("kernel fa2(\n    in q: bf16[B, N, Sq, D],")
    assert "causal = true" in out
    assert parse_kernel(out) is not None


def test_after_a_pass(capsys) -> None:
    _, before, _ = run(capsys, FA2)
    code, after, _ = run(capsys, FA2, "--after", "infer_types")
    assert code == 0 and after == before


def test_reads_textual_ir(capsys) -> None:
    code, out, _ = run(capsys, str(SAMPLE))
    assert code == 0
    assert out == print_kernel(parse_kernel(SAMPLE.read_text(encoding="utf-8")))


def test_unknown_pass_lists_the_valid_names(capsys) -> None:
    code, _, err = run(capsys, FA2, "--after", "infer_type")
    assert code == 1
    assert "there is no pass named 'infer_type'" in err
    assert "did you mean 'infer_types'?" in err
    assert "passes, in pipeline order: strip_debug, infer_types" in err


def test_a_broken_fir_file_shows_the_caret(capsys, tmp_path) -> None:
    bad = tmp_path / "bad.fir"
    bad.write_text(
        SAMPLE.read_text(encoding="utf-8").replace("%m_i = %m0", "m_i = %m0")
    )
    code, _, err = run(capsys, str(bad))
    assert code == 1
    assert f"--> {bad}:" in err and "^" in err
