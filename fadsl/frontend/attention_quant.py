"""An int8 KV cache with antiquant (``fd.attention(..., kv_dtype="int8", kv_scale=...)``).

The cache ``k_cache`` / ``v_cache`` is int8; the kernel dequantises each loaded page in
UB as CANN's antiquant inputs define it: ``(x + offset) * scale`` (``fadsl/lib/
paged_quant.py``). Scales (and offsets, with ``kv_offset=True``) are fp32 inputs:

- ``kv_scale="channel"``: ``k_scale`` ``[Nkv, D]``, ``v_scale`` ``[Nkv, Dv]``;
- ``kv_scale="token"``: ``k_scale`` / ``v_scale`` ``[Pages, P, Nkv]`` (one per cached
  token and KV head, stored beside its page).

This module holds the keyword checks, the parameters, the seeded inputs and the
dequantisation the references start from (inputs of the wrong shape or dtype are
refused by the common input checks, E71 / E72, naming the input and its dims).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fadsl.errors import Loc, UsageError
from fadsl.frontend.kernel import ParamSpec
from fadsl.ir.types import DType

KV_DTYPES = ("int8",)
KV_SCALES = ("channel", "token")


def quant_keywords(
    kv_dtype: Any, kv_scale: Any, kv_offset: Any, cache: tuple[Any, ...], loc: Loc
) -> tuple[str, str, bool]:
    """``(kv_dtype, kv_scale, kv_offset)``, normalised: ``("", "", False)`` for a
    float cache. int8 needs a scale granularity, and a paged cache or k / v of one
    batch each in layout BNSD or BSND (``cache``: paged_kv, layout, shared_kv)."""
    paged_kv, layout, shared = cache
    if kv_dtype is None:
        if kv_scale is not None or kv_offset not in (None, False):
            raise _keywords(
                f"kv_scale={kv_scale!r}, kv_offset={kv_offset!r} without "
                'kv_dtype="int8": scales and offsets dequantise an int8 cache',
                loc,
            )
        return "", "", False
    if kv_dtype not in KV_DTYPES:
        raise _keywords(f"kv_dtype must be 'int8' (or left out), got {kv_dtype!r}", loc)
    if paged_kv is not True and (layout not in ("BNSD", "BSND") or shared is True):
        raise _keywords(
            f'kv_dtype="int8" with layout={layout!r}, shared_kv={shared!r}: an int8 '
            "cache is paged (paged_kv=True) or k / v in layout BNSD or BSND",
            loc,
        )
    if kv_scale not in KV_SCALES:
        raise _keywords(
            f'kv_dtype="int8" needs kv_scale="channel" or "token", got {kv_scale!r}',
            loc,
        )
    if not isinstance(kv_offset, bool):
        raise _keywords(f"kv_offset must be True or False, got {kv_offset!r}", loc)
    return kv_dtype, kv_scale, kv_offset


def _keywords(message: str, loc: Loc) -> UsageError:
    return UsageError(
        message,
        loc,
        hint='an int8 cache: fd.attention(..., paged_kv=True, kv_dtype="int8", '
        'kv_scale="channel" (k_scale [Nkv, D]) or "token" (k_scale [Pages, P, Nkv]), '
        "kv_offset=True to add k_offset / v_offset)",
        code="kv_quant_keywords",
    )


def scale_dims(spec: Any, head_dim: str) -> tuple[str | int, ...]:
    """Dims of one scale (or offset) input: per channel or per cached token."""
    if spec.kv_scale == "channel":
        return ("Nkv", head_dim)
    if not spec.paged_kv:
        return ("B", "Nkv", "Skv")
    return ("Pages", spec.page_size, "Nkv")


def quant_names(spec: Any) -> tuple[str, ...]:
    """The inputs of the antiquant: scales, then offsets when ``kv_offset``."""
    if not spec.kv_dtype:
        return ()
    names = ("k_scale", "v_scale")
    return names + (("k_offset", "v_offset") if spec.kv_offset else ())


def quant_params(spec: Any) -> list[ParamSpec]:
    """The fp32 scale (and offset) parameters after the cache."""
    return [
        ParamSpec(n, "in", scale_dims(spec, "D" if n[0] == "k" else "Dv"), DType.F32)
        for n in quant_names(spec)
    ]


def quant_consts(spec: Any, consts: list[ParamSpec]) -> list[ParamSpec]:
    """An int8 cache loads its scales (and offsets) beside each K / V page, more
    VECIN queues than double buffering leaves event IDs for (8 per HardEvent on
    A2/A3, E52): its KV loop is single-buffered by default (``--set stages=2`` where
    the check allows it)."""
    if not spec.kv_dtype:
        return consts
    return [
        (
            ParamSpec("stages", "const", default=1, has_default=True)
            if p.name == "stages"
            else p
        )
        for p in consts
    ]


def cache_dtype(spec: Any) -> DType | None:
    """int8 for a quantised cache; None (the kernel's dtype) otherwise."""
    return DType.I8 if spec.kv_dtype == "int8" else None


def quant_inputs(
    spec: Any, shape: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Seeded int8 caches (all of [-127, 127]) and scales that map them to about
    N(0, 1) values: 1/40 .. 1/80 per channel or token; offsets of a few units."""
    if not spec.kv_dtype:
        return {}
    nkv = shape["Nkv"]
    d, dv = shape["D"], int(shape.get("Dv", shape["D"]))
    out: dict[str, np.ndarray] = {}
    for name, width in (("k", d), ("v", dv)):
        cache, rows = _cache_dims(spec, shape, width)
        out[_cache(spec, name)] = rng.integers(-127, 128, size=cache).astype(np.int8)
        dims = (nkv, width) if spec.kv_scale == "channel" else rows
        out[f"{name}_scale"] = (1.0 / rng.uniform(40.0, 80.0, dims)).astype(np.float32)
        if spec.kv_offset:
            off = rng.uniform(-4.0, 4.0, dims)
            out[f"{name}_offset"] = off.astype(np.float32)
    return out


def _cache(spec: Any, name: str) -> str:
    """The name of the K or V cache: k_cache / v_cache when paged, else k / v."""
    return f"{name}_cache" if spec.paged_kv else name


def _cache_dims(
    spec: Any, shape: Mapping[str, int], width: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(cache dims, per-token scale dims) of one of K / V."""
    nkv = shape["Nkv"]
    if spec.paged_kv:
        pages, page = shape["Pages"], spec.page_size
        return (pages, page, nkv, width), (pages, page, nkv)
    b, skv = shape["B"], shape["Skv"]
    if spec.layout == "BSND":
        return (b, skv, nkv, width), (b, nkv, skv)
    return (b, nkv, skv, width), (b, nkv, skv)


def _per_token(spec: Any, x: np.ndarray) -> np.ndarray:
    """A per-token scale (or offset) spread over the head dim of its cache: [Pages,
    P, Nkv] or [B, Nkv, Skv] (BNSD) as they are; [B, Nkv, Skv] for BSND's [B, Skv,
    Nkv, D] transposed."""
    if not spec.paged_kv and spec.layout == "BSND":
        x = x.transpose(0, 2, 1)
    return x[..., None]


def _per_channel(spec: Any, x: np.ndarray) -> np.ndarray:
    """A per-channel scale [Nkv, D] over its cache: as it is for the caches whose
    last two dims are [Nkv, D]; [Nkv, 1, D] for BNSD's [B, Nkv, Skv, D]."""
    if not spec.paged_kv and spec.layout == "BNSD":
        return x[:, None, :]
    return x


def dequantised(
    spec: Any, inputs: Mapping[str, np.ndarray], dtype: DType | None
) -> Mapping[str, np.ndarray]:
    """``inputs`` with the caches dequantised, ``(x + offset) * scale`` in float64
    (the golden) or in fp32 rounded to ``dtype`` (what the kernel feeds the cube: the
    same-precision reference of the tolerance rule)."""
    if not getattr(spec, "kv_dtype", ""):
        return inputs
    from fadsl.numerics import quantize

    wide = np.float64 if dtype is None else np.float32
    out = dict(inputs)
    for name in ("k", "v"):
        x = np.asarray(inputs[_cache(spec, name)]).astype(wide)
        scale = np.asarray(inputs[f"{name}_scale"]).astype(wide)
        offset = np.asarray(inputs.get(f"{name}_offset", 0.0)).astype(wide)
        spread = _per_token if spec.kv_scale == "token" else _per_channel
        scale = spread(spec, scale)
        offset = spread(spec, offset) if offset.ndim else offset
        value = (x + offset) * scale
        out[_cache(spec, name)] = value if dtype is None else quantize(value, dtype)
    return out
