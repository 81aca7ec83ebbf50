"""Attention dropout with a counter-based RNG (Philox4x32-10), replayable anywhere.

The probability at (b, h, q_idx, kv_idx) is dropped with chance p when the Philox number
drawn at counter (kv_idx // 4, q_idx, b * N + h, offset) with key ``seed`` is below p;
kept ones are scaled by 1 / (1 - p). The mask depends only on the seed, the offset and
the position, never on tiling or backend: the interpreter, the generated Ascend C and a
later backward pass all drop the same elements (docs/variants.md).

    fadsl run examples/dropout.py --shape B=1,N=4,Sq=1024,Skv=1024,D=128 -o out/dropout
"""

import numpy as np

import fadsl as fd
from fadsl.rng import dropout_keep, philox_uniform

P = 0.1
kernel = fd.attention(name="dropout", dropout_p=P, causal=True)


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """Plain causal attention with the Philox keep mask applied to the probabilities."""
    acc = np.float64 if dtype is None else np.float32
    q, k, v = (inputs[n].astype(acc) for n in ("q", "k", "v"))
    k, v = (np.repeat(x, q.shape[1] // x.shape[1], axis=1) for x in (k, v))  # GQA
    b_, n, sq, _ = q.shape
    skv = k.shape[2]
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * acc(
        consts.get("scale") or q.shape[3] ** -0.5
    )
    rows, cols = np.arange(sq)[:, None], np.arange(skv)[None, :]
    s = np.where(cols <= rows + (skv - sq), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isinf(m), 0.0, m))
    l = p.sum(axis=-1, keepdims=True)
    stream = np.arange(b_)[:, None, None, None] * n + np.arange(n)[None, :, None, None]
    seed, offset = inputs["seed"], int(inputs["offset"][0])
    u = philox_uniform(int(seed[0]), int(seed[1]), offset, stream, rows, cols)
    p = np.where(dropout_keep(u, P), p * acc(1.0 / (1.0 - P)), 0.0)
    if dtype is not None:
        p = fd.numerics.quantize(p, dtype).astype(acc)
    o = np.einsum("bhqk,bhkd->bhqd", p, v) / np.where(l == 0, 1.0, l)
    if dtype is not None:
        o = fd.numerics.quantize(o, dtype)
    return {"o": o.astype(np.float64)}


kernel.reference = reference
