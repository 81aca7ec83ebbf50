"""Gradients of captured tensors through ``fadsl sim`` (issue 29, item 3): the block
reads, which lower to ``atomic_add`` as dQ does, and the scalar reads (``alpha[h]``,
ALiBi's ``slopes[h]``), a ReduceSum per vector core added to one element with
``SetAtomicAdd<float>`` (docs/backward.md, "Gradients of the mods' tensors").

A learnable full bias ``bias[h, q_idx, kv_idx]`` times a learnable row scale
``qbias[h, q_idx]`` (its gradient: the row sums) plus ``tanh(key_bias[kv_idx])`` (a
block of columns: the column sums, refused with E136 before), GQA (N=2, Nkv=1),
causal, tails in
Sq and Skv, fp16 and bf16: the generated kernel on fadsl's CPU runtime against the
interpreter (f32 sums in another order: a few f32 units, bounded here by 2^-16 of the
largest value) and the float64 reference by the tolerance rule (``PASS``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SOURCE = """import fadsl as fd

bias = fd.tensor("bias", "N", "Sq", "Skv", init=lambda s, g: g.standard_normal(s),
                 requires_grad=True)
qbias = fd.tensor("qbias", "N", "Sq", init=lambda s, g: g.standard_normal(s),
                  requires_grad=True)


key_bias = fd.tensor("key_bias", "Skv", init=lambda s, g: g.standard_normal(s),
                     requires_grad=True)


def full_bias(score, b, h, q_idx, kv_idx):
    return score + bias[h, q_idx, kv_idx] * qbias[h, q_idx] + fd.tanh(key_bias[kv_idx])


bwd = fd.attention_backward(name="fb_bwd", score_mod=full_bias, causal=True)
"""


@pytest.mark.cpu_runtime
@pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_block_bias_gradients_through_sim(tmp_path: Path, dtype: str) -> None:
    src = tmp_path / "bias.py"
    src.write_text(SOURCE, encoding="utf-8")
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "--dtype", dtype]
    cmd += ["--shape", "B=1,N=2,Nkv=1,Sq=72,Skv=80,D=64", "--set", "block_q=64"]
    proc = subprocess.run(
        cmd + ["-o", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("PASS"), proc.stdout
    meta = json.loads((out / "meta.json").read_text())
    for g in ("dbias", "dqbias", "dkey_bias"):
        agree = meta["vs_interpreter"][g]
        assert agree["atomic"] and agree["nonfinite_mismatch"] == 0, g
        assert agree["max_abs"] > 0.1, g
        assert agree["max_abs_diff"] <= 2.0**-16 * agree["max_abs"], (g, agree)
    assert {"dbias", "dqbias", "dkey_bias"} <= set(meta["check"]), meta["check"]


SCALAR_SOURCE = """import fadsl as fd

slopes = fd.tensor("slopes", "N", init=lambda s, g: g.uniform(0.1, 0.5, s),
                   requires_grad=True)
alpha = fd.tensor("alpha", "N", init=lambda s, g: g.uniform(0.5, 1.5, s),
                  requires_grad=True)


def alibi_scale(score, b, h, q_idx, kv_idx):
    return score * alpha[h] + slopes[h] * (kv_idx - q_idx)


bwd = fd.attention_backward(name="as_bwd", score_mod=alibi_scale, causal=True)
"""


@pytest.mark.cpu_runtime
@pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_scalar_read_gradients_through_sim(tmp_path: Path, dtype: str) -> None:
    """A per-head scale and ALiBi slopes as tensors: every score of a head adds into
    one element. Refused with E136 before ScatterAdd into one element was lowered."""
    src = tmp_path / "scalar.py"
    src.write_text(SCALAR_SOURCE, encoding="utf-8")
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "--dtype", dtype]
    cmd += ["--shape", "B=2,N=4,Nkv=2,Sq=72,Skv=80,D=64", "--set", "block_q=64"]
    proc = subprocess.run(
        cmd + ["-o", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("PASS"), proc.stdout
    meta = json.loads((out / "meta.json").read_text())
    for g in ("dalpha", "dslopes"):
        agree = meta["vs_interpreter"][g]
        assert agree["atomic"] and agree["nonfinite_mismatch"] == 0, g
        assert agree["max_abs"] > 1.0, g
        # f32 sums of ~10^4 terms in another order (per core, per block)
        assert agree["max_abs_diff"] <= 2.0**-12 * agree["max_abs"], (g, agree)
    assert {"dalpha", "dslopes"} <= set(meta["check"]), meta["check"]


GATHER_SOURCE = """import math

import numpy as np

import fadsl as fd

NB, MAX_DIST = 32, 128
rel = fd.tensor("rel", "Sq + Skv - 1", init=lambda s, g: g.standard_normal(s),
                requires_grad=True)
t5 = fd.tensor("t5", "N", NB, init=lambda s, g: g.standard_normal(s),
               requires_grad=True)
document_id = fd.tensor(
    "document_id", "Sq", dtype="i32", init=lambda s, g: np.arange(s[0]) * 3 // s[0]
)
doc_bias = fd.tensor("doc_bias", 4, init=lambda s, g: g.uniform(0.5, 1.5, s),
                     requires_grad=True)


def bucket(rel_pos):
    half, exact = NB // 2, NB // 4
    side = fd.cast(rel_pos > 0, fd.i32) * half
    d = fd.abs(rel_pos)
    big = exact + fd.cast(
        fd.log(fd.cast(fd.maximum(d, 1), fd.f32) / exact)
        / math.log(MAX_DIST / exact)
        * (half - exact),
        fd.i32,
    )
    return side + fd.where(d < exact, d, fd.minimum(big, half - 1))


def gathers(score, b, h, q_idx, kv_idx):
    doc = document_id[q_idx]
    bias = rel[q_idx - kv_idx + fd.shape.Skv - 1] + t5[h, bucket(kv_idx - q_idx)]
    return (score + bias) * doc_bias[doc]


bwd = fd.attention_backward(name="gt_bwd", score_mod=gathers, causal=True)
"""


@pytest.mark.cpu_runtime
@pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_gather_gradients_through_sim(tmp_path: Path, dtype: str) -> None:
    """A relative-position table, T5 buckets per head and a per-document scale (a
    gather by an index read from a tensor, one per row): per window entry a
    CompareScalar / Select / ReduceSum into an f32 UB window, added to GM with one
    atomic DataCopyPad. Refused with E136 before gathers were lowered."""
    src = tmp_path / "gathers.py"
    src.write_text(GATHER_SOURCE, encoding="utf-8")
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "--dtype", dtype]
    cmd += ["--shape", "B=2,N=4,Nkv=2,Sq=72,Skv=80,D=64", "--set", "block_q=64"]
    proc = subprocess.run(
        cmd + ["-o", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("PASS"), proc.stdout
    meta = json.loads((out / "meta.json").read_text())
    for g in ("drel", "dt5", "ddoc_bias"):
        agree = meta["vs_interpreter"][g]
        assert agree["atomic"] and agree["nonfinite_mismatch"] == 0, g
        assert agree["max_abs"] > 0.1, g
        assert agree["max_abs_diff"] <= 2.0**-12 * agree["max_abs"], (g, agree)
    assert {"drel", "dt5", "ddoc_bias"} <= set(meta["check"]), meta["check"]
