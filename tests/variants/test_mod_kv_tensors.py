"""A score_mod that reads an extra tensor at ``kv_idx`` in a kernel without a mask_mod.

Without a mask_mod the KV loop is pipelined, so the block of the extra tensor is a queue
load (issue 12, defect 1): its buffer must stay held until the last use of every view of
it (``expand_dims``), and an integer block (PyTorch's ``test_seq_masking``) is widened to
f32 after the dequeue, never in the queue slot. Checked against a numpy float64
attention written out here (not fadsl's own reference), in the interpreter and, built
with g++, in the CPU runtime.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from attkit import NEEDS_GXX, assert_passes, run, sim_source

import fadsl as fd

tok_scale = fd.tensor("tok_scale", "Skv", dtype="fp32")
seq = fd.tensor(
    "seq", "Skv", dtype="i32", init=lambda shape, rng: np.arange(shape[0]) * 3 // 70
)


def token_bias(score, b, h, q_idx, kv_idx):
    return score + tok_scale[kv_idx]


def same_seq(score, b, h, q_idx, kv_idx):  # PyTorch test_seq_masking, as written
    return fd.where(seq[q_idx] == seq[kv_idx], score, -fd.inf)


KERNELS = {
    "token_bias": fd.attention(name="token_bias", score_mod=token_bias),
    "token_bias_causal": fd.attention(
        name="token_bias_causal", score_mod=token_bias, causal=True
    ),
    "same_seq": fd.attention(name="same_seq", score_mod=same_seq),
}


def reference(name: str, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """float64 attention of layout BNSD with the variant's score_mod, in plain numpy."""
    q, k, v = (inputs[n].astype(np.float64) for n in ("q", "k", "v"))
    s = q @ k.transpose(0, 1, 3, 2) * q.shape[-1] ** -0.5
    sq, skv = s.shape[-2:]
    if name.startswith("token_bias"):
        s = s + inputs["tok_scale"].astype(np.float64)[None, None, None, :]
    if name == "token_bias_causal":  # bottom-right aligned
        keep = np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq)
        s = np.where(keep, s, -np.inf)
    if name == "same_seq":
        ids = inputs["seq"]
        s = np.where(ids[:sq, None] == ids[None, :], s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isneginf(m), 0.0, m))
    l = p.sum(axis=-1, keepdims=True)
    return (p @ v) / np.where(l == 0.0, 1.0, l)


SHAPES = [
    dict(B=1, N=2, Sq=100, Skv=150, D=32),  # three KV blocks of 64, a tail in each dim
    dict(B=1, N=1, Sq=40, Skv=50, D=32),  # a single KV block
]


@pytest.mark.parametrize("shape", SHAPES, ids=["blocks", "one_block"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kv_indexed_tensor_in_the_interpreter(name: str, shape: dict) -> None:
    r = run(KERNELS[name], shape)
    assert_passes(r)
    o = r.out["o"].astype(np.float64)
    assert np.isfinite(o).all()
    np.testing.assert_allclose(o, reference(name, r.inputs), rtol=0, atol=3e-3)


SOURCE = """
import numpy as np
import fadsl as fd

tok_scale = fd.tensor("tok_scale", "Skv", dtype="fp32")
seq = fd.tensor(
    "seq", "Skv", dtype="i32", init=lambda shape, rng: np.arange(shape[0]) * 3 // 70
)


def token_bias(score, b, h, q_idx, kv_idx):
    return score + tok_scale[kv_idx]


def same_seq(score, b, h, q_idx, kv_idx):
    return fd.where(seq[q_idx] == seq[kv_idx], score, -fd.inf)


kernel = fd.attention(name="{name}", score_mod={name})
"""


@pytest.mark.cpu_runtime
@NEEDS_GXX
@pytest.mark.parametrize("name", ["token_bias", "same_seq"])
def test_kv_indexed_tensor_in_the_cpu_runtime(name: str, tmp_path: Path) -> None:
    shape = dict(B=1, N=1, Sq=64, Skv=150, D=32)
    data, _ = sim_source(SOURCE.replace("{name}", name), shape, tmp_path)
    extra = ("tok_scale", np.float32) if name == "token_bias" else ("seq", np.int32)
    data[extra[0]] = np.fromfile(tmp_path / "sim" / f"{extra[0]}.bin", extra[1])
    np.testing.assert_allclose(
        data["o"].astype(np.float64), reference(name, data), rtol=0, atol=3e-3
    )
