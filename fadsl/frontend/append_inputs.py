"""Inputs of ``fd.attention(..., append_kv=True)``: seeded ones for ``fadsl run``, and
the checks made before any work (each error names the element, E133).

Sequence b writes positions ``seqlens_kv[b] .. seqlens_kv[b] + Sq - 1``, so that end
must fit its block table row (``MaxPages * page_size``), every column it uses must hold
a page in ``[0, Pages)``, the pages it writes must belong to no other sequence,
``leftpad[b]`` is in ``[0, seqlens_kv[b]]``, and with rotary the tables reach
position ``seqlens_kv[b] + Sq - 1`` and ``2 * RotaryHalf <= D``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fadsl.errors import Loc, UsageError
from fadsl.numerics import np_dtype


def make_append_inputs(spec: Any, shape: dict[str, int], rng: Any) -> dict[str, Any]:
    """Distinct pages per sequence, lengths leaving room for the Sq new tokens."""
    b, page, max_pages = shape["B"], spec.page_size, shape["MaxPages"]
    pages, sq = shape["Pages"], shape["Sq"]
    cap = min(max_pages, pages // max(b, 1)) * page - sq
    if cap < 0:
        raise UsageError(
            f"append_kv at --shape Pages={pages}, MaxPages={max_pages}, Sq={sq}: no room "
            f"for the {sq} new tokens of each of the B={b} sequences",
            None,
            hint="raise Pages and MaxPages",
            code="append_inputs",
        )
    out: dict[str, Any] = {
        "block_table": (
            rng.permutation(pages)[: b * max_pages].reshape(b, -1).astype(np.int32)
            if pages >= b * max_pages
            else np.arange(b * max_pages, dtype=np.int32).reshape(b, -1) % pages
        ),
        "seqlens_kv": rng.integers(0, cap + 1, size=b).astype(np.int32),
    }
    if spec.leftpad:
        out["leftpad"] = (rng.random(b) * out["seqlens_kv"]).astype(np.int32)
    if spec.rotary is not None:
        angle = rng.random((shape["MaxPos"], shape["RotaryHalf"])) * 2 * np.pi
        out["rotary_cos"] = np.cos(angle).astype(np.float32)
        out["rotary_sin"] = np.sin(angle).astype(np.float32)
    return out


def check_append_inputs(
    spec: Any, loc: Loc, shape: Mapping[str, int], inputs: Mapping[str, Any]
) -> None:
    """Refuse an append that would write outside its sequence's pages."""
    if "seqlens_kv" not in inputs or "block_table" not in inputs:
        return
    page, sq = spec.page_size, shape["Sq"]
    lengths = np.asarray(inputs["seqlens_kv"]).astype(np.int64)
    table = np.asarray(inputs["block_table"]).astype(np.int64)
    limit = shape["MaxPages"] * page
    _first(
        (lengths < 0) | (lengths + sq > limit),
        lambda b: f"seqlens_kv[{b}] = {lengths[b]}: its {sq} new tokens end at "
        f"{lengths[b] + sq}, past MaxPages * page_size = {limit} (or it is negative)",
        loc,
    )
    used = np.arange(table.shape[1])[None, :] < -(-(lengths + sq) // page)[:, None]
    bad = np.argwhere(used & ((table < 0) | (table >= shape["Pages"])))
    if bad.size:
        b, j = (int(x) for x in bad[0])
        _raise(
            f"block_table[{b}, {j}] = {table[b, j]} is not a page in [0, "
            f"{shape['Pages']}), and sequence {b} uses that column",
            loc,
        )
    _shared_pages(table, lengths, sq, page, loc)
    if spec.leftpad and "leftpad" in inputs:
        pad = np.asarray(inputs["leftpad"]).astype(np.int64)
        _first(
            (pad < 0) | (pad > lengths),
            lambda b: f"leftpad[{b}] = {pad[b]} is not in [0, seqlens_kv[{b}] = "
            f"{lengths[b]}]",
            loc,
        )
    if spec.rotary is not None:
        _check_rotary(shape, lengths, sq, loc)


def _check_rotary(shape: Mapping[str, int], lengths: Any, sq: int, loc: Loc) -> None:
    if 2 * shape["RotaryHalf"] > shape["D"]:
        _raise(
            f"rotary_dim = 2 * RotaryHalf = {2 * shape['RotaryHalf']} is more than "
            f"the head dim D = {shape['D']}",
            loc,
        )
    _first(
        lengths + sq > shape["MaxPos"],
        lambda b: f"sequence {b} rotates position {lengths[b] + sq - 1}, past the "
        f"MaxPos = {shape['MaxPos']} rows of rotary_cos / rotary_sin",
        loc,
    )


def _shared_pages(table: Any, lengths: Any, sq: int, page: int, loc: Loc) -> None:
    """A page sequence b writes must not be read or written by another sequence."""
    owner: dict[int, int] = {}
    for b in range(table.shape[0]):
        for j in range(-(-(int(lengths[b]) + sq) // page)):
            owner.setdefault(int(table[b, j]), b)
    for b in range(table.shape[0]):
        first, last = int(lengths[b]) // page, (int(lengths[b]) + sq - 1) // page
        for j in range(first, last + 1):
            other = owner[int(table[b, j])]
            if other != b:
                _raise(
                    f"block_table[{b}, {j}] = {table[b, j]} is a page sequence {b} "
                    f"appends to, and sequence {other} uses it too",
                    loc,
                )


def _first(bad: Any, text: Any, loc: Loc) -> None:
    idx = np.flatnonzero(bad)
    if idx.size:
        _raise(text(int(idx[0])), loc)


def _raise(what: str, loc: Loc) -> None:
    raise UsageError(
        f"append_kv input out of range: {what}",
        loc,
        hint="each sequence appends its Sq new tokens at seqlens_kv[b] into its own "
        "pages; give lengths, pages and tables that hold them (docs/decode.md)",
        code="append_inputs",
    )


__all__ = ["check_append_inputs", "make_append_inputs", "np_dtype"]
