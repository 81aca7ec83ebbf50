"""Inputs of chunked prefill over a paged cache (``paged_kv=True, layout="TND"``).

Seeded runs get uneven chunks (``cu_seqlens_q``) and, per sequence, a cached prefix of
random length before its chunk: ``seqlens_kv[b]`` = cached keys + the chunk's rows, as
vLLM's chunked prefill passes it. Given inputs are checked before any work: a chunk with
more query rows than its sequence has keys is refused (``seqlens_kv`` must count the
chunk's own keys), after the checks every paged kernel makes (block table, lengths).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fadsl.errors import Loc, UsageError


def prefill_inputs(
    page: int, shape: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """``block_table``, ``seqlens_kv`` and ``cu_seqlens_q`` of a seeded chunked prefill."""
    from fadsl.frontend.attention_inputs import paged_cache, split_lengths

    out = paged_cache(page, dict(shape), rng)
    limit, count, total = shape["MaxPages"] * page, shape["B"], shape["Sq"]
    cu = split_lengths(total, count, rng)
    if np.diff(cu).max() > limit:  # uneven chunks past the table: split evenly
        cu = np.array([k * total // count for k in range(count + 1)], np.int32)
    chunks = np.diff(cu.astype(np.int64))
    if chunks.max() > limit:
        raise UsageError(
            f"--shape: the seeded inputs cannot hold Sq = {total} query rows in B = "
            f"{count} chunks: a chunk of {chunks.max()} rows, but a sequence has at "
            f"most MaxPages * page_size = {limit} keys, the chunk's own included",
            None,
            hint="give MaxPages >= Sq / (B * page_size), or pass the inputs "
            "(cu_seqlens_q, seqlens_kv) yourself",
            code="prefill_chunk_past_keys",
        )
    room = limit - chunks
    cached = (rng.random(len(chunks)) * (room + 1)).astype(np.int64)
    out["seqlens_kv"] = (chunks + cached).astype(np.int32)
    out["cu_seqlens_q"] = cu
    return out


def check_prefill(
    loc: Loc, inputs: Mapping[str, Any], shape: Mapping[str, int]
) -> None:
    """Refuse a chunk longer than its sequence: ``seqlens_kv[b] >= q_len[b]``."""
    if "cu_seqlens_q" not in inputs or "seqlens_kv" not in inputs:
        return
    chunks = np.diff(np.asarray(inputs["cu_seqlens_q"]).astype(np.int64))
    lengths = np.asarray(inputs["seqlens_kv"]).astype(np.int64)
    bad = np.flatnonzero(lengths < chunks)
    if not bad.size:
        return
    b = int(bad[0])
    raise UsageError(
        f"input `seqlens_kv` is shorter than its chunk: seqlens_kv[{b}] = "
        f"{lengths[b]}, but sequence {b} has {chunks[b]} query rows in this chunk "
        f"(cu_seqlens_q[{b + 1}] - cu_seqlens_q[{b}]); its keys must include the "
        "chunk's own",
        loc,
        notes=(f"chunks longer than their sequence: {bad.size} of {lengths.size}",),
        hint="seqlens_kv[b] = the keys cached before the chunk + the chunk's rows "
        "(write the chunk's K and V into the cache first, as vLLM does)",
        code="prefill_chunk_past_keys",
    )


def prefill_block_pairs(
    page: int,
    shape: Mapping[str, int],
    consts: Mapping[str, Any],
    inputs: Mapping[str, Any],
) -> int:
    """Q-block x KV-block pairs without masks: every Q block of a chunk reads all of
    its sequence's blocks (of ``block_kv`` keys)."""
    bq = int(consts["block_q"])
    bk = int(consts.get("block_kv", page))
    chunks = np.diff(np.asarray(inputs["cu_seqlens_q"]).astype(np.int64))
    lengths = np.asarray(inputs["seqlens_kv"]).astype(np.int64)
    return int(shape["N"] * np.sum(-(-chunks // bq) * -(-lengths // bk)))
