"""fadsl.torch with an int8 paged KV cache (issue 30 item 5): the op takes int8 torch
caches and fp32 scales; its CPU implementation (the interpreter) gives ``fd.interpret``'s
output bit for bit, which passes against the dequantise-then-attend reference."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="fadsl.torch needs PyTorch (pip install 'fadsl[torch]')"
)

import fadsl as fd  # noqa: E402
import fadsl.torch as ft  # noqa: E402

SHAPE = dict(B=3, N=8, Nkv=2, Sq=1, D=64, Pages=12, MaxPages=4)


def _inputs() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    pages, page, nkv, d = SHAPE["Pages"], 16, SHAPE["Nkv"], SHAPE["D"]
    cache = lambda: torch.randint(-127, 128, (pages, page, nkv, d), generator=g).to(
        torch.int8
    )  # noqa: E731
    scale = lambda: (
        torch.rand(pages, page, nkv, generator=g) / 40 + 0.01
    )  # noqa: E731
    return {
        "q": torch.randn(3, 8, 1, 64, generator=g).to(torch.float16),
        "k_cache": cache(),
        "v_cache": cache(),
        "block_table": torch.randperm(pages, generator=g).reshape(3, 4).to(torch.int32),
        "seqlens_kv": torch.tensor([50, 1, 64], dtype=torch.int32),
        "k_scale": scale(),
        "v_scale": scale(),
    }


def test_int8_op_equals_the_interpreter_and_passes() -> None:
    kernel = fd.attention(
        name="torch_int8",
        paged_kv=True,
        page_size=16,
        kv_dtype="int8",
        kv_scale="token",
    )
    op = ft.op(kernel)
    x = _inputs()
    got = op(*x.values())  # q, caches, table, lengths, scales
    assert got.dtype == torch.float16 and got.shape == (3, 8, 1, 64)
    arrays = {k: v.numpy() for k, v in x.items()}
    want = fd.interpret(kernel, shape=SHAPE, **arrays)["o"]
    assert np.array_equal(got.numpy(), want)
    ref = kernel.reference(arrays, dict(SHAPE, Dv=64), {"scale": 64**-0.5})["o"]
    same = kernel.reference(arrays, dict(SHAPE, Dv=64), {"scale": 64**-0.5}, fd.f16)
    assert fd.verify(got.numpy(), ref, "fp16", same_precision=same["o"]).passed
    with pytest.raises(fd.FadslError, match="int8"):
        op(*dict(x, k_cache=x["k_cache"].to(torch.float16)).values())
