"""A loop in which the cube only sends (plan/sync/slot_free.py): S_j = Q K_j^T each iteration,
reduced by the vector cores into a loop-carried row max, nothing sent back to the cube.
Without a "slot free" flag the cube overwrote S's one workspace slot before the vector
cores read it, and the CPU runtime stopped the kernel ("a workspace slot overwritten
before its consumer released it")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fadsl import cli

ROWMAX = """\
import fadsl as fd


def reference(inputs, shape, consts, dtype=None):
    import numpy as np

    q, k = (inputs[n].astype(np.float64) for n in ("q", "k"))
    return {"m": np.einsum("bhqd,bhkd->bhqk", q, k).max(axis=-1)}


@fd.kernel(dtype="fp16", default_shape=dict(B=1, N=1, Sq=128, Skv=512, D=64),
           reference=reference)
def rowmax(
    q: fd.In("B", "N", "Sq", "D"),
    k: fd.In("B", "N", "Skv", "D"),
    m: fd.Out("B", "N", "Sq", dtype=fd.f32),
    block_q: int = 128,
    block_kv: int = 128,
):
    B, N, Sq, D = q.shape
    Skv = k.shape[2]
    for b, h, i in fd.grid(B, N, fd.cdiv(Sq, block_q)):
        rows = fd.ds(i * block_q, block_q)
        qt = fd.load(q[b, h, rows, :], pad=0)
        mx = fd.full((block_q,), -fd.inf, fd.f32)
        for j in fd.pipelined(fd.cdiv(Skv, block_kv)):
            kt = fd.load(k[b, h, fd.ds(j * block_kv, block_kv), :], pad=0)
            s = fd.dot(qt, kt, transpose_b=True)
            keep = fd.arange(j * block_kv, block_kv)[None, :] < Skv
            s = fd.where(keep, s, -fd.inf)
            mx = fd.maximum(mx, fd.row_max(s))
        fd.store(m[b, h, rows], mx * 1.0)
"""


def _kernel(tmp_path: Path) -> Path:
    src = tmp_path / "rowmax.py"
    src.write_text(ROWMAX)
    return src


def test_the_cube_waits_for_the_slot_of_a_result_nothing_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The generated code: the vector cores free S's slot after their read; the cube
    waits before each rewrite and once after the loop; check names the flag."""
    src = _kernel(tmp_path)
    assert cli.main(["compile", str(src), "-o", str(tmp_path / "gen")]) == 0
    code = (tmp_path / "gen" / "rowmax_kernel.cpp").read_text()
    assert "constexpr uint16_t FLAG_S_FREE = 1;" in code
    assert "AscendC::CrossCoreSetFlag<2, PIPE_MTE2>(FLAG_S_FREE);" in code
    assert code.count("AscendC::CrossCoreWaitFlag(FLAG_S_FREE);") == 2
    capsys.readouterr()
    assert cli.main(["check", str(src)]) == 0
    assert "slot-free flag: %s (rowmax.py:" in capsys.readouterr().out


@pytest.mark.cpu_runtime
@pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
def test_a_loop_where_the_cube_only_sends_agrees_with_the_interpreter(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # 50 tasks on 24 cores: some cores run 2 or 3 tasks, so the next task's first
    # write of S follows the previous task's last read (the wait after the loop);
    # Skv = 520: five KV iterations, the last one a tail; Sq = 100: a row tail.
    args = ["sim", str(_kernel(tmp_path)), "--target", "ascend910b2"]
    args += ["--shape", "B=2,N=25,Sq=100,Skv=520,D=64", "-o", str(tmp_path / "sim")]
    code = cli.main(args)
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "PASS" in out.out
