"""``shared_kv=True`` (issue 29 item 5): k and v of batch 1 broadcast over the B query
batches (a shared prefix), forward and backward (dK, dV summed over the batches),
in the interpreter and through the CPU runtime.

The independent check: the kernel without shared_kv on k and v repeated B times gives
the same o, lse and dq, and per-batch dk, dv that add up to the shared ones.
"""

from __future__ import annotations

import numpy as np
import pytest

import fadsl as fd
from attkit import NEEDS_GXX
from fadsl.errors import FadslError
from fadsl.ir.types import DType
from fadsl.numerics import np_dtype

SHAPE = dict(B=3, N=4, Nkv=2, Sq=100, Skv=150, D=64)
BLOCKS = dict(block_q=64, block_kv=64)


def band(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx) < 40


def alibi(score, b, h, q_idx, kv_idx):
    return score - 0.1 * (h + 1 + b) * (q_idx - kv_idx)


KW = dict(score_mod=alibi, mask_mod=band, causal=True)
FWD = fd.attention(name="skv_fwd", shared_kv=True, return_lse=True, **KW)
FWD_REP = fd.attention(name="skv_fwd_rep", return_lse=True, **KW)
BWD = fd.attention_backward(name="skv_bwd", shared_kv=True, **KW)
BWD_REP = fd.attention_backward(name="skv_bwd_rep", **KW)


def _inputs(dtype: str, seed: int = 0) -> dict:
    elem = np_dtype(DType.parse(dtype))
    rng = np.random.default_rng(seed)
    b, n, nkv, sq, skv, d = (SHAPE[s] for s in ("B", "N", "Nkv", "Sq", "Skv", "D"))
    return {
        "q": rng.standard_normal((b, n, sq, d)).astype(elem),
        "k": rng.standard_normal((1, nkv, skv, d)).astype(elem),
        "v": rng.standard_normal((1, nkv, skv, d)).astype(elem),
    }


def _repeated(x: dict) -> dict:
    return {
        n: np.repeat(a, SHAPE["B"], axis=0) if n in "kv" else a for n, a in x.items()
    }


def _backward_inputs(dtype: str) -> dict:
    x = _inputs(dtype)
    out = fd.interpret(FWD, consts=BLOCKS, **x)
    do = np.random.default_rng(1).standard_normal(out["o"].shape).astype(x["q"].dtype)
    return dict(x, o=out["o"], lse=out["lse"], do=do)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_forward_equals_the_kernel_on_repeated_k_and_v(dtype: str) -> None:
    x = _inputs(dtype)
    got = fd.interpret(FWD, consts=BLOCKS, **x)
    want = fd.interpret(FWD_REP, consts=BLOCKS, **_repeated(x))
    for name in ("o", "lse"):
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_backward_sums_dk_dv_over_the_batches(dtype: str) -> None:
    g = _backward_inputs(dtype)
    got = fd.interpret(BWD, consts=BLOCKS, **g)
    want = fd.interpret(BWD_REP, consts=BLOCKS, **_repeated(g))
    np.testing.assert_array_equal(got["dq"], want["dq"])
    atol = 8e-3 if dtype == "fp16" else 6e-2  # sums rounded once vs three times
    for name in ("dk", "dv"):
        summed = want[name].astype(np.float64).sum(axis=0, keepdims=True)
        assert got[name].shape == summed.shape
        np.testing.assert_allclose(got[name].astype(np.float64), summed, atol=atol)


def test_shared_kv_needs_a_batch_dim() -> None:
    with pytest.raises(FadslError, match='shared_kv=True with layout="TND"'):
        fd.attention(name="skv_tnd", layout="TND", shared_kv=True)
    with pytest.raises(FadslError, match="shared_kv=True with paged_kv=True"):
        fd.attention(name="skv_paged", paged_kv=True, shared_kv=True)


def _close(got: np.ndarray, want: np.ndarray, ulps: float) -> None:
    """Within ``ulps`` fp16 / bf16 units of the largest value."""
    unit = float(np.spacing(want.dtype.type(np.abs(want).max())))
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64)).max()
    assert diff <= ulps * unit, (diff, unit)


@NEEDS_GXX
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_shared_kv_in_the_cpu_runtime(dtype: str) -> None:
    """Forward and backward through fd.sim (GQA, Q and KV tails, causal, mods)
    against the interpreter (measured at fp16: o 4.9e-4, dq 4.9e-4, dk 2.0e-3,
    dv 4.9e-4 apart: at most one unit of the largest value; dq adds atomically in
    another order)."""
    x = _inputs(dtype)
    _close(
        fd.sim(FWD, consts=BLOCKS, **x)["o"],
        fd.interpret(FWD, consts=BLOCKS, **x)["o"],
        1,
    )
    g = _backward_inputs(dtype)
    got, want = fd.sim(BWD, consts=BLOCKS, **g), fd.interpret(BWD, consts=BLOCKS, **g)
    for name in ("dq", "dk", "dv"):
        _close(got[name], want[name], 1)
