"""Causal attention with the log-sum-exp output, from ``fd.attention``.

Bottom-right aligned when Sq != Skv (FlashAttention 2.1+): query row r sees key
positions <= r + Skv - Sq, and rows that see no key output 0 with LSE -inf. The KV loop
of each Q block stops at the diagonal, so about half of the blocks are never computed
(``fadsl run`` reports the skipped fraction).

    fadsl run examples/causal.py --shape B=1,N=4,Sq=1000,Skv=1200,D=128 -o out/causal
"""

import numpy as np

import fadsl as fd

kernel = fd.attention(name="causal", causal=True, return_lse=True)


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """Plain causal attention in float64 (dtype None) or in ``dtype`` with fp32 sums."""
    acc = np.float64 if dtype is None else np.float32
    q, k, v = (inputs[n].astype(acc) for n in ("q", "k", "v"))
    k, v = (np.repeat(x, q.shape[1] // x.shape[1], axis=1) for x in (k, v))  # GQA
    sq, skv = q.shape[2], k.shape[2]
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * acc(
        consts.get("scale") or q.shape[3] ** -0.5
    )
    keep = np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq)
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isinf(m), 0.0, m))
    l = p.sum(axis=-1, keepdims=True)
    if dtype is not None:
        p = fd.numerics.quantize(p, dtype).astype(acc)
    o = np.einsum("bhqk,bhkd->bhqd", p, v) / np.where(l == 0, 1.0, l)
    if dtype is not None:
        o = fd.numerics.quantize(o, dtype)
    lse = np.where(
        l[..., 0] == 0,
        -np.inf,
        m[..., 0] + np.log(np.where(l[..., 0] == 0, 1, l[..., 0])),
    )
    return {"o": o.astype(np.float64), "lse": lse.astype(np.float64)}


kernel.reference = reference
kernel.default_shape = dict(B=1, N=8, Sq=2048, Skv=2048, D=128)
