"""Grouped-query attention (GQA, and MQA with Nkv=1) in the BSND layout.

K and V have Nkv heads; query head h reads KV head h // (N / Nkv), so N must be a
multiple of Nkv (checked when the shape is bound). BSND keeps heads inside a position:
q and o are [B, Sq, N, D], k and v [B, Skv, Nkv, D].

    fadsl run examples/gqa.py --shape B=1,N=8,Nkv=2,Sq=1024,Skv=1024,D=128 -o out/gqa
"""

import numpy as np

import fadsl as fd

kernel = fd.attention(name="gqa", layout="BSND", return_lse=True)


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """Plain attention with each KV head repeated for its query heads."""
    acc = np.float64 if dtype is None else np.float32
    group = shape["N"] // shape["Nkv"]
    q = inputs["q"].astype(acc).transpose(0, 2, 1, 3)
    k, v = (
        np.repeat(inputs[x].astype(acc).transpose(0, 2, 1, 3), group, axis=1)
        for x in ("k", "v")
    )
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * acc(
        consts.get("scale") or q.shape[3] ** -0.5
    )
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(axis=-1, keepdims=True)
    if dtype is not None:
        p = fd.numerics.quantize(p, dtype).astype(acc)
    o = np.einsum("bhqk,bhkd->bhqd", p, v) / l
    if dtype is not None:
        o = fd.numerics.quantize(o, dtype)
    lse = m[..., 0] + np.log(l[..., 0])
    return {
        "o": o.transpose(0, 2, 1, 3).astype(np.float64),
        "lse": lse.astype(np.float64),
    }


kernel.reference = reference
kernel.default_shape = dict(B=1, N=8, Nkv=2, Sq=2048, Skv=2048, D=128)
