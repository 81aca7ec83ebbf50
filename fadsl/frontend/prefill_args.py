"""``fd.attention(..., paged_kv=True, layout="TND")``: chunked prefill over a paged cache.

The keywords it takes and refuses, its default shape, and what ``tune`` and
``timeline`` assume for the lengths it reads as scalars (fadsl/lib/prefill.py,
docs/decode.md "Chunked prefill").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fadsl.errors import Loc, UsageError

PREFILL_SHAPE = {
    "B": 4,
    "N": 32,
    "Nkv": 8,
    "Sq": 2048,
    "D": 128,
    "Pages": 256,
    "MaxPages": 32,
}
"""Four chunks of 512 query rows (packed: Sq = 2048) against caches of up to 4K keys."""


def program_of(spec: Any) -> tuple[Callable[..., Any], dict[str, int]]:
    """The library program of an ``fd.attention`` variant and its default shape:
    FA2 (flash.py), paged decode (paged.py) or chunked prefill (prefill.py)."""
    from fadsl.frontend.attention_params import DEFAULT_SHAPE, PAGED_SHAPE
    from fadsl.lib.flash import flash_attention
    from fadsl.lib.paged import paged_attention
    from fadsl.lib.prefill import paged_prefill

    if spec.paged_kv and spec.varlen:
        return paged_prefill, PREFILL_SHAPE
    if spec.paged_kv:
        return paged_attention, PAGED_SHAPE
    return flash_attention, DEFAULT_SHAPE


def prefill_pack(pack_gqa: Any, loc: Loc) -> bool:
    """GQA packing is decode's tiling (a few query rows per head); a prefill chunk has
    hundreds of rows per head, which fill a Q tile on their own: refuse pack_gqa=True.
    """
    if pack_gqa is True:
        raise UsageError(
            'pack_gqa=True with paged_kv=True and layout="TND": chunked prefill tiles '
            "block_q rows of one query head (hundreds of positions fill the Q tile); "
            "packing the heads of a group is decode's tiling",
            loc,
            hint='leave pack_gqa out for layout="TND" (or use layout="BNSD" for '
            "decode with packed heads)",
            code="prefill_pack_gqa",
        )
    return False


def prefill_block_kv(page: int) -> int:
    """The default KV block of a chunked prefill: the whole pages that make up to 128
    keys (one page when it is larger). A prefill task is compute-bound: a block of
    one 16-key page would spend each KV iteration's fixed costs on a [block_q, 16]
    score tile (decode keeps one page, docs/decode.md)."""
    return max(page, 128 // page * page)


def prefill_scalars(shape: Mapping[str, int], page: int) -> dict[str, Any]:
    """The lengths the model assumes: B chunks of Sq // B rows each, every sequence
    as long as its block table allows (the chunk at the end of a full cache)."""
    b = shape["B"]
    return {
        "seqlens_kv": shape["MaxPages"] * page,
        "cu_seqlens_q": tuple(k * (shape["Sq"] // b) for k in range(b + 1)),
    }


def prefill_assumption(shape: Mapping[str, int], page: int) -> str:
    values = prefill_scalars(shape, page)
    return (
        f"the B={shape['B']} chunks all of {values['cu_seqlens_q'][1]} query rows "
        f"(Sq // B), each at the end of a sequence as long as its block table allows: "
        f"seqlens_kv[b] = MaxPages * P = {values['seqlens_kv']}"
    )
