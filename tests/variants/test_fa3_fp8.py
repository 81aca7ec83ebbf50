"""fa3's fp8 path: it runs in the interpreter anywhere, is refused with a clear error on a
chip whose cube does not take fp8 (every built-in target), and is accepted by the resource
check on a chip that declares fp8 (a target file of your own)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FA3 = ROOT / "examples" / "fa3.py"
SHAPE = "B=1,N=2,Sq=130,Skv=300,D=64"


def _fadsl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fadsl", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_fp8_runs_in_the_interpreter(tmp_path: Path) -> None:
    proc = _fadsl(
        "run",
        str(FA3),
        "--shape",
        SHAPE,
        "--set",
        "fp8=true",
        "--set",
        "causal=true",
        "-o",
        str(tmp_path / "out"),
    )
    assert proc.returncode == 0 and "PASS" in proc.stdout, proc.stdout + proc.stderr


def test_fp8_is_refused_on_a_chip_without_it() -> None:
    proc = _fadsl(
        "check",
        str(FA3),
        "--shape",
        SHAPE,
        "--set",
        "fp8=true",
        "--target",
        "ascend910b1",
    )
    assert proc.returncode == 1
    assert "the cube of ascend910b1 does not take f8e4m3" in proc.stderr
    assert "fa3.py:" in proc.stderr  # names the user's dot


def test_fp8_fits_a_chip_that_declares_it(tmp_path: Path) -> None:
    chip = json.loads((ROOT / "fadsl" / "targets" / "ascend910b1.json").read_text())
    chip.update(name="fp8chip", comment="910B1 with fp8 operands, for this test")
    chip["cube_dtypes"] = chip["cube_dtypes"] + ["f8e4m3"]
    chip["vector_dtypes"] = chip["vector_dtypes"] + ["f8e4m3"]
    path = tmp_path / "fp8chip.json"
    path.write_text(json.dumps(chip))
    proc = _fadsl(
        "check",
        str(FA3),
        "--shape",
        SHAPE,
        "--set",
        "fp8=true",
        "--target-file",
        str(path),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
