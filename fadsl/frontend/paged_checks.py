"""Checks of the inputs of a paged KV cache, before any work is done.

``seqlens_kv[b]`` must be in ``[0, MaxPages * page_size]`` (the block table has
``MaxPages`` columns), and the columns sequence ``b`` uses,
``block_table[b, 0 .. cdiv(seqlens_kv[b], page_size) - 1]``, must hold page numbers in
``[0, Pages)``. The other columns are never read and may hold anything (as in
FlashAttention's ``flash_attn_with_kvcache``). Each error names the element.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fadsl.errors import Loc, UsageError


def check_paged(
    page: int, loc: Loc, shape: Mapping[str, int], inputs: Mapping[str, Any]
) -> None:
    """Refuse a length past the block table or a used page number out of range."""
    lengths = np.asarray(inputs["seqlens_kv"]).astype(np.int64)
    max_pages, pages = shape["MaxPages"], shape["Pages"]
    limit = max_pages * page
    bad = np.flatnonzero((lengths < 0) | (lengths > limit))
    if bad.size:
        b = int(bad[0])
        raise UsageError(
            f"input `seqlens_kv` holds a length out of range: seqlens_kv[{b}] = "
            f"{lengths[b]}, but a sequence has 0 to MaxPages * page_size = "
            f"{max_pages} * {page} = {limit} keys",
            loc,
            notes=(f"lengths out of range: {bad.size} of {lengths.size}",),
            hint="give each sequence's number of cached keys; a longer sequence "
            "needs a block table with more columns (MaxPages)",
            code="paged_length_past_table",
        )
    if "block_table" not in inputs:
        return
    table = np.asarray(inputs["block_table"]).astype(np.int64)
    used = np.arange(max_pages)[None, :] < -(-lengths // page)[:, None]
    bad_pages = np.argwhere(used & ((table < 0) | (table >= pages)))
    if bad_pages.size:
        b, j = (int(x) for x in bad_pages[0])
        raise UsageError(
            f"input `block_table` holds a page out of range: block_table[{b}, {j}] = "
            f"{table[b, j]}, but the cache has Pages = {pages} pages",
            loc,
            notes=(
                f"sequence {b} has {lengths[b]} keys: it reads block_table[{b}, 0.."
                f"{-(-lengths[b] // page) - 1}]",
                f"pages out of range among the columns in use: {len(bad_pages)}",
            ),
            hint=f"every page a sequence uses must be in [0, {pages}); columns past "
            "a sequence's last page are not read",
            code="paged_page_out_of_range",
        )
