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

from typing import Any, NamedTuple

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
    k = dequant_one(spec, t, quant, 0, pages, keys, kt, dtype)
    v = dequant_one(spec, t, quant, 1, pages, keys, vt, dtype)
    return k, v


def dequant_one(
    spec: Any, t: Any, quant: Any, which: int, pages: Any, keys: Any, x: Any, dtype: Any
) -> Any:
    """The loaded int8 tile ``x`` of K (``which`` 0) or V (1), dequantised to
    ``dtype`` (the paged loop dequantises K before it loads V: K goes to the cube
    first, for Q K^T)."""
    if isinstance(quant, HalfRows):
        half = fd.cast(x, fd.f16)
        if quant.offsets:
            half = half + quant.offsets[which][None, :]
        return half * quant.scales[which][None, :]
    offset = quant[2 + which] if spec.kv_offset else None
    return dequant(spec, t, x, quant[which], offset, pages, keys, dtype)


class HalfRows(NamedTuple):
    """Per-channel scales (and offsets) of a task's KV head in half, [D] and [Dv]:
    loaded and cast once per task, before the KV loop (they are the same for every
    block), not once per block."""

    scales: tuple[Any, Any]
    offsets: tuple[Any, Any] | None


def task_rows(spec: Any, t: Any, quant: tuple[Any, ...]) -> Any:
    """What the KV loop's dequantisation reads: per channel with an fp16 query the
    ``HalfRows`` of KV head t.hk (loaded here, once per task); otherwise the
    scale (and offset) tensors, read per block."""
    if spec.kv_scale != "channel" or t.qt.dtype != fd.f16:
        return quant

    def row(x: Any) -> Any:
        return fd.cast(fd.load(x[t.hk, :]), fd.f16)

    offsets = (row(quant[2]), row(quant[3])) if spec.kv_offset else None
    return HalfRows((row(quant[0]), row(quant[1])), offsets)


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
