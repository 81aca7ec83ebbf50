"""fadsl.torch with chunked prefill on a paged cache (issue 30 items 4 and 5): the
operator takes vLLM's tensors (q [tokens, N, D], the caches [pages, page, Nkv, D], the
block table, seqlens_kv, cu_seqlens_q) and its CPU implementation agrees with a
float64 PyTorch reference that gathers each sequence's pages itself; its fake (meta)
implementation gives the output shapes without running; a chunk longer than its
sequence is refused by its error code."""

from __future__ import annotations

import pytest

torch = pytest.importorskip(
    "torch", reason="fadsl.torch needs PyTorch (pip install 'fadsl[torch]')"
)

import fadsl as fd  # noqa: E402
import fadsl.torch as ft  # noqa: E402

PAGE = 16
SEQS = [(1, 200), (64, 64), (100, 330)]  # (chunk rows, keys incl. the chunk's own)


@pytest.fixture(scope="module")
def op():  # type: ignore[no-untyped-def]
    kernel = fd.attention(
        name="torch_prefill",
        paged_kv=True,
        page_size=PAGE,
        layout="TND",
        causal=True,
        return_lse=True,
    )
    return ft.op(kernel, consts=dict(block_q=64, block_kv=64))


def _inputs() -> tuple:
    g = torch.Generator().manual_seed(7)
    rows = sum(s[0] for s in SEQS)
    q = torch.randn(rows, 8, 64, generator=g).half()
    k_cache = torch.randn(64, PAGE, 2, 64, generator=g).half()
    v_cache = torch.randn(64, PAGE, 2, 64, generator=g).half()
    table = torch.randperm(64, generator=g)[:63].reshape(3, 21).int()
    lens = torch.tensor([s[1] for s in SEQS], dtype=torch.int32)
    cu = torch.tensor([0, 1, 65, 165], dtype=torch.int32)
    return q, k_cache, v_cache, table, lens, cu


def _reference(q, k_cache, v_cache, table, lens, cu):  # type: ignore[no-untyped-def]
    out = torch.zeros(q.shape, dtype=torch.float64)
    for b in range(len(lens)):
        kv, rows = int(lens[b]), slice(int(cu[b]), int(cu[b + 1]))
        pages = table[b, : -(-kv // PAGE)].long()
        k = k_cache[pages].double().reshape(-1, 2, 64)[:kv].repeat_interleave(4, 1)
        v = v_cache[pages].double().reshape(-1, 2, 64)[:kv].repeat_interleave(4, 1)
        qb = q[rows].double()
        s = torch.einsum("qhd,khd->hqk", qb, k) * 64**-0.5
        n = qb.shape[0]
        s = s.masked_fill(torch.ones(n, kv).triu(kv - n + 1).bool(), float("-inf"))
        out[rows] = torch.einsum("hqk,khd->qhd", s.softmax(-1), v)
    return out


def test_the_operator_agrees_with_a_float64_reference(op) -> None:  # type: ignore[no-untyped-def]
    args = _inputs()
    o, lse = op(*args)
    assert o.shape == args[0].shape and o.dtype == torch.float16
    assert lse.shape == (8, args[0].shape[0]) and lse.dtype == torch.float32
    torch.testing.assert_close(o.double(), _reference(*args), atol=1.5e-2, rtol=1e-2)


def test_fake_tensors_give_the_shapes(op) -> None:  # type: ignore[no-untyped-def]
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(t) for t in _inputs()]
        o, lse = torch.ops.fadsl.torch_prefill(*fake)
    assert list(o.shape) == [165, 8, 64] and list(lse.shape) == [8, 165]


def test_a_chunk_longer_than_its_keys_is_refused(op) -> None:  # type: ignore[no-untyped-def]
    q, k_cache, v_cache, table, lens, cu = _inputs()
    lens[2] = 99  # the chunk of sequence 2 has 100 rows
    with pytest.raises(fd.FadslError, match=r"E125.*seqlens_kv\[2\] = 99"):
        op(q, k_cache, v_cache, table, lens, cu)
