"""fadsl.torch with ``append_kv=True``: calling the op updates the caches passed in,
in place (as flash_attn_with_kvcache), and returns o and the updated caches. One of
Dao's test_flash_attn_kvcache new_kv cases (GQA, causal, rotary half, leftpad, 64-row
pages) against the float64 reference of tests/variants/kvcache_ref.py."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="fadsl.torch needs PyTorch (pip install 'fadsl[torch]')"
)

import fadsl as fd  # noqa: E402
import fadsl.torch as ft  # noqa: E402
from tests.variants.kvcache_ref import gather_pages  # noqa: E402
from tests.variants.test_append_kv import dao_case  # noqa: E402


def test_append_op_updates_the_caches_in_place() -> None:
    c = dao_case((8, 256, 64, 64, "gqa", True, 0.5, False, True))
    op = ft.op(c["kernel"])
    order = op.spec.inputs
    tensors = [torch.from_numpy(c["inputs"][n].copy()) for n in order]
    k_cache, v_cache = (tensors[order.index(n)] for n in ("k_cache", "v_cache"))
    before = k_cache.clone()
    o, k_out, v_out = op(*tensors)
    verdict = fd.verify(o.numpy(), c["ref"][0], "fp16")
    assert verdict.passed, verdict
    table, lens = c["inputs"]["block_table"], c["inputs"]["seqlens_kv"]
    written = np.arange(c["skv"])[None, :] < lens[:, None] + c["sq"]
    seen = gather_pages(k_cache.numpy().astype(np.float64), table, c["skv"])
    np.testing.assert_allclose(
        seen[written], c["ref"][1][written], rtol=1e-3, atol=1e-3
    )
    assert not torch.equal(k_cache, before)  # the caller's tensor, updated
    assert torch.equal(k_cache, k_out) and torch.equal(v_cache, v_out)
