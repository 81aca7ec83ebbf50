"""fadsl.torch with a mask_mod variant (issue 29 item 4): the operator takes q, k, v
and computes the block mask from the mods, or reads a BlockMask (block_mask=); its
backward kernel attaches and gets the forward's block mask transposed, in torch ops,
so that forward and backward also run under torch.compile(fullgraph=True).

On main such an operator took the four block-mask tensors positionally ("takes 9
tensors, got 3") and attaching its backward failed ("reads q_num_blocks, which is
neither an input nor an output"). Every test here skips without PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="fadsl.torch needs PyTorch (pip install 'fadsl[torch]')"
)

import fadsl as fd  # noqa: E402
import fadsl.torch as ft  # noqa: E402
from fadsl.errors import FadslError  # noqa: E402
from fadsl.frontend.block_mask import transposed_lists  # noqa: E402
from fadsl.ir.types import DType  # noqa: E402
from fadsl.numerics import compare  # noqa: E402
from fadsl.torch.blocks import transposed_lists as torch_transposed  # noqa: E402

S, PREFIX, BLOCKS = 40, 20, dict(block_q=16, block_kv=16)


def prefix_lm(b, h, q_idx, kv_idx):
    return kv_idx < PREFIX


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def alibi(score, b, h, q_idx, kv_idx):
    return score - fd.exp2(-8.0 * (h + 1) / 2) * (q_idx - kv_idx)


MASK = fd.or_masks(prefix_lm, causal)


@pytest.fixture(scope="module")
def op() -> object:
    kw = dict(score_mod=alibi, mask_mod=MASK, dtype="fp32")
    fwd = fd.attention(name="torch_prefix_lm_alibi", return_lse=True, **kw)
    bwd = fd.attention_backward(name="torch_prefix_lm_alibi_bwd", **kw)
    return ft.op(fwd, bwd, consts=BLOCKS)


def _qkv(seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((1, 2, S, 32), generator=g).requires_grad_() for _ in range(3)]


def _reference(q, k, v):  # type: ignore[no-untyped-def]
    """Plain attention with the same mods, in q's dtype."""
    s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
    i, j = torch.arange(S)[:, None], torch.arange(S)[None, :]
    slope = torch.exp2(-8.0 * (torch.arange(2) + 1) / 2)[:, None, None]
    s = s - slope * (i - j)
    s = s.masked_fill(~((j < PREFIX) | (i >= j)), float("-inf"))
    return s.softmax(-1) @ v


def _grads(fn, x):  # type: ignore[no-untyped-def]
    for t in x:
        t.grad = None
    fn(*x).square().sum().backward()
    return [t.grad.clone() for t in x]


def _ref_grads(x, dtype):  # type: ignore[no-untyped-def]
    y = [t.detach().to(dtype).requires_grad_() for t in x]
    return [g.double().numpy() for g in _grads(_reference, y)]


def test_gradients_of_a_mask_mod_variant_pass_the_tolerance_rule(op) -> None:  # type: ignore[no-untyped-def]
    x = _qkv(0)
    got = _grads(lambda q, k, v: op(q, k, v)[0], x)
    ref, same = _ref_grads(x, torch.float64), _ref_grads(x, torch.float32)
    for name, g, r, s in zip(("dq", "dk", "dv"), got, ref, same):
        verdict = compare(name, g.numpy(), r, s, DType.F32)
        assert verdict.passed, verdict.line()


def test_a_given_block_mask_gives_the_same_outputs_and_gradients(op) -> None:  # type: ignore[no-untyped-def]
    x = _qkv(1)
    bm = fd.create_block_mask(MASK, None, None, S, S, **BLOCKS)
    plain = _grads(lambda q, k, v: op(q, k, v)[0], x)
    given = _grads(lambda q, k, v: op(q, k, v, block_mask=bm)[0], x)
    for a, b in zip(plain, given):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_forward_and_backward_run_under_torch_compile_fullgraph(op) -> None:  # type: ignore[no-untyped-def]
    x = _qkv(2)
    bm = fd.create_block_mask(MASK, None, None, S, S, **BLOCKS)
    blocks = op.block_mask_tensors(bm, tuple(x))
    eager = _grads(lambda q, k, v: op(q, k, v, **blocks)[0], x)
    compiled = torch.compile(lambda q, k, v: op(q, k, v, **blocks)[0], fullgraph=True)
    for a, b in zip(eager, _grads(compiled, x)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_a_block_mask_of_other_blocks_is_e106_at_the_callers_line(op) -> None:  # type: ignore[no-untyped-def]
    bm = fd.create_block_mask(MASK, None, None, S, S, block_q=32, block_kv=32)
    with pytest.raises(FadslError) as info:
        op(*_qkv(3), block_mask=bm)
    assert "E106" in str(info.value) and info.value.loc.file == __file__


def test_the_torch_transposition_equals_numpys() -> None:
    """With Q tails (Sq = 100, block_q = 32) and KV tails, per batch and head."""

    def band(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx < 20 * (h + 1)) & (kv_idx - q_idx < 30)

    bm = fd.create_block_mask(band, 2, 2, 100, 90, block_q=32, block_kv=16)
    fwd = {n: torch.from_numpy(a) for n, a in bm.arrays.items() if "kv" in n}
    got = torch_transposed(fwd, 32, 100)
    want = transposed_lists(bm.arrays, 32, 100)
    for name, a in want.items():
        np.testing.assert_array_equal(got[name].numpy(), a, err_msg=name)
        np.testing.assert_array_equal(getattr(bm, name), a, err_msg=name)


def test_max_scores_come_out_without_a_gradient() -> None:
    """return_max_scores through fadsl.torch: a third output, marked
    non-differentiable (as FlexAttention's), so the loss may use it and the
    gradients of q, k, v are those of o alone."""
    kw = dict(mask_mod=MASK, dtype="fp32")
    fwd = fd.attention(name="torch_ms", return_lse=True, return_max_scores=True, **kw)
    op = ft.op(fwd, fd.attention_backward(name="torch_ms_bwd", **kw), consts=BLOCKS)
    x = _qkv(4)
    o, lse, top = op(*x)
    assert not top.requires_grad and top.shape == lse.shape
    assert torch.all(top <= lse)
    (o.square().sum() + top.sum()).backward()
    with_top = [t.grad.clone() for t in x]
    alone = _grads(lambda q, k, v: op(q, k, v)[0], x)
    for a, b in zip(with_top, alone):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
