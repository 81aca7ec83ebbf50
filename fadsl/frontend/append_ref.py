"""The reference of ``fd.attention(..., append_kv=True)`` for ``fadsl run`` / ``sim``:
plain attention per sequence and head after the append (docs/decode.md).

dtype=None: float64 (the golden). dtype given: the same-precision reference of the
tolerance rule: the rotated Q and new keys rounded to ``dtype`` (the kernel casts them
for the cube), f32 softmax, P rounded before P @ V, the output rounded."""

from __future__ import annotations

from typing import Any

from fadsl.numerics import quantize


def reference(
    spec: Any, inputs: dict, shape: dict, consts: dict, dtype: Any = None
) -> dict[str, Any]:
    import numpy as np

    acc = np.float64 if dtype is None else np.float32
    q, k_new, v_new = (
        _bsnd(spec, inputs[n]).astype(acc) for n in ("q", "k_new", "v_new")
    )
    lens = np.asarray(inputs["seqlens_kv"]).astype(np.int64)
    b, sq, heads, d = q.shape
    pad = np.asarray(inputs["leftpad"]).astype(np.int64) if spec.leftpad else 0 * lens
    scale = acc(consts.get("scale") or d**-0.5)
    out = np.zeros(q.shape[:3] + (v_new.shape[-1],), acc)
    for s in range(b):
        qs, ks = q[s], k_new[s]
        if spec.rotary is not None:
            rows = lens[s] + (np.arange(sq) if spec.causal else np.zeros(sq, np.int64))
            qs = _round(_rotate(spec, qs, inputs, rows), dtype, acc)
            ks = _round(_rotate(spec, ks, inputs, lens[s] + np.arange(sq)), dtype, acc)
        keys, values = _keys(spec, inputs, s, lens[s], acc)
        keys = np.concatenate([keys, ks], axis=0)[pad[s] :]  # [L + Sq - pad, Nkv, D]
        values = np.concatenate([values, v_new[s]], axis=0)[pad[s] :]
        out[s] = _attend(spec, qs, keys, values, scale, dtype, acc)
    if spec.layout == "BNSD":
        out = out.transpose(0, 2, 1, 3)
    if dtype is not None:
        out = quantize(out, dtype)
    return {"o": out.astype(np.float64)}


def _bsnd(spec: Any, x: Any) -> Any:
    return x.transpose(0, 2, 1, 3) if spec.layout == "BNSD" else x


def _round(x: Any, dtype: Any, acc: Any) -> Any:
    return x if dtype is None else quantize(x, dtype).astype(acc)


def _keys(spec: Any, inputs: dict, s: int, length: int, acc: Any) -> tuple[Any, Any]:
    """The cached keys and values of sequence s, positions 0 .. length - 1."""
    import numpy as np

    page = spec.page_size
    cols = inputs["block_table"][s, : -(-length // page)].astype(np.int64)
    k = inputs["k_cache"][cols].reshape(-1, *inputs["k_cache"].shape[2:])[:length]
    v = inputs["v_cache"][cols].reshape(-1, *inputs["v_cache"].shape[2:])[:length]
    return k.astype(acc), v.astype(acc)


def _rotate(spec: Any, x: Any, inputs: dict, rows: Any) -> Any:
    """x [S, H, D] rotated at positions ``rows`` (FlashAttention's apply_rotary_emb)."""
    import numpy as np

    cos, sin = inputs["rotary_cos"][rows], inputs["rotary_sin"][rows]  # [S, R]
    half = cos.shape[1]
    if spec.rotary == "interleaved":
        a, b = x[..., 0 : 2 * half : 2], x[..., 1 : 2 * half : 2]
    else:
        a, b = x[..., :half], x[..., half : 2 * half]
    c, s = cos[:, None, :], sin[:, None, :]
    out = x.copy()
    ra, rb = a * c - b * s, b * c + a * s
    if spec.rotary == "interleaved":
        out[..., 0 : 2 * half : 2], out[..., 1 : 2 * half : 2] = ra, rb
    else:
        out[..., :half], out[..., half : 2 * half] = ra, rb
    return out.astype(x.dtype) if x.dtype != np.float64 else out


def _attend(spec: Any, q: Any, k: Any, v: Any, scale: Any, dtype: Any, acc: Any) -> Any:
    """q [Sq, N, D] over k, v [K, Nkv, D]: causal bottom-right aligned to K."""
    import numpy as np

    sq, heads = q.shape[0], q.shape[1]
    group = heads // k.shape[1]
    kk, vv = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.einsum("qhd,khd->hqk", q, kk) * scale
    if spec.causal:
        n = kk.shape[0]
        keep = np.arange(n)[None, :] <= np.arange(sq)[:, None] + (n - sq)
        s = np.where(keep[None], s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - np.where(np.isinf(m), 0.0, m))
    l = p.sum(-1, keepdims=True)
    if dtype is not None:
        p = quantize(p, dtype).astype(acc)
    o = np.einsum("hqk,khd->qhd", p, vv) / np.where(l == 0, 1.0, l).transpose(1, 0, 2)
    return o
