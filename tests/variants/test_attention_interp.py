"""``fd.attention`` variants in the interpreter against a float64 reference (the tolerance rule, README).

Every variant x fp16/bf16 x shapes with tails must pass ``fadsl.numerics.compare``;
then properties the tolerance rule alone would not catch: layouts compute the same
numbers, varlen sequences equal separate runs, GQA heads share KV, fully masked rows give
0 and -inf, and the pass pipeline (queues) changes nothing.
"""

from __future__ import annotations

import numpy as np
import pytest
from attkit import assert_passes, run

import fadsl as fd

slopes = fd.tensor(
    "slopes",
    "N",
    dtype="fp32",
    init=lambda shape, rng: -(2.0 ** (-8.0 * (np.arange(shape[0]) + 1) / shape[0])),
)
doc = fd.tensor(
    "doc",
    "Skv",
    dtype="i32",
    init=lambda shape, rng: np.sort(rng.integers(0, 5, shape)),
)
bias = fd.tensor("bias", "N", "Sq", "Skv", dtype="fp32")


def alibi(score, b, h, q_idx, kv_idx):
    return score + slopes[h] * (q_idx - kv_idx)


def relative(score, b, h, q_idx, kv_idx):
    return fd.where(q_idx >= kv_idx, score * 0.5 + 1.0, score - fd.abs(score) * 0.25)


def with_bias(score, b, h, q_idx, kv_idx):
    return score + bias[h, q_idx, kv_idx]


def same_doc(b, h, q_idx, kv_idx):
    return doc[q_idx] == doc[kv_idx]


def band(b, h, q_idx, kv_idx):
    return ((q_idx - kv_idx) < 70) & ((kv_idx - q_idx) < 20) | (kv_idx < 8)


def chunked(b, h, q_idx, kv_idx):
    return (q_idx // 48) >= (kv_idx // 48)


def stripes(score, b, h, q_idx, kv_idx):
    return score + 0.25 * ((kv_idx % 7) - 3)


def sigmoid_gate(score, b, h, q_idx, kv_idx):
    # keys more than about 64 positions behind the query fade out; scores get a boost
    return score + fd.sigmoid(score) - 4.0 * fd.sigmoid((q_idx - kv_idx - 64) * 0.125)


def late_rows(b, h, q_idx, kv_idx):
    return (q_idx >= 40) & (kv_idx >= 0)


VARIANTS = {
    "plain": dict(),
    "causal": dict(causal=True, return_lse=True),
    "window": dict(window=(50, 10), return_lse=True),
    "window_left_causal": dict(window=(45, -1), causal=True),
    "softcap": dict(softcap=4.0, scale=0.3, return_lse=True),
    "alibi": dict(score_mod=alibi, causal=True),
    "score_mod_where": dict(score_mod=relative),
    "bias": dict(score_mod=with_bias, return_lse=True),
    "document_mask": dict(mask_mod=same_doc, return_lse=True),
    "band_mask": dict(mask_mod=band, causal=True),
    "bsnd": dict(layout="BSND", causal=True, return_lse=True),
    "bsh": dict(layout="BSH", window=(60, 30)),
    "tnd": dict(layout="TND", causal=True, return_lse=True),
    "tnd_mask": dict(layout="TND", mask_mod=band, softcap=3.0, return_lse=True),
    "dropout": dict(dropout_p=0.25, causal=True, return_lse=True),
    "integer_div_mod": dict(mask_mod=chunked, score_mod=stripes, return_lse=True),
    "sigmoid_gate": dict(score_mod=sigmoid_gate, causal=True, return_lse=True),
}
KERNELS = {name: fd.attention(name=name, **kw) for name, kw in VARIANTS.items()}
SHAPES = [
    dict(B=2, N=4, Nkv=2, Sq=200, Skv=200, D=64),  # tails in both sequence dims, GQA
    dict(B=1, N=2, Sq=77, Skv=150, D=128),  # Sq != Skv: bottom-right alignment
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant_matches_float64_reference(name: str, dtype: str) -> None:
    for shape in SHAPES:
        r = run(KERNELS[name], shape, dtype)
        assert_passes(r)
        assert all(np.isfinite(r.out["o"].astype(np.float32)).all() for _ in (0,))


def test_gqa_and_mqa_share_kv_heads() -> None:
    shape = dict(B=1, N=4, Sq=100, Skv=100, D=64)
    for nkv in (4, 2, 1):
        r = run(KERNELS["causal"], dict(shape, Nkv=nkv))
        assert_passes(r)
    # with Nkv=1 every query head that sees the same q sees the same output
    r = run(KERNELS["causal"], dict(shape, Nkv=1))
    q = r.inputs["q"].copy()
    q[:, :] = q[:, :1]
    same = run(KERNELS["causal"], dict(shape, Nkv=1), inputs=dict(r.inputs, q=q))
    for h in range(1, 4):
        np.testing.assert_array_equal(same.out["o"][:, h], same.out["o"][:, 0])


def test_n_must_be_a_multiple_of_nkv() -> None:
    with pytest.raises(fd.FadslError, match="N must be a multiple of Nkv") as err:
        run(KERNELS["plain"], dict(B=1, N=4, Nkv=3, Sq=64, Skv=64, D=64))
    assert "test_attention_interp.py" in str(err.value.loc)


def test_fully_masked_rows_give_zero_and_minus_inf() -> None:
    late = fd.attention(name="late", mask_mod=late_rows, return_lse=True)
    r = run(late, dict(B=1, N=2, Sq=100, Skv=90, D=64))
    assert_passes(r)
    assert (r.out["o"][:, :, :40] == 0).all() and np.isneginf(
        r.out["lse"][:, :, :40]
    ).all()
    assert np.isfinite(r.out["lse"][:, :, 40:]).all()
    # causal with Sq > Skv: the first Sq - Skv rows see no key (bottom-right alignment)
    r = run(KERNELS["causal"], dict(B=1, N=1, Sq=150, Skv=100, D=64))
    assert_passes(r)
    assert (r.out["o"][0, 0, :50] == 0).all() and np.isneginf(
        r.out["lse"][0, 0, :50]
    ).all()
    assert np.isfinite(r.out["lse"][0, 0, 50:]).all()


def _to_layout(x: np.ndarray, layout: str) -> np.ndarray:
    """[B, N, S, D] data in another layout (BSND, BSH)."""
    t = np.ascontiguousarray(x.transpose(0, 2, 1, 3))
    return t if layout == "BSND" else t.reshape(t.shape[0], t.shape[1], -1)


@pytest.mark.parametrize("layout", ["BSND", "BSH"])
def test_layouts_compute_the_same_numbers(layout: str) -> None:
    shape = dict(B=2, N=4, Nkv=2, Sq=130, Skv=100, D=64)
    base = fd.attention(name="base", causal=True, return_lse=True)
    other = fd.attention(name="other", causal=True, return_lse=True, layout=layout)
    r = run(base, shape)
    moved = {n: _to_layout(r.inputs[n], layout) for n in ("q", "k", "v")}
    s = run(other, shape, inputs=moved)
    assert_passes(s)
    np.testing.assert_array_equal(s.out["o"], _to_layout(r.out["o"], layout))
    np.testing.assert_array_equal(s.out["lse"], r.out["lse"])


def test_varlen_sequences_equal_separate_runs() -> None:
    lengths_q, lengths_kv = [70, 0, 1, 129], [90, 5, 64, 129]
    cq = np.concatenate([[0], np.cumsum(lengths_q)]).astype(np.int32)
    ck = np.concatenate([[0], np.cumsum(lengths_kv)]).astype(np.int32)
    shape = dict(B=4, N=2, Nkv=1, Sq=int(cq[-1]), Skv=int(ck[-1]), D=64)
    first = run(KERNELS["tnd"], shape)
    inputs = dict(first.inputs, cu_seqlens_q=cq, cu_seqlens_kv=ck)
    r = run(KERNELS["tnd"], shape, inputs=inputs)
    assert_passes(r)
    dense = fd.attention(name="dense", causal=True, return_lse=True, layout="BSND")
    for b in range(4):
        if lengths_q[b] == 0:
            continue
        rows, keys = slice(cq[b], cq[b + 1]), slice(ck[b], ck[b + 1])
        one = {
            n: inputs[n][s][None] for n, s in (("q", rows), ("k", keys), ("v", keys))
        }
        sep = run(
            dense, dict(shape, B=1, Sq=lengths_q[b], Skv=lengths_kv[b]), inputs=one
        )
        # the same operations; only BLAS's summation order may differ with the batching
        np.testing.assert_allclose(
            r.out["o"][rows].astype(np.float32),
            sep.out["o"][0].astype(np.float32),
            rtol=0,
            atol=2e-3,
        )
        np.testing.assert_allclose(r.out["lse"][:, rows], sep.out["lse"][0], rtol=1e-6)


def test_pipeline_passes_change_nothing() -> None:
    shape = SHAPES[0]
    for name in ("alibi", "document_mask", "tnd", "dropout"):
        a = run(KERNELS[name], shape, passes=False)
        b = run(KERNELS[name], shape, passes=True)
        for out in a.out:
            np.testing.assert_array_equal(a.out[out], b.out[out])


def _head_mask(b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return (h < 1) | (b == 1)


def test_mask_on_batch_and_head_alone_spreads_over_the_positions() -> None:
    import fadsl as fd

    kdef = fd.attention(name="head_mask", mask_mod=_head_mask)
    r = run(kdef, dict(B=2, N=2, Sq=40, Skv=70, D=64))
    assert_passes(r)
    o = r.out["o"].astype(np.float64)
    assert np.all(o[0, 1] == 0.0)  # batch 0, head 1 keeps nothing: output 0
    assert np.abs(o[0, 0]).max() > 0 and np.abs(o[1, 1]).max() > 0


@pytest.mark.parametrize("right", [1, 8])
def test_a_window_reaching_right_of_the_diagonal_with_causal_is_refused(
    right: int,
) -> None:
    """FlashAttention silently sets window_size_right = 0 when causal; the docs say
    the right side is at most 0; fadsl used to accept (16, 8) and ignore the 8."""
    with pytest.raises(fd.FadslError) as info:
        fd.attention(name="sw", causal=True, window=(16, right))
    err = info.value
    assert f"window=(16, {right}) with causal=True" in err.message
    assert err.loc is not None and err.loc.file == __file__
    assert "window=(16, 0)" in (err.hint or "")
    for ok in ((16, 0), (16, -1)):
        fd.attention(name="sw", causal=True, window=ok)
    fd.attention(name="sw", causal=False, window=(16, right))


def test_out_dtype_is_documented_and_checked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """fd.Out(..., dtype=) fixes an output's dtype (issue 13, item 6: it was used by
    fadsl/lib/flash.py and examples but documented nowhere)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert 'fd.Out("B", "N", "Sq", dtype=fd.f32)' in readme
    assert "dtype" in fd.Out.__doc__ + fd.In.__doc__
    assert fd.Out("B", dtype="fp32").dtype == fd.f32
    with pytest.raises(
        fd.FadslError, match=r"fd.Out\(..., dtype='float64'\): not a dtype"
    ):
        fd.Out("B", dtype="float64")
