"""Masks that mix a condition on positions with one on the batch or head (issue 12, 2).

``(q_idx >= kv_idx) | (h >= 2)`` is a FlexAttention mask: the head condition is the same
for every score of a task, so fadsl spreads it over a short vector that broadcasts
against the position mask. Checked against a numpy float64 attention written out here,
in the interpreter and, built with g++, in the CPU runtime. ``~`` on a head condition
is a logical not in the reference too (FlexAttention passes ``h`` as a tensor).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from attkit import NEEDS_GXX, assert_passes, run, sim_source

import fadsl as fd


def causal_or_late_heads(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) | (h >= 2)


def not_first_head_or_causal(b, h, q_idx, kv_idx):
    return ~(h < 1) | (q_idx >= kv_idx)


def causal_in_batch_0(b, h, q_idx, kv_idx):
    return (b == 0) & (q_idx >= kv_idx) | (kv_idx < 8) & True


def halve_head_1_of_batch_0(score, b, h, q_idx, kv_idx):
    return fd.where((h >= 1) & (b < 1), score * 0.5, score)


MASKS = {
    "causal_or_late_heads": lambda b, h, q, kv: (q >= kv) | (h >= 2),
    "not_first_head_or_causal": lambda b, h, q, kv: (h >= 1) | (q >= kv),
    "causal_in_batch_0": lambda b, h, q, kv: (b == 0) & (q >= kv) | (kv < 8),
}
KERNELS = {name: fd.attention(name=name, mask_mod=globals()[name]) for name in MASKS}
KERNELS["halve_head_1_of_batch_0"] = fd.attention(
    name="halve_head_1_of_batch_0", score_mod=halve_head_1_of_batch_0
)


def reference(name: str, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """float64 attention of layout BNSD with the variant's mod, in plain numpy."""
    q, k, v = (inputs[n].astype(np.float64) for n in ("q", "k", "v"))
    s = q @ k.transpose(0, 1, 3, 2) * q.shape[-1] ** -0.5
    nb, nh, sq, skv = s.shape
    b, h = np.arange(nb)[:, None, None, None], np.arange(nh)[None, :, None, None]
    qi, ki = np.arange(sq)[:, None], np.arange(skv)[None, :]
    if name in MASKS:
        s = np.where(MASKS[name](b, h, qi, ki), s, -np.inf)
    else:
        s = np.where((h >= 1) & (b < 1), s * 0.5, s)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isneginf(m), 0.0, m))
    l = p.sum(axis=-1, keepdims=True)
    return (p @ v) / np.where(l == 0.0, 1.0, l)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_scalar_condition_with_a_tile_mask_in_the_interpreter(name: str) -> None:
    r = run(KERNELS[name], dict(B=2, N=3, Sq=100, Skv=80, D=32))
    assert_passes(r)
    o = r.out["o"].astype(np.float64)
    np.testing.assert_allclose(o, reference(name, r.inputs), rtol=0, atol=3e-3)


SOURCE = """
import fadsl as fd


def mask(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) | (h >= 2)


kernel = fd.attention(name="causal_or_late_heads", mask_mod=mask)
"""


@pytest.mark.cpu_runtime
@NEEDS_GXX
def test_scalar_condition_with_a_tile_mask_in_the_cpu_runtime(tmp_path: Path) -> None:
    data, _ = sim_source(SOURCE, dict(B=1, N=4, Sq=100, Skv=80, D=32), tmp_path)
    ref = reference("causal_or_late_heads", data)
    np.testing.assert_allclose(data["o"].astype(np.float64), ref, rtol=0, atol=3e-3)
