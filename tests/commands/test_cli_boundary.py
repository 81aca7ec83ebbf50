"""The CLI's error boundary: closed stdout, out of memory, and what reaches the user."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from fadsl.cli import main
from fadsl.commands import ir_cmd

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")


@pytest.mark.parametrize(
    "argv",
    [["ir", FA2], ["check", FA2, "--shape", "B=1,N=1,Sq=16,Skv=16,D=16"]],
    ids=["ir", "check"],
)
def test_a_closed_stdout_ends_quietly(argv: list[str]) -> None:
    # `fadsl ir fa2.py | head -1`: the reader is gone before fadsl writes anything.
    proc = subprocess.Popen(
        [sys.executable, "-m", "fadsl", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


def test_out_of_memory_is_a_clean_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def exhausted(args: argparse.Namespace) -> int:
        raise MemoryError

    monkeypatch.setattr(ir_cmd, "main", exhausted)
    assert main(["ir", FA2]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fadsl: execution error: out of memory\n")
    assert "choose a smaller --shape" in err


def test_a_bug_is_reported_as_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(ir_cmd, "main", broken)
    assert main(["ir", FA2]) == 70
    err = capsys.readouterr().err
    assert "internal error: ZeroDivisionError: boom" in err
    assert "this is a fadsl bug, please report it" in err
