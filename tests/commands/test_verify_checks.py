"""fadsl verify does not trust what the expected folder records (issue 12, defect 8).

The bound is 2 x same-precision error + atol: a meta.json recording a huge error
would pass garbage. The record is refused when implausible, recomputed from the
recorded inputs with --kernel-file, and outputs of other shapes or dtypes are refused
naming both.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fadsl.cli import main

FA2 = str(Path(__file__).resolve().parents[2] / "examples" / "fa2.py")
SHAPE = "B=1,N=2,Sq=64,Skv=64,D=64"


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """(expected run folder recording a same-precision error of 1e9, garbage run)."""
    expected = tmp_path / "expected"
    assert main(["run", FA2, "--shape", SHAPE, "-o", str(expected)]) == 0
    garbage = tmp_path / "garbage"
    assert main(["run", FA2, "--shape", SHAPE, "-o", str(garbage)]) == 0
    o = np.fromfile(garbage / "o.bin", np.float16)
    noise = np.random.default_rng(1).standard_normal(o.size).astype(np.float16)
    noise.tofile(garbage / "o.bin")
    meta = json.loads((expected / "meta.json").read_text())
    meta["check"]["o"]["same_precision_error"] = 1e9
    meta["check"]["o"]["bound"] = 2e9
    (expected / "meta.json").write_text(json.dumps(meta))
    return expected, garbage


def verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["verify", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_an_implausible_recorded_error_is_refused(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    expected, garbage = runs
    code, out, err = verify(capsys, str(garbage), str(expected))
    assert code == 1 and "PASS" not in out
    assert (
        "the same-precision error recorded for `o` (1000000000.0) is at least the "
        "largest |value| of the expected output" in err
    )
    assert "--kernel-file" in err


def test_with_the_kernel_file_the_error_is_recomputed(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    expected, garbage = runs
    code, out, _ = verify(capsys, str(garbage), str(expected), "--kernel-file", FA2)
    assert code == 1
    assert (
        "(same-precision error recomputed from the recorded inputs)" in out
        and out.endswith("FAIL\n")
    )
    code, out, _ = verify(capsys, str(expected), str(expected), "--kernel-file", FA2)
    assert code == 0
    bound = float(out.split("bound ")[1].split()[0])
    assert bound < 0.01  # 2 x the real fp16 error + atol, not 2e9


def test_outputs_of_other_shapes_are_refused_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", FA2, "--shape", SHAPE, "-o", str(a)]) == 0
    other = "B=1,N=4,Sq=32,Skv=64,D=64"  # o has as many values as at SHAPE
    assert main(["run", FA2, "--shape", other, "-o", str(b)]) == 0
    code, _, err = verify(capsys, str(b), str(a))
    assert code == 1
    assert (
        f"`o`: {b / 'o.bin'} is float16 [1, 4, 32, 64] but {a / 'o.bin'} is "
        "float16 [1, 2, 64, 64]" in err
    )
    code, _, err = verify(capsys, str(b / "o.bin"), str(a / "o.bin"))
    assert code == 1 and "is float16 [1, 4, 32, 64] but" in err


def test_outputs_of_other_dtypes_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", FA2, "--shape", SHAPE, "-o", str(a)]) == 0
    assert main(["run", FA2, "--shape", SHAPE, "--dtype", "bf16", "-o", str(b)]) == 0
    code, _, err = verify(capsys, str(b), str(a))
    assert code == 1
    assert f"{b / 'o.bin'} is bfloat16 [1, 2, 64, 64] but" in err
