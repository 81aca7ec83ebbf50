"""``fadsl check`` on captured-tensor gradients that lower to Ascend C (issue 29, item
3): a gather's gradient keeps an f32 window of sums in UB (its width the window the
gather loaded), a scalar read's a ReduceSum per vector core; both are listed, and the
kernel fits. On main these kernels were refused (E136)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SOURCE = """import fadsl as fd

rel = fd.tensor("rel", "Sq + Skv - 1", requires_grad=True)
alpha = fd.tensor("alpha", "N", requires_grad=True)


def rel_scale(score, b, h, q_idx, kv_idx):
    return score * alpha[h] + rel[q_idx - kv_idx + fd.shape.Skv - 1]


bwd = fd.attention_backward(name="rs_bwd", score_mod=rel_scale, causal=True)
"""


def test_check_lists_the_gradient_windows(tmp_path: Path) -> None:
    src = tmp_path / "rel.py"
    src.write_text(SOURCE, encoding="utf-8")
    cmd = [sys.executable, "-m", "fadsl", "check", str(src)]
    cmd += ["--set", "block_q=64", "--set", "block_kv=64"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # the relative table's window: 16 * cdiv(block_q + block_kv - 1, 16) = 128
    drel = next(x for x in lines if x.startswith("gradient `drel`"))
    assert "a window of 128 f32 sums = 512 B of UB" in drel, drel
    dalpha = next(x for x in lines if x.startswith("gradient `dalpha`"))
    assert "ReduceSum" in dalpha, dalpha
    assert lines[-1].endswith("fits on ascend910b1"), lines[-1]
