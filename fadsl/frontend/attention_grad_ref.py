"""The reference of ``fd.attention_backward`` kernels: dq, dk, dv by the analytic formulas.

For one (sequence, query head), with S the scores after scale, softcap and score_mod
and the masks applied (docs/backward.md)::

    P     = exp(S - lse)                 (a row with lse = -inf has P = 0)
    Pd    = P * Z / (1 - p)              (Z: the forward's dropout keep mask; no dropout: P)
    dV    = Pd^T dO
    dP    = (dO V^T) * Z / (1 - p)
    Delta = rowsum(dO * O)
    dS    = P * (dP - Delta) * dsoftcap * dmod   (0 where a mask removed the score)
    dQ    = dS K scale,   dK = dS^T Q scale

dsoftcap = 1 - tanh(s / c)^2 (the chain rule of ``c * tanh(s / c)``); dmod is the
derivative of score_mod in its score, here a float64 central difference of the mod (an
independent check of the kernel's derived one). GQA sums dK, dV over the query heads of
a group.

``dtype=None`` gives the float64 gradients, recomputing O and lse from q, k, v. A dtype
gives the same-precision reference of the tolerance rule: fp32 arithmetic on the given
inputs, the given ``o`` and ``lse`` (as the kernel reads them), P and dS rounded to the
dtype before their matmuls as the kernel does, the outputs rounded once at the end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from fadsl.frontend.attention_ref import (
    keep_mask,
    mod_scalars,
    reference as forward_reference,
    sequences,
)
from fadsl.frontend import tensor_grad_ref
from fadsl.frontend.mods import eager_tensors
from fadsl.ir.types import DType
from fadsl.numerics import quantize
from fadsl.rng import dropout_keep, philox_uniform

GRADS = ("dq", "dk", "dv")


def reference(
    spec: Any,
    inputs: Mapping[str, np.ndarray],
    shape: Mapping[str, int],
    consts: Mapping[str, Any],
    dtype: DType | None = None,
) -> dict[str, np.ndarray]:
    """``dq``, ``dk``, ``dv`` of the variant ``spec`` for the output gradient ``do``."""
    acc = np.float64 if dtype is None else np.float32
    scale = acc(consts.get("scale") or shape["D"] ** -0.5)
    out = {
        "dq": np.zeros(inputs["q"].shape, np.float64),
        "dk": np.zeros(inputs["k"].shape, np.float64),
        "dv": np.zeros(inputs["v"].shape, np.float64),
    }
    fwd = None if dtype is None else inputs
    extras = {t.name: inputs[t.name] for t in spec.extras}
    out.update(tensor_grad_ref.zeros(spec, inputs, shape))  # d<tensor> (requires_grad)
    with eager_tensors(extras, shape):
        for seq, dout, o, lse in _with_grads(spec, inputs, shape, fwd):
            for h in range(shape["N"]):
                hk = h // (shape["N"] // shape["Nkv"])
                head = _Head(spec, seq, h, hk, acc, scale, inputs, shape)
                dq, dk, dv = head.grads(dout[:, h], o, lse, h, dtype)
                if head.s0 is not None and tensor_grad_ref.grad_tensors(spec):
                    tensor_grad_ref.add_head(
                        spec, out, inputs, shape, head.mod, head.s0, head.ds0
                    )
                _put(spec, out["dq"], seq.b, h, seq.rows, dq, shape["D"])
                kv_rows = _kv_rows(spec, inputs, seq.b)
                kb = 0 if spec.shared_kv else seq.b  # shared_kv: sums over batches
                _put(spec, out["dk"], kb, hk, kv_rows, dk, shape["D"], add=True)
                _put(spec, out["dv"], kb, hk, kv_rows, dv, shape["D"], add=True)
    if dtype is not None:
        out = {k: quantize(v, dtype) if k in GRADS else v for k, v in out.items()}
    return out


def forward_outputs(
    spec: Any,
    inputs: Mapping[str, np.ndarray],
    shape: Mapping[str, int],
    consts: Mapping[str, Any],
) -> dict[str, np.ndarray]:
    """The forward's ``o`` and ``lse`` (float64) of ``inputs``: what a backward reads."""
    with np.errstate(all="ignore"):
        return forward_reference(replace(spec, return_lse=True), inputs, shape, consts)


def _with_grads(
    spec: Any,
    inputs: Mapping[str, np.ndarray],
    shape: Mapping[str, int],
    given: Mapping[str, np.ndarray] | None,
) -> Any:
    """Per sequence: (sequence, dO [S, N, D], o [S, N, D] or None, lse [N, S] or None)."""
    douts = [s.q for s in sequences(spec, {**inputs, "q": inputs["do"]}, shape)]
    if given is None:
        for seq, dout in zip(sequences(spec, inputs, shape), douts):
            yield seq, dout, None, None
        return
    os_ = [s.q for s in sequences(spec, {**inputs, "q": given["o"]}, shape)]
    for seq, dout, o in zip(sequences(spec, inputs, shape), douts, os_):
        lse = given["lse"][:, seq.rows] if spec.varlen else given["lse"][seq.b]
        yield seq, dout, o, lse


class _Head:
    """One (sequence, query head): its scores, masks and the local derivatives."""

    def __init__(
        self,
        spec: Any,
        seq: Any,
        h: int,
        hk: int,
        acc: Any,
        scale: Any,
        inputs: Mapping[str, np.ndarray],
        shape: Mapping[str, int],
    ) -> None:
        self.spec, self.acc, self.scale = spec, acc, scale
        self.q = np.ascontiguousarray(seq.q[:, h], dtype=acc)
        self.k = np.ascontiguousarray(seq.k[:, hk], dtype=acc)
        self.v = np.ascontiguousarray(seq.v[:, hk], dtype=acc)
        self.keep = keep_mask(spec, seq.b, h, len(self.q), len(self.k))
        self.s, self.dscore = self._scores(seq.b, h)
        self.zscale = self._dropout(inputs, seq.b * shape["N"] + h)

    def _scores(self, b: int, h: int) -> tuple[np.ndarray, np.ndarray]:
        """Masked scores and d(score) / d(q k^T scale), both in ``acc``."""
        spec, acc = self.spec, self.acc
        s = (self.q @ self.k.T) * self.scale
        deriv = np.ones(s.shape, np.float64)
        self.s0: np.ndarray | None = None  # the scores the mod receives
        if spec.softcap is not None:
            t = np.tanh(s.astype(np.float64) / spec.softcap)
            deriv = 1.0 - t * t
            s = (acc(spec.softcap) * np.tanh(s / acc(spec.softcap))).astype(acc)
        if spec.score_mod is not None:
            q_idx, kv_idx = np.arange(len(self.q))[:, None], np.arange(len(self.k))
            mod = self._mod(b, h, q_idx, kv_idx[None, :])
            self.s0, self.mod = s.astype(np.float64), mod
            deriv = deriv * mod_derivative(mod, s.astype(np.float64))
            s = np.asarray(mod(s), dtype=acc)
        s = np.where(self.keep, s, -np.inf).astype(acc)
        return s, np.where(self.keep, deriv, 0.0).astype(acc)

    def _mod(self, b: int, h: int, q_idx: np.ndarray, kv_idx: np.ndarray) -> Any:
        bb, hh = mod_scalars(b, h)
        fn = self.spec.score_mod
        return lambda x: np.broadcast_to(
            np.asarray(fn(x, bb, hh, q_idx, kv_idx), np.float64), x.shape
        )

    def _dropout(self, inputs: Mapping[str, np.ndarray], stream: int) -> Any:
        """Z / (1 - p) as a [Sq, Skv] array, or None without dropout."""
        if self.spec.dropout_p <= 0.0:
            return None
        seed, offset = inputs["seed"], inputs["offset"]
        q_idx, kv_idx = np.arange(len(self.q))[:, None], np.arange(len(self.k))[None, :]
        u = philox_uniform(
            int(seed[0]), int(seed[1]), int(offset[0]), stream, q_idx, kv_idx
        )
        kept = dropout_keep(u, self.spec.dropout_p)
        return np.where(kept, self.acc(1.0 / (1.0 - self.spec.dropout_p)), 0.0).astype(
            self.acc
        )

    def grads(
        self,
        dout: np.ndarray,
        o: np.ndarray | None,
        lse: np.ndarray | None,
        h: int,
        dtype: DType | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        acc = self.acc
        do = np.ascontiguousarray(dout, dtype=acc)
        lse_h = _lse(self.s) if lse is None else lse[h].astype(acc)
        p = np.exp(self.s - np.where(np.isneginf(lse_h), 0.0, lse_h)[:, None]).astype(
            acc
        )
        pd = p if self.zscale is None else (p * self.zscale).astype(acc)
        o_h = pd @ self.v if o is None else o[:, h].astype(acc)
        delta = np.sum(do * o_h, axis=-1, keepdims=True, dtype=acc)
        dv = _round(pd, dtype).T @ do
        dp = do @ self.v.T
        if self.zscale is not None:
            dp = dp * self.zscale
        self.ds0 = (p * (dp - delta)).astype(np.float64)  # d loss / d mod's output
        ds = (p * (dp - delta) * self.dscore).astype(acc)
        ds_r = _round(ds, dtype)
        dq = (ds_r @ self.k) * self.scale
        dk = (ds_r.T @ self.q) * self.scale
        return dq, dk, dv


def _lse(s: np.ndarray) -> np.ndarray:
    """Row log-sum-exp of masked scores; -inf for a row with nothing kept."""
    if not s.shape[-1]:
        return np.full(s.shape[0], -np.inf, s.dtype)
    m = s.max(axis=-1)
    m_safe = np.where(np.isneginf(m), 0.0, m)
    total = np.exp(s - m_safe[:, None]).sum(axis=-1)
    return np.where(
        total == 0, -np.inf, m_safe + np.log(np.where(total == 0, 1, total))
    )


def mod_derivative(mod: Any, s: np.ndarray) -> np.ndarray:
    """d mod(s) / ds by a float64 central difference (step 2^-20 relative to |s|).

    Infinite or NaN scores get derivative 0 (they are masked, or the mod overflows and
    the forward is NaN there anyway)."""
    finite = np.isfinite(s)
    base = np.where(finite, s, 0.0)
    step = np.ldexp(np.maximum(np.abs(base), 1.0), -20)
    deriv = (mod(base + step) - mod(base - step)) / (2.0 * step)
    return np.where(finite, deriv, 0.0)


def _round(x: np.ndarray, dtype: DType | None) -> np.ndarray:
    """x rounded to the kernel's dtype before a matmul (the same-precision path)."""
    if dtype is None:
        return x
    return quantize(x, dtype).astype(x.dtype)


def _kv_rows(spec: Any, inputs: Mapping[str, np.ndarray], b: int) -> slice:
    if not spec.varlen:
        return slice(None)
    ck = inputs["cu_seqlens_kv"]
    return slice(int(ck[b]), int(ck[b + 1]))


def _put(
    spec: Any,
    arr: np.ndarray,
    b: int,
    h: int,
    rows: slice,
    value: np.ndarray,
    d: int,
    add: bool = False,
) -> None:
    """Write (or add) one head's [S, D] block into a q- or k-shaped tensor."""
    if spec.layout == "BNSD":
        index: tuple[Any, ...] = (b, h)
    elif spec.layout == "BSND":
        index = (b, slice(None), h)
    elif spec.layout == "BSH":
        index = (b, slice(None), slice(h * d, (h + 1) * d))
    else:
        index = (rows, h)
    if add:
        arr[index] += value
    else:
        arr[index] = value


__all__ = ["GRADS", "reference", "forward_outputs", "mod_derivative"]
