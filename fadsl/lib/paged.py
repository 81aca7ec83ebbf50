"""Attention over a paged KV cache: the library program behind
``fd.attention(..., paged_kv=True, page_size=P)`` (decode and speculative decoding).

Written in the DSL like ``flash.py``, whose online-softmax step it shares. The cache is
``k_cache`` / ``v_cache`` ``[Pages, P, Nkv, D]``; sequence ``b`` owns the pages
``block_table[b, 0 .. cdiv(seqlens_kv[b], P) - 1]`` in order, and sees the keys
``0 .. seqlens_kv[b] - 1``. The KV block of the loop is ``block_kv`` keys, a multiple
of the page size (default: one page): each step loads the pages of its block, which
the block table names (``fd.pages``: an indirect block index), into one tile of K and
one of V, one copy per page; rows past the sequence's end are a tail (padded, then
masked), and pages past its last page are not read.
Causal and window masks are bottom-right aligned to ``seqlens_kv[b]``.

With ``spec.pack_gqa`` one task holds the query heads of one KV head (rows of the Q
tile) at one query position, so each page is loaded once per head group, not once per
query head. The signature is annotated for layout BNSD; ``fd.attention`` re-declares
q, o and the cache for the chosen layout and page size, and the split-KV parts for
the packing. Frames in this file count as user code.

Split-KV (flash-decoding), when the tile constant ``kv_splits`` > 1: the pages of each
task are cut into ``kv_splits`` runs, each a task of its own (so the grid has
``kv_splits`` times the tasks and more cores stream one sequence). Each part stores its
normalised output and LSE in f32 into the scratch tensors ``o_part`` / ``lse_part``.
A second grid, the post phase (run once every core has finished the first: SyncAll in
the generated kernel), merges the parts of each query row exactly by the LSE formula.
"""

from __future__ import annotations

from typing import Any

import fadsl as fd
from fadsl.frontend.mods import positions
from fadsl.lib.flash import finish, kv_blocks, softmax_step, task
from fadsl.lib.paged_quant import dequant_one, task_rows


def paged_attention(
    q: fd.In("B", "N", "Sq", "D"),
    k_cache: fd.In("Pages", 128, "Nkv", "D"),
    v_cache: fd.In("Pages", 128, "Nkv", "Dv"),
    block_table: fd.In("B", "MaxPages", dtype=fd.i32),
    seqlens_kv: fd.In("B", dtype=fd.i32),
    k_scale: fd.In("Nkv", "D", dtype=fd.f32),  # int8 caches (paged_quant.py)
    v_scale: fd.In("Nkv", "Dv", dtype=fd.f32),
    k_offset: fd.In("Nkv", "D", dtype=fd.f32),
    v_offset: fd.In("Nkv", "Dv", dtype=fd.f32),
    o: fd.Out("B", "N", "Sq", "Dv"),
    lse: fd.Out("B", "N", "Sq", dtype=fd.f32),
    o_part: fd.Scratch("kv_splits", "B", "N", "Sq", "Dv", dtype=fd.f32),
    lse_part: fd.Scratch("kv_splits", "B", "N", "Sq", dtype=fd.f32),
    scale: fd.Scalar = "D ** -0.5",
    spec: object = None,
    block_q: int = 16,
    block_kv: int = 128,
    stages: int = 2,
    kv_splits: int = 1,
    v_cores: int = 1,
):
    group, parts = N // Nkv, 1
    tasks, blocks = N, fd.cdiv(Sq, block_q)
    if spec.pack_gqa:
        # one task: the query heads of one KV head (block_q at a time) at one position
        parts = fd.cdiv(group, block_q)
        tasks, blocks = Nkv * parts, Sq
    if packs_positions(spec):
        # one task: block_q of the group's G * Sq rows (head g, position s) = g * Sq + s
        parts = fd.cdiv(group * Sq, block_q)
        tasks, blocks = Nkv * parts, 1
    part = 0
    if kv_splits > 1:
        blocks = blocks * kv_splits  # split-KV: kv_splits tasks share one KV range
    for b, x, y in fd.grid(B, tasks, blocks):
        if kv_splits > 1:
            y, part = y // kv_splits, y % kv_splits
        kv_len = fd.load_scalar(seqlens_kv[b])
        if packs_positions(spec):
            hk = x // parts
            rows = group_rows(hk, x % parts, block_q, group * Sq)
            o_block, first, span = o.view(B, N * Sq, Dv)[b, rows, :], 0, Sq
            qt = fd.load(q.view(B, N * Sq, D)[b, rows, :], pad=0)
            q_idx = (fd.arange(rows.start, block_q) % Sq)[:, None]  # each row's own
            t = task(b, hk * group, hk, 0, 0, Sq, kv_len, qt, q_idx, D, scale, Dv)
        elif spec.pack_gqa:
            hk = x // parts
            h0 = hk * group + (x % parts) * block_q
            heads = fd.ds(h0, block_q, hk * group + group)
            o_block, first, span = head_block(spec, o, b, heads, y), y, 1
            qt = fd.load(head_block(spec, q, b, heads, y), pad=0)
            t = task(b, h0, hk, 0, 0, Sq, kv_len, qt, y, D, scale, Dv)
        else:
            rows = fd.ds(y * block_q, block_q)
            o_block, first, span = row_block(spec, o, b, x, rows), y, block_q
            qt = fd.load(row_block(spec, q, b, x, rows), pad=0)
            q_idx = positions(y * block_q, block_q, 0)
            t = task(b, x, x // group, 0, 0, Sq, kv_len, qt, q_idx, D, scale, Dv)
        m = fd.full((block_q,), -fd.inf, fd.f32)
        l = fd.zeros((block_q,), fd.f32)
        acc = fd.zeros((block_q, Dv), fd.f32)  # Dv: the value head dim
        lo, hi = kv_blocks(spec, first, Sq, kv_len, span, block_kv)
        if kv_splits > 1:
            lo, hi = split_range(lo, hi, part, kv_splits)
        if spec.kv_offset:  # an int8 cache: its scales and offsets
            quant = task_rows(spec, t, (k_scale, v_scale, k_offset, v_offset))
        elif spec.kv_dtype:
            quant = task_rows(spec, t, (k_scale, v_scale))
        for j in fd.pipelined(lo, hi, stages=stages):
            if spec.v_from_k:  # MLA: no v_cache (block_step reads V from k_cache)
                kv = (k_cache, None, block_table, block_kv)
            else:
                kv = (k_cache, v_cache, block_table, block_kv)
            if spec.kv_dtype:
                kv = kv + (quant,)
            if v_cores == 2:  # V read by the two vector cores (relayed)
                m, l, acc = block_step(spec, t, kv, j, m, l, acc, True)
            else:
                m, l, acc = block_step(spec, t, kv, j, m, l, acc)
        if kv_splits > 1:
            if packs_positions(spec):  # parts as o: [part, B, N * Sq(, D)]
                o_block, out_lse = (
                    o_part.view(kv_splits, B, N * Sq, Dv)[part, b, rows, :],
                    lse_part.view(kv_splits, B, N * Sq)[part, b, rows],
                )
            elif spec.pack_gqa:  # parts laid out [part, B, Sq, N(, D)]: heads adjacent
                o_block, out_lse = (
                    o_part[part, b, y, heads, :],
                    lse_part[part, b, y, heads],
                )
            else:  # [part, B, N, Sq(, D)]: positions adjacent
                o_block, out_lse = (
                    o_part[part, b, x, rows, :],
                    lse_part[part, b, x, rows],
                )
            finish(o_block, out_lse, fd.f32, m, l, acc)  # normalised, with its LSE
        else:
            out_lse = None
            if spec.return_lse and packs_positions(spec):
                out_lse = lse.view(B, N * Sq)[b, rows]
            elif spec.return_lse and not spec.pack_gqa:
                out_lse = lse[b, x, rows]
            finish(o_block, out_lse, o.dtype, m, l, acc)
            if spec.return_lse and spec.pack_gqa and not packs_positions(spec):
                lse_column(lse[b, heads, fd.ds(y, 8, y + 1)], m, l, block_q)
    if kv_splits > 1:
        # the post phase, once every core has written its parts (SyncAll)
        tiles, per_tile = post_tiles(spec, N, Sq, block_q)
        for b, g, y in fd.grid(B, tiles, per_tile):
            m = fd.full((block_q,), -fd.inf, fd.f32)
            l = fd.zeros((block_q,), fd.f32)
            acc = fd.zeros((block_q, Dv), fd.f32)
            for s in range(kv_splits):
                ls, os = part_blocks(spec, o_part, lse_part, s, b, g, y, block_q)
                m, l, acc = combine_step(
                    fd.load(ls, pad=0), fd.load(os, pad=0), m, l, acc
                )
            if spec.return_lse:
                merged(spec, o, lse, b, g, y, block_q, m, l, acc)
            else:
                merged(spec, o, None, b, g, y, block_q, m, l, acc)


def post_tiles(spec: Any, n: Any, sq: Any, block_q: Any) -> tuple[Any, Any]:
    """The post grid's tiles (after B): block_q rows of [N * Sq] ((s, g) packing: the
    merge is per row, so a tile need not follow the groups), block_q heads at each
    position (packed BSND) or block_q positions of each head (unpacked)."""
    if packs_positions(spec):
        return fd.cdiv(n * sq, block_q), 1
    if spec.pack_gqa:
        return fd.cdiv(n, block_q), sq
    return n, fd.cdiv(sq, block_q)


def part_blocks(
    spec: Any,
    o_part: Any,
    lse_part: Any,
    s: Any,
    b: Any,
    g: Any,
    y: Any,
    block_q: Any,
) -> tuple[Any, Any]:
    """The (LSE, output) blocks of part s that post tile (b, g, y) merges."""
    if packs_positions(spec):  # parts laid out as o: [part, B, N * Sq(, D)]
        ks, nb, n, sq, d = o_part.shape
        rows = fd.ds(g * block_q, block_q)
        return (
            lse_part.view(ks, nb, n * sq)[s, b, rows],
            o_part.view(ks, nb, n * sq, d)[s, b, rows, :],
        )
    if spec.pack_gqa:  # [part, B, Sq, N(, D)]: heads adjacent
        heads = fd.ds(g * block_q, block_q, o_part.shape[3])
        return lse_part[s, b, y, heads], o_part[s, b, y, heads, :]
    rows = fd.ds(y * block_q, block_q)  # [part, B, N, Sq(, D)]: positions adjacent
    return lse_part[s, b, g, rows], o_part[s, b, g, rows, :]


def merged(
    spec: Any,
    o: Any,
    lse: Any,
    b: Any,
    g: Any,
    y: Any,
    block_q: Any,
    m: Any,
    l: Any,
    acc: Any,
) -> None:
    """Store post tile (b, g, y)'s merged output (and its LSE, when ``lse`` is given)."""
    if packs_positions(spec):
        nb, n, sq, d = o.shape
        rows = fd.ds(g * block_q, block_q)
        out_lse = None if lse is None else lse.view(nb, n * sq)[b, rows]
        finish(o.view(nb, n * sq, d)[b, rows, :], out_lse, o.dtype, m, l, acc)
    elif spec.pack_gqa:
        heads = fd.ds(g * block_q, block_q, o.shape[2])
        finish(head_block(spec, o, b, heads, y), None, o.dtype, m, l, acc)
        if lse is not None:
            lse_column(lse[b, heads, fd.ds(y, 8, y + 1)], m, l, block_q)
    else:
        rows = fd.ds(y * block_q, block_q)
        out_lse = None if lse is None else lse[b, g, rows]
        finish(row_block(spec, o, b, g, rows), out_lse, o.dtype, m, l, acc)


def packs_positions(spec: Any) -> bool:
    """(s, g) packing: a packed tile's rows are (query head g, position s) pairs, row
    g * Sq + s of the group. In BNSD these rows of q, o and lse are contiguous (a head's
    positions, then the next head's), so each tile is one copy; in BSND they are not
    (a position's heads, then N - G heads further), so BSND packs one position."""
    return bool(spec.pack_gqa) and spec.layout == "BNSD"


def group_rows(hk: Any, tile: Any, size: Any, per_group: Any) -> Any:
    """Tile ``tile`` of ``size`` rows of KV head hk's group in ``[B, N * Sq, ...]``:
    its G * Sq rows start at hk * G * Sq; rows past the group are a tail."""
    return fd.ds(hk * per_group + tile * size, size, (hk + 1) * per_group)


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


def block_step(
    spec: Any,
    t: Any,
    kv: Any,
    j: Any,
    m: Any,
    l: Any,
    acc: Any,
    relay: bool = False,
) -> tuple[Any, Any, Any]:
    """KV block j of sequence t.b: block_kv / P pages, the first of them
    block_table[t.b, j * block_kv / P]; one copy per page into one tile each of K
    and V (pages past the sequence's last are not read). With ``relay`` (an fp16 /
    bf16 cache read through v_cache) V is read by the vector cores (``relayed``)."""
    k_cache, v_cache, block_table, block_kv = kv[:4]
    pages = fd.pages(block_table[t.b, fd.floordiv(j * block_kv, spec.page_size)])
    keys = fd.ds(0, block_kv, t.kv_len - j * block_kv)  # past the sequence: a tail
    kt = fd.load(k_cache[pages, keys, t.hk, :], pad=0)
    if spec.kv_dtype:  # int8: K dequantised in UB to q's dtype before V is loaded
        kt = dequant_one(spec, t, kv[4], 0, pages, keys, kt, t.qt.dtype)
    if spec.v_from_k:  # the latent: V is the first Dv columns of each K row
        vt = fd.load(k_cache[pages, keys, t.hk, fd.ds(0, t.dv)], pad=0)
    else:
        vt = fd.load(v_cache[pages, keys, t.hk, :], pad=0)
    if spec.kv_dtype:
        vt = dequant_one(spec, t, kv[4], 1, pages, keys, vt, t.qt.dtype)
    elif relay and not spec.v_from_k:
        vt = relayed(vt)
    kv_idx = positions(j * block_kv, block_kv, 1)
    return softmax_step(spec, t, kt, vt, kv_idx, j * block_kv, m, l, acc, True)


def relayed(vt: Any) -> Any:
    """V of a KV block read by the vector cores (issue 27: the cube's MTE2 alone
    streams 32 B a cycle from HBM; each AIV's MTE2 is a path of its own): each AIV
    loads its half of the block's rows (a load a vector op reads lands in UB,
    ``backends/ascendc/vector_pages.py``), copies it (``* 1.0``: one exact
    ``Muls``; a same-dtype cast would be dropped by ``passes/lower_vector.py``) and
    hands it to the cube through GM workspace, which reads it from L2. The tile
    constant ``v_cores`` chooses it: 1 (the default) the cube reads V itself, 2 the
    two vector cores; ``fadsl tune`` tries both (MODELLED on 910B2 it wins with KV
    blocks of two pages and more, loses with one: docs/decode.md). The copy is made when called: after P (``flash.softmax_step``), so S
    is read before the vector cores send an operand and the cube can still run
    Q K^T ahead (``plan/schedule/ring.py``, condition 3), and V goes over with P."""
    return lambda: vt * 1.0


def split_range(lo: Any, hi: Any, part: Any, parts: int) -> tuple[Any, Any]:
    """Pages [lo, hi) of a task, cut into ``parts`` runs of cdiv(hi - lo, parts) pages:
    run ``part`` (empty for the parts past the last page)."""
    chunk = fd.cdiv(hi - lo, parts)
    start = fd.minimum(lo + part * chunk, hi)
    return start, fd.minimum(hi, start + chunk)


def combine_step(ls: Any, os: Any, m: Any, l: Any, acc: Any) -> tuple[Any, Any, Any]:
    """Fold a part (output ``os``, LSE ``ls``) into the running merge: with M the
    largest LSE so far, l = sum exp(lse_s - M) and acc = sum exp(lse_s - M) * o_s, so
    that acc / l is sum_s exp(lse_s - LSE) o_s and M + log(l) is LSE = log sum_s
    exp(lse_s) (a part that saw no key has lse_s = -inf and weighs 0)."""
    m_new = fd.maximum(m, ls)
    m_safe = fd.where(m_new == -fd.inf, 0.0, m_new)
    w = fd.exp(ls - m_safe)
    alpha = fd.exp(m - m_safe)
    return m_new, l * alpha + w, acc * alpha[:, None] + os * w[:, None]
