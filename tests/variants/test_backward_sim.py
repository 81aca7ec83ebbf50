"""``fd.attention_backward`` variants through ``fadsl sim``: the generated MIX kernel
(two row blocks, dQ by atomic adds) on fadsl's CPU runtime against the interpreter and
the float64 gradients, with tails in Sq and Skv.

Tolerance against the interpreter: both compute the same f32 products and sums in the
same order, except dQ's atomic adds, which the CPU runtime's cores add in whatever order
their threads reach GM; each output rounds to fp16/bf16 once, so they may differ by a
few units in the last place of the output dtype (bound 2^-7 of the largest value for
fp16 and 2^-5 for bf16's 8-bit mantissa). The gradients must also pass the section-4
rule (``PASS`` from sim).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

VARIANTS = """import numpy as np

import fadsl as fd

slopes = fd.tensor(
    "slopes",
    "N",
    init=lambda shape, rng: -(2.0 ** (-8.0 * (np.arange(shape[0]) + 1) / shape[0])),
)


doc = fd.tensor(
    "doc", "Skv", dtype="i32", init=lambda shape, rng: np.sort(rng.integers(0, 4, shape))
)


def alibi(score, b, h, q_idx, kv_idx):
    return score + slopes[h] * (q_idx - kv_idx)


def same_doc(b, h, q_idx, kv_idx):
    return doc[q_idx] == doc[kv_idx]


plain = fd.attention_backward(name="bwd_plain")
causal = fd.attention_backward(name="bwd_causal", causal=True)
softcap = fd.attention_backward(name="bwd_softcap", softcap=30.0)
window = fd.attention_backward(name="bwd_window", window=(64, 16))
alibi_bwd = fd.attention_backward(name="bwd_alibi", score_mod=alibi, causal=True)
dropout = fd.attention_backward(name="bwd_dropout", dropout_p=0.1)
docmask = fd.attention_backward(name="bwd_doc", mask_mod=same_doc)
"""

CASES = [
    ("bwd_plain", "fp16", "B=2,N=2,Sq=150,Skv=200,D=64"),
    ("bwd_causal", "fp16", "B=1,N=8,Nkv=2,Sq=300,Skv=200,D=64"),  # GQA, Sq > Skv
    ("bwd_softcap", "bf16", "B=1,N=4,Nkv=2,Sq=200,Skv=300,D=64"),
    ("bwd_window", "fp16", "B=1,N=2,Sq=300,Skv=260,D=64"),
    ("bwd_alibi", "fp16", "B=1,N=4,Sq=200,Skv=300,D=64"),
    ("bwd_dropout", "fp16", "B=1,N=2,Sq=150,Skv=200,D=64"),
    # two KV loops (cut and whole blocks): L1 queues and flag IDs shared between them
    ("bwd_doc", "fp16", "B=1,N=2,Sq=300,Skv=300,D=64"),
]


@pytest.mark.cpu_runtime
@pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
@pytest.mark.parametrize("kernel, dtype, shape", CASES, ids=[c[0] for c in CASES])
def test_sim_of_a_backward_variant(
    tmp_path: Path, kernel: str, dtype: str, shape: str
) -> None:
    src = tmp_path / "variants.py"
    src.write_text(VARIANTS, encoding="utf-8")
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "--kernel", kernel]
    cmd += ["--dtype", dtype, "--shape", shape, "--set", "block_q=64", "-o", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("PASS"), proc.stdout
    meta = json.loads((out / "meta.json").read_text())
    ulps = 2**-7 if dtype == "fp16" else 2**-5
    for g in ("dq", "dk", "dv"):
        agree = meta["vs_interpreter"][g]
        assert agree["nonfinite_mismatch"] == 0, g
        assert agree["max_abs"] > 0.01, g
        assert agree["max_abs_diff"] <= ulps * agree["max_abs"], (g, agree)


@pytest.mark.cpu_runtime
@pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
def test_dq_cast_phase_has_no_mte2_v_race(tmp_path: Path) -> None:
    """Issue 28: after the SyncAll, each vector core casts its share of dQ's f32 sums in
    1024-element chunks; chunk i+1's DataCopyPad into the `sums` TBuf (MTE2) waited for
    nothing while chunk i's Cast (V) could still read it. One AI core here, so each of
    its two vector cores casts 4 chunks; the sanitizer reports the write-after-read
    unless a V_MTE2 wait follows the Cast. The whole run must be clean: ROWS = 32 here, so
    `where(lse_t == -inf, 0, lse_t)` compares a whole 64-lane repeat, and the lanes past
    the 32 rows must have been written (they were not, before the pad fill)."""
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", "examples/fa2_bwd.py", "--sanitize"]
    cmd += ["--shape", "B=1,N=1,Sq=128,Skv=128,D=64", "-o", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    text = proc.stdout + proc.stderr
    assert "write-after-read" not in text, text
    assert "sanitize:" not in text, text
    assert proc.returncode == 0, text
    assert proc.stdout.rstrip().endswith("PASS"), text
