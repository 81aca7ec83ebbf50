"""int8 k / v without a page table (``fd.attention(kv_dtype="int8")``, layouts BNSD and
BSND): scales per channel [Nkv, D] or per token [B, Nkv, Skv], with and without an
offset, against a float64 dequantise-then-attend reference written here (the tolerance
rule, with the kernel's own same-precision reference); and the same output judged
against the raw int8 values fails, so the dequantisation is what passes."""

from __future__ import annotations

import numpy as np
import pytest

import fadsl as fd
from fadsl.ir.types import DType

B, N, NKV, SQ, SKV, D = 2, 4, 2, 70, 200, 64
SHAPE = dict(B=B, N=N, Nkv=NKV, Sq=SQ, Skv=SKV, D=D)


def _inputs(layout: str, kv_scale: str, offset: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    kv = (B, NKV, SKV, D) if layout == "BNSD" else (B, SKV, NKV, D)
    qs = (B, N, SQ, D) if layout == "BNSD" else (B, SQ, N, D)
    dims = (NKV, D) if kv_scale == "channel" else (B, NKV, SKV)
    out = {"q": rng.standard_normal(qs).astype(np.float16)}
    for name in ("k", "v"):
        out[name] = rng.integers(-127, 128, kv).astype(np.int8)
        out[f"{name}_scale"] = rng.uniform(0.01, 0.03, dims).astype(np.float32)
        if offset:
            out[f"{name}_offset"] = rng.uniform(-3, 3, dims).astype(np.float32)
    return out


def _dequant(
    x: np.ndarray, s: np.ndarray, o: np.ndarray | None, layout: str
) -> np.ndarray:
    """To BNSD float64: (x + o) * s."""
    x = x.astype(np.float64)
    if layout == "BSND":
        x = x.transpose(0, 2, 1, 3)  # [B, Nkv, Skv, D]
    s = s.astype(np.float64)
    o = np.zeros_like(s) if o is None else o.astype(np.float64)
    if s.ndim == 2:  # [Nkv, D]
        return (x + o[:, None, :]) * s[:, None, :]
    return (x + o[..., None]) * s[..., None]  # [B, Nkv, Skv]


def _attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, layout: str) -> np.ndarray:
    q = q.astype(np.float64)
    if layout == "BSND":
        q = q.transpose(0, 2, 1, 3)
    g = N // NKV
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) * D**-0.5
    keep = np.arange(SKV)[None, :] <= np.arange(SQ)[:, None] + SKV - SQ
    s = np.where(keep, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    o = (p / p.sum(-1, keepdims=True)) @ v
    return o if layout == "BNSD" else o.transpose(0, 2, 1, 3)


@pytest.mark.parametrize("layout", ["BNSD", "BSND"])
@pytest.mark.parametrize(
    "kv_scale,offset", [("channel", True), ("token", False), ("token", True)]
)
def test_dense_int8_passes_against_float64(
    layout: str, kv_scale: str, offset: bool
) -> None:
    x = _inputs(layout, kv_scale, offset)
    kernel = fd.attention(
        name="dense_int8",
        layout=layout,
        causal=True,
        kv_dtype="int8",
        kv_scale=kv_scale,
        kv_offset=offset,
    )
    out = fd.interpret(kernel, shape=SHAPE, consts=dict(block_q=32, block_kv=64), **x)[
        "o"
    ]
    k = _dequant(x["k"], x["k_scale"], x.get("k_offset"), layout)
    v = _dequant(x["v"], x["v_scale"], x.get("v_offset"), layout)
    ref = _attend(x["q"], k, v, layout)
    same = kernel.reference(x, dict(SHAPE, Dv=D), {"scale": D**-0.5}, DType.F16)["o"]
    assert fd.verify(out, ref, "fp16", same_precision=same).passed
    # a reference that left out the offsets (or, without them, the scales) fails
    wrong = [
        _dequant(
            x[n],
            x[f"{n}_scale"] if offset else np.ones_like(x[f"{n}_scale"]),
            None,
            layout,
        )
        for n in "kv"
    ]
    assert not fd.verify(out, _attend(x["q"], *wrong, layout), "fp16").passed
