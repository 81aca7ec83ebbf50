"""fadsl.torch autograd returns the gradients of captured tensors (issue 29, item 3).

As FlexAttention does for a score_mod's captured tensors that require grad: a
relative-position table and per-head ALiBi slopes declared with
``fd.tensor(..., requires_grad=True)`` get ``.grad`` from the backward kernel's
``d<name>`` outputs, checked against PyTorch's float64 autograd of the same attention
written out in torch. A table that does not require grad keeps ``.grad`` None.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip(
    "torch", reason="fadsl.torch needs PyTorch (pip install 'fadsl[torch]')"
)

import fadsl as fd  # noqa: E402
import fadsl.torch as ft  # noqa: E402

rel = fd.tensor("rel", "Sq + Skv - 1", requires_grad=True)
slopes = fd.tensor("slopes", "N", requires_grad=True)


def rel_alibi(score, b, h, q_idx, kv_idx):
    return score + rel[q_idx - kv_idx + fd.shape.Skv - 1] + slopes[h] * (kv_idx - q_idx)


FWD = fd.attention(
    name="tg_fwd", score_mod=rel_alibi, causal=True, return_lse=True, dtype="fp32"
)
BWD = fd.attention_backward(
    name="tg_bwd", score_mod=rel_alibi, causal=True, dtype="fp32"
)
B, N, NKV, SQ, SKV, D = 1, 4, 2, 20, 27, 8


def _inputs(grad_tables: bool) -> list:
    g = torch.Generator().manual_seed(5)
    shapes = [(B, N, SQ, D), (B, NKV, SKV, D), (B, NKV, SKV, D), (SQ + SKV - 1,)]
    out = [torch.randn(s, generator=g).requires_grad_() for s in shapes]
    out.append((torch.rand(N, generator=g) * 0.5).requires_grad_(grad_tables))
    out[3].requires_grad_(grad_tables)
    return out


def _torch_float64(x: list, do: torch.Tensor) -> list:
    """The same attention in torch, float64, and its autograd."""
    y = [t.detach().double().requires_grad_() for t in x]
    q, k, v, table, sl = y
    k, v = (t.repeat_interleave(N // NKV, dim=1) for t in (k, v))
    qi, ki = torch.arange(SQ)[:, None], torch.arange(SKV)[None, :]
    s = q @ k.transpose(-1, -2) * D**-0.5 + table[qi - ki + SKV - 1]
    s = s + sl[:, None, None] * (ki - qi)
    s = s.masked_fill(~(ki <= qi + SKV - SQ), float("-inf"))
    ((s.softmax(-1) @ v) * do.double()).sum().backward()
    return [t.grad for t in y]


def test_captured_tensors_get_their_gradients_through_autograd() -> None:
    op = ft.op(FWD, BWD, consts=dict(block_q=16, block_kv=16))
    x = _inputs(True)
    o, _ = op(*x)
    do = torch.randn(o.shape, generator=torch.Generator().manual_seed(6))
    (o * do).sum().backward()
    want = _torch_float64(x, do)
    for name, t, w in zip(("q", "k", "v", "rel", "slopes"), x, want):
        assert t.grad is not None, name
        err = (t.grad.double() - w).abs().max().item()
        assert err <= 1e-5 * max(1.0, w.abs().max().item()), (name, err)


def test_a_table_that_does_not_require_grad_keeps_grad_none() -> None:
    op = ft.op(FWD, BWD, consts=dict(block_q=16, block_kv=16))
    x = _inputs(False)
    o, _ = op(*x)
    o.sum().backward()
    assert x[0].grad is not None and x[3].grad is None and x[4].grad is None
