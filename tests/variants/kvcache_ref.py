"""Independent numpy references for Dao's ``test_flash_attn_kvcache`` (FlashAttention
tests/test_flash_attn.py): rotary embedding as ``flash_attn.layers.rotary``'s
``apply_rotary_emb`` defines it (interleaved or half pairs, a rotary fraction of the head
dim, per-sequence position offsets), written here with numpy slicing, not with the
DSL's pairing matrices."""

from __future__ import annotations

import numpy as np


def rotate_half(x: np.ndarray, interleaved: bool) -> np.ndarray:
    """(-x2, x1) of each pair: halves, or even / odd columns when interleaved."""
    if not interleaved:
        x1, x2 = np.split(x, 2, axis=-1)
        return np.concatenate([-x2, x1], axis=-1)
    x1, x2 = x[..., ::2], x[..., 1::2]
    return np.stack([-x2, x1], axis=-1).reshape(x.shape)


def apply_rotary(
    x: np.ndarray,
    cos: np.ndarray,
    sin: np.ndarray,
    offsets: np.ndarray,
    interleaved: bool,
) -> np.ndarray:
    """x [B, S, H, D] (float64) rotated at positions offsets[b] + s; cos / sin
    [MaxPos, rotary_dim / 2]. Columns past rotary_dim pass through."""
    ro = cos.shape[1] * 2
    seq = x.shape[1]
    pos = offsets[:, None] + np.arange(seq)[None, :]  # [B, S]
    c, s = cos[pos], sin[pos]  # [B, S, R]
    rep = (
        (lambda t: np.repeat(t, 2, axis=-1))
        if interleaved
        else (lambda t: np.concatenate([t, t], axis=-1))
    )
    c, s = rep(c)[:, :, None, :], rep(s)[:, :, None, :]
    head = x[..., :ro]
    out = x.copy()
    out[..., :ro] = head * c + rotate_half(head, interleaved) * s
    return out


def gather_pages(paged: np.ndarray, table: np.ndarray, seqlen_k: int) -> np.ndarray:
    """A paged cache [Pages, P, H, D] as each sequence sees it: [B, seqlen_k, H, D]."""
    b, n_blocks = table.shape
    flat = paged[table.reshape(-1)]  # [(b n), P, H, D]
    seq = flat.reshape(b, n_blocks * paged.shape[1], *paged.shape[2:])
    return seq[:, :seqlen_k]


def kvcache_reference(
    q: np.ndarray,
    k_cache: np.ndarray,
    v_cache: np.ndarray,
    k_new: np.ndarray,
    v_new: np.ndarray,
    cache_seqlens: np.ndarray,
    causal: bool,
    cos: np.ndarray | None = None,
    sin: np.ndarray | None = None,
    interleaved: bool = False,
    leftpad: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dao's test_flash_attn_kvcache reference with new_kv=True, in float64 (BSND):
    rotate q and the new keys, write the new keys / values at cache_seqlens, then
    attention_ref with the key padding mask, leftpad and causal (bottom-right aligned
    to each sequence's keys after leftpad). k_cache / v_cache are the contiguous
    [B, Skv, Hk, D] views; returns (out, k_cache_ref, v_cache_ref)."""
    b, sq, h, d = q.shape
    skv, hk = k_cache.shape[1], k_cache.shape[2]
    lens = cache_seqlens.astype(np.int64)
    if cos is not None:
        q_pos = lens if causal else lens  # non-causal: every row at cache_seqlens
        if causal:
            q = apply_rotary(q, cos, sin, q_pos, interleaved)
        else:  # Dao: rearrange "b s h d -> b 1 (s h) d", one position per sequence
            flat = q.reshape(b, 1, sq * h, d)
            q = apply_rotary(flat, cos, sin, q_pos, interleaved).reshape(b, sq, h, d)
        k_new = apply_rotary(k_new, cos, sin, lens, interleaved)
    k_ref, v_ref = k_cache.copy(), v_cache.copy()
    arange = np.arange(skv)[None, :]
    update = (lens[:, None] <= arange) & (arange < lens[:, None] + sq)
    k_ref[update] = k_new.reshape(b * sq, hk, d)
    v_ref[update] = v_new.reshape(b * sq, hk, v_new.shape[-1])
    key_mask = arange < lens[:, None] + sq
    pad = np.zeros(b, np.int64) if leftpad is None else leftpad.astype(np.int64)
    key_mask &= arange >= pad[:, None]
    g = h // hk
    k_rep, v_rep = np.repeat(k_ref, g, axis=2), np.repeat(v_ref, g, axis=2)
    scores = np.einsum("bthd,bshd->bhts", q / np.sqrt(d), k_rep)
    keep = np.broadcast_to(key_mask[:, None, None, :], scores.shape).copy()
    if causal:  # attention_ref with key_leftpad: columns shifted by leftpad
        col = arange[None, :, :] - pad[:, None, None]  # [B, 1, Skv]
        row = np.arange(sq)[None, :, None]
        sk = key_mask.sum(-1)[:, None, None]
        keep &= (col <= row + sk - sq)[:, None, :, :]
    scores = np.where(keep, scores, -np.inf)
    mx = scores.max(-1, keepdims=True)
    p = np.exp(scores - np.where(np.isinf(mx), 0.0, mx))
    p = p / np.maximum(p.sum(-1, keepdims=True), 1e-300)
    out = np.einsum("bhts,bshd->bthd", p, v_rep)
    return out, k_ref, v_ref
