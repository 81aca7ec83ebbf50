"""Attention over a paged KV cache that appends the new tokens' keys and values: the
library program behind ``fd.attention(..., paged_kv=True, append_kv=True)`` (Dao's
``flash_attn_with_kvcache`` with ``k``, ``v``, ``rotary_cos`` / ``rotary_sin`` and
``cache_leftpad``; docs/decode.md).

Sequence ``b`` holds ``L = seqlens_kv[b]`` cached keys (positions ``0 .. L - 1``, of
which those before ``leftpad[b]`` are padding). Its ``Sq`` new keys and values
``k_new`` / ``v_new`` (Q's layout, ``Nkv`` heads) take positions ``L .. L + Sq - 1``:
they are written into the cache through the block table (``k_cache_out`` /
``v_cache_out``, the caches themselves on a device: fadsl/ir/aliases.py), and the
attention sees the ``L + Sq`` keys, causal bottom-right aligned (query row i sees
positions up to ``L + i``). Rotary (``spec.rotary``) rotates each new key at its
position and Q at ``L + i`` (causal) or at ``L`` for every row (not causal), as
FlashAttention does.

No ordering between cores is needed: every task reads the cached keys only below
``L`` (its loads are bounded there) and the new keys from ``k_new`` (rotated in its
own UB), and the writes go to positions ``L ..`` only, each by one task (the first
query head of a group, in its first Q block), a page at a time, each write bounded
to the page and to the new tokens.
Frames in this file count as user code.
"""

from __future__ import annotations

from typing import Any

import fadsl as fd
from fadsl.frontend.mods import positions
from fadsl.lib.flash import finish
from fadsl.lib.paged import row_block
from fadsl.lib.rotary import rotate_at


def paged_append_attention(
    q: fd.In("B", "N", "Sq", "D"),
    k_cache: fd.In("Pages", 128, "Nkv", "D"),
    v_cache: fd.In("Pages", 128, "Nkv", "Dv"),
    block_table: fd.In("B", "MaxPages", dtype=fd.i32),
    seqlens_kv: fd.In("B", dtype=fd.i32),
    k_new: fd.In("B", "Nkv", "Sq", "D"),
    v_new: fd.In("B", "Nkv", "Sq", "Dv"),
    rotary_cos: fd.In("MaxPos", "RotaryHalf", dtype=fd.f32),
    rotary_sin: fd.In("MaxPos", "RotaryHalf", dtype=fd.f32),
    leftpad: fd.In("B", dtype=fd.i32),
    o: fd.Out("B", "N", "Sq", "Dv"),
    k_cache_out: fd.Out("Pages", 128, "Nkv", "D"),
    v_cache_out: fd.Out("Pages", 128, "Nkv", "Dv"),
    scale: fd.Scalar = "D ** -0.5",
    spec: object = None,
    block_q: int = 16,
    block_kv: int = 128,
    stages: int = 2,
    block_new: int = 16,
):
    group = N // Nkv
    for b, x, y in fd.grid(B, N, fd.cdiv(Sq, block_q)):
        hk = x // group
        old = fd.load_scalar(seqlens_kv[b])
        start = 0
        if spec.leftpad:
            start = fd.load_scalar(leftpad[b])
        rows = fd.ds(y * block_q, block_q)
        qt = fd.load(row_block(spec, q, b, x, rows), pad=0)
        tables = None
        if spec.rotary is not None:
            tables = (rotary_cos, rotary_sin, RotaryHalf, spec.rotary == "interleaved")
            first = old + y * block_q if spec.causal else old
            at = fd.ds(first, block_q if spec.causal else 1)
            turned = rotate_at(
                qt, rotary_cos, rotary_sin, at, D, tables[2], tables[3], not spec.causal
            )
            qt = fd.cast(turned, q.dtype)
        q_idx = positions(y * block_q, block_q, 0)  # new-token index of each row
        m = fd.full((block_q,), -fd.inf, fd.f32)
        l = fd.zeros((block_q,), fd.f32)
        acc = fd.zeros((block_q, Dv), fd.f32)
        # the cached keys [start, old): pages through the block table, bounded at old
        # (one stage, the default: a plain loop, whose K, V and P tiles share L1
        # queues with the new keys' below; a pipelined loop's loads have queues of
        # their own, and the rotary kernel would pass the AIC's 8 MTE1_MTE2 event IDs)
        j0 = fd.floordiv(start, block_kv)
        j1 = fd.cdiv(old, block_kv)
        cache = (k_cache, v_cache, block_table, spec.page_size, block_kv)
        if stages == 1:
            for j in range(j0, j1):
                m, l, acc = cached(cache, b, hk, j, start, old, qt, scale, m, l, acc)
        else:
            for j in fd.pipelined(j0, j1, stages=stages):
                m, l, acc = cached(cache, b, hk, j, start, old, qt, scale, m, l, acc)
        # the new keys, from k_new / v_new (causal: up to the block's last row), in
        # blocks of block_new rows (with rotary, a block of a page's rows rotated in
        # f32 would not fit UB at D=128 and pages of 128: E31)
        last = Sq
        if spec.causal:
            last = fd.minimum(Sq, y * block_q + block_q)
        for jn in range(fd.cdiv(last, block_new)):
            news = fd.ds(jn * block_new, block_new, Sq)
            kt = new_keys(spec, k_new, tables, b, hk, news, old, D)
            vt = fd.load(row_block(spec, v_new, b, hk, news), pad=0)
            kv_idx = positions(jn * block_new, block_new, 1)
            seen = kv_idx < Sq
            if spec.causal:
                seen = seen & (kv_idx <= q_idx)
            m, l, acc = step(qt, kt, vt, seen, scale, m, l, acc)
        finish(row_block(spec, o, b, x, rows), None, o.dtype, m, l, acc)
        # the append: one task per (b, KV head) writes the new tokens' pages
        writer = 1 - fd.minimum(x % group + y, 1)
        p0 = fd.floordiv(old, spec.page_size)
        p1 = (fd.floordiv(old + Sq - 1, spec.page_size) + 1) * writer
        for pi in range(p0, fd.maximum(p0, p1)):
            at, slot, tok, end = page_slots(block_table, b, pi, old, Sq, spec.page_size)
            for c in range(fd.cdiv(end - slot, block_q)):
                # block_q rows at a time (a row block: on a split chip each vector core
                # writes half; the rotation's operands share Q's L1 queues)
                span = fd.ds(slot + c * block_q, block_q, end)
                news = fd.ds(tok + c * block_q, block_q, Sq)
                kw = new_keys(spec, k_new, tables, b, hk, news, old, D)
                fd.store(k_cache_out[at, span, hk, :], kw)
                vw = fd.load(row_block(spec, v_new, b, hk, news), pad=0)
                fd.store(v_cache_out[at, span, hk, :], vw)


def page_slots(
    block_table: Any, b: Any, pi: Any, old: Any, sq: Any, page: int
) -> tuple[Any, Any, Any, Any]:
    """Page column pi of sequence b: its page, its first new slot, the new token in
    that slot, and the slot bound (the page's end or the last new token's)."""
    at = fd.load_scalar(block_table[b, pi])
    slot = fd.maximum(old - pi * page, 0)
    tok = pi * page + slot - old
    return at, slot, tok, fd.minimum(page, slot + sq - tok)


def step(
    qt: Any, kt: Any, vt: Any, seen: Any, scale: Any, m: Any, l: Any, acc: Any
) -> tuple[Any, Any, Any]:
    """The online softmax over one K/V block; ``seen`` keeps the scores a row sees."""
    s = fd.where(seen, fd.dot(qt, kt, transpose_b=True) * scale, -fd.inf)
    m_new = fd.maximum(m, fd.row_max(s))
    m_safe = fd.where(m_new == -fd.inf, 0.0, m_new)  # fully masked rows so far
    p = fd.exp(s - m_safe[:, None])
    alpha = fd.exp(m - m_safe)
    l = l * alpha + fd.row_sum(p)
    acc = fd.dot(fd.cast(p, vt.dtype), vt) + acc * alpha[:, None]
    return m_new, l, acc


def new_keys(
    spec: Any, k_new: Any, tables: Any, b: Any, hk: Any, news: Any, old: Any, d: Any
) -> Any:
    """Rows ``news`` of the new keys of KV head hk, rotated at positions old + row."""
    kt = fd.load(row_block(spec, k_new, b, hk, news), pad=0)
    if spec.rotary is None:
        return kt
    cos, sin, half, interleaved = tables
    rows = fd.ds(old + news.start, news.size)
    return fd.cast(rotate_at(kt, cos, sin, rows, d, half, interleaved), kt.dtype)


def cached(
    cache: Any, b: Any, hk: Any, j: Any, start: Any, old: Any, qt: Any, scale: Any,
    m: Any, l: Any, acc: Any,
) -> tuple[Any, Any, Any]:
    """Block j of the cached keys [start, old): its pages through the block table,
    bounded at old; ``cache`` is (k_cache, v_cache, block_table, page, block_kv)."""
    k_cache, v_cache, block_table, page, block_kv = cache
    pages = fd.pages(block_table[b, fd.floordiv(j * block_kv, page)])
    keys = fd.ds(0, block_kv, old - j * block_kv)
    kt = fd.load(k_cache[pages, keys, hk, :], pad=0)
    vt = fd.load(v_cache[pages, keys, hk, :], pad=0)
    kv_idx = positions(j * block_kv, block_kv, 1)
    seen = (kv_idx >= start) & (kv_idx < old)
    return step(qt, kt, vt, seen, scale, m, l, acc)
