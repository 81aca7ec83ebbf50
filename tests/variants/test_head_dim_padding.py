"""Head dims that are not a multiple of 16 on the compiled path (issue 12, defect 9).

``fadsl run`` takes any head dim; the cube works on 16 x 16 fractals, so the compiled
path pads D as FlashAttention does (zero columns in L1/UB, never written to GM):
``check`` counts the padded sizes (D=40 costs what D=48 costs), ``compile`` writes the
project, and ``sim`` computes what a numpy float64 attention written out here computes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from attkit import NEEDS_GXX, ROOT, sim_source

SHAPE = "B=1,N=2,Sq=128,Skv=128"


def _fadsl(*argv: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "fadsl", *argv]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)


def _check(example: str, d: int) -> dict:
    proc = _fadsl(
        "check", f"examples/{example}.py", "--shape", f"{SHAPE},D={d}", "--json"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _used(report: dict) -> dict[str, int]:
    return {s["space"]: s["used"] for s in report["spaces"]}


@pytest.mark.parametrize("example", ["causal", "fa2", "gqa"])
@pytest.mark.parametrize("d", [40, 59, 111])
def test_check_counts_the_padded_head_dim(example: str, d: int) -> None:
    padded = -(-d // 16) * 16
    assert _used(_check(example, d)) == _used(_check(example, padded))


def test_compile_accepts_an_unaligned_head_dim(tmp_path: Path) -> None:
    out = tmp_path / "proj"
    proc = _fadsl(
        "compile", "examples/causal.py", "--shape", f"{SHAPE},D=40", "-o", str(out)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kernel = (out / "causal_kernel.cpp").read_text()
    assert "fadsl::ZeroTailCols(" in kernel  # the padding columns of q, k, v are zeroed
    assert "constexpr int64_t D = 40;" in kernel


SOURCE = """
import fadsl as fd

kernel = fd.attention(name="padded", causal=True, layout="{layout}")
"""


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """float64 causal attention (bottom-right aligned), BNSD, in plain numpy."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) * q.shape[-1] ** -0.5
    sq, skv = s.shape[-2:]
    keep = np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq)
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isneginf(m), 0.0, m))
    l = p.sum(axis=-1, keepdims=True)
    return (p @ v) / np.where(l == 0.0, 1.0, l)


@pytest.mark.cpu_runtime
@NEEDS_GXX
@pytest.mark.parametrize("d", [40, 59])
def test_sim_of_an_unaligned_head_dim(d: int, tmp_path: Path) -> None:
    shape = dict(B=1, N=2, Sq=100, Skv=80, D=d)
    data, _ = sim_source(SOURCE.replace("{layout}", "BNSD"), shape, tmp_path)
    ref = reference(data["q"], data["k"], data["v"])
    np.testing.assert_allclose(data["o"].astype(np.float64), ref, rtol=0, atol=3e-3)
