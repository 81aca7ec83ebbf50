"""Attention over a paged KV cache: the library program behind
``fd.attention(..., paged_kv=True, page_size=P)`` (decode and speculative decoding).

Written in the DSL like ``flash.py``, whose online-softmax step it shares. The cache is
``k_cache`` / ``v_cache`` ``[Pages, P, Nkv, D]``; sequence ``b`` owns the pages
``block_table[b, 0 .. cdiv(seqlens_kv[b], P) - 1]`` in order, and sees the keys
``0 .. seqlens_kv[b] - 1``. The KV block of the loop is one page: each step reads the
page's number from the block table (an indirect block index) and loads its rows of the
KV head with one copy; rows past the sequence's end are a tail (padded, then masked).
Causal and window masks are bottom-right aligned to ``seqlens_kv[b]``.

With ``spec.pack_gqa`` one task holds the query heads of one KV head (rows of the Q
tile) at one query position, so each page is loaded once per head group, not once per
query head. The signature is annotated for layout BNSD; ``fd.attention`` re-declares
q, o and the cache for the chosen layout and page size. Frames in this file count as
user code.
"""

from __future__ import annotations

from typing import Any

import fadsl as fd
from fadsl.frontend.mods import positions
from fadsl.lib.flash import finish, kv_blocks, softmax_step, task


def paged_attention(
    q: fd.In("B", "N", "Sq", "D"),
    k_cache: fd.In("Pages", 128, "Nkv", "D"),
    v_cache: fd.In("Pages", 128, "Nkv", "D"),
    block_table: fd.In("B", "MaxPages", dtype=fd.i32),
    seqlens_kv: fd.In("B", dtype=fd.i32),
    o: fd.Out("B", "N", "Sq", "D"),
    lse: fd.Out("B", "N", "Sq", dtype=fd.f32),
    scale: fd.Scalar = "D ** -0.5",
    spec: object = None,
    block_q: int = 16,
    stages: int = 2,
):
    page = spec.page_size
    group, parts = N // Nkv, 1
    tasks, blocks = N, fd.cdiv(Sq, block_q)
    if spec.pack_gqa:
        # one task: the query heads of one KV head (block_q at a time) at one position
        parts = fd.cdiv(group, block_q)
        tasks, blocks = Nkv * parts, Sq
    for b, x, y in fd.grid(B, tasks, blocks):
        kv_len = fd.load_scalar(seqlens_kv[b])
        if spec.pack_gqa:
            hk = x // parts
            h0 = hk * group + (x % parts) * block_q
            heads = fd.ds(h0, block_q, hk * group + group)
            o_block, first, span = head_block(spec, o, b, heads, y), y, 1
            qt = fd.load(head_block(spec, q, b, heads, y), pad=0)
            t = task(b, h0, hk, 0, 0, Sq, kv_len, qt, y, D, scale)
        else:
            rows = fd.ds(y * block_q, block_q)
            o_block, first, span = row_block(spec, o, b, x, rows), y, block_q
            qt = fd.load(row_block(spec, q, b, x, rows), pad=0)
            q_idx = positions(y * block_q, block_q, 0)
            t = task(b, x, x // group, 0, 0, Sq, kv_len, qt, q_idx, D, scale)
        m = fd.full((block_q,), -fd.inf, fd.f32)
        l = fd.zeros((block_q,), fd.f32)
        acc = fd.zeros((block_q, D), fd.f32)
        lo, hi = kv_blocks(spec, first, Sq, kv_len, span, page)
        for j in fd.pipelined(lo, hi, stages=stages):
            m, l, acc = page_step(spec, t, k_cache, v_cache, block_table, j, m, l, acc)
        out_lse = None
        if spec.return_lse and not spec.pack_gqa:
            out_lse = lse[b, x, rows]
        finish(o_block, out_lse, o.dtype, m, l, acc)
        if spec.return_lse and spec.pack_gqa:
            lse_column(lse[b, heads, fd.ds(y, 8, y + 1)], m, l, block_q)


def row_block(spec: Any, x: Any, b: Any, h: Any, rows: Any) -> Any:
    """Query rows ``rows`` of head h of q / o (layout BNSD or BSND)."""
    if spec.layout == "BNSD":
        return x[b, h, rows, :]
    return x[b, rows, h, :]


def head_block(spec: Any, x: Any, b: Any, heads: Any, s: Any) -> Any:
    """Query heads ``heads`` at position s of q / o: the rows of a packed GQA tile."""
    if spec.layout == "BNSD":
        return x[b, heads, s, :]
    return x[b, s, heads, :]


def lse_column(block: Any, m: Any, l: Any, rows: Any) -> None:
    """The LSE of a packed tile's rows: query heads, Sq elements apart in ``lse``. Each
    row is widened to 8 f32 (one 32-byte block, as a copy's rows start on one) and the
    block bounded to column y + 1, so the store writes one element per row."""
    l_safe = fd.where(l == 0.0, 1.0, l)
    value = fd.where(l == 0.0, -fd.inf, m + fd.log(l_safe))
    fd.store(block, value[:, None] + fd.zeros((rows, 8), fd.f32))


def page_step(
    spec: Any,
    t: Any,
    k_cache: Any,
    v_cache: Any,
    block_table: Any,
    j: Any,
    m: Any,
    l: Any,
    acc: Any,
) -> tuple[Any, Any, Any]:
    """Block j of sequence t.b is page block_table[t.b, j]: one copy of its rows each."""
    page = spec.page_size
    pg = fd.load_scalar(block_table[t.b, j])
    keys = fd.ds(0, page, t.kv_len - j * page)  # keys past the sequence's end: a tail
    kt = fd.load(k_cache[pg, keys, t.hk, :], pad=0)
    vt = fd.load(v_cache[pg, keys, t.hk, :], pad=0)
    kv_idx = positions(j * page, page, 1)
    return softmax_step(spec, t, kt, vt, kv_idx, j * page, m, l, acc, True)
