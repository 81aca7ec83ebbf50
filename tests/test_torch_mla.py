"""fadsl.torch with an MLA decode kernel (issue 30 item 5): ``fd.attention(paged_kv=True,
v_from_k=True)`` takes q, the latent cache, the block table and the lengths; no input
holds Dv, so the operator is registered with ``shape={"Dv": 512}``. Checked against
float64 attention over the gathered pages (V = K's first 512 columns) and through
fake (meta) tensors for the output shape."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="fadsl.torch needs PyTorch (pip install 'fadsl[torch]')"
)

import fadsl as fd  # noqa: E402
import fadsl.torch as ft  # noqa: E402
from fadsl.errors import UsageError  # noqa: E402


def _op():  # type: ignore[no-untyped-def]
    kernel = fd.attention(
        name="torch_mla", paged_kv=True, page_size=64, layout="BSND", v_from_k=True
    )
    return ft.op(kernel, consts=dict(kv_splits=2), shape={"Dv": 512})


def test_mla_decode_operator_against_float64() -> None:
    op = _op()
    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 1, 16, 576, generator=g).half()
    cache = torch.randn(12, 64, 1, 576, generator=g).half()
    table = torch.randperm(12, generator=g)[:8].reshape(2, 4).int()
    lengths = torch.tensor([256, 70], dtype=torch.int32)
    o = op(q, cache, table, lengths)
    assert o.shape == (2, 1, 16, 512) and o.dtype == torch.float16
    for b, n in enumerate(lengths.tolist()):
        k = torch.cat([cache[p] for p in table[b].tolist()])[:n, 0].double()
        s = q[b, 0].double() @ k.T * 576**-0.5
        want = s.softmax(-1) @ k[:, :512]
        np.testing.assert_allclose(o[b, 0].double().numpy(), want.numpy(), atol=2e-3)
    meta = op(*(t.to("meta") for t in (q, cache, table, lengths)))
    assert meta.shape == (2, 1, 16, 512) and meta.device.type == "meta"


def test_shape_names_a_symbol_of_the_kernel() -> None:
    kernel = fd.attention(name="torch_mla_bad", paged_kv=True, v_from_k=True)
    with pytest.raises(UsageError, match="expected a shape symbol"):
        ft.op(kernel, shape={"Dvv": 512})
