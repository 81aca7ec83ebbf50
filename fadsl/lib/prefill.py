"""Chunked prefill over a paged KV cache: the library program behind
``fd.attention(..., paged_kv=True, layout="TND")`` (docs/decode.md, "Chunked prefill").

A serving engine (vLLM's chunked prefill, Dao's ``flash_attn_varlen_func`` with a
``block_table``) processes a long prompt in chunks: the queries of this chunk of every
sequence are packed in ``q [Sq, N, D]`` (TND: ``Sq`` is the packed total; sequence b's
rows are ``cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1``), and the cache already holds the
earlier chunks' keys plus this chunk's own: sequence b sees the keys
``0 .. seqlens_kv[b] - 1`` of the pages ``block_table[b, ..]``. Causal and window
masks are bottom-right aligned: query row i of a chunk of ``q_len`` rows is position
``seqlens_kv[b] - q_len + i`` of its sequence.

Tiling is prefill's, not decode's: one task is ``block_q`` (hundreds) query rows of
one head of one sequence, as ``flash.py`` tiles TND; its KV loop reads the pages through
the block table exactly as ``paged.py`` does (``block_step``: ``block_kv`` keys, a whole
number of pages, each page one copy) and stops at the causal diagonal, so the blocks
past a chunk's rows are never read. Q blocks past a sequence's chunk do no KV step.
There is no split-KV and no GQA packing: a chunk of hundreds of rows fills the cube
on its own. Frames in this file count as user code.
"""

from __future__ import annotations

import fadsl as fd
from fadsl.frontend.mods import positions
from fadsl.lib.flash import finish, kv_blocks, task
from fadsl.lib.paged import block_step


def paged_prefill(
    q: fd.In("Sq", "N", "D"),
    k_cache: fd.In("Pages", 128, "Nkv", "D"),
    v_cache: fd.In("Pages", 128, "Nkv", "Dv"),
    block_table: fd.In("B", "MaxPages", dtype=fd.i32),
    seqlens_kv: fd.In("B", dtype=fd.i32),
    cu_seqlens_q: fd.In("B + 1", dtype=fd.i32),
    o: fd.Out("Sq", "N", "Dv"),
    lse: fd.Out("N", "Sq", dtype=fd.f32),
    scale: fd.Scalar = "D ** -0.5",
    spec: object = None,
    block_q: int = 128,
    block_kv: int = 128,
    stages: int = 2,
):
    # Q block outermost: the tasks that hold rows (the first blocks of every chunk)
    # come first in grid order and are dealt evenly over the cores; the Q blocks past
    # a chunk (the grid has cdiv(Sq, block_q) per sequence) come last and do no KV step
    for i, b, h in fd.grid(fd.cdiv(Sq, block_q), B, N):
        q0 = fd.load_scalar(cu_seqlens_q[b])
        q_len = fd.load_scalar(cu_seqlens_q[b + 1]) - q0
        kv_len = fd.load_scalar(seqlens_kv[b])  # cached keys + this chunk's own
        rows = fd.ds(q0 + i * block_q, block_q, q0 + q_len)
        qt = fd.load(q[rows, h, :], pad=0)
        q_idx = positions(i * block_q, block_q, 0)
        hk = h // (N // Nkv)
        t = task(b, h, hk, q0, 0, q_len, kv_len, qt, q_idx, D, scale, Dv)
        m = fd.full((block_q,), -fd.inf, fd.f32)
        l = fd.zeros((block_q,), fd.f32)
        acc = fd.zeros((block_q, Dv), fd.f32)
        lo, hi = kv_blocks(spec, i, q_len, kv_len, block_q, block_kv)
        for j in fd.pipelined(lo, hi, stages=stages):
            kv = (k_cache, v_cache, block_table, block_kv)
            m, l, acc = block_step(spec, t, kv, j, m, l, acc)
        out_lse = None
        if spec.return_lse:
            out_lse = lse[h, rows]
        finish(o[rows, h, :], out_lse, o.dtype, m, l, acc)
