"""Logit soft-capping (Gemma 2 style) in the BSH layout, from ``fd.attention``.

``softcap=c`` replaces each scaled score s by c * tanh(s / c) before masking, keeping
logits in (-c, c). The tensors use CANN's BSH layout: q and o are [B, Sq, N * D], k and v
[B, Skv, Nkv * D]; each head's columns are a [rows, D] block of them.

    fadsl run examples/softcap.py --shape B=2,N=4,Sq=1000,Skv=1000,D=128 -o out/softcap
"""

import numpy as np

import fadsl as fd

CAP = 30.0
kernel = fd.attention(
    name="softcap", softcap=CAP, scale=0.25, layout="BSH", causal=True
)


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """Plain attention with soft-capped causal scores, in float64 or in ``dtype``."""
    acc = np.float64 if dtype is None else np.float32
    b, n, nkv, d = shape["B"], shape["N"], shape["Nkv"], shape["D"]
    q = inputs["q"].astype(acc).reshape(b, -1, n, d).transpose(0, 2, 1, 3)
    k, v = (
        np.repeat(
            inputs[x].astype(acc).reshape(b, -1, nkv, d).transpose(0, 2, 1, 3),
            n // nkv,
            axis=1,
        )
        for x in ("k", "v")
    )
    sq, skv = q.shape[2], k.shape[2]
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * acc(consts.get("scale") or 0.25)
    s = acc(CAP) * np.tanh(s / acc(CAP))
    s = np.where(
        np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq), s, -np.inf
    )
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isinf(m), 0.0, m))
    l = p.sum(axis=-1, keepdims=True)
    if dtype is not None:
        p = fd.numerics.quantize(p, dtype).astype(acc)
    o = np.einsum("bhqk,bhkd->bhqd", p, v) / np.where(l == 0, 1.0, l)
    if dtype is not None:
        o = fd.numerics.quantize(o, dtype)
    return {"o": o.transpose(0, 2, 1, 3).reshape(b, sq, n * d).astype(np.float64)}


kernel.reference = reference
