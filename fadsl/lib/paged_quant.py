"""Antiquant of an int8 paged KV cache, in the DSL (``fd.attention(..., kv_dtype="int8")``).

Each K / V tile is loaded as int8 and dequantised in UB right after the load: int8 ->
half (the only cast the vector unit has from int8, Cast.md), then ``(x + offset) *
scale``, in half for an fp16 query (per channel, as CANN's IncreFlashAttention takes
per-channel antiquant parameters in the query's dtype; per token of a paged cache too,
the scales rounded to half), else half -> float (exact: |x| <= 128), the arithmetic
in fp32 and a cast to Q's dtype for the cube. Per
channel the scale row [D] of the KV head broadcasts over the keys; per token the scales
of the block's keys ([block_kv], through the same pages) broadcast over the head dim.
Frames in this file count as user code.
"""

from __future__ import annotations

from typing import Any

import fadsl as fd


def with_quant(t: Any, quant: Any) -> Any:
    """Task ``t`` with the antiquant tensors of an int8 k / v (what kv_step reads)."""
    t.quant = quant
    return t


def dequant_kv(
    spec: Any, t: Any, quant: Any, pages: Any, keys: Any, kt: Any, vt: Any, dtype: Any
) -> tuple[Any, Any]:
    """The loaded int8 tiles kt [block_kv, D] and vt [block_kv, Dv], dequantised to
    ``dtype``. ``quant`` holds k_scale, v_scale (and k_offset, v_offset); ``pages``,
    ``keys``: the block's pages and keys of a paged cache, or (contiguous k / v,
    ``fadsl/lib/flash.py``) None and the block's columns ``cols`` of batch t.b."""
    k_scale, v_scale = quant[0], quant[1]
    k_off, v_off = None, None
    if spec.kv_offset:
        k_off, v_off = quant[2], quant[3]
    k = dequant(spec, t, kt, k_scale, k_off, pages, keys, dtype)
    v = dequant(spec, t, vt, v_scale, v_off, pages, keys, dtype)
    return k, v


def dequant(
    spec: Any,
    t: Any,
    x: Any,
    scale: Any,
    offset: Any,
    pages: Any,
    keys: Any,
    dtype: Any,
) -> Any:
    """(x + offset) * scale of one tile, cast to ``dtype``: per channel for fp16 in
    half (as CANN takes per-channel antiquant parameters in the query's dtype): three
    vector instructions an element on half the bytes of fp32 and no fp32 temporaries,
    so blocks of 256 keys fit UB; otherwise in fp32."""
    if spec.kv_scale == "channel" and dtype == fd.f16:
        half = fd.cast(x, fd.f16)
        if spec.kv_offset:
            half = half + fd.cast(fd.load(offset[t.hk, :]), fd.f16)[None, :]
        return half * fd.cast(fd.load(scale[t.hk, :]), fd.f16)[None, :]
    if pages is not None and dtype == fd.f16:  # per token, paged: in half too
        return token_half(spec, t, x, scale, offset, pages, keys)
    wide = fd.cast(fd.cast(x, fd.f16), fd.f32)
    if spec.kv_scale == "channel":  # [D] of KV head t.hk, the same for every key
        if spec.kv_offset:
            wide = wide + fd.load(offset[t.hk, :])[None, :]
        wide = wide * fd.load(scale[t.hk, :])[None, :]
    elif pages is None:  # contiguous: [B, Nkv, Skv], the block's keys contiguous
        if spec.kv_offset:
            wide = wide + fd.load(offset[t.b, t.hk, keys], pad=0)[:, None]
        wide = wide * fd.load(scale[t.b, t.hk, keys], pad=0)[:, None]
    else:  # one value per key: [block_kv] of the block's pages
        if spec.kv_offset:
            wide = wide + token_values(offset, pages, keys, t.hk)[:, None]
        wide = wide * token_values(scale, pages, keys, t.hk)[:, None]
    return fd.cast(wide, dtype)


def token_half(
    spec: Any, t: Any, x: Any, scale: Any, offset: Any, pages: Any, keys: Any
) -> Any:
    """Per-token (x + offset) * scale of a paged tile in half, for an fp16 query: the
    block's scales (and offsets) rounded to half broadcast over the head dim. No fp32
    temporaries of the tile (the fp32 form at blocks of two pages of 128 needed 118%
    of the 910B2 UB), and three vector instructions an element on half-width data."""
    half = fd.cast(x, fd.f16)
    if spec.kv_offset:
        half = half + fd.cast(token_values(offset, pages, keys, t.hk), fd.f16)[:, None]
    return half * fd.cast(token_values(scale, pages, keys, t.hk), fd.f16)[:, None]


def token_values(x: Any, pages: Any, keys: Any, hk: Any) -> Any:
    """x[pages, keys, hk] ([block_kv]) of a per-token input [Pages, P, Nkv]: a copy
    reads whole rows (the Nkv values of each key, contiguous), then the column of KV
    head hk is kept (a one-hot select and a row sum: exact, one nonzero term)."""
    rows = fd.load(x[pages, keys, :], pad=0)  # [block_kv, Nkv]
    heads = fd.arange(0, rows.shape[1])[None, :]
    return fd.row_sum(fd.where(heads == hk, rows, 0.0))
