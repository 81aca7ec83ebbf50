"""FlashAttention-2 backward as a hand-written fadsl tile program (layout BNSD).

From q, k, v, the forward's output o and row log-sum-exp lse, and the output gradient
do, it computes dq, dk, dv. One grid point is one (batch, head, KV block) task
(KV-major, as FlashAttention 2 and CANN's FlashAttentionScoreGrad): dK and dV of the
block stay in f32; per Q block that can see it, P = exp(S - lse) is recomputed, then

    dV += P^T dO,  dP = dO V^T,  Delta = rowsum(dO * O),  dS = P * (dP - Delta),
    dK += dS^T Q * scale,  dQ += dS K * scale

dQ is shared by the tasks of every KV block, so it is summed with ``fd.atomic_add``
(f32, rounded to the output dtype once after the grid). Causal attention is
bottom-right aligned, as in examples/fa2.py: Q blocks wholly above the diagonal are
skipped. ``fadsl run`` makes q, k, v, do random and o, lse the forward's outputs.

On 910B/A3 it compiles to a MIX kernel (generated/fa2_bwd/): the cube computes the five
dots, the two vector cores split each vector tile by its own row block (S, P, dS by
block_q; the dK, dV accumulators by block_kv), and dQ's atomic adds go to an f32 GM
workspace that is zeroed before the grid and cast into dq after it (docs/backward.md).
The default tiles (block_q=64, block_kv=128) fit 910B and A3 at D=128; 910A and 310P
need --set block_kv=64.

    fadsl run examples/fa2_bwd.py --shape B=1,N=2,Sq=300,Skv=200,D=64 \\
        --set causal=True -o out/
"""

import fadsl as fd


def _spec(consts: dict):  # type: ignore[no-untyped-def]
    return fd.attention_backward(name="fa2_bwd_ref", causal=bool(consts.get("causal")))


def _shape(shape: dict) -> dict:
    return dict(shape, Nkv=shape["N"])


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """dq, dk, dv by the analytic formulas (fadsl's float64 gradient reference, which a
    test checks against finite differences of the forward)."""
    from fadsl.frontend.attention_grad_ref import reference as grads

    return grads(_spec(consts).spec, inputs, _shape(shape), consts, dtype)


def make_inputs(shape: dict, consts: dict, rng) -> dict:  # type: ignore[no-untyped-def]
    """q, k, v, do ~ N(0, 1); o and lse from the float64 forward of those q, k, v."""
    from fadsl.frontend.attention_bwd_inputs import make_inputs as consistent

    return consistent(_spec(consts).spec, _shape(shape), consts, rng)


@fd.kernel(
    dtype="fp16",
    default_shape=dict(B=1, N=8, Sq=4096, Skv=4096, D=128),
    reference=reference,
    inputs=make_inputs,
)
def fa2_bwd(
    q: fd.In("B", "N", "Sq", "D"),
    k: fd.In("B", "N", "Skv", "D"),
    v: fd.In("B", "N", "Skv", "D"),
    o: fd.In("B", "N", "Sq", "D"),
    do: fd.In("B", "N", "Sq", "D"),
    lse: fd.In("B", "N", "Sq", dtype=fd.f32),
    dq: fd.Out("B", "N", "Sq", "D"),
    dk: fd.Out("B", "N", "Skv", "D"),
    dv: fd.Out("B", "N", "Skv", "D"),
    scale: fd.Scalar = "D ** -0.5",
    causal: bool = False,
    block_q: int = 64,
    block_kv: int = 128,
):
    B, N, Sq, D = q.shape
    Skv = k.shape[2]
    for b, h, j in fd.grid(B, N, fd.cdiv(Skv, block_kv)):
        cols = fd.ds(j * block_kv, block_kv)
        kt = fd.load(k[b, h, cols, :], pad=0)
        vt = fd.load(v[b, h, cols, :], pad=0)
        kv_idx = fd.arange(j * block_kv, block_kv)
        dk_acc = fd.zeros((block_kv, D), fd.f32)
        dv_acc = fd.zeros((block_kv, D), fd.f32)
        first = 0
        if causal:
            # row r sees column c <= r + Skv - Sq: Q blocks above this KV block see none
            first = fd.floordiv(fd.maximum(j * block_kv - (Skv - Sq), 0), block_q)
        for i in range(first, fd.cdiv(Sq, block_q)):
            rows = fd.ds(i * block_q, block_q)
            qt = fd.load(q[b, h, rows, :], pad=0)
            # the cube's own copies of Q and dO for the dots after the vector cores'
            # hand-over (dK's, dV's) and of dO for dP's: no tile is then read by the
            # dots before and after it, so the cube runs ahead through a ring of S and
            # dP slots (plan/schedule/ring.py), computing the next Q step's S and dP
            # while the vector cores work on this one
            q_dk = fd.load(q[b, h, rows, :], pad=0)
            do_dp = fd.load(do[b, h, rows, :], pad=0)
            do_dv = fd.load(do[b, h, rows, :], pad=0)
            lse_t = fd.load(lse[b, h, rows], pad=0)
            q_idx = fd.arange(i * block_q, block_q)
            s = fd.dot(qt, kt, transpose_b=True) * scale
            keep = (kv_idx[None, :] < Skv) & (q_idx[:, None] < Sq)
            if causal:
                keep = keep & (kv_idx[None, :] <= q_idx[:, None] + (Skv - Sq))
            s = fd.where(keep, s, -fd.inf)
            lse_safe = fd.where(lse_t == -fd.inf, 0.0, lse_t)  # rows that see no key
            p = fd.exp(s - lse_safe[:, None])
            # the vector cores' dO and O for Delta, after the softmax: loaded and
            # reduced here, their UB is shared with the softmax's (the default tiles
            # then fit a 910B vector core's UB)
            dot = fd.load(do[b, h, rows, :], pad=0)
            ot = fd.load(o[b, h, rows, :], pad=0)
            delta = fd.row_sum(fd.cast(dot, fd.f32) * fd.cast(ot, fd.f32))
            # dP and dS before dV's dot: the cube computes dP while the vector cores
            # compute P, and dV's dot joins dK's and dQ's after dS (3 cube <-> vector
            # hand-overs in a Q step's chain, not 5)
            dp = fd.dot(do_dp, vt, transpose_b=True)
            ds = fd.cast(p * (dp - delta[:, None]), q.dtype)
            dv_acc = dv_acc + fd.dot(fd.cast(p, v.dtype), do_dv, transpose_a=True)
            dk_acc = dk_acc + fd.dot(ds, q_dk, transpose_a=True)
            fd.atomic_add(dq[b, h, rows, :], fd.dot(ds, kt) * scale)
        fd.store(dk[b, h, cols, :], fd.cast(dk_acc * scale, dk.dtype))
        fd.store(dv[b, h, cols, :], fd.cast(dv_acc, dv.dtype))
