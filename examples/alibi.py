"""ALiBi (Press et al. 2022) as a FlexAttention score_mod, with per-head slopes read from
an extra input tensor, plus causal masking.

``slopes`` is declared with ``fd.tensor``; ``fd.attention`` finds it in the score_mod and
adds it as an input of the kernel (``slopes.bin`` for ``fadsl run --inputs``). Inside the
kernel ``slopes[h]`` is a scalar load (f32) and ``kv_idx - q_idx`` a [block_q, block_kv]
tile of relative positions, so the bias is vector code.

    fadsl run examples/alibi.py --shape B=1,N=8,Sq=1024,Skv=1024,D=128 -o out/alibi
"""

import numpy as np

import fadsl as fd


def alibi_slopes(shape: tuple, rng) -> np.ndarray:
    """The geometric slopes of the paper: 2^(-8 (h + 1) / N) for head h."""
    n = shape[0]
    return 2.0 ** (-8.0 * (np.arange(n) + 1) / n)


slopes = fd.tensor("slopes", "N", dtype="fp32", init=alibi_slopes)


def alibi(score, b, h, q_idx, kv_idx):
    return score + slopes[h] * (kv_idx - q_idx)


kernel = fd.attention(name="alibi", score_mod=alibi, causal=True)


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """Plain causal attention plus the ALiBi bias, in float64 or in ``dtype``."""
    acc = np.float64 if dtype is None else np.float32
    q, k, v = (inputs[n].astype(acc) for n in ("q", "k", "v"))
    k, v = (np.repeat(x, q.shape[1] // x.shape[1], axis=1) for x in (k, v))  # GQA
    sq, skv = q.shape[2], k.shape[2]
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * acc(
        consts.get("scale") or q.shape[3] ** -0.5
    )
    rel = (np.arange(skv)[None, :] - np.arange(sq)[:, None]).astype(acc)
    s = s + inputs["slopes"].astype(acc)[None, :, None, None] * rel
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
    return {"o": o.astype(np.float64)}


kernel.reference = reference
