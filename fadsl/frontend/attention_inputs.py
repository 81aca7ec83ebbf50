"""Inputs of ``fd.attention`` kernels that are not plain random data.

Seeded example inputs (``fadsl run`` without --inputs): packed-sequence offsets for
TND (uneven lengths), the dropout seed and offset, the extra tensors of the mods (their
``init`` or N(0, 1)). The block mask of a mask_mod, computed ahead like FlexAttention's
``create_block_mask``: per (batch, head, Q block) the KV blocks the masks leave
partly kept (``kv_num_blocks`` / ``kv_indices``) and wholly kept (``full_kv_num_blocks``
/ ``full_kv_indices``); blocks with nothing kept are in neither list, so the kernel
never computes them, and full blocks skip mask evaluation. A block with a KV tail is
never full (the kernel masks the tail in partial blocks only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fadsl.frontend.attention_quant import quant_inputs
from fadsl.frontend.attention_ref import keep_mask
from fadsl.frontend.mods import eager_tensors
from fadsl.numerics import np_dtype


def make_inputs(
    spec: Any, shape: dict[str, int], consts: dict[str, Any], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """The special inputs of one seeded run (q, k, v are left to the caller's N(0, 1))."""
    out: dict[str, np.ndarray] = {}
    if spec.paged_kv and spec.varlen:  # chunked prefill (fadsl/lib/prefill.py)
        from fadsl.frontend.prefill_inputs import prefill_inputs

        out.update(prefill_inputs(spec.page_size, shape, rng))
    elif spec.paged_kv:
        out.update(paged_cache(spec.page_size, shape, rng))
    elif spec.varlen:
        out["cu_seqlens_q"] = split_lengths(shape["Sq"], shape["B"], rng)
        out["cu_seqlens_kv"] = split_lengths(shape["Skv"], shape["B"], rng)
    out.update(quant_inputs(spec, shape, rng))  # an int8 cache and its scales
    if spec.dropout_p > 0.0:
        out["seed"] = rng.integers(-(2**31), 2**31, size=2, dtype=np.int64).astype(
            np.int32
        )
        out["offset"] = rng.integers(0, 2**20, size=1).astype(np.int32)
    for t in spec.extras:
        out[t.name] = _extra(t, shape, consts, rng)
    out.update(derived_inputs(spec, shape, consts, out))
    return out


def paged_cache(
    page: int, shape: dict[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """``block_table`` and ``seqlens_kv`` of a seeded paged cache.

    The pages are dealt out in a shuffled order (distinct while ``Pages`` allows);
    lengths are uneven, mostly not multiples of the page size, and the last
    sequence of a batch of several has length 1.
    """
    b, max_pages, pages = shape["B"], shape["MaxPages"], shape["Pages"]
    table = np.resize(rng.permutation(pages), b * max_pages).reshape(b, max_pages)
    lengths = rng.integers(1, max_pages * page + 1, size=b)
    if b > 1:
        lengths[-1] = 1
    return {
        "block_table": table.astype(np.int32),
        "seqlens_kv": lengths.astype(np.int32),
    }


def split_lengths(total: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """cu_seqlens [count + 1] of ``count`` uneven lengths adding up to ``total``."""
    if count == 1:
        return np.array([0, total], np.int32)
    cuts = (
        np.sort(
            rng.choice(
                np.arange(1, total), size=min(count - 1, total - 1), replace=False
            )
        )
        if total > 1
        else np.array([], np.int64)
    )
    cuts = np.concatenate([cuts, np.full(count - 1 - len(cuts), total)])
    return np.concatenate([[0], np.sort(cuts), [total]]).astype(np.int32)


def _extra(
    t: Any, shape: dict[str, int], consts: dict[str, Any], rng: np.random.Generator
) -> np.ndarray:
    dims = _dims(t, shape, consts)
    dtype = np_dtype(t.dtype)
    if t.init is not None:
        return np.asarray(t.init(dims, rng)).astype(dtype, order="C")  # keeps 0-d
    if t.dtype.is_float:
        return np.asarray(rng.standard_normal(dims, dtype=np.float32)).astype(dtype)
    return np.zeros(dims, dtype)


def _dims(t: Any, shape: dict[str, int], consts: dict[str, Any]) -> tuple[int, ...]:
    from fadsl.ir.expr import isym
    from fadsl.ir.expr_parse import parse_expr_text

    env = dict(shape)
    env.update({k: v for k, v in consts.items() if isinstance(v, int)})
    out = []
    for d in t.annotation.dims:
        if isinstance(d, int):
            out.append(d)
        else:
            expr = isym(d) if d.isidentifier() else parse_expr_text(d)
            out.append(int(expr.subs({isym(k): v for k, v in env.items()})))
    return tuple(out)


def derived_inputs(
    spec: Any,
    shape: dict[str, int],
    consts: dict[str, Any],
    inputs: Mapping[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """The block mask tensors (only for a mask_mod on fixed-length sequences)."""
    if not spec.block_sparse:
        return {}
    part, full = block_maps(spec, shape, consts, inputs)
    kv_num, kv_idx = block_lists(part)
    full_num, full_idx = block_lists(full)
    return {
        "kv_num_blocks": kv_num,
        "kv_indices": kv_idx,
        "full_kv_num_blocks": full_num,
        "full_kv_indices": full_idx,
    }


def block_maps(
    spec: Any,
    shape: dict[str, int],
    consts: dict[str, Any],
    inputs: Mapping[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """(partial, full) [B, N, nq, nk] bool: the masks' blocks of every batch and head."""
    bq, bk = int(consts["block_q"]), int(consts["block_kv"])
    b_, n_, sq, skv = shape["B"], shape["N"], shape["Sq"], shape["Skv"]
    nq, nk = -(-sq // bq), -(-skv // bk)
    part = np.zeros((b_, n_, nq, nk), bool)
    full = np.zeros((b_, n_, nq, nk), bool)
    with eager_tensors({t.name: inputs[t.name] for t in spec.extras}, shape):
        for b in range(b_):
            for h in range(n_):
                part[b, h], full[b, h] = classify_blocks(
                    keep_mask(spec, b, h, sq, skv), bq, bk
                )
    return part, full


def classify_blocks(
    keep: np.ndarray, bq: int, bk: int
) -> tuple[np.ndarray, np.ndarray]:
    """(partial, full) [nq, nk] bool maps of a [Sq, Skv] keep mask cut into blocks."""
    sq, skv = keep.shape
    nq, nk = -(-sq // bq), -(-skv // bk)
    padded = np.zeros((nq * bq, nk * bk), bool)
    padded[:sq, :skv] = keep
    kept = padded.reshape(nq, bq, nk, bk).sum(axis=(1, 3))
    rows = np.minimum(bq, sq - bq * np.arange(nq))[:, None]
    cols = np.minimum(bk, skv - bk * np.arange(nk))[None, :]
    full = (kept == rows * cols) & (cols == bk)
    return (kept > 0) & ~full, full


def transpose_blocks(
    part: np.ndarray, full: np.ndarray, bq: int, sq: int
) -> tuple[np.ndarray, np.ndarray]:
    """The (partial, full) maps [.., nq, nk] transposed for the backward's KV-major
    loop ([.., nk, nq]): a block with a Q tail is never full (partial blocks mask it).
    """
    nq = part.shape[-2]
    whole_rows = (np.minimum(bq, sq - bq * np.arange(nq)) == bq)[:, None]
    t_part = np.swapaxes(part | (full & ~whole_rows), -1, -2)
    return t_part, np.swapaxes(full & whole_rows, -1, -2)


def blocks_of_lists(num: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The bool map [.., rows, cols] that a (count, indices) pair lists."""
    cols = idx.shape[-1]
    used = np.arange(cols) < num[..., None]
    out = np.zeros(idx.shape, bool)
    where = np.nonzero(used)
    out[where[:-1] + (idx[used],)] = True
    return out


def block_lists(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """FlexAttention's BlockMask form: per row of blocks a count and ascending indices."""
    num = blocks.sum(axis=-1).astype(np.int32)
    order = np.argsort(~blocks, axis=-1, kind="stable").astype(np.int32)
    idx = np.where(np.arange(blocks.shape[-1]) < num[..., None], order, 0).astype(
        np.int32
    )
    return num, np.ascontiguousarray(idx)


def kv_block_pairs(
    spec: Any,
    shape: dict[str, int],
    consts: dict[str, Any],
    inputs: Mapping[str, np.ndarray],
) -> int:
    """Q-block x KV-block pairs a dense kernel would compute, over batches and heads."""
    if spec.paged_kv and spec.varlen:
        from fadsl.frontend.prefill_inputs import prefill_block_pairs

        return prefill_block_pairs(spec.page_size, shape, consts, inputs)
    if spec.paged_kv:
        return paged_block_pairs(spec, shape, consts, inputs)
    bq, bk = int(consts["block_q"]), int(consts["block_kv"])
    if not spec.varlen:
        return shape["B"] * shape["N"] * -(-shape["Sq"] // bq) * -(-shape["Skv"] // bk)
    lq = np.diff(inputs["cu_seqlens_q"].astype(np.int64))
    lk = np.diff(inputs["cu_seqlens_kv"].astype(np.int64))
    return int(shape["N"] * np.sum(-(-lq // bq) * -(-lk // bk)))


def paged_block_pairs(
    spec: Any,
    shape: dict[str, int],
    consts: dict[str, Any],
    inputs: Mapping[str, np.ndarray],
) -> int:
    """Task x KV-block pairs without masks: every task of sequence b reads all its
    blocks (of ``block_kv`` keys, one page unless set)."""
    from fadsl.lib.paged import packs_positions

    bq = int(consts["block_q"])
    bk = int(consts.get("block_kv", spec.page_size))
    tasks = shape["N"] * -(-shape["Sq"] // bq)
    group = shape["N"] // shape["Nkv"]
    if packs_positions(spec):  # block_q of a group's G * Sq rows
        tasks = shape["Nkv"] * -(-(group * shape["Sq"]) // bq)
    elif spec.pack_gqa:
        tasks = shape["Nkv"] * -(-group // bq) * shape["Sq"]
    lengths = inputs["seqlens_kv"].astype(np.int64)
    return int(tasks * np.sum(-(-lengths // bk)))


__all__ = [
    "make_inputs",
    "derived_inputs",
    "classify_blocks",
    "block_maps",
    "block_lists",
    "blocks_of_lists",
    "transpose_blocks",
    "kv_block_pairs",
    "split_lengths",
]
