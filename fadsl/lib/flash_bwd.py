"""FlashAttention-2 backward: the library tile program behind ``fd.attention_backward``.

KV-major, as FlashAttention 2 and CANN's FlashAttentionScoreGrad: one grid point is
one (batch, KV head, KV block) task. It keeps dK and dV of its block in fp32 and loops
over the query heads of its group (GQA sums over them) and over the Q blocks that can
see the block; per Q block it recomputes the scores and P = exp(S - lse) from the
forward's LSE, then

    dV += P^T dO,  dP = dO V^T,  Delta = rowsum(dO * O),  dS = P * (dP - Delta),
    dK += dS^T Q,  dQ += dS K * scale   (atomic adds: Q blocks are shared by tasks)

with dropout's mask regenerated from the forward's Philox counters and dS times the
derivative of softcap and score_mod (``frontend/mod_grad.py`` differentiates the
traced mod). ``spec`` is the variant (an ``AttentionSpec``), decided while the kernel
is read as in ``flash.py``, whose helpers (layouts, masks, dropout) this reuses.
Frames in this file count as user code.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import fadsl as fd
from fadsl.frontend.mods import positions
from fadsl.frontend.mod_grad import score_mod_traced
from fadsl.frontend.mod_tensor_grad import accumulate, grad_tensors
from fadsl.lib.flash import (
    block_of,
    dropout,
    keep,
    lse_block,
    mod_scalars,
    task,
    with_rng,
)


def flash_attention_backward(
    q: fd.In("B", "N", "Sq", "D"),
    k: fd.In("B", "Nkv", "Skv", "D"),
    v: fd.In("B", "Nkv", "Skv", "D"),
    o: fd.In("B", "N", "Sq", "D"),
    do: fd.In("B", "N", "Sq", "D"),
    lse: fd.In("B", "N", "Sq", dtype=fd.f32),
    dq: fd.Out("B", "N", "Sq", "D"),
    dk: fd.Out("B", "Nkv", "Skv", "D"),
    dv: fd.Out("B", "Nkv", "Skv", "D"),
    cu_seqlens_q: fd.In("B + 1", dtype=fd.i32),
    cu_seqlens_kv: fd.In("B + 1", dtype=fd.i32),
    q_num_blocks: fd.In("B", "N", "cdiv(Skv, block_kv)", dtype=fd.i32),
    q_indices: fd.In(
        "B", "N", "cdiv(Skv, block_kv)", "cdiv(Sq, block_q)", dtype=fd.i32
    ),
    full_q_num_blocks: fd.In("B", "N", "cdiv(Skv, block_kv)", dtype=fd.i32),
    full_q_indices: fd.In(
        "B", "N", "cdiv(Skv, block_kv)", "cdiv(Sq, block_q)", dtype=fd.i32
    ),
    seed: fd.In(2, dtype=fd.i32),
    offset: fd.In(1, dtype=fd.i32),
    scale: fd.Scalar = "D ** -0.5",
    spec: object = None,
    block_q: int = 64,
    block_kv: int = 64,
):
    batches = B
    if spec.shared_kv:
        batches = 1  # k and v have batch 1 (the loop below covers q's batches)
    for b, hk, j in fd.grid(batches, Nkv, fd.cdiv(Skv, block_kv)):
        q0, q_len, kv0, kv_len = 0, Sq, 0, Skv
        if spec.varlen:
            q0 = fd.load_scalar(cu_seqlens_q[b])
            q_len = fd.load_scalar(cu_seqlens_q[b + 1]) - q0
            kv0 = fd.load_scalar(cu_seqlens_kv[b])
            kv_len = fd.load_scalar(cu_seqlens_kv[b + 1]) - kv0
        cols = fd.ds(
            kv0 + j * block_kv, block_kv, kv0 + kv_len if spec.varlen else None
        )
        w = kv_task(
            b=b, hk=hk, j=j, q0=q0, q_len=q_len, kv0=kv0, kv_len=kv_len, d=D,
            kt=fd.load(block_of(spec, k, b, hk, cols, D), pad=0),
            vt=fd.load(block_of(spec, v, b, hk, cols, D), pad=0),
            kv_idx=positions(j * block_kv, block_kv, 1),
            q=q, o=o, do=do, lse=lse, dq=dq,
            scale=scale, n=N, block_q=block_q, block_kv=block_kv,
        )  # fmt: skip
        if spec.dropout_p > 0.0:
            w = with_inputs(w, seed=seed, offset=offset)
        dk_acc = fd.zeros((block_kv, D), fd.f32)
        dv_acc = fd.zeros((block_kv, D), fd.f32)
        lo, hi = q_blocks(spec, j, q_len, kv_len, block_q, block_kv)
        # shared_kv: the one KV batch's dK, dV sum over every query batch; else the
        # task's own batch b (a loop of one trip)
        for bs in range(B if spec.shared_kv else 1):
            bq = bs if spec.shared_kv else b
            w = with_inputs(w, b=bq)
            for g in range(N // Nkv):
                h = hk * (N // Nkv) + g
                if spec.block_sparse:
                    # the forward's block mask transposed: Q blocks per KV block
                    for ip in range(fd.load_scalar(q_num_blocks[bq, h, j])):
                        i = fd.load_scalar(q_indices[bq, h, j, ip])
                        dk_acc, dv_acc = q_step(spec, w, h, i, dk_acc, dv_acc, True)
                    for jf in range(fd.load_scalar(full_q_num_blocks[bq, h, j])):
                        i_full = fd.load_scalar(full_q_indices[bq, h, j, jf])
                        dk_acc, dv_acc = q_step(
                            spec, w, h, i_full, dk_acc, dv_acc, False
                        )
                else:
                    for i in range(lo, hi):
                        dk_acc, dv_acc = q_step(spec, w, h, i, dk_acc, dv_acc, True)
        fd.store(block_of(spec, dk, b, hk, cols, D), fd.cast(dk_acc * scale, dk.dtype))
        fd.store(block_of(spec, dv, b, hk, cols, D), fd.cast(dv_acc, dv.dtype))


def kv_task(**fields: Any) -> SimpleNamespace:
    """What every Q step of one (batch, KV head, KV block) task reads."""
    return SimpleNamespace(**fields)


def with_inputs(w: SimpleNamespace, **tensors: Any) -> SimpleNamespace:
    """The task's namespace with more tensors (those only some variants have)."""
    for name, tensor in tensors.items():
        setattr(w, name, tensor)
    return w


def q_step(
    spec: Any, w: Any, h: Any, i: Any, dk_acc: Any, dv_acc: Any, masked: bool
) -> tuple[Any, Any]:
    """Q block i of query head h against the task's KV block; ``masked`` evaluates the
    masks (a block the block mask calls full skips them)."""
    rows = fd.ds(
        w.q0 + i * w.block_q, w.block_q, w.q0 + w.q_len if spec.varlen else None
    )
    qt = fd.load(block_of(spec, w.q, w.b, h, rows, w.d), pad=0)
    q_idx = positions(i * w.block_q, w.block_q, 0)
    t = task(w.b, h, w.hk, w.q0, w.kv0, w.q_len, w.kv_len, qt, q_idx, w.d, w.scale, w.d)
    if spec.dropout_p > 0.0:
        t = with_rng(t, w.seed, w.offset, w.b * w.n + h)
    # the cube's own Q and dO copies (examples/fa2_bwd.py): no tile read by the dots
    # on both sides of the vector cores' hand-over, so the cube runs ahead (a ring);
    # not where the loop reads its Q blocks from GM (a block mask), which gets no ring
    ahead = not spec.block_sparse
    q_dk, do_dp, do_dv = qt, None, None
    if ahead:
        q_dk = fd.load(block_of(spec, w.q, w.b, h, rows, w.d), pad=0)
        do_dp = fd.load(block_of(spec, w.do, w.b, h, rows, w.d), pad=0)
        do_dv = fd.load(block_of(spec, w.do, w.b, h, rows, w.d), pad=0)
    lse_t = fd.load(lse_block(spec, w.lse, w.b, h, rows), pad=0)
    raw = fd.dot(qt, w.kt, transpose_b=True) * w.scale
    s, dscore = scores_grad(spec, raw, t, w.kv_idx)
    if masked:
        s = fd.where(keep(spec, t, w.kv_idx) & (q_idx < w.q_len), s, -fd.inf)
    lse_safe = fd.where(lse_t == -fd.inf, 0.0, lse_t)  # rows that see nothing
    p = fd.exp(s - lse_safe[:, None])
    do_t = fd.load(block_of(spec, w.do, w.b, h, rows, w.d), pad=0)
    ot = fd.load(block_of(spec, w.o, w.b, h, rows, w.d), pad=0)
    delta = fd.row_sum(fd.cast(do_t, fd.f32) * fd.cast(ot, fd.f32))
    if not ahead:
        do_dp, do_dv = do_t, do_t
    dp = fd.dot(do_dp, w.vt, transpose_b=True)
    pd = p
    if spec.dropout_p > 0.0:  # the forward's mask, from the same counters
        pd = dropout(spec, t, p, w.j * w.block_kv)
        dp = dropout(spec, t, dp, w.j * w.block_kv)
    ds = p * (dp - delta[:, None])
    if spec.score_mod is not None and grad_tensors(spec):  # d<tensor> (requires_grad)
        accumulate(spec, t.mod_trace, ds, p)
    if dscore is not None:  # softcap's and score_mod's chain rule
        ds = ds * dscore
    ds_in = fd.cast(ds, qt.dtype)
    # dV's dot after dS (examples/fa2_bwd.py): it joins dK's and dQ's, and the vector
    # cores hand P and dS over together
    dv_acc = dv_acc + fd.dot(fd.cast(pd, w.vt.dtype), do_dv, transpose_a=True)
    dk_acc = dk_acc + fd.dot(ds_in, q_dk, transpose_a=True)
    dq_part = fd.dot(ds_in, w.kt) * w.scale
    fd.atomic_add(block_of(spec, w.dq, w.b, h, rows, w.d), dq_part)
    return dk_acc, dv_acc


def scores_grad(spec: Any, raw: Any, t: Any, kv_idx: Any) -> tuple[Any, Any]:
    """The forward's scores (scaled -> softcap -> score_mod) and their derivative in
    the scaled scores (None when it is 1)."""
    s, deriv = raw, None
    if spec.softcap is not None:
        th = fd.tanh(raw / spec.softcap)
        s, deriv = spec.softcap * th, 1.0 - th * th
    if spec.score_mod is not None:
        b, h = mod_scalars(t)
        out, dmod, traced = score_mod_traced(spec, s, b, h, t.q_idx, kv_idx)
        s, t.mod_trace = out, (out, traced)
        deriv = product(deriv, 0.0 if dmod is None else dmod)
    return s, deriv


def product(a: Any, b: Any) -> Any:
    """a * b, where None is 1 (no factor)."""
    if a is None:
        return None if isinstance(b, float) and b == 1.0 else b
    return a * b


def q_blocks(
    spec: Any, j: Any, q_len: Any, kv_len: Any, block_q: Any, block_kv: Any
) -> tuple[Any, Any]:
    """Q blocks [lo, hi) that causal / window masks let see KV block j.

    Row r sees column c when r + shift - left <= c <= r + shift + right (bottom-right
    alignment, shift = kv_len - q_len); KV blocks past a packed sequence see none.
    """
    n_q = fd.cdiv(q_len, block_q)
    first, last = j * block_kv, j * block_kv + block_kv - 1
    shift = kv_len - q_len
    lo, hi = 0, n_q
    left, right = spec.window if spec.window is not None else (-1, -1)
    if spec.causal:
        right = 0 if right < 0 else min(right, 0)
    if right >= 0:
        lo = fd.floordiv(fd.maximum(first - shift - right, 0), block_q)
    if left >= 0:
        hi = fd.minimum(n_q, fd.cdiv(fd.maximum(last - shift + left + 1, 0), block_q))
    if spec.varlen:
        hi = hi * fd.minimum(1, fd.maximum(kv_len - first, 0))
    return lo, hi
