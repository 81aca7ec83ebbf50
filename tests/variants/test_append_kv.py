"""``fd.attention(..., paged_kv=True, append_kv=True)`` against Dao's
``test_flash_attn_kvcache`` (FlashAttention tests/test_flash_attn.py) with new_kv=True,
transcribed: batch 2, 6 query heads (MHA 6 / GQA 3 / MQA 1 KV heads), its cache,
block table (randperm of 3 * ceil(seqlen_k / page) pages per sequence), cache_seqlens,
leftpad and rotary tables (rotary_dim = floor(fraction * d / 16) * 16), seqlen_new =
seqlen_q. Checked in the interpreter against the float64 reference of
tests/variants/kvcache_ref.py (Dao's own: rotate, write, attention_ref) by
fd.verify's rule (fadsl/numerics.py), and the written caches as Dao checks them (k within 1e-3, v exact).
Differences from Dao's grid: the cache is always paged (Dao's page_size=None cases
run with a block table), and leftpad is combined with a block table (Dao skips it).

The rest of the cache is poisoned with NaN (every slot at or past each sequence's
cached length, and the pages no sequence uses): after the run, every slot but the
appended ones must still hold the poison, bit for bit, and the output must be finite.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import fadsl as fd
from tests.variants.kvcache_ref import gather_pages, kvcache_reference

F16 = np.float16
HEADS_K = {"mha": 6, "gqa": 3, "mqa": 1}

# (seqlen_q, seqlen_k, d, page, mha_type, causal, rotary_fraction, interleaved, leftpad)
CASES = [
    (1, 339, 64, 256, "gqa", True, 0.5, False, False),
    (3, 128, 64, 16, "mha", True, 1.0, True, False),
    (8, 200, 128, 16, "mqa", False, 1.0, False, False),
    (3, 128, 64, 16, "gqa", True, 0.0, False, True),
    (8, 256, 64, 64, "gqa", True, 0.5, True, True),
    (1, 128, 128, 16, "mqa", False, 0.5, True, True),
    (64, 256, 64, 16, "mqa", True, 0.0, False, False),  # 64 new tokens over 5 pages
]


def dao_case(case: tuple, seed: int = 0) -> dict:
    sq, skv, d, page, mha, causal, fraction, interleaved, has_leftpad = case
    rng = np.random.default_rng(seed)
    batch, heads, heads_k = 2, 6, HEADS_K[mha]
    rotary_dim = math.floor(int(fraction * d) / 16) * 16
    q = rng.standard_normal((batch, sq, heads, d)).astype(F16)
    k_new = rng.standard_normal((batch, sq, heads_k, d)).astype(F16)
    v_new = rng.standard_normal((batch, sq, heads_k, d)).astype(F16)
    num_blocks = math.ceil(skv / page) * batch * 3
    k_paged = rng.standard_normal((num_blocks, page, heads_k, d)).astype(F16)
    v_paged = rng.standard_normal((num_blocks, page, heads_k, d)).astype(F16)
    table = rng.permutation(num_blocks).astype(np.int32).reshape(batch, -1)
    lens = rng.integers(0, skv - sq + 1, size=batch).astype(np.int32)
    pad = np.array([rng.integers(0, n) if n > 0 else 0 for n in lens], np.int32)
    inputs = dict(
        q=q,
        k_cache=k_paged,
        v_cache=v_paged,
        block_table=table,
        seqlens_kv=lens,
        k_new=k_new,
        v_new=v_new,
    )
    cos = sin = None
    if rotary_dim > 0:
        angle = rng.random((num_blocks * page, rotary_dim // 2)) * 2 * np.pi
        cos = np.cos(angle).astype(F16).astype(np.float32)  # Dao: tables in dtype
        sin = np.sin(angle).astype(F16).astype(np.float32)
        inputs.update(rotary_cos=cos, rotary_sin=sin)
    if has_leftpad:
        inputs["leftpad"] = pad
    kernel = fd.attention(
        name="append_kv",
        paged_kv=True,
        page_size=page,
        append_kv=True,
        causal=causal,
        layout="BSND",
        rotary=None if rotary_dim == 0 else ("interleaved" if interleaved else "half"),
        leftpad=has_leftpad,
    )
    ref = kvcache_reference(
        q.astype(np.float64),
        gather_pages(k_paged.astype(np.float64), table, skv),
        gather_pages(v_paged.astype(np.float64), table, skv),
        k_new.astype(np.float64),
        v_new.astype(np.float64),
        lens,
        causal,
        None if cos is None else cos.astype(np.float64),
        None if sin is None else sin.astype(np.float64),
        interleaved,
        pad if has_leftpad else None,
    )
    return dict(kernel=kernel, inputs=inputs, ref=ref, skv=skv, page=page, sq=sq)


def appended_slots(table: np.ndarray, lens: np.ndarray, sq: int, page: int) -> set:
    """(page, slot) of every position an append writes."""
    return {
        (int(table[b, pos // page]), pos % page)
        for b in range(len(lens))
        for pos in range(int(lens[b]), int(lens[b]) + sq)
    }


def poisoned(
    cache: np.ndarray, table: np.ndarray, lens: np.ndarray, page: int
) -> np.ndarray:
    """NaN in every slot at or past a sequence's length and in unused pages."""
    out = np.full_like(cache, np.nan)
    for b in range(len(lens)):
        for pos in range(int(lens[b])):
            pg, slot = int(table[b, pos // page]), pos % page
            out[pg, slot] = cache[pg, slot]
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_dao_kvcache_new_kv(case: tuple) -> None:
    c = dao_case(case)
    inputs = dict(c["inputs"])
    table, lens, page = inputs["block_table"], inputs["seqlens_kv"], c["page"]
    for name in ("k_cache", "v_cache"):
        inputs[name] = poisoned(inputs[name], table, lens, page)
    out = fd.interpret(c["kernel"], **inputs)
    want_o, want_k, want_v = c["ref"]
    assert np.isfinite(out["o"]).all()
    verdict = fd.verify(out["o"], want_o, "fp16")
    assert verdict.passed, verdict
    k_seen = gather_pages(out["k_cache_out"].astype(np.float64), table, c["skv"])
    v_seen = gather_pages(out["v_cache_out"].astype(np.float64), table, c["skv"])
    written = np.arange(c["skv"])[None, :] < lens[:, None] + c["sq"]
    np.testing.assert_allclose(k_seen[written], want_k[written], rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(v_seen[written], want_v[written])
    slots = appended_slots(table, lens, c["sq"], page)
    for name in ("k_cache", "v_cache"):
        before, after = inputs[name], out[name + "_out"]
        keep = np.ones(before.shape[:2], bool)
        for pg, slot in slots:
            keep[pg, slot] = False
        assert np.array_equal(
            before[keep].view(np.uint16), after[keep].view(np.uint16)
        ), f"{name}: a slot outside the appended positions changed"


@pytest.mark.parametrize(
    "keywords,named",
    [
        (dict(rotary="half"), "append_kv=False"),
        (dict(append_kv=True), "paged_kv=False"),
        (dict(paged_kv=True, append_kv=True, rotary="full"), "rotary='full'"),
        (dict(paged_kv=True, append_kv=True, window=(8, 0)), "window=(8, 0)"),
    ],
)
def test_append_keywords_refused(keywords: dict, named: str) -> None:
    with pytest.raises(fd.FadslError, match="E132") as err:
        fd.attention(name="append_bad", **keywords)
    assert named in str(err.value)


@pytest.mark.parametrize(
    "case", CASES[:3] + CASES[4:5], ids=lambda c: "-".join(map(str, c))
)
def test_fadsl_reference_agrees_with_dao(case: tuple) -> None:
    """The kernel's own float64 reference (fadsl/frontend/append_ref.py, what `fadsl
    run` and `fadsl sim` check against) equals Dao's reference of this file."""
    c = dao_case(case)
    got = c["kernel"].reference(c["inputs"], {}, {}, None)["o"]
    np.testing.assert_allclose(got, c["ref"][0], rtol=1e-9, atol=1e-9)
