"""``fd.attention_backward`` in the interpreter: dq, dk, dv by the tolerance rule.

Every supported variant x fp16/bf16 x shapes with tails (GQA N=8, Nkv=2; Sq != Skv, so
causal is bottom-right aligned and some rows see no key) must pass
``fadsl.numerics.compare`` against the float64 gradients of ``attention_grad_ref``
(itself checked by finite differences in test_attention_grad_ref.py); then what the
rule alone would not catch.
"""

from __future__ import annotations

import numpy as np
import pytest
from attkit import assert_passes, run

import fadsl as fd

doc = fd.tensor(
    "doc",
    "Skv",
    dtype="i32",
    init=lambda shape, rng: np.sort(rng.integers(0, 5, shape)),
)


def same_doc(b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return doc[q_idx] == doc[kv_idx]


slopes = fd.tensor(
    "slopes",
    "N",
    init=lambda shape, rng: -(2.0 ** (-8.0 * (np.arange(shape[0]) + 1) / shape[0])),
)


def prefix(b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return kv_idx < 130


def alibi(score, b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return score + slopes[h] * (q_idx - kv_idx)


def relative(score, b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return fd.where(q_idx >= kv_idx, score * 0.5 + 1.0, score - fd.abs(score) * 0.25)


def squash(score, b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return fd.tanh(score / 3.0) * 3.0 + fd.exp(-fd.abs(score)) * 0.1


def stepped(score, b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return fd.floor(score)


VARIANTS = {
    "plain": dict(),
    "causal": dict(causal=True),
    "window": dict(window=(50, 10)),
    "window_left_causal": dict(window=(45, -1), causal=True),
    "softcap": dict(softcap=4.0, scale=0.3),
    "alibi": dict(score_mod=alibi, causal=True),
    "score_mod_where": dict(score_mod=relative),
    "score_mod_softcap": dict(score_mod=squash, softcap=5.0),
    "document_mask": dict(mask_mod=same_doc),
    "prefix_mask_causal": dict(mask_mod=prefix, causal=True),
    "dropout": dict(dropout_p=0.25, causal=True),
    "bsnd": dict(layout="BSND", causal=True),
    "bsh": dict(layout="BSH", window=(60, 30)),
    "tnd": dict(layout="TND", causal=True),
    "tnd_everything": dict(
        layout="TND", dropout_p=0.2, softcap=3.0, score_mod=alibi, window=(60, 20)
    ),
}
KERNELS = {n: fd.attention_backward(name=n, **kw) for n, kw in VARIANTS.items()}
SHAPES = [
    dict(B=2, N=8, Nkv=2, Sq=130, Skv=130, D=64),  # tails in both dims, GQA
    dict(B=1, N=2, Sq=150, Skv=77, D=64),  # Sq > Skv: causal rows that see nothing
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_gradients_match_float64_reference(name: str, dtype: str) -> None:
    for shape in SHAPES:
        if name == "document_mask":  # doc is indexed by q and kv positions
            shape = dict(shape, Skv=shape["Sq"])
        r = run(KERNELS[name], shape, dtype)
        assert_passes(r)
        assert sorted(v.name for v in r.check.verdicts) == ["dk", "dq", "dv"]


def test_fp32() -> None:
    assert_passes(run(KERNELS["causal"], SHAPES[1], "fp32"))


def test_a_wrong_gradient_fails_the_rule() -> None:
    """The check is not vacuous: dq off by 1% fails it, and another tiling passes."""
    from fadsl.io import runio

    r = run(KERNELS["plain"], SHAPES[1])
    assert_passes(
        run(KERNELS["plain"], SHAPES[1], inputs=r.inputs, sets={"block_q": 32})
    )
    bad = dict(r.out, dq=(r.out["dq"].astype(np.float32) * 1.01).astype(np.float16))
    check = runio.check_outputs(r.binding, r.inputs, bad)
    assert not {v.name: v.passed for v in check.verdicts}["dq"]


def test_rows_that_see_no_key_have_zero_dq() -> None:
    r = run(KERNELS["causal"], dict(B=1, N=2, Sq=150, Skv=100, D=64))
    assert_passes(r)
    assert (r.out["dq"][0, :, :50] == 0).all()
    assert np.isfinite(r.out["dq"].astype(np.float32)).all()


def test_gqa_sums_dk_dv_over_the_group() -> None:
    """With Nkv=1 and every query head given the same q and do, dk is N times the
    dk of one head."""
    shape = dict(B=1, N=4, Nkv=1, Sq=64, Skv=64, D=64)
    r = run(KERNELS["causal"], shape, "fp32")
    one = run(KERNELS["causal"], dict(shape, N=1), "fp32")
    same = {n: np.repeat(one.inputs[n], 4, axis=1) for n in ("q", "o", "do", "lse")}
    kv = {n: one.inputs[n] for n in ("k", "v")}
    four = run(KERNELS["causal"], shape, "fp32", inputs=dict(r.inputs, **same, **kv))
    for g in ("dk", "dv"):
        np.testing.assert_allclose(four.out[g], 4 * one.out[g], rtol=1e-5, atol=1e-5)


def test_inputs_are_consistent_with_the_forward() -> None:
    """Seeded o and lse are the forward's outputs for the seeded q, k, v."""
    shape = dict(B=1, N=2, Sq=100, Skv=90, D=64)
    r = run(KERNELS["causal"], shape)
    fwd = fd.attention(name="fwd", causal=True, return_lse=True)
    f = run(fwd, shape, inputs={n: r.inputs[n] for n in ("q", "k", "v")})
    np.testing.assert_allclose(
        r.inputs["o"].astype(np.float32), f.out["o"].astype(np.float32), atol=2e-3
    )
    np.testing.assert_allclose(r.inputs["lse"], f.out["lse"], rtol=1e-5)


def test_a_score_mod_without_derivative_is_refused_at_the_mod() -> None:
    kdef = fd.attention_backward(name="stepped", score_mod=stepped)
    with pytest.raises(fd.FadslError, match="not differentiable in the score") as err:
        kdef.build()
    assert err.value.loc is not None and err.value.loc.file == __file__
    assert "fd.floor(score)" in err.value.loc.source_line()


@pytest.mark.parametrize("name", ["causal", "tnd"])
def test_three_threads_give_the_same_bits(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The grid splits along B or Nkv; dq's atomic adds of one (batch, head group)
    stay in one chunk, so the sums do not depend on the split."""
    shape = dict(B=3, N=6, Nkv=3, Sq=150, Skv=130, D=64)
    monkeypatch.setenv("FADSL_THREADS", "1")
    one = run(KERNELS[name], shape)
    monkeypatch.setenv("FADSL_THREADS", "3")
    three = run(KERNELS[name], shape, inputs=one.inputs)
    for g in ("dq", "dk", "dv"):
        np.testing.assert_array_equal(one.out[g], three.out[g])


def test_check_plans_the_backward_on_a_split_chip(
    capsys: pytest.CaptureFixture,
) -> None:
    """Its vector tiles have two row blocks (block_q, block_kv): plan/memory/row_split.py."""
    from pathlib import Path

    from fadsl.cli import main

    example = Path(__file__).resolve().parents[2] / "examples" / "fa2_bwd.py"
    argv = ["check", str(example), "--target", "ascend910b2"]
    code = main(argv + ["--shape", "B=1,N=2,Sq=256,Skv=256,D=64"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "fa2_bwd fits on ascend910b2" in out
    assert "dkAccBuf" in out and "dot5Ws" in out


@pytest.mark.parametrize("name", ["plain", "alibi", "prefix_mask_causal"])
@pytest.mark.parametrize("d", [64, 128])
def test_the_library_backward_fits_910b_with_its_default_tiles(
    name: str, d: int
) -> None:
    """Its default tiles were 128 x 128, which overflow a 910B vector core's UB even
    at D=64: every variant needed --set to compile."""
    shape = dict(B=1, N=8, Nkv=8, Sq=4096, Skv=4096, D=d)
    report = fd.check(KERNELS[name], target="ascend910b2", shape=shape)
    assert report.fits, report.explanation


def test_the_transposed_block_mask_skips_and_unmasks_blocks() -> None:
    """Blocks a mask_mod empties are skipped; wholly kept ones run unmasked (jf)."""
    r = run(KERNELS["prefix_mask_causal"], dict(B=1, N=2, Sq=256, Skv=256, D=64))
    assert_passes(r)
    partial, full = r.result.loop_stats["ip"][0], r.result.loop_stats["jf"][0]
    assert full > 0 and partial > 0
    assert partial + full < 2 * 4 * 4  # of N x 4 x 4 (Q block, KV block) pairs
