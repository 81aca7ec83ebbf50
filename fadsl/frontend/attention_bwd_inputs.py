"""Seeded inputs of ``fd.attention_backward`` kernels that agree with each other.

q, k, v and the output gradient ``do`` are N(0, 1) in the kernel's dtype; ``o`` and
``lse`` are what the forward computes from those q, k, v (the float64 forward
reference, ``o`` rounded to the dtype, ``lse`` to f32), so a backward run sees the data a
training step gives it. The variant's other inputs (cu_seqlens, the dropout seed and
offset, the mods' tensors) come from ``attention_inputs.make_inputs``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fadsl.frontend.attention_grad_ref import forward_outputs
from fadsl.frontend.attention_inputs import make_inputs as variant_inputs
from fadsl.numerics import np_dtype


def make_inputs(
    spec: Any, shape: dict[str, int], consts: dict[str, Any], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    out = variant_inputs(spec, shape, consts, rng)
    dtype = np_dtype(spec.dtype)
    qo, kv = dims(spec.layout, shape, "N", "Sq"), dims(spec.layout, shape, "Nkv", "Skv")
    for name, size in (("q", qo), ("k", kv), ("v", kv), ("do", qo)):
        out[name] = rng.standard_normal(size, dtype=np.float32).astype(dtype)
    fwd = forward_outputs(spec, out, shape, consts)
    out["o"] = fwd["o"].astype(dtype)
    out["lse"] = fwd["lse"].astype(np.float32)
    return out


def dims(layout: str, shape: dict[str, int], heads: str, seq: str) -> tuple[int, ...]:
    """The shape of q / o (heads N, seq Sq) or k / v (Nkv, Skv) in a layout."""
    b, n, s, d = shape.get("B", 1), shape[heads], shape[seq], shape["D"]
    return {
        "BNSD": (b, n, s, d),
        "BSND": (b, s, n, d),
        "BSH": (b, s, n * d),
        "TND": (s, n, d),
    }[layout]


__all__ = ["make_inputs", "dims"]
