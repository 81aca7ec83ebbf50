"""dot(a, b, transpose_a=True) on the cube: A arrives in L1 as its transpose At [k x m] and
LoadATransposed turns At's NZ fractals into L0A's Zz with LoadData's per-fractal transpose
(the first piece of the backward's Ascend C lowering, docs/backward.md). `fadsl sim` runs the
generated kernel on the CPU runtime against the interpreter, with tails in m, k and n.
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

AT_B = """import fadsl as fd


@fd.kernel(default_shape=dict(B=2, K=64, M=128, N=64))
def at_b(
    x: fd.In("B", "K", "M"{xdtype}),
    y: fd.In("B", "K", "N"{xdtype}),
    out: fd.Out("B", "M", "N", dtype=fd.f32),
    block_m: int = 64,
):
    B, K, M = x.shape
    N = y.shape[2]
    for b, i in fd.grid(B, fd.cdiv(M, block_m)):
        cols = fd.ds(i * block_m, block_m)
        xt = fd.load(x[b, :, cols], pad=0)
        yt = fd.load(y[b, :, :], pad=0)
        fd.store(out[b, cols, :], fd.dot(xt, yt, transpose_a=True))
"""


@pytest.mark.cpu_runtime
@pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
@pytest.mark.parametrize(
    "dtype, shape",
    [("fp16", "B=2,K=40,M=100,N=48"), ("bf16", "B=1,K=300,M=64,N=64")],
)
def test_sim_of_a_transposed_a_dot_agrees_with_the_interpreter(
    tmp_path: Path, dtype: str, shape: str
) -> None:
    src = tmp_path / "at_b.py"
    src.write_text(AT_B.format(xdtype=""), encoding="utf-8")
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "--dtype", dtype]
    proc = subprocess.run(
        cmd + ["--shape", shape, "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    agree = json.loads((out / "meta.json").read_text())["vs_interpreter"]["out"]
    assert agree["nonfinite_mismatch"] == 0
    # f32 outputs of the same products: only the order of the f32 accumulation differs
    assert agree["max_abs"] > 1.0
    assert agree["max_abs_diff"] <= 1e-5 * agree["max_abs"]


def test_a_transposed_f32_a_operand_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "at_b.py").write_text(
        AT_B.format(xdtype=", dtype=fd.f32"), encoding="utf-8"
    )
    assert main(["check", str(tmp_path / "at_b.py")]) == 1
    err = capsys.readouterr().err
    assert "dot(transpose_a=True) with a f32 A operand" in err
    assert "at_b.py:17" in err
