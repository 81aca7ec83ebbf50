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
    rep = (lambda t: np.repeat(t, 2, axis=-1)) if interleaved else (
        lambda t: np.concatenate([t, t], axis=-1)
    )
    c, s = rep(c)[:, :, None, :], rep(s)[:, :, None, :]
    head = x[..., :ro]
    out = x.copy()
    out[..., :ro] = head * c + rotate_half(head, interleaved) * s
    return out
