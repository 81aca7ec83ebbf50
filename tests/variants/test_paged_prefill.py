"""Chunked prefill on a paged cache (``paged_kv=True, layout="TND"``, fadsl/lib/prefill.py)
in the interpreter, against a float64 reference written here (it gathers each sequence's
pages with numpy and masks with ``triu``, as vLLM's ``ref_paged_attn``).

Transcribed from vLLM's ``tests/kernels/attention/test_flash_attn.py``
(``test_varlen_with_paged_kv``): sequences given as (query_len, kv_len) with
``kv_len`` counting the chunk's own keys, pages of 16, a block table drawn with
``randint(0, num_blocks)`` (pages may repeat), causal, sliding window 256 as
``window_size = (255, 0)``, softcap 50, bf16, vLLM's tolerance ``atol=1.5e-2,
rtol=1e-2``. vLLM's lengths are decode-sized (1, 5, 129 query rows); the chunked
prefill cases add chunks of hundreds and thousands of rows after a cached prefix.
Every case also passes fadsl's tolerance rule (fd.verify with a same-precision
reference: fp32 scores, P rounded to bf16) and a sequence's result follows its own
pages only.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import fadsl as fd

PAGE = 16
VLLM_SEQS = [[(1, 1328), (5, 18), (129, 463)], [(1, 523), (1, 37), (1, 2011)]]
CHUNKS = [[(512, 1700), (300, 300), (37, 2011)], [(2048, 3000)]]
NUM_BLOCKS = 2048  # vLLM's smaller cache (its other, 32768, only tests index width)


def kernel(**kw: Any) -> Any:
    return fd.attention(
        name="prefill", paged_kv=True, page_size=PAGE, layout="TND", **kw
    )


def make_case(
    seqs: list[tuple[int, int]],
    heads: tuple[int, int],
    d: int,
    seed: int = 0,
    page: int = PAGE,
    pages: int = NUM_BLOCKS,
) -> dict[str, Any]:
    """vLLM's inputs: q [sum(query_lens), N, D], caches [num_blocks, 16, Nkv, D]."""
    rng = np.random.default_rng(seed)
    q_lens = [s[0] for s in seqs]
    kv_lens = [s[1] for s in seqs]
    n, nkv = heads
    bf16 = ml_dtypes.bfloat16
    max_pages = -(-max(kv_lens) // page)
    cache = (pages, page, nkv, d)
    return dict(
        q=rng.standard_normal((sum(q_lens), n, d), np.float32).astype(bf16),
        k_cache=rng.standard_normal(cache, np.float32).astype(bf16),
        v_cache=rng.standard_normal(cache, np.float32).astype(bf16),
        block_table=rng.integers(0, pages, (len(seqs), max_pages), np.int32),
        seqlens_kv=np.array(kv_lens, np.int32),
        cu_seqlens_q=np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32),
    )


def reference(
    data: dict[str, Any],
    window: int | None = None,
    softcap: float | None = None,
    round_p: bool = False,
) -> np.ndarray:
    """vLLM's ref_paged_attn in numpy: float64, or (round_p) the same-precision form
    of fadsl's tolerance rule: fp32 scores, P rounded to bf16 before P @ V."""
    acc = np.float32 if round_p else np.float64
    q_all = data["q"].astype(acc)
    kc, vc = data["k_cache"].astype(acc), data["v_cache"].astype(acc)
    _, page, nkv, d = kc.shape
    cu, lens, table = data["cu_seqlens_q"], data["seqlens_kv"], data["block_table"]
    scale = acc(d**-0.5)
    out = np.zeros(q_all.shape, np.float64)
    for i, kv_len in enumerate(int(x) for x in lens):
        q = q_all[cu[i] : cu[i + 1]]
        q_len = len(q)
        blocks = table[i, : -(-kv_len // page)]
        k = kc[blocks].reshape(-1, nkv, d)[:kv_len]
        v = vc[blocks].reshape(-1, nkv, d)[:kv_len]
        group = q.shape[1] // nkv
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        s = np.einsum("qhd,khd->hqk", q, k) * scale
        ones = np.ones((q_len, kv_len))
        mask = np.triu(ones, k=kv_len - q_len + 1).astype(bool)
        if window is not None:
            mask |= ~np.triu(ones, k=kv_len - (q_len + window) + 1).astype(bool)
        if softcap is not None:
            s = acc(softcap) * np.tanh(s / acc(softcap))
        s = np.where(mask, -np.inf, s)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        l = p.sum(axis=-1, keepdims=True)
        if round_p:
            p = p.astype(ml_dtypes.bfloat16).astype(acc)
        o = np.einsum("hqk,khd->qhd", p / 1.0, v) / l.transpose(1, 0, 2)
        out[cu[i] : cu[i + 1]] = o
    return out


def run(data: dict[str, Any], **kw: Any) -> np.ndarray:
    consts = {"block_q": 128, "block_kv": 128}
    out = fd.interpret(kernel(causal=True, **kw), consts=consts, dtype="bf16", **data)
    return np.asarray(out["o"]).astype(np.float64)


def check(got: np.ndarray, data: dict[str, Any], **masks: Any) -> None:
    ref = reference(data, **masks)
    np.testing.assert_allclose(got, ref, atol=1.5e-2, rtol=1e-2)  # vLLM's
    same = reference(data, round_p=True, **masks).astype(ml_dtypes.bfloat16)
    verdict = fd.verify(got.astype(ml_dtypes.bfloat16), ref, same_precision=same)
    assert verdict.passed, verdict.line()


@pytest.mark.parametrize("d", [40, 128, 256])
@pytest.mark.parametrize("heads", [(4, 4), (8, 2)])
@pytest.mark.parametrize("seqs", range(len(VLLM_SEQS)))
def test_vllm_varlen_with_paged_kv(seqs: int, heads: tuple[int, int], d: int) -> None:
    data = make_case(VLLM_SEQS[seqs], heads, d)
    check(run(data), data)


@pytest.mark.parametrize("window, softcap", [(256, None), (None, 50.0), (256, 50.0)])
def test_vllm_window_and_softcap(window: int | None, softcap: float | None) -> None:
    data = make_case(VLLM_SEQS[0], (8, 2), 128, seed=1)
    kw: dict[str, Any] = {}
    if window is not None:
        kw["window"] = (window - 1, 0)  # vLLM: window_size = (sliding_window - 1, 0)
    got = run(data, softcap=softcap, **kw)
    check(got, data, window=window, softcap=softcap)


@pytest.mark.parametrize("heads", [(8, 2), (4, 4)])
@pytest.mark.parametrize("chunks", range(len(CHUNKS)))
def test_chunks_after_a_cached_prefix(chunks: int, heads: tuple[int, int]) -> None:
    """Chunks of 37 to 2048 rows after cached prefixes of 0 to 1974 keys (one chunk
    is the whole sequence: seqlens_kv = its rows)."""
    data = make_case(CHUNKS[chunks], heads, 128, seed=2)
    check(run(data), data)


DAO_PAIRS = [(1, 239), (3, 799), (127, 512), (127, 513), (113, 203), (128, 217)]
DAO_PAIRS += [(113, 211), (108, 256), (256, 512), (1023, 1024)]


DAO_CASES = [(q, k, 256) for q, k in DAO_PAIRS] + [(127, 513, 512), (1023, 1024, 512)]


@pytest.mark.parametrize("seqlen_q, seqlen_k, page", DAO_CASES)
def test_dao_varlen_causal_with_pages(seqlen_q: int, seqlen_k: int, page: int) -> None:
    """Dao's ``test_flash_attn_varlen_causal`` (tests/test_flash_attn.py) with
    ``paged_kv_block_size`` 256 (and 512 for two pairs, to keep the run short): batch 8, 9 heads, d=128, bf16, lengths
    drawn as its random padding masks draw them (seqlen - 20 .. seqlen), causal.
    Unlike Dao, seqlens_kv counts the chunk's keys, so a drawn key length below its
    query length is raised to it (E125 refuses the other); swap_sq_sk is left out
    for the same reason."""
    rng = np.random.default_rng(seqlen_q * 7 + seqlen_k + page)
    q_lens = rng.integers(max(1, seqlen_q - 20), seqlen_q + 1, 8)
    k_lens = np.maximum(rng.integers(max(1, seqlen_k - 20), seqlen_k + 1, 8), q_lens)
    seqs = [(int(a), int(b)) for a, b in zip(q_lens, k_lens)]
    data = make_case(seqs, (9, 9), 128, seed=8, page=page, pages=64)
    made = fd.attention(
        name="dao", paged_kv=True, page_size=page, layout="TND", causal=True
    )
    got = fd.interpret(made, consts={"block_q": 128}, dtype="bf16", **data)["o"]
    check(np.asarray(got).astype(np.float64), data)


def test_a_sequence_reads_only_its_own_pages() -> None:
    """Poisoning (NaN) every page no sequence uses, and the unused columns of the block
    table (out of range), changes nothing: the kernel reads only what it must."""
    data = make_case(CHUNKS[0], (8, 2), 128, seed=3)
    table, lens = data["block_table"], data["seqlens_kv"]
    used = np.zeros(NUM_BLOCKS, bool)
    for b, n in enumerate(lens):
        cols = -(-int(n) // PAGE)
        used[table[b, :cols]] = True
        table[b, cols:] = -7
    for name in ("k_cache", "v_cache"):
        data[name][~used] = np.nan
    got = run(data)
    assert np.isfinite(got).all()
    check(got, data)


def test_result_depends_on_the_cached_prefix() -> None:
    """Under causal, a chunk's rows see the cached prefix: the same q against another
    prefix page (the first page of sequence 0 swapped for an unused one) fails the
    reference of the original table, so neither prefix nor table is ignored."""
    data = make_case(CHUNKS[0], (8, 2), 128, seed=4)
    got = run(data)
    other = dict(data, block_table=data["block_table"].copy())
    spare = next(p for p in range(NUM_BLOCKS) if p not in data["block_table"])
    other["block_table"][0, 0] = spare
    moved = run(other)
    check(moved, other)
    assert np.abs(moved - got).max() > 0.05


def test_seeded_inputs_are_chunks_after_cached_prefixes() -> None:
    """`fadsl run` without --inputs: uneven chunks, each after a cached prefix
    (seqlens_kv >= its rows), and the output passes against the reference above."""
    from attkit import bind
    from fadsl.backends.interp import interpret
    from fadsl.io import runio
    from fadsl.passes import run_pipeline

    shape = dict(B=3, N=4, Nkv=2, Sq=300, D=64, Pages=64, MaxPages=24)
    binding = bind(kernel(causal=True), shape)
    data = runio.make_inputs(binding, 0)
    chunks = np.diff(data["cu_seqlens_q"])
    assert len(set(chunks)) > 1 and (data["seqlens_kv"] > chunks).any()
    assert (data["seqlens_kv"] >= chunks).all()
    out = interpret(run_pipeline(binding.kernel), binding.env(), data).outputs
    got = np.asarray(out["o"]).astype(np.float64)
    np.testing.assert_allclose(got, reference(data), atol=1.5e-2, rtol=1e-2)


@pytest.mark.parametrize("given", [True, False])
def test_a_chunk_longer_than_its_keys_is_refused(given: bool) -> None:
    """seqlens_kv[b] must count the chunk's own keys (E125): given inputs where it
    does not, or a seeded shape whose chunks cannot fit the block table."""
    if given:
        data = make_case(CHUNKS[0], (8, 2), 64, seed=6)
        data["seqlens_kv"][1] = 299  # its chunk has 300 rows
        with pytest.raises(fd.FadslError, match=r"E125.*seqlens_kv\[1\] = 299"):
            run(data)
        return
    shape = dict(B=1, N=2, Nkv=1, Sq=100, D=64, Pages=4, MaxPages=2)
    with pytest.raises(fd.FadslError, match=r"E125.*100 rows.* = 32 keys"):
        fd.interpret(kernel(causal=True), shape=shape, consts={"block_q": 64})


@pytest.mark.parametrize("page, block", [(16, 128), (48, 96), (128, 128), (256, 256)])
def test_default_kv_block_is_whole_pages_up_to_128_keys(page: int, block: int) -> None:
    """A prefill task is compute-bound: its default KV block is the whole pages that
    make up to 128 keys, not decode's one page (16 keys with vLLM's pages)."""
    made = fd.attention(name="p", paged_kv=True, layout="TND", page_size=page)
    assert made.const_defaults["block_kv"] == block
    decode = fd.attention(name="d", paged_kv=True, page_size=page)
    assert decode.const_defaults["block_kv"] == page


def _alibi(score, b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return score - 0.01 * (h + 1) * (q_idx - kv_idx)


def _recent(b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return (q_idx - kv_idx) < 100


@pytest.mark.parametrize("kw", [dict(score_mod=_alibi), dict(mask_mod=_recent)])
def test_mods_see_chunk_rows_and_cache_positions(kw: dict[str, Any]) -> None:
    """A mod sees q_idx as the row within the chunk (0-based, as FlexAttention's)
    and kv_idx as the cache position; checked by the tolerance rule against the
    library's reference (fadsl/frontend/attention_ref.py) on seeded chunks."""
    from attkit import bind
    from fadsl.backends.interp import interpret
    from fadsl.io import runio
    from fadsl.passes import run_pipeline

    made = kernel(causal=True, **kw)
    binding = bind(made, dict(B=3, N=4, Nkv=2, Sq=300, D=64, Pages=64, MaxPages=24))
    data = runio.make_inputs(binding, 0)
    out = interpret(run_pipeline(binding.kernel), binding.env(), data).outputs
    check = runio.check_outputs(binding, data, out)
    assert check.passed, [v.line() for v in check.verdicts if not v.passed]
