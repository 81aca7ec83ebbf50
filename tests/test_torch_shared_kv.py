"""fadsl.torch with ``shared_kv=True`` (issue 29 item 5): k and v of batch 1 serve
every query batch, as PyTorch broadcasting does; the gradients of k and v sum over
the batches. Checked by fadsl's tolerance rule against float64 PyTorch autograd of
plain causal attention on the broadcast k, v (same precision: fp32 autograd)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip(
    "torch", reason="fadsl.torch needs PyTorch (pip install 'fadsl[torch]')"
)

import fadsl as fd  # noqa: E402
import fadsl.torch as ft  # noqa: E402
from fadsl.ir.types import DType  # noqa: E402
from fadsl.numerics import compare  # noqa: E402


def _grads(q, k, v, dtype):  # type: ignore[no-untyped-def]
    x = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
    s = x[0] @ x[1].transpose(-1, -2) * q.shape[-1] ** -0.5  # k broadcasts over B
    causal = torch.ones(s.shape[-2:], dtype=torch.bool).triu(1)
    (s.masked_fill(causal, float("-inf")).softmax(-1) @ x[2]).square().sum().backward()
    return [t.grad.double().numpy() for t in x]


def test_gradients_of_shared_k_and_v_pass_the_tolerance_rule() -> None:
    kw = dict(causal=True, shared_kv=True, dtype="fp32")
    op = ft.op(
        fd.attention(name="torch_shared_kv", return_lse=True, **kw),
        fd.attention_backward(name="torch_shared_kv_bwd", **kw),
        consts=dict(block_q=16, block_kv=16),
    )
    g = torch.Generator().manual_seed(5)
    shapes = [(3, 2, 40, 32), (1, 2, 40, 32), (1, 2, 40, 32)]
    q, k, v = (torch.randn(s, generator=g).requires_grad_() for s in shapes)
    o, _ = op(q, k, v)
    o.square().sum().backward()
    ref, same = _grads(q, k, v, torch.float64), _grads(q, k, v, torch.float32)
    for name, got, r, s in zip(("dq", "dk", "dv"), (q, k, v), ref, same):
        assert got.grad.shape == got.shape
        verdict = compare(name, got.grad.numpy(), r, s, DType.F32)
        assert verdict.passed, verdict.line()
