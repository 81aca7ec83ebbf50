"""Variable-length sequences packed like CANN's TND layout (``layout="TND"``).

q and o are [Sq, N, D], k and v [Skv, Nkv, D], where Sq and Skv are the total numbers of
tokens of B sequences stored one after another; ``cu_seqlens_q`` and ``cu_seqlens_kv``
(i32 [B + 1]) give where each starts, as in FlashAttention's ``flash_attn_varlen_func``.
Each sequence attends causally (bottom-right aligned) within itself; its positions
restart at 0. Loads and stores use bounded blocks, so no block touches its neighbours.

    fadsl run examples/varlen.py --shape B=4,N=4,Sq=1500,Skv=1800,D=128 -o out/varlen
"""

import numpy as np

import fadsl as fd

kernel = fd.attention(name="varlen", layout="TND", causal=True, return_lse=True)


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """Each sequence on its own: plain causal attention, outputs packed back."""
    acc = np.float64 if dtype is None else np.float32
    group = shape["N"] // shape["Nkv"]
    scale = acc(consts.get("scale") or shape["D"] ** -0.5)
    o = np.zeros(inputs["q"].shape)
    lse = np.zeros((shape["N"], shape["Sq"]))
    cq, ck = inputs["cu_seqlens_q"], inputs["cu_seqlens_kv"]
    for b in range(shape["B"]):
        rows, keys = slice(cq[b], cq[b + 1]), slice(ck[b], ck[b + 1])
        q = inputs["q"][rows].astype(acc).transpose(1, 0, 2)
        k, v = (
            np.repeat(inputs[x][keys].astype(acc).transpose(1, 0, 2), group, axis=0)
            for x in ("k", "v")
        )
        sq, skv = q.shape[1], k.shape[1]
        s = np.where(
            np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq),
            np.einsum("hqd,hkd->hqk", q, k) * scale,
            -np.inf,
        )
        m = s.max(axis=-1, keepdims=True, initial=-np.inf)
        p = np.exp(s - np.where(np.isinf(m), 0.0, m))
        l = p.sum(axis=-1, keepdims=True)
        if dtype is not None:
            p = fd.numerics.quantize(p, dtype).astype(acc)
        ob = np.einsum("hqk,hkd->hqd", p, v) / np.where(l == 0, 1.0, l)
        o[rows] = (ob if dtype is None else fd.numerics.quantize(ob, dtype)).transpose(
            1, 0, 2
        )
        empty = l[..., 0] == 0
        lse[:, rows] = np.where(
            empty, -np.inf, m[..., 0] + np.log(np.where(empty, 1, l[..., 0]))
        )
    return {"o": o, "lse": lse}


kernel.reference = reference
kernel.default_shape = dict(B=4, N=8, Sq=4096, Skv=4096, D=128)
