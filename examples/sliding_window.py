"""Sliding-window (local) attention, from ``fd.attention``.

``window=(left, right)`` keeps key positions in [r + Skv - Sq - left, r + Skv - Sq + right]
for query row r (relative to the bottom-right diagonal, FlashAttention 2.3; -1 leaves a
side unbounded). Each Q block's KV loop runs only over the blocks the band touches, so
the work grows with the window, not with the sequence.

    fadsl run examples/sliding_window.py --shape B=1,N=4,Sq=2048,Skv=2048,D=128 -o out/sw
"""

import numpy as np

import fadsl as fd

LEFT, RIGHT = 256, 0
kernel = fd.attention(name="sliding_window", window=(LEFT, RIGHT), return_lse=True)


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """Plain attention with the band mask, in float64 (dtype None) or in ``dtype``."""
    acc = np.float64 if dtype is None else np.float32
    q, k, v = (inputs[n].astype(acc) for n in ("q", "k", "v"))
    k, v = (np.repeat(x, q.shape[1] // x.shape[1], axis=1) for x in (k, v))  # GQA
    sq, skv = q.shape[2], k.shape[2]
    scale = acc(consts.get("scale") or q.shape[3] ** -0.5)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    diag = np.arange(sq)[:, None] + (skv - sq)
    cols = np.arange(skv)[None, :]
    s = np.where((cols >= diag - LEFT) & (cols <= diag + RIGHT), s, -np.inf)
    return _softmax_pv(s, v, dtype)


def _softmax_pv(s: np.ndarray, v: np.ndarray, dtype) -> dict:
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isinf(m), 0.0, m))
    l = p.sum(axis=-1, keepdims=True)
    if dtype is not None:
        p = fd.numerics.quantize(p, dtype).astype(s.dtype)
    o = np.einsum("bhqk,bhkd->bhqd", p, v) / np.where(l == 0, 1.0, l)
    if dtype is not None:
        o = fd.numerics.quantize(o, dtype)
    empty = l[..., 0] == 0
    lse = np.where(empty, -np.inf, m[..., 0] + np.log(np.where(empty, 1.0, l[..., 0])))
    return {"o": o.astype(np.float64), "lse": lse.astype(np.float64)}


kernel.reference = reference
