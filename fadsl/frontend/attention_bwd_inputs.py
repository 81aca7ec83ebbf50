"""Seeded inputs of ``fd.attention_backward`` kernels that agree with each other.

q, k, v and the output gradient ``do`` are N(0, 1) in the kernel's dtype; ``o`` and
``lse`` are what the forward computes from those q, k, v (the float64 forward
reference, ``o`` rounded to the dtype, ``lse`` to f32), so a backward run sees the data a
training step gives it. The variant's other inputs (cu_seqlens, the dropout seed and
offset, the mods' tensors) come from ``attention_inputs.make_inputs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fadsl.frontend.attention_bwd import BLOCK_MASK_T
from fadsl.frontend.attention_grad_ref import forward_outputs
from fadsl.frontend.attention_inputs import block_lists, block_maps, transpose_blocks
from fadsl.frontend.attention_inputs import make_inputs as variant_inputs
from fadsl.numerics import np_dtype


def make_inputs(
    spec: Any, shape: dict[str, int], consts: dict[str, Any], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    out = variant_inputs(spec, shape, consts, rng)  # the forward's block mask too
    dtype = np_dtype(spec.dtype)
    qo, kv = dims(spec.layout, shape, "N", "Sq"), dims(spec.layout, shape, "Nkv", "Skv")
    if spec.shared_kv:  # one KV batch for every query batch
        kv = (1,) + kv[1:]
    for name, size in (("q", qo), ("k", kv), ("v", kv), ("do", qo)):
        out[name] = rng.standard_normal(size, dtype=np.float32).astype(dtype)
    fwd = forward_outputs(spec, out, shape, consts)
    out["o"] = fwd["o"].astype(dtype)
    out["lse"] = fwd["lse"].astype(np.float32)
    out.update(derived_inputs(spec, shape, consts, out))
    return out


def derived_inputs(
    spec: Any,
    shape: dict[str, int],
    consts: dict[str, Any],
    inputs: Mapping[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """The forward's block mask transposed for the KV-major loop (a mask_mod on
    fixed-length sequences): per (batch, head, KV block) the Q blocks the masks leave
    partly kept and wholly kept. A block with a Q or KV tail is never full (the
    kernel masks tails in partial blocks only)."""
    if not spec.block_sparse:
        return {}
    part, full = block_maps(spec, shape, consts, inputs)
    part, full = transpose_blocks(part, full, int(consts["block_q"]), shape["Sq"])
    num, idx = block_lists(part)
    full_num, full_idx = block_lists(full)
    return dict(zip(BLOCK_MASK_T, (num, idx, full_num, full_idx)))


def dims(layout: str, shape: dict[str, int], heads: str, seq: str) -> tuple[int, ...]:
    """The shape of q / o (heads N, seq Sq) or k / v (Nkv, Skv) in a layout."""
    b, n, s, d = shape.get("B", 1), shape[heads], shape[seq], shape["D"]
    return {
        "BNSD": (b, n, s, d),
        "BSND": (b, s, n, d),
        "BSH": (b, s, n * d),
        "TND": (s, n, d),
    }[layout]


__all__ = ["BLOCK_MASK_T", "make_inputs", "derived_inputs", "dims"]
