"""FlashAttention-2 forward as a fadsl tile program (layout BNSD).

One grid point is one (batch, head, Q block) task. The KV loop is pipelined
(``stages=2`` double-buffers K/V loads where L1 fits two) and keeps the online-softmax
state ``m`` (row max), ``l`` (row sum) and ``acc`` (unnormalised output) in fp32.
Causal attention is bottom-right aligned when Sq != Skv (FlashAttention >= 2.1):
query row r sees key positions <= r + Skv - Sq; rows that see nothing output 0.

    fadsl run examples/fa2.py --shape B=1,N=2,Sq=300,Skv=200,D=64 --set causal=True -o out/
"""

import fadsl as fd


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """Plain (non-tiled) attention with the kernel's semantics.

    dtype=None: in float64 (the golden). dtype given (a fadsl dtype): the same-precision
    reference of the tolerance rule, inputs as given, fp32 accumulation and softmax,
    P rounded to ``dtype`` before P @ V, output rounded to ``dtype``.
    """
    import numpy as np  # here, not at the top: compile and check need no numpy

    acc = np.float64 if dtype is None else np.float32
    q, k, v = (inputs[n].astype(acc) for n in ("q", "k", "v"))
    sq, skv = q.shape[2], k.shape[2]
    scale = consts.get("scale") or q.shape[3] ** -0.5
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * acc(scale)
    if consts.get("causal"):
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
    return {"o": o.astype(np.float64)}


@fd.kernel(
    dtype="fp16",
    default_shape=dict(B=1, N=8, Sq=4096, Skv=4096, D=128),
    reference=reference,
)
def fa2(
    q: fd.In("B", "N", "Sq", "D"),
    k: fd.In("B", "N", "Skv", "D"),
    v: fd.In("B", "N", "Skv", "D"),
    o: fd.Out("B", "N", "Sq", "D"),
    scale: fd.Scalar = "D ** -0.5",
    causal: bool = False,
    block_q: int = 128,
    block_kv: int = 512,
    stages: int = 2,
):
    B, N, Sq, D = q.shape
    Skv = k.shape[2]
    for b, h, i in fd.grid(B, N, fd.cdiv(Sq, block_q)):
        rows = fd.ds(i * block_q, block_q)
        qt = fd.load(q[b, h, rows, :], pad=0)
        q_idx = fd.arange(i * block_q, block_q)
        m = fd.full((block_q,), -fd.inf, fd.f32)
        l = fd.zeros((block_q,), fd.f32)
        acc = fd.zeros((block_q, D), fd.f32)
        n_kv = fd.cdiv(Skv, block_kv)
        if causal:
            # KV blocks wholly above the (bottom-right aligned) diagonal are skipped.
            last = (i + 1) * block_q + Skv - Sq
            n_kv = fd.maximum(0, fd.minimum(n_kv, fd.cdiv(fd.maximum(last, 0), block_kv)))
        for j in fd.pipelined(n_kv, stages=stages):
            cols = fd.ds(j * block_kv, block_kv)
            kt = fd.load(k[b, h, cols, :], pad=0)
            vt = fd.load(v[b, h, cols, :], pad=0)
            s = fd.dot(qt, kt, transpose_b=True) * scale
            kv_idx = fd.arange(j * block_kv, block_kv)
            keep = kv_idx[None, :] < Skv
            if causal:
                keep = keep & (kv_idx[None, :] <= q_idx[:, None] + (Skv - Sq))
            s = fd.where(keep, s, -fd.inf)
            m_new = fd.maximum(m, fd.row_max(s))
            m_safe = fd.where(m_new == -fd.inf, 0.0, m_new)  # fully masked rows so far
            p = fd.exp(s - m_safe[:, None])
            alpha = fd.exp(m - m_safe)
            l = l * alpha + fd.row_sum(p)
            acc = fd.dot(fd.cast(p, v.dtype), vt) + acc * alpha[:, None]
            m = m_new
        l_safe = fd.where(l == 0.0, 1.0, l)  # rows that saw no key: acc is 0, output 0
        fd.store(o[b, h, rows, :], fd.cast(acc / l_safe[:, None], o.dtype))
