"""fd.create_block_mask (issue 29 item 4): FlexAttention's BlockMask, made once from a
mask_mod, read by fd.attention / fd.attention_backward kernels through fd.interpret.

The lists must equal the block mask the kernel derives from its own masks (forward and
the backward's transposed lists, with Q and KV tails, B / H broadcast); a kernel given
one must read it (a BlockMask that skips kept blocks is refused) and compute what it
computes without; one made for other block sizes or another shape is E106 / E107.
"""

from __future__ import annotations

import numpy as np
import pytest

import fadsl as fd
from attkit import NEEDS_GXX
from fadsl.errors import FadslError
from fadsl.frontend.attention_bwd_inputs import derived_inputs as bwd_derived
from fadsl.frontend.attention_inputs import derived_inputs as fwd_derived
from fadsl.frontend.block_mask import BACKWARD, FORWARD, transposed_lists

document_id = fd.tensor("document_id", "Skv", dtype=fd.i32)


def same_document(b, h, q_idx, kv_idx):
    return document_id[q_idx] == document_id[kv_idx]


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def prefix(b, h, q_idx, kv_idx):
    return kv_idx < 60


def head_band(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx) < 16 * (h + 1) + 8 * b


SHAPE = dict(B=2, N=2, Nkv=2, Sq=100, Skv=100, D=32)
BLOCKS = dict(block_q=32, block_kv=16)


def _qkv(shape: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    b, n, sq, skv, d = (shape[k] for k in ("B", "N", "Sq", "Skv", "D"))
    return {
        "q": rng.standard_normal((b, n, sq, d)).astype(np.float32),
        "k": rng.standard_normal((b, n, skv, d)).astype(np.float32),
        "v": rng.standard_normal((b, n, skv, d)).astype(np.float32),
    }


def test_the_lists_equal_the_kernels_own_block_mask_forward_and_backward() -> None:
    """A mod reading a tensor, with a head- and batch-dependent band, at Q and KV tails."""
    mod = fd.and_masks(same_document, head_band)
    ids = np.repeat(np.arange(4), 25).astype(np.int32)
    bm = fd.create_block_mask(
        mod, 2, 2, 100, 100, inputs={"document_id": ids}, **BLOCKS
    )
    kernel = fd.attention(name="bm_doc", mask_mod=mod, dtype="fp32")
    spec = kernel.spec
    want = fwd_derived(spec, SHAPE, BLOCKS, {"document_id": ids})
    want_t = bwd_derived(spec, SHAPE, BLOCKS, {"document_id": ids})
    for name in FORWARD:
        np.testing.assert_array_equal(getattr(bm, name), want[name], err_msg=name)
    for name in BACKWARD:
        np.testing.assert_array_equal(getattr(bm, name), want_t[name], err_msg=name)
    again = transposed_lists(bm.arrays, 32, 100)
    for name in BACKWARD:
        np.testing.assert_array_equal(again[name], want_t[name], err_msg=name)
    assert 0.0 < bm.sparsity() < 100.0


def test_and_masks_and_or_masks_keep_what_both_or_either_keep() -> None:
    both = fd.create_block_mask(fd.and_masks(causal, prefix), 1, 1, 64, 64, **BLOCKS)
    either = fd.create_block_mask(fd.or_masks(causal, prefix), 1, 1, 64, 64, **BLOCKS)
    q, kv = np.arange(64)[:, None], np.arange(64)[None, :]
    for bm, keep in ((both, (q >= kv) & (kv < 60)), (either, (q >= kv) | (kv < 60))):
        kept = keep.reshape(2, 32, 4, 16).any(axis=(1, 3))
        listed = bm.kv_num_blocks[0, 0] + bm.full_kv_num_blocks[0, 0]
        np.testing.assert_array_equal(listed, kept.sum(axis=1))


def test_a_kernel_given_the_block_mask_computes_what_it_computes_without() -> None:
    mod = fd.or_masks(prefix, causal)
    kernel = fd.attention(name="bm_prefix", mask_mod=mod, dtype="fp32")
    bm = fd.create_block_mask(mod, None, None, 100, 100, **BLOCKS)
    bound = fd.attention(name="bm_prefix_bound", block_mask=bm, dtype="fp32")
    assert bound.spec.mask_mod is mod
    assert (bound.const_defaults["block_q"], bound.const_defaults["block_kv"]) == (
        32,
        16,
    )
    x = _qkv(SHAPE)
    plain = fd.interpret(kernel, consts=BLOCKS, **x)["o"]
    given = fd.interpret(kernel, consts=BLOCKS, block_mask=bm, **x)["o"]
    own = fd.interpret(bound, **x)["o"]
    np.testing.assert_array_equal(given, plain)
    np.testing.assert_array_equal(own, plain)


def test_the_kernel_reads_the_block_mask_it_is_given() -> None:
    """One made from causal alone skips blocks prefix | causal keeps: refused."""
    kernel = fd.attention(name="bm_reads", mask_mod=fd.or_masks(prefix, causal))
    narrow = fd.create_block_mask(causal, None, None, 100, 100, **BLOCKS)
    with pytest.raises(FadslError, match="neither kv_indices nor full_kv_indices"):
        fd.interpret(kernel, consts=BLOCKS, block_mask=narrow, **_qkv(SHAPE))


def test_the_backward_reads_the_block_mask_and_gives_the_same_gradients() -> None:
    mod = fd.or_masks(prefix, causal)
    bm = fd.create_block_mask(mod, None, None, 100, 100, **BLOCKS)
    fwd = fd.attention(name="bm_fwd", mask_mod=mod, return_lse=True, dtype="fp32")
    bwd = fd.attention_backward(name="bm_bwd", mask_mod=mod, dtype="fp32")
    bound = fd.attention_backward(name="bm_bwd_bound", block_mask=bm, dtype="fp32")
    x = _qkv(SHAPE)
    out = fd.interpret(fwd, consts=BLOCKS, **x)
    rng = np.random.default_rng(1)
    grads = dict(x, o=out["o"], lse=out["lse"])
    grads["do"] = rng.standard_normal(out["o"].shape).astype(np.float32)
    plain = fd.interpret(bwd, consts=BLOCKS, **grads)
    given = fd.interpret(bwd, consts=BLOCKS, block_mask=bm, **grads)
    own = fd.interpret(bound, **grads)
    for name in ("dq", "dk", "dv"):
        np.testing.assert_array_equal(given[name], plain[name], err_msg=name)
        np.testing.assert_array_equal(own[name], plain[name], err_msg=name)


def _error(call) -> FadslError:  # type: ignore[no-untyped-def]
    with pytest.raises(FadslError) as info:
        call()
    return info.value


def test_other_block_sizes_or_another_shape_are_e106_and_e107() -> None:
    kernel = fd.attention(name="bm_wrong", mask_mod=causal, dtype="fp32")
    x = _qkv(SHAPE)
    bm = fd.create_block_mask(causal, None, None, 100, 100, block_q=64, block_kv=64)
    err = _error(lambda: fd.interpret(kernel, consts=BLOCKS, block_mask=bm, **x))
    assert "E106" in str(err) and "block_q=64, block_kv=64" in str(err), err
    assert err.loc is not None and err.loc.file == __file__
    other = fd.create_block_mask(causal, None, None, 100, 96, **BLOCKS)
    err = _error(lambda: fd.interpret(kernel, consts=BLOCKS, block_mask=other, **x))
    assert "E107" in str(err) and "Skv=96" in str(err), err
    heads = fd.create_block_mask(causal, 2, 3, 100, 100, **BLOCKS)
    err = _error(lambda: fd.interpret(kernel, consts=BLOCKS, block_mask=heads, **x))
    assert "E107" in str(err) and "H=3" in str(err), err


def test_mistakes_in_making_or_giving_a_block_mask_are_clear() -> None:
    err = _error(lambda: fd.create_block_mask(same_document, 1, 1, 64, 64))
    assert "document_id" in str(err) and "inputs=" in str(err)
    err = _error(lambda: fd.create_block_mask(causal, 1, 1, 0, 64))
    bm = fd.create_block_mask(causal, 1, 1, 64, 64)
    assert "Sq=0" in str(err) and "E24" in str(err)
    dense = fd.attention(name="bm_dense", dtype="fp32")
    err = _error(lambda: fd.interpret(dense, block_mask=bm, **_qkv(SHAPE)))
    assert "reads no block mask" in str(err) and "E107" in str(err)
    err = _error(lambda: fd.interpret(dense, block_mask=[1], **_qkv(SHAPE)))
    assert "takes what fd.create_block_mask returns" in str(err)


def test_and_masks_of_none_keeps_all_and_or_masks_of_none_keeps_nothing() -> None:
    """As FlexAttention's and_masks() / or_masks()."""
    all_ = fd.create_block_mask(fd.and_masks(), 1, 1, 64, 64, **BLOCKS)
    none = fd.create_block_mask(fd.or_masks(), 1, 1, 64, 64, **BLOCKS)
    assert all_.sparsity() == 0.0 and none.sparsity() == 100.0


@NEEDS_GXX
def test_the_generated_code_reads_the_block_mask_on_the_cpu_runtime() -> None:
    """fd.sim with block_mask=: GQA (N=4, Nkv=2), Q and KV tails (Sq=100, Skv=150,
    blocks of 64), fp16. The same binary without block_mask= (lists made from the
    mods) gives the same bits, and both are within one fp16 ulp of the largest
    output of the interpreter's (measured: 2.4e-4 apart)."""
    bm = fd.create_block_mask(fd.or_masks(prefix, causal), None, None, 100, 150,
                              block_q=64, block_kv=64)  # fmt: skip
    kernel = fd.attention(name="bm_sim", block_mask=bm)
    rng = np.random.default_rng(0)
    x = {
        "q": rng.standard_normal((1, 4, 100, 64)).astype(np.float16),
        "k": rng.standard_normal((1, 2, 150, 64)).astype(np.float16),
        "v": rng.standard_normal((1, 2, 150, 64)).astype(np.float16),
    }
    plain = fd.attention(name="bm_sim", mask_mod=bm.mask_mod)
    got = fd.sim(kernel, **x)["o"]
    np.testing.assert_array_equal(
        got, fd.sim(plain, consts=dict(block_q=64, block_kv=64), **x)["o"]
    )
    want = fd.interpret(kernel, **x)["o"].astype(np.float32)
    ulp = float(np.spacing(np.float16(np.abs(want).max())))
    assert np.abs(got.astype(np.float32) - want).max() <= ulp
