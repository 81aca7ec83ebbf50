"""``fd.attention(..., return_max_scores=True)`` (issue 29 item 5): the output
``max_scores`` [B, N, Sq] f32, each row's largest score after scale, softcap,
score_mod and the masks, -inf for a row that sees no key (FlexAttention's
max_scores). Checked against numpy written here from the definition, by the tolerance
rule against float64 in the interpreter at fp16 and bf16, and through the CPU runtime.
"""

from __future__ import annotations

import numpy as np
import pytest

import fadsl as fd
from attkit import NEEDS_GXX, assert_passes, run
from fadsl.errors import FadslError

SHAPE = dict(B=2, N=4, Nkv=2, Sq=100, Skv=70, D=64)  # causal: 30 rows see nothing


def band(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx) < 40


def alibi(score, b, h, q_idx, kv_idx):
    return score - 0.1 * (h + 1) * (q_idx - kv_idx)


KERNEL = fd.attention(
    name="max_scores_band",
    score_mod=alibi,
    mask_mod=band,
    causal=True,
    softcap=20.0,
    return_lse=True,
    return_max_scores=True,
)


def _by_definition(x: dict, shape: dict) -> np.ndarray:
    """max over kept kv of softcap(q k^T * scale) - alibi, in float64."""
    q, k = x["q"].astype(np.float64), x["k"].astype(np.float64)
    k = np.repeat(k, shape["N"] // shape["Nkv"], axis=1)
    s = q @ k.transpose(0, 1, 3, 2) * shape["D"] ** -0.5
    s = 20.0 * np.tanh(s / 20.0)
    i, j = np.arange(shape["Sq"])[:, None], np.arange(shape["Skv"])[None, :]
    h = np.arange(shape["N"])[:, None, None]
    s = s - 0.1 * (h + 1) * (i - j)
    keep = (j <= i + shape["Skv"] - shape["Sq"]) & (i - j < 40)
    return np.where(keep, s, -np.inf).max(axis=-1)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_max_scores_are_the_row_maxima_by_definition(dtype: str) -> None:
    r = run(KERNEL, SHAPE, dtype)
    assert_passes(r)  # o, lse and max_scores each by the tolerance rule
    got, want = r.out["max_scores"], _by_definition(r.inputs, SHAPE)
    assert np.array_equal(np.isinf(got), np.isinf(want)) and np.isinf(got).sum() == 240
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)
    lse = r.out["lse"][finite]
    assert np.all(lse >= got[finite] - 1e-6)
    assert np.all(lse - got[finite] <= np.log(SHAPE["Skv"]) + 1e-5)


def test_max_scores_is_a_forward_output_only() -> None:
    with pytest.raises(FadslError, match="takes no `return_max_scores`"):
        fd.attention_backward(name="ms_bwd", return_max_scores=True)
    with pytest.raises(FadslError, match="return_max_scores=True"):
        fd.attention(name="ms_paged", paged_kv=True, return_max_scores=True)
    plain = fd.attention(name="ms_off")
    assert "max_scores" not in [s.name for s in plain.specs]


@NEEDS_GXX
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_max_scores_in_the_cpu_runtime(dtype: str) -> None:
    """fd.sim at the GQA shape with Q and KV tails (blocks of 64): max_scores agrees
    with the interpreter (measured: 2.9e-6 apart at B=1, fp16) and with the row
    maxima by definition."""
    from fadsl.numerics import np_dtype
    from fadsl.ir.types import DType

    elem = np_dtype(DType.parse(dtype))
    rng = np.random.default_rng(0)
    b, n, nkv, sq, skv, d = (SHAPE[s] for s in ("B", "N", "Nkv", "Sq", "Skv", "D"))
    x = {
        "q": rng.standard_normal((b, n, sq, d)).astype(elem),
        "k": rng.standard_normal((b, nkv, skv, d)).astype(elem),
        "v": rng.standard_normal((b, nkv, skv, d)).astype(elem),
    }
    consts = dict(block_q=64, block_kv=64)
    got = fd.sim(KERNEL, consts=consts, **x)["max_scores"]
    interp = fd.interpret(KERNEL, consts=consts, **x)["max_scores"]
    want = _by_definition(x, SHAPE)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    assert np.abs(got[finite] - interp[finite]).max() <= 1e-5
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)
