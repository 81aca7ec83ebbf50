"""FlashAttention-2 forward: the library tile program behind ``fd.attention``.

Written in the DSL like ``examples/fa2.py``: one grid point is one (batch, head, Q block)
task, the KV loop keeps the online-softmax state ``m``, ``l``, ``acc`` in fp32. The
variant is the compile-time constant ``spec`` (an ``AttentionSpec``): every ``if spec...``
is decided while the kernel is read, so the IR holds only what the variant needs.
Order of application (FlashAttention 2): scale, softcap, score_mod, masks, softmax.

The signature lists every tensor any variant can have, annotated for layout BNSD;
``fd.attention`` re-declares q, k, v, o (and lse) for the chosen layout and keeps only
the tensors the variant uses, plus the extra inputs its mods read. Shape symbols
(``B, N, Nkv, Sq, Skv, D`` and the value head dim ``Dv``) are in scope by name, as in every kernel.
Frames in this file count as user code: errors and the comments in generated Ascend C
name its lines.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import fadsl as fd
from fadsl.frontend.mods import positions
from fadsl.lib.paged_quant import dequant_kv, with_quant


def flash_attention(
    q: fd.In("B", "N", "Sq", "D"),
    k: fd.In("B", "Nkv", "Skv", "D"),
    v: fd.In("B", "Nkv", "Skv", "Dv"),
    o: fd.Out("B", "N", "Sq", "Dv"),
    lse: fd.Out("B", "N", "Sq", dtype=fd.f32),
    max_scores: fd.Out("B", "N", "Sq", dtype=fd.f32),
    cu_seqlens_q: fd.In("B + 1", dtype=fd.i32),
    cu_seqlens_kv: fd.In("B + 1", dtype=fd.i32),
    kv_num_blocks: fd.In("B", "N", "cdiv(Sq, block_q)", dtype=fd.i32),
    kv_indices: fd.In(
        "B", "N", "cdiv(Sq, block_q)", "cdiv(Skv, block_kv)", dtype=fd.i32
    ),
    full_kv_num_blocks: fd.In("B", "N", "cdiv(Sq, block_q)", dtype=fd.i32),
    full_kv_indices: fd.In(
        "B", "N", "cdiv(Sq, block_q)", "cdiv(Skv, block_kv)", dtype=fd.i32
    ),
    seed: fd.In(2, dtype=fd.i32),
    offset: fd.In(1, dtype=fd.i32),
    k_scale: fd.In("Nkv", "D", dtype=fd.f32),  # int8 k / v (paged_quant.py)
    v_scale: fd.In("Nkv", "Dv", dtype=fd.f32),
    k_offset: fd.In("Nkv", "D", dtype=fd.f32),
    v_offset: fd.In("Nkv", "Dv", dtype=fd.f32),
    scale: fd.Scalar = "D ** -0.5",
    spec: object = None,
    block_q: int = 128,
    block_kv: int = 128,
    stages: int = 2,
):
    for b, h, i in fd.grid(B, N, fd.cdiv(Sq, block_q)):
        q0, q_len, kv0, kv_len = 0, Sq, 0, Skv
        if spec.varlen:
            # one sequence of the packed (TND) tensors: positions restart at 0
            q0 = fd.load_scalar(cu_seqlens_q[b])
            q_len = fd.load_scalar(cu_seqlens_q[b + 1]) - q0
            kv0 = fd.load_scalar(cu_seqlens_kv[b])
            kv_len = fd.load_scalar(cu_seqlens_kv[b + 1]) - kv0
        rows = fd.ds(q0 + i * block_q, block_q, q0 + q_len if spec.varlen else None)
        qt = fd.load(block_of(spec, q, b, h, rows, D), pad=0)
        q_idx = positions(i * block_q, block_q, 0)
        t = task(b, h, h // (N // Nkv), q0, kv0, q_len, kv_len, qt, q_idx, D, scale, Dv)
        if spec.dropout_p > 0.0:
            t = with_rng(t, seed, offset, b * N + h)
        if spec.kv_offset:  # int8 k / v: their scales and offsets
            t = with_quant(t, (k_scale, v_scale, k_offset, v_offset))
        elif spec.kv_dtype:
            t = with_quant(t, (k_scale, v_scale))
        m = fd.full((block_q,), -fd.inf, fd.f32)
        l = fd.zeros((block_q,), fd.f32)
        acc = fd.zeros((block_q, Dv), fd.f32)
        if spec.block_sparse:
            # the block mask made ahead: partial blocks evaluate the mask, full ones not
            for jp in range(fd.load_scalar(kv_num_blocks[b, h, i])):
                j = fd.load_scalar(kv_indices[b, h, i, jp])
                m, l, acc = kv_step(spec, t, k, v, j, block_kv, m, l, acc, True)
            for jf in range(fd.load_scalar(full_kv_num_blocks[b, h, i])):
                j_full = fd.load_scalar(full_kv_indices[b, h, i, jf])
                m, l, acc = kv_step(spec, t, k, v, j_full, block_kv, m, l, acc, False)
        else:
            lo, hi = kv_blocks(spec, i, q_len, kv_len, block_q, block_kv)
            for j in fd.pipelined(lo, hi, stages=stages):
                m, l, acc = kv_step(spec, t, k, v, j, block_kv, m, l, acc, True)
        out_lse = None
        if spec.return_lse:
            out_lse = lse_block(spec, lse, b, h, rows)
        finish(block_of(spec, o, b, h, rows, Dv), out_lse, o.dtype, m, l, acc)
        if spec.return_max_scores:  # m: -inf where the row saw no key
            fd.store(lse_block(spec, max_scores, b, h, rows), m)


def finish(o_block: Any, lse_block: Any, dtype: Any, m: Any, l: Any, acc: Any) -> None:
    """Store the normalised output (and the LSE when ``lse_block`` is given)."""
    l_safe = fd.where(l == 0.0, 1.0, l)  # rows that saw no key: acc is 0, output 0
    fd.store(o_block, fd.cast(acc / l_safe[:, None], dtype))
    if lse_block is not None:
        fd.store(lse_block, fd.where(l == 0.0, -fd.inf, m + fd.log(l_safe)))


def task(
    b: Any,
    h: Any,
    hk: Any,
    q0: Any,
    kv0: Any,
    q_len: Any,
    kv_len: Any,
    qt: Any,
    q_idx: Any,
    d: Any,
    scale: Any,
    dv: Any,
) -> SimpleNamespace:
    """What every KV step of one task reads (hk: the KV head of query head h, GQA;
    d, dv: the head dims of q / k and of v / o)."""
    return SimpleNamespace(
        b=b,
        h=h,
        hk=hk,
        q0=q0,
        kv0=kv0,
        q_len=q_len,
        kv_len=kv_len,
        qt=qt,
        q_idx=q_idx,
        d=d,
        scale=scale,
        dv=dv,
    )


def with_rng(
    t: SimpleNamespace, seed: Any, offset: Any, stream: Any
) -> SimpleNamespace:
    """The dropout generator's key and counter: seed (two words), offset, stream."""
    t.seed = (fd.load_scalar(seed[0]), fd.load_scalar(seed[1]))
    t.offset = fd.load_scalar(offset[0])
    t.stream = stream
    return t


def block_of(spec: Any, x: Any, b: Any, h: Any, rows: Any, d: Any) -> Any:
    """The [rows, d] block of head h of q / k / v / o in the spec's layout (d: the
    tensor's head dim, D or Dv)."""
    if spec.layout == "BNSD":
        return x[b, h, rows, :]
    if spec.layout == "BSND":
        return x[b, rows, h, :]
    if spec.layout == "BSH":
        return x[b, rows, fd.ds(h * d, d)]
    return x[rows, h, :]  # TND


def lse_block(spec: Any, lse: Any, b: Any, h: Any, rows: Any) -> Any:
    return lse[h, rows] if spec.varlen else lse[b, h, rows]


def kv_blocks(
    spec: Any, i: Any, q_len: Any, kv_len: Any, block_q: Any, block_kv: Any
) -> tuple[Any, Any]:
    """KV blocks [lo, hi) that causal / window masks leave non-empty for Q block i.

    Bottom-right alignment: row r sees columns up to r + (kv_len - q_len) (+ right).
    """
    n_kv = fd.cdiv(kv_len, block_kv)
    first, last = i * block_q, i * block_q + block_q - 1
    shift = kv_len - q_len
    lo, hi = 0, n_kv
    left, right = spec.window if spec.window is not None else (-1, -1)
    if spec.causal:
        right = 0 if right < 0 else min(right, 0)
    if left >= 0:
        lo = fd.floordiv(fd.maximum(first + shift - left, 0), block_kv)
    if right >= 0:
        hi = fd.minimum(
            n_kv, fd.cdiv(fd.maximum(last + shift + right + 1, 0), block_kv)
        )
    if spec.varlen:
        hi = hi * fd.minimum(
            1, fd.maximum(q_len - first, 0)
        )  # Q blocks past the sequence
    return lo, hi


def kv_step(
    spec: Any,
    t: Any,
    k: Any,
    v: Any,
    j: Any,
    block_kv: Any,
    m: Any,
    l: Any,
    acc: Any,
    masked: bool,
) -> tuple[Any, Any, Any]:
    """One KV block of the online softmax; ``masked`` evaluates the masks."""
    cols = fd.ds(
        t.kv0 + j * block_kv, block_kv, t.kv0 + t.kv_len if spec.varlen else None
    )
    kb = 0 if spec.shared_kv else t.b  # shared_kv: one KV batch for every b
    kt = fd.load(block_of(spec, k, kb, t.hk, cols, t.d), pad=0)
    vt = fd.load(block_of(spec, v, kb, t.hk, cols, t.dv), pad=0)
    if spec.kv_dtype:  # int8: dequantised in UB to q's dtype
        kt, vt = dequant_kv(spec, t, t.quant, None, cols, kt, vt, t.qt.dtype)
    kv_idx = positions(j * block_kv, block_kv, 1)
    return softmax_step(spec, t, kt, vt, kv_idx, j * block_kv, m, l, acc, masked)


def softmax_step(
    spec: Any,
    t: Any,
    kt: Any,
    vt: Any,
    kv_idx: Any,
    col0: Any,
    m: Any,
    l: Any,
    acc: Any,
    masked: bool,
) -> tuple[Any, Any, Any]:
    """The online softmax over one loaded K/V block whose first key is ``col0``."""
    s = scores(spec, fd.dot(t.qt, kt, transpose_b=True) * t.scale, t, kv_idx)
    if masked:
        s = fd.where(keep(spec, t, kv_idx), s, -fd.inf)
    m_new = fd.maximum(m, fd.row_max(s))
    m_safe = fd.where(m_new == -fd.inf, 0.0, m_new)  # fully masked rows so far
    p = fd.exp(s - m_safe[:, None])
    alpha = fd.exp(m - m_safe)
    l = l * alpha + fd.row_sum(p)
    if spec.dropout_p > 0.0:
        p = dropout(spec, t, p, col0)
    if callable(vt):  # V made on the vector cores after P (paged.py's relayed)
        vt = vt()
    acc = fd.dot(fd.cast(p, vt.dtype), vt) + acc * alpha[:, None]
    return m_new, l, acc


def scores(spec: Any, s: Any, t: Any, kv_idx: Any) -> Any:
    """Scaled scores -> softcap -> score_mod."""
    if spec.softcap is not None:
        s = spec.softcap * fd.tanh(s / spec.softcap)
    if spec.score_mod is not None:
        b, h = mod_scalars(t)
        s = spec.check_score(spec.score_mod(s, b, h, t.q_idx, kv_idx), s)
    return s


def mod_scalars(t: Any) -> tuple[Any, Any]:
    """``b`` and ``h`` as FlexAttention mods receive them (conditions, not Python bools)."""
    from fadsl.frontend.mods import ModScalar

    return ModScalar(t.b), ModScalar(t.h)


def keep(spec: Any, t: Any, kv_idx: Any) -> Any:
    """Which scores survive: inside the sequence, causal, window, then mask_mod."""
    shift = t.kv_len - t.q_len
    ok = kv_idx < t.kv_len
    if spec.causal:
        ok = ok & (kv_idx <= t.q_idx + shift)
    if spec.window is not None and spec.window[0] >= 0:
        ok = ok & (kv_idx >= t.q_idx + (shift - spec.window[0]))
    if spec.window is not None and spec.window[1] >= 0:
        ok = ok & (kv_idx <= t.q_idx + (shift + spec.window[1]))
    if spec.mask_mod is not None:
        b, h = mod_scalars(t)
        mask = spec.mask_mod(b, h, t.q_idx, kv_idx)
        ok = ok & spec.check_mask(mask, t.q_idx, kv_idx)
    return ok


def dropout(spec: Any, t: Any, p: Any, col0: Any) -> Any:
    """Drop each probability with chance dropout_p, scale the kept ones by 1/(1-p)."""
    rows, cols = p.shape
    u = fd.random_uniform(
        (rows, cols),
        seed=t.seed,
        offset=t.offset,
        stream=t.stream,
        row_start=t.q_idx.start,
        col_start=col0,
    )
    return fd.where(u >= spec.dropout_p, p * (1.0 / (1.0 - spec.dropout_p)), 0.0)
