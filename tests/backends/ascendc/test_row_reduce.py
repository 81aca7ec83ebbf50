"""Row reductions keep one value per row and 256-byte column chunk in UB, not a
256-byte row (fadsl_tile.h RowReduce), so FA2 with 128 rows per vector core -- the
cube computing 256 rows of S per K/V load, as CANN's kernel does -- fits the 910B UB
(issue 16, item 2). Rows of whole 256-byte repeats reduce by BlockReduce levels and one
WholeReduce a row (RowReduceBlocks, issue 27): 128, 192 and 1024 columns (one and two
levels); 80 columns take the chunk path. ``fadsl sim`` runs each against the interpreter.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fadsl.cli import main

ROOT = Path(__file__).resolve().parents[3]
FA2 = ROOT / "examples" / "fa2.py"
SHAPE = "B=1,N=8,Sq=16384,Skv=16384,D=128"


def test_fa2_with_128_rows_per_vector_core_fits_the_910b_ub(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["check", str(FA2), "--target", "ascend910b2", "--shape", SHAPE]
    assert main(argv + ["--set", "block_q=256", "--set", "block_kv=128"]) == 0
    out = capsys.readouterr().out
    assert "fa2 fits on ascend910b2" in out


@pytest.mark.cpu_runtime
@pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
@pytest.mark.parametrize(
    "consts,shape",
    [
        (("block_q=256", "block_kv=128"), "B=1,N=1,Sq=300,Skv=333,D=128"),  # 2 chunks
        (("block_kv=192",), "B=1,N=1,Sq=130,Skv=400,D=64"),  # 3 chunks
        (("block_kv=80",), "B=1,N=1,Sq=130,Skv=200,D=64"),  # 64 + 16: chunks
        (("block_kv=1024", "block_q=64"), "B=1,N=1,Sq=70,Skv=1500,D=32"),  # 2 levels
    ],
)
def test_sim_row_reductions_over_column_chunks(
    tmp_path: Path, consts: tuple[str, ...], shape: str
) -> None:
    out = tmp_path / "sim"
    sets = [x for c in consts for x in ("--set", c)]
    cmd = [sys.executable, "-m", "fadsl", "sim", str(FA2), *sets]
    cmd += ["--shape", shape, "-o", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["check"]["o"]["passed"]
    agree = meta["vs_interpreter"]["o"]
    assert agree["nonfinite_mismatch"] == 0
    assert agree["max_abs_diff"] <= 4 * 2.0**-10 * max(agree["max_abs"], 1.0)
