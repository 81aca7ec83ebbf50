"""Impl of the cube-unit op: Dot."""

from __future__ import annotations

import numpy as np

from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.impls import impl
from fadsl.backends.interp.storage import stored
from fadsl.ir.nodes import Dot

# ----------------------------------------------------------------------------
# Cube unit
# ----------------------------------------------------------------------------


@impl(Dot)
def _dot(op: Dot, fr: Frame) -> np.ndarray:
    """Operands exactly widened to float32, np.matmul in float32 (the cube's L0C)."""
    a = fr.f32(op.a)
    b = fr.f32(op.b)
    if op.transpose_b:
        b = b.swapaxes(-1, -2)
        if b.size < a.size:
            b = np.ascontiguousarray(b)  # BLAS is faster on the small operand copied
    if op.transpose_a:
        out = np.matmul(a.swapaxes(-1, -2), b)
    else:
        out = _folded_matmul(a, b, fr.k)
    return stored(out, op.acc_dtype)


def _folded_matmul(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """a @ b, with the last batch axis folded into a's rows when b broadcasts along it.

    ``[B, N, nq, M, K] @ [B, N, 1, K, N']`` runs as B*N matmuls of (nq*M, K) x (K, N')
    rather than B*N*nq small ones: the same products, far fewer BLAS calls. Only the
    last axis is folded, so every (b, h) gets a matmul of the same shape: a BLAS result
    can depend on a row's position (edge kernels), and a head must not (GQA heads that
    share K and see the same q give the same output).
    """
    fold = 0
    while fold < min(k, 1) and b.shape[k - 1 - fold] == 1:
        fold += 1
    if fold == 0 or all(d == 1 for d in a.shape[k - fold : k]):
        return np.matmul(a, b)
    keep = k - fold
    rows = int(np.prod(a.shape[keep:k])) * a.shape[-2]
    a2 = a.reshape(a.shape[:keep] + (rows, a.shape[-1]))
    b2 = b.reshape(b.shape[:keep] + b.shape[-2:])
    lead = np.broadcast_shapes(a.shape[:keep], b.shape[:keep])
    out = np.empty(lead + a.shape[keep:k] + (a.shape[-2], b.shape[-1]), np.float32)
    np.matmul(a2, b2, out=out.reshape(lead + (rows, b.shape[-1])))
    return out
