"""Checks of the keywords of ``fd.attention``: each returns the normalised value or raises
a UsageError at the user's call with a hint."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from fadsl.errors import Loc, UsageError
from fadsl.frontend.mods import mod_loc
from fadsl.ir.types import DType

LAYOUTS = ("BNSD", "BSND", "BSH", "TND")


def mod(fn: Any, arity: int, what: str, loc: Loc) -> Callable[..., Any] | None:
    if fn is None:
        return None
    sig = (
        "score_mod(score, b, h, q_idx, kv_idx)"
        if arity == 5
        else "mask_mod(b, h, q_idx, kv_idx)"
    )
    if not inspect.isfunction(fn):
        raise UsageError(
            f"{what} must be a Python function, got {type(fn).__name__}",
            loc,
            hint=f"def {sig}: ...",
        )
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(params) != arity:
        raise UsageError(
            f"{what} `{fn.__name__}` takes {len(params)} argument(s); "
            f"FlexAttention's signature has {arity}",
            mod_loc(fn),
            hint=f"def {sig}: ...",
        )
    return fn


def flag(value: Any, what: str, loc: Loc) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"{what} must be True or False, got {value!r}", loc)
    return value


def window(value: Any, loc: Loc, causal: bool = False) -> tuple[int, int] | None:
    """``(left, right)``, integers >= -1. With ``causal``, a right side above 0 is
    refused: causal already removes every key right of the diagonal, so such a right
    side could keep nothing. (FlashAttention's mha_fwd in csrc/flash_attn/flash_api.cpp
    silently sets window_size_right = 0 when is_causal; fadsl says so instead.)"""
    if value is None:
        return None
    ok = (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= -1 for x in value
        )
    )
    if not ok:
        raise UsageError(
            f"window must be (left, right) with integers >= -1, got {value!r}",
            loc,
            hint="e.g. window=(256, 0); -1 leaves a side unbounded",
        )
    left, right = int(value[0]), int(value[1])
    if causal and right > 0:
        raise UsageError(
            f"window=({left}, {right}) with causal=True: causal removes every key right "
            f"of the diagonal, so the window's right side {right} has no effect",
            loc,
            hint=f"write window=({left}, 0) with causal=True (FlashAttention turns its "
            f"right side into 0 the same way), or window=({left}, {right}) without "
            "causal to keep keys on both sides",
            code="window_right_with_causal",
        )
    return left, right


def positive(value: Any, what: str, loc: Loc) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 < value < float("inf")
    ):
        raise UsageError(
            f"{what} must be a positive finite number, got {value!r}",
            loc,
            hint=(
                f"an infinite {what} would make every score NaN"
                if value == float("inf")
                else None
            ),
        )
    return float(value)


def probability(value: Any, loc: Loc) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0.0 <= value < 1.0
    ):
        raise UsageError(
            f"dropout_p must be in [0, 1), got {value!r}",
            loc,
            hint="dropout_p is the probability of dropping a score",
        )
    return float(value)


def layout(value: Any, loc: Loc) -> str:
    if value not in LAYOUTS:
        raise UsageError(
            f"layout must be one of {', '.join(LAYOUTS)}, got {value!r}",
            loc,
            hint="TND packs variable-length sequences (cu_seqlens inputs)",
        )
    return str(value)


def dtype(value: Any, loc: Loc) -> DType:
    try:
        dt = DType.parse(str(value))
    except ValueError:
        dt = None
    if dt not in (DType.F16, DType.BF16, DType.F32):
        raise UsageError(
            f"dtype must be fp16, bf16 or fp32, got {value!r}",
            loc,
            code="unknown_dtype",
        )
    return dt


PAGE_SIZES = range(16, 513, 16)


def paged(
    paged_kv: Any,
    page_size: Any,
    pack_gqa: Any,
    layout: str,
    dropout_p: float,
    has_mods: bool,
    loc: Loc,
    max_scores: bool = False,
) -> tuple[bool, int, bool]:
    """``(paged_kv, page_size, pack_gqa)`` of a kernel over a paged KV cache.

    A page is 16 to 512 rows, a multiple of 16 (CANN's IncreFlashAttention takes the
    same range for fp16/bf16 caches); the query layout is BNSD or BSND; there is no
    dropout (inference). ``pack_gqa=None`` packs the heads of a group whenever no mod
    would see the head of a row.
    """
    on = flag(paged_kv, "paged_kv", loc)
    if not on:
        for name, value in (("page_size", page_size), ("pack_gqa", pack_gqa)):
            if value is not None:
                raise UsageError(
                    f"{name}={value!r} without paged_kv=True",
                    loc,
                    hint=f"add paged_kv=True for a paged KV cache, or leave {name} out",
                )
        return False, 0, False
    size = 128 if page_size is None else page_size
    if isinstance(size, bool) or not isinstance(size, int) or size not in PAGE_SIZES:
        raise UsageError(
            f"page_size must be a multiple of 16 from 16 to 512, got {size!r}",
            loc,
            hint="a page is one KV block of the kernel: 128 is the usual size",
        )
    if layout not in ("BNSD", "BSND", "TND") or dropout_p > 0.0 or max_scores:
        what = f"layout={layout!r}" if dropout_p == 0.0 else "dropout_p > 0"
        what = "return_max_scores=True" if max_scores else what
        raise UsageError(
            f"paged_kv=True with {what}: a paged kernel takes q in layout BNSD or "
            "BSND (decode), or TND (chunked prefill), without dropout, and returns o "
            "(and lse)",
            loc,
            hint='use layout="BNSD", "BSND" or "TND", dropout_p=0.0 and no '
            "return_max_scores",
        )
    if layout == "TND":  # chunked prefill (fadsl/lib/prefill.py): never packed
        from fadsl.frontend.prefill_args import prefill_pack

        return True, size, prefill_pack(pack_gqa, loc)
    if pack_gqa is None:
        return True, size, not has_mods
    pack = flag(pack_gqa, "pack_gqa", loc)
    if pack and has_mods:
        raise UsageError(
            "pack_gqa=True with a score_mod or mask_mod: the rows of a packed tile "
            "are different query heads, and a mod sees one head per tile",
            loc,
            hint="leave pack_gqa out (it is off when a mod is given)",
        )
    return True, size, pack


def shared_kv(value: Any, layout: Any, paged_kv: Any, loc: Loc) -> bool:
    """``shared_kv=True``: k and v of batch 1 read by every query batch; their batch
    dim is what is shared, so not TND (no batch dim) nor a paged cache (its block
    table already shares pages)."""
    on = flag(value, "shared_kv", loc)
    if on and (layout == "TND" or paged_kv is True):
        what = 'layout="TND"' if layout == "TND" else "paged_kv=True"
        raise UsageError(
            f"shared_kv=True with {what}: shared_kv broadcasts the batch dim of k "
            "and v, which packed sequences have not and a paged cache shares through "
            "its block table",
            loc,
            hint="use layout BNSD, BSND or BSH without paged_kv (or point the block "
            "tables of a paged cache at the same pages)",
        )
    return on


def check_paged_block(block_kv: Any, spec: Any, loc: Loc) -> None:
    """A paged kernel's KV block (``block_kv``, given with --set or by tune) is a whole
    number of pages: each KV iteration loads block_kv / page_size pages."""
    page = spec.page_size
    if block_kv is None or (
        isinstance(block_kv, int) and block_kv > 0 and block_kv % page == 0
    ):
        return
    raise UsageError(
        f"block_kv = {block_kv} with page_size = {page}: a KV block of a paged cache "
        "is a whole number of pages",
        loc,
        notes=(
            f"each KV iteration loads block_kv / page_size pages, one copy per page "
            f"({_pages_text(block_kv, page)})",
        ),
        hint=f"use a multiple of {page}, e.g. --set block_kv={2 * page} (2 pages), "
        "or leave block_kv out (one page)",
        code="paged_block_not_whole_pages",
    )


def _pages_text(block_kv: Any, page: int) -> str:
    if isinstance(block_kv, int):
        return f"{block_kv} / {page} = {block_kv / page:g}"
    return f"got {block_kv!r}"


BACKWARD_KEYWORDS = (
    "name",
    "score_mod",
    "mask_mod",
    "causal",
    "window",
    "softcap",
    "scale",
    "dropout_p",
    "layout",
    "dtype",
    "block_mask",
    "shared_kv",
)
"""The keywords of ``fd.attention_backward``: those of ``fd.attention`` that shape the
gradient (docs/backward.md)."""

FORWARD_ONLY = {
    "return_lse": (
        "the backward reads the forward's `lse` as an input",
        "drop return_lse here, and build the forward with "
        "fd.attention(..., return_lse=True)",
    ),
    "return_max_scores": (
        "the row maxima are an output of the forward, with no gradient",
        "drop return_max_scores here (the forward returns max_scores)",
    ),
    "paged_kv": (
        "a paged KV cache has no backward (inference only)",
        "build the backward of the contiguous variant (no paged_kv)",
    ),
    "page_size": (
        "a paged KV cache has no backward (inference only)",
        "build the backward of the contiguous variant (no page_size)",
    ),
    "pack_gqa": (
        "it packs the tasks of a paged decode, which has no backward",
        "drop pack_gqa",
    ),
}
"""Keywords of ``fd.attention`` that ``fd.attention_backward`` does not take, and why."""


def backward_keywords(others: Mapping[str, Any], loc: Loc) -> None:
    """Refuse keywords ``fd.attention_backward`` does not take, naming each one."""
    for name in others:
        if name in FORWARD_ONLY:
            why, fix = FORWARD_ONLY[name]
            raise UsageError(
                f"fd.attention_backward takes no `{name}`: {why}",
                loc,
                hint=fix,
                code="backward_keyword",
            )
        import difflib

        close = difflib.get_close_matches(name, BACKWARD_KEYWORDS, n=1)
        raise UsageError(
            f"fd.attention_backward has no keyword `{name}`",
            loc,
            hint=(f"did you mean `{close[0]}`? " if close else "")
            + f"its keywords: {', '.join(BACKWARD_KEYWORDS)}",
            code="backward_keyword",
        )
