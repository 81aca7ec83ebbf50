"""FlashAttention-3-style forward: the cube preloads the next block's scores (ping-pong).

FlashAttention-3 (Shah et al. 2024) overlaps the softmax of one block with the matmuls of
another. On an Ascend MIX kernel the matmuls run on the cube core and the softmax on the
two vector cores, so the overlap is between cores: each KV-loop iteration takes two KV
blocks and issues both score matmuls S0 = Q K0^T and S1 = Q K1^T before any softmax. Each
score tile has its own GM workspace and cross-core flag, and the vector cores wait for a
tile only where they first read it, so the cube computes S1 (into the second workspace)
while the vector cores run the softmax of S0, and P0 V0 while they run the softmax of S1:
two ping-pong workspaces. K and V blocks are single-buffered by default (``stages=1``):
each iteration loads four L1 blocks, and double-buffering them would give the cube core
4 x 2 + 3 (Q and the two P tiles) queue buffers in L1, while the TPipe has only 8 IDs of
the event that a freed L1 buffer holds (``fadsl check`` refuses ``--set stages=2`` and
explains; see docs/backend.md).
An odd last block is paired with a fully masked one (its loads are clamped).

``fp8=True`` quantizes Q, K, V and P to float8 e4m3 before the matmuls, as FA3's FP8 path
does: the interpreter runs it on any machine, and ``fadsl check`` / ``compile`` accept it
only for a chip whose cube takes fp8 (none of fadsl's built-in 910B/A3 targets does,
which is said clearly, naming the dot).

    fadsl run examples/fa3.py --shape B=1,N=2,Sq=300,Skv=500,D=128 --set causal=True -o out/
"""

import numpy as np

import fadsl as fd


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """Plain attention (causal: bottom-right aligned) in float64 or in ``dtype``. With
    fp8 the same-precision reference rounds q, k, v and P to float8 e4m3 (the precision
    the kernel computes in); the float64 golden stays the exact attention of the inputs.
    """
    acc = np.float64 if dtype is None else np.float32
    fp8 = bool(consts.get("fp8")) and dtype is not None
    q, k, v = (_e4m3(inputs[n], fp8).astype(acc) for n in ("q", "k", "v"))
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
    if fp8:
        p = _e4m3(p, True).astype(acc)
    elif dtype is not None:
        p = fd.numerics.quantize(p, dtype).astype(acc)
    o = np.einsum("bhqk,bhkd->bhqd", p, v) / np.where(l == 0, 1.0, l)
    if dtype is not None:
        o = fd.numerics.quantize(o, dtype)
    return {"o": o.astype(np.float64)}


def _e4m3(x: np.ndarray, on: bool) -> np.ndarray:
    return fd.numerics.quantize(x, fd.float8_e4m3) if on else np.asarray(x)


@fd.kernel(
    dtype="fp16",
    default_shape=dict(B=1, N=8, Sq=2048, Skv=2048, D=128),
    reference=reference,
)
def fa3(
    q: fd.In("B", "N", "Sq", "D"),
    k: fd.In("B", "N", "Skv", "D"),
    v: fd.In("B", "N", "Skv", "D"),
    o: fd.Out("B", "N", "Sq", "D"),
    scale: fd.Scalar = "D ** -0.5",
    causal: bool = False,
    fp8: bool = False,
    block_q: int = 128,
    block_kv: int = 64,
    stages: int = 1,
):
    B, N, Sq, D = q.shape
    Skv = k.shape[2]
    mm = fd.float8_e4m3 if fp8 else q.dtype  # the cube's operand dtype
    for b, h, i in fd.grid(B, N, fd.cdiv(Sq, block_q)):
        rows = fd.ds(i * block_q, block_q)
        qt = fd.load(q[b, h, rows, :], pad=0)
        if fp8:
            qt = fd.cast(qt, mm)
        q_idx = fd.arange(i * block_q, block_q)
        m = fd.full((block_q,), -fd.inf, fd.f32)
        l = fd.zeros((block_q,), fd.f32)
        acc = fd.zeros((block_q, D), fd.f32)
        n_kv = fd.cdiv(Skv, block_kv)
        if causal:
            last = (i + 1) * block_q + Skv - Sq
            n_kv = fd.maximum(
                0, fd.minimum(n_kv, fd.cdiv(fd.maximum(last, 0), block_kv))
            )
        for t in fd.pipelined(fd.cdiv(n_kv, 2), stages=stages):
            j0, j1 = 2 * t, 2 * t + 1
            k0, v0 = kv_block(k, v, b, h, j0, block_kv, mm, fp8)
            k1, v1 = kv_block(k, v, b, h, fd.minimum(j1, n_kv - 1), block_kv, mm, fp8)
            # both score tiles are issued before either softmax: S1 fills the second
            # workspace while the vector cores work on S0
            s0 = fd.dot(qt, k0, transpose_b=True)
            s1 = fd.dot(qt, k1, transpose_b=True)
            m, l, acc = softmax_step(
                s0 * scale, v0, j0, q_idx, m, l, acc, block_kv, Sq, Skv, causal, mm
            )
            m, l, acc = softmax_step(
                s1 * scale, v1, j1, q_idx, m, l, acc, block_kv, Sq, Skv, causal, mm
            )
        l_safe = fd.where(l == 0.0, 1.0, l)  # rows that saw no key: acc is 0, output 0
        fd.store(o[b, h, rows, :], fd.cast(acc / l_safe[:, None], o.dtype))


def kv_block(k, v, b, h, j, block_kv, mm, fp8):
    """K and V block j (fp8: rounded to e4m3 for the cube)."""
    cols = fd.ds(j * block_kv, block_kv)
    kt = fd.load(k[b, h, cols, :], pad=0)
    vt = fd.load(v[b, h, cols, :], pad=0)
    if fp8:
        return fd.cast(kt, mm), fd.cast(vt, mm)
    return kt, vt


def softmax_step(s, vt, j, q_idx, m, l, acc, block_kv, Sq, Skv, causal, mm):
    """The online-softmax update with KV block j (masks: the sequence end, causal)."""
    kv_idx = fd.arange(j * block_kv, block_kv)
    keep = kv_idx[None, :] < Skv
    if causal:
        keep = keep & (kv_idx[None, :] <= q_idx[:, None] + (Skv - Sq))
    s = fd.where(keep, s, -fd.inf)
    m_new = fd.maximum(m, fd.row_max(s))
    m_safe = fd.where(m_new == -fd.inf, 0.0, m_new)
    p = fd.exp(s - m_safe[:, None])
    alpha = fd.exp(m - m_safe)
    l = l * alpha + fd.row_sum(p)
    acc = acc * alpha[:, None] + fd.dot(fd.cast(p, mm), vt)
    return m_new, l, acc
