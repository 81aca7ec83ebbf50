"""FlashAttention-1 forward as a fadsl tile program: KV blocks outer, Q blocks inner.

The loop order of the FlashAttention paper (Dao et al. 2022, Algorithm 1): each grid point
is one (batch, head); for every KV block j, K_j and V_j are loaded once and every Q block
i is visited, reading its running output O_i, row max m_i and row sum l_i from global
memory (``fd.Scratch`` tensors), updating them and writing them back. A last pass divides
O by l. FlashAttention-2 swapped the loops so that the running state stays on chip; this
program keeps FA-1's order to show GM-resident state (and what it costs: 3 extra reads and
writes of the state per block pair).

    fadsl run examples/fa1.py --shape B=1,N=2,Sq=300,Skv=200,D=64 --set causal=True -o out/
"""

import numpy as np

import fadsl as fd


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """Plain attention (causal: bottom-right aligned) in float64 or in ``dtype``."""
    acc = np.float64 if dtype is None else np.float32
    q, k, v = (inputs[n].astype(acc) for n in ("q", "k", "v"))
    sq, skv = q.shape[2], k.shape[2]
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * acc(
        consts.get("scale") or q.shape[3] ** -0.5
    )
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
    default_shape=dict(B=1, N=8, Sq=2048, Skv=2048, D=128),
    reference=reference,
)
def fa1(
    q: fd.In("B", "N", "Sq", "D"),
    k: fd.In("B", "N", "Skv", "D"),
    v: fd.In("B", "N", "Skv", "D"),
    o: fd.Out("B", "N", "Sq", "D"),
    o_run: fd.Scratch("B", "N", "Sq", "D", dtype=fd.f32),
    m_run: fd.Scratch("B", "N", "Sq", dtype=fd.f32),
    l_run: fd.Scratch("B", "N", "Sq", dtype=fd.f32),
    scale: fd.Scalar = "D ** -0.5",
    causal: bool = False,
    block_q: int = 64,
    block_kv: int = 128,
    stages: int = 2,
):
    B, N, Sq, D = q.shape
    Skv = k.shape[2]
    n_q = fd.cdiv(Sq, block_q)
    for b, h in fd.grid(B, N):
        for i in range(n_q):  # O = 0, m = -inf, l = 0 in global memory
            rows = fd.ds(i * block_q, block_q)
            fd.store(o_run[b, h, rows, :], fd.zeros((block_q, D), fd.f32))
            fd.store(m_run[b, h, rows], fd.full((block_q,), -fd.inf, fd.f32))
            fd.store(l_run[b, h, rows], fd.zeros((block_q,), fd.f32))
        for j in range(fd.cdiv(Skv, block_kv)):
            cols = fd.ds(j * block_kv, block_kv)
            kt = fd.load(k[b, h, cols, :], pad=0)
            vt = fd.load(v[b, h, cols, :], pad=0)
            kv_idx = fd.arange(j * block_kv, block_kv)
            first = 0
            if causal:
                # Q blocks wholly above the (bottom-right aligned) diagonal skip block j
                first = fd.floordiv(fd.maximum(j * block_kv + Sq - Skv, 0), block_q)
            for i in fd.pipelined(first, n_q, stages=stages):
                rows = fd.ds(i * block_q, block_q)
                qt = fd.load(q[b, h, rows, :], pad=0)
                m = fd.load(m_run[b, h, rows], pad=0)
                l = fd.load(l_run[b, h, rows], pad=0)
                acc = fd.load(o_run[b, h, rows, :], pad=0)
                s = fd.dot(qt, kt, transpose_b=True) * scale
                keep = kv_idx[None, :] < Skv
                if causal:
                    q_idx = fd.arange(i * block_q, block_q)
                    keep = keep & (kv_idx[None, :] <= q_idx[:, None] + (Skv - Sq))
                s = fd.where(keep, s, -fd.inf)
                m_new = fd.maximum(m, fd.row_max(s))
                m_safe = fd.where(m_new == -fd.inf, 0.0, m_new)
                p = fd.exp(s - m_safe[:, None])
                alpha = fd.exp(m - m_safe)
                fd.store(l_run[b, h, rows], l * alpha + fd.row_sum(p))
                fd.store(
                    o_run[b, h, rows, :],
                    acc * alpha[:, None] + fd.dot(fd.cast(p, v.dtype), vt),
                )
                fd.store(m_run[b, h, rows], m_new)
        for i in range(n_q):  # O / l
            rows = fd.ds(i * block_q, block_q)
            l = fd.load(l_run[b, h, rows], pad=1)
            acc = fd.load(o_run[b, h, rows, :], pad=0)
            l_safe = fd.where(l == 0.0, 1.0, l)
            fd.store(o[b, h, rows, :], fd.cast(acc / l_safe[:, None], o.dtype))
