"""The reference of ``fd.attention`` kernels: plain numpy attention with the same semantics.

``dtype=None`` gives the float64 golden; a dtype gives the same-precision reference of the
tolerance rule (README; fadsl/numerics.py): fp32 scores and softmax, P rounded to the dtype before
P @ V, the output rounded. Semantics (docs/variants.md): scale, softcap, score_mod,
masks (inside the sequence, causal, window, mask_mod), softmax; dropout on the
normalised probabilities with the kernel's Philox stream; a row that keeps no score
gives output 0 and LSE -inf. Work is done one (sequence, head) at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from fadsl.frontend.attention_quant import dequantised
from fadsl.frontend.mods import eager_tensors
from fadsl.ir.types import DType
from fadsl.numerics import quantize
from fadsl.rng import dropout_keep, philox_uniform


def reference(
    spec: Any,
    inputs: Mapping[str, np.ndarray],
    shape: Mapping[str, int],
    consts: Mapping[str, Any],
    dtype: DType | None = None,
) -> dict[str, np.ndarray]:
    """Outputs ``o`` (and ``lse``) of the kernel ``spec`` on ``inputs``, as float64."""
    acc = np.float64 if dtype is None else np.float32
    inputs = dequantised(spec, inputs, dtype)  # an int8 cache: (x + offset) * scale
    scale = consts.get("scale") or shape["D"] ** -0.5
    o = np.zeros(o_shape(spec, inputs["q"].shape, shape), np.float64)
    lse = np.zeros(_lse_shape(spec, shape), np.float64)
    top = np.zeros(_lse_shape(spec, shape), np.float64)
    extras = {t.name: inputs[t.name] for t in spec.extras}
    with eager_tensors(extras, shape):
        for seq in sequences(spec, inputs, shape):
            for h in range(shape["N"]):
                oh, lh, mh = _head(spec, seq, h, acc(scale), acc, dtype, inputs, shape)
                seq.put_o(o, h, oh)
                seq.put_lse(lse, h, lh)
                seq.put_lse(top, h, mh)
    out = {"o": o}
    if spec.return_lse:
        out["lse"] = lse
    if getattr(spec, "return_max_scores", False):
        out["max_scores"] = top
    return out


def o_shape(
    spec: Any, q_shape: tuple[int, ...], shape: Mapping[str, int]
) -> tuple[int, ...]:
    """The output's shape: q's, with the value head dim Dv (default D) last."""
    dv = value_dim(shape)
    last = shape["N"] * dv if spec.layout == "BSH" else dv
    return tuple(q_shape[:-1]) + (last,)


def value_dim(shape: Mapping[str, int]) -> int:
    """Dv: the value head dim, D when the shape leaves it out (docs/variants.md)."""
    return int(shape.get("Dv", shape["D"]))


def _lse_shape(spec: Any, shape: Mapping[str, int]) -> tuple[int, ...]:
    if spec.varlen:
        return shape["N"], shape["Sq"]
    return shape["B"], shape["N"], shape["Sq"]


class Sequence:
    """One sequence: its q [Sq, N, D], k [Skv, Nkv, D], v [Skv, Nkv, Dv] and where its
    rows go."""

    def __init__(
        self,
        spec: Any,
        b: int,
        q: np.ndarray,
        k: np.ndarray,
        v: np.ndarray,
        rows: slice,
    ) -> None:
        self.spec, self.b, self.q, self.k, self.v, self.rows = spec, b, q, k, v, rows

    def put_o(self, o: np.ndarray, h: int, value: np.ndarray) -> None:
        layout = self.spec.layout
        if layout == "BNSD":
            o[self.b, h] = value
        elif layout == "BSND":
            o[self.b, :, h] = value
        elif layout == "BSH":
            d = value.shape[-1]
            o[self.b, :, h * d : (h + 1) * d] = value
        else:
            o[self.rows, h] = value

    def put_lse(self, lse: np.ndarray, h: int, value: np.ndarray) -> None:
        if self.spec.varlen:
            lse[h, self.rows] = value
        else:
            lse[self.b, h] = value


def sequences(
    spec: Any, inputs: Mapping[str, np.ndarray], shape: Mapping[str, int]
) -> Iterator[Sequence]:
    """Every sequence of the batch with its tensors in [S, N, D] order."""
    if spec.paged_kv:
        yield from paged_sequences(spec, inputs, shape)
        return
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    n, nkv, d = shape["N"], shape["Nkv"], shape["D"]
    if spec.varlen:
        cq, ck = inputs["cu_seqlens_q"], inputs["cu_seqlens_kv"]
        for b in range(shape["B"]):
            rq, rk = slice(int(cq[b]), int(cq[b + 1])), slice(
                int(ck[b]), int(ck[b + 1])
            )
            yield Sequence(spec, b, q[rq], k[rk], v[rk], rq)
        return
    for b in range(shape["B"]):
        kb = 0 if getattr(spec, "shared_kv", False) else b  # one KV batch for all
        if spec.layout == "BNSD":
            parts = (
                q[b].transpose(1, 0, 2),
                k[kb].transpose(1, 0, 2),
                v[kb].transpose(1, 0, 2),
            )
        elif spec.layout == "BSND":
            parts = (q[b], k[kb], v[kb])
        else:  # BSH
            parts = (
                q[b].reshape(-1, n, d),
                k[kb].reshape(-1, nkv, d),
                v[kb].reshape(-1, nkv, value_dim(shape)),
            )
        yield Sequence(spec, b, *parts, slice(None))


def paged_sequences(
    spec: Any, inputs: Mapping[str, np.ndarray], shape: Mapping[str, int]
) -> Iterator[Sequence]:
    """Sequence b of a paged cache: its keys are the rows of the pages
    ``block_table[b, 0], block_table[b, 1], ...`` one after another, cut at
    ``seqlens_kv[b]`` (gathered here with numpy, not with the kernel's code)."""
    q, table, lengths = inputs["q"], inputs["block_table"], inputs["seqlens_kv"]
    page = spec.page_size
    latent = bool(getattr(spec, "v_from_k", False))  # MLA: V is K's first Dv columns
    for b in range(shape["B"]):
        length = int(lengths[b])
        pages = table[b, : -(-length // page)].astype(np.int64)
        k, v = (
            np.concatenate([inputs[c][p] for p in pages] + [inputs[c][:0, 0]])[:length]
            for c in ("k_cache", "k_cache" if latent else "v_cache")
        )
        if latent:
            v = v[..., : value_dim(shape)]
        if spec.varlen:  # chunked prefill: the chunk's rows of the packed q
            cq = inputs["cu_seqlens_q"]
            rows = slice(int(cq[b]), int(cq[b + 1]))
            yield Sequence(spec, b, q[rows], k, v, rows)
            continue
        qb = q[b].transpose(1, 0, 2) if spec.layout == "BNSD" else q[b]
        yield Sequence(spec, b, qb, k, v, slice(None))


def _head(
    spec: Any,
    seq: Sequence,
    h: int,
    scale: Any,
    acc: Any,
    dtype: DType | None,
    inputs: Mapping[str, np.ndarray],
    shape: Mapping[str, int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    hk = h // (shape["N"] // shape["Nkv"])
    q = np.ascontiguousarray(seq.q[:, h], dtype=acc)
    k = np.ascontiguousarray(seq.k[:, hk], dtype=acc)
    v = np.ascontiguousarray(seq.v[:, hk], dtype=acc)
    q_idx, kv_idx = np.arange(len(q))[:, None], np.arange(len(k))[None, :]
    s = (q @ k.T) * scale
    if spec.softcap is not None:
        s = acc(spec.softcap) * np.tanh(s / acc(spec.softcap))
    if spec.score_mod is not None:
        b_, h_ = mod_scalars(seq.b, h)
        s = np.asarray(spec.score_mod(s, b_, h_, q_idx, kv_idx), dtype=acc)
    keep = keep_mask(spec, seq.b, h, len(q), len(k))
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True) if s.shape[-1] else np.full((len(q), 1), -np.inf)
    p = np.exp(s - np.where(np.isinf(m), 0.0, m)).astype(acc)
    l = p.sum(axis=-1, keepdims=True)
    if spec.dropout_p > 0.0:
        p = _dropout(spec, p, seq.b * shape["N"] + h, q_idx, kv_idx, inputs, acc)
    if dtype is not None:
        p = quantize(p, dtype).astype(acc)
    o = (p @ v) / np.where(l == 0, 1.0, l)
    if dtype is not None:
        o = quantize(o, dtype)
    lse = np.where(
        l[:, 0] == 0, -np.inf, m[:, 0] + np.log(np.where(l[:, 0] == 0, 1, l[:, 0]))
    )
    return o.astype(np.float64), lse.astype(np.float64), m[:, 0].astype(np.float64)


def keep_mask(spec: Any, b: int, h: int, q_len: int, kv_len: int) -> np.ndarray:
    """[q_len, kv_len] bool: the scores of one (sequence, head) that survive the masks.

    Extra tensors must be bound (``eager_tensors``) when the variant has a mask_mod.
    """
    q_idx, kv_idx = np.arange(q_len)[:, None], np.arange(kv_len)[None, :]
    shift = kv_len - q_len
    keep = np.ones((q_len, kv_len), bool)
    if spec.causal:
        keep &= kv_idx <= q_idx + shift
    if spec.window is not None and spec.window[0] >= 0:
        keep &= kv_idx >= q_idx + shift - spec.window[0]
    if spec.window is not None and spec.window[1] >= 0:
        keep &= kv_idx <= q_idx + shift + spec.window[1]
    if spec.mask_mod is not None:
        keep &= np.broadcast_to(
            np.asarray(spec.mask_mod(*mod_scalars(b, h), q_idx, kv_idx), bool),
            keep.shape,
        )
    return keep


def mod_scalars(b: int, h: int) -> tuple[np.int64, np.int64]:
    """``b`` and ``h`` as numpy integers, as FlexAttention passes tensors: then
    ``~(h < 1)`` is a logical not, never Python's ``~True == -2``."""
    return np.int64(b), np.int64(h)


def _dropout(
    spec: Any,
    p: np.ndarray,
    stream: int,
    q_idx: np.ndarray,
    kv_idx: np.ndarray,
    inputs: Mapping[str, np.ndarray],
    acc: Any,
) -> np.ndarray:
    seed, offset = inputs["seed"], inputs["offset"]
    u = philox_uniform(
        int(seed[0]), int(seed[1]), int(offset[0]), stream, q_idx, kv_idx
    )
    kept = dropout_keep(u, spec.dropout_p)
    return np.where(kept, p * acc(1.0 / (1.0 - spec.dropout_p)), 0.0).astype(acc)
