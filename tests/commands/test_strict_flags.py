"""Flags read numbers and names strictly (issue 13, item 7).

Python's int() reads ``64_0`` as 640 and other scripts' digits (``٦٤``) as 64; an
empty --target silently meant the default; --timeout 0 and negative timeouts were
accepted. Each is now refused with a message that says what to write.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from fadsl.cli import main

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")
SMALL = "B=1,N=1,Sq=16,Skv=16,D=16"


def cli(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
    return code, err.getvalue()


@pytest.mark.parametrize("size", ["64_0", "٦٤", "６４", "+64_0"])
def test_shape_sizes_are_ascii_digits(size: str) -> None:
    code, err = cli("check", FA2, "--shape", f"B=1,N=1,Sq={size},Skv=64,D=64")
    assert code == 1, err
    assert f"--shape Sq={size}: expected a positive integer" in err
    assert "digits 0-9 only" in err


@pytest.mark.parametrize("value", ["6_4", "٦٤"])
def test_set_constants_are_ascii_digits(value: str) -> None:
    code, err = cli("check", FA2, "--shape", SMALL, "--set", f"block_q={value}")
    assert code == 1 and f"--set block_q={value}: expected an integer" in err, err


def test_set_scalar_with_underscore_is_not_a_number(tmp_path: Path) -> None:
    out = str(tmp_path / "o")
    code, err = cli("run", FA2, "--shape", SMALL, "--set", "scale=0_5", "-o", out)
    assert code == 1 and "the scalar `scale` takes a number" in err, err


@pytest.mark.parametrize(
    "argv",
    [
        ("check", FA2, "--shape", SMALL, "--block-dim", "1_0"),
        ("tune", FA2, "--shape", SMALL, "--top", "٣"),
        ("timeline", FA2, "--shape", SMALL, "--iterations", "4_0"),
        ("run", FA2, "--shape", SMALL, "--seed", "1_0", "-o", "OUT"),
        ("run", FA2, "--shape", SMALL, "--inputs", "", "-o", "OUT"),
    ],
)
def test_integer_flags_are_ascii_digits(argv: tuple[str, ...], tmp_path: Path) -> None:
    code, err = cli(*(str(tmp_path / "o") if a == "OUT" else a for a in argv))
    assert code == 2 and "error: argument" in err, err


@pytest.mark.parametrize("flag", ["--target", "--target-file"])
@pytest.mark.parametrize("cmd", ["check", "compile", "timeline"])
def test_an_empty_target_is_refused(flag: str, cmd: str, tmp_path: Path) -> None:
    out = tmp_path / "o"
    argv = {
        "check": ("check", FA2, "--shape", SMALL, flag, ""),
        "compile": ("compile", FA2, flag, " ", "-o", str(out)),
        "timeline": ("timeline", FA2, "--shape", SMALL, flag, "", "-o", f"{out}.svg"),
    }[cmd]
    code, err = cli(*argv)
    assert code == 1 and f"fadsl: usage error[E59]: {flag} is empty" in err, err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("timeout", ["0", "-5", "0.0", "-0", "nan", "inf", "1_0"])
def test_sim_timeout_must_be_positive(timeout: str, tmp_path: Path) -> None:
    out = tmp_path / "o"
    code, err = cli("sim", FA2, "--shape", SMALL, "--timeout", timeout, "-o", str(out))
    head = rf"fadsl: usage error(\[E60\])?: --timeout {re.escape(timeout)}: expected"
    assert code == 1 and re.match(head, err), err
    assert not out.exists()
