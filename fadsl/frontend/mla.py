"""MLA decode (DeepSeek-style multi-head latent attention): ``fd.attention(...,
paged_kv=True, v_from_k=True)`` (docs/decode.md, "MLA decode").

One latent KV head holds, per key, ``D`` columns (512 latent + 64 rotary in DeepSeek);
its value is the first ``Dv`` of them. With ``v_from_k`` the kernel has no ``v_cache``
input: each KV step loads V from ``k_cache[pages, keys, hk, 0:Dv]`` (fadsl/lib/paged.py),
so the cache is stored once. The checks here refuse what that cannot mean.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from fadsl.errors import Loc, UsageError


def v_from_k_flag(value: Any, paged_kv: Any, loc: Loc) -> bool:
    """``v_from_k=True`` reads V from a paged K cache: it needs ``paged_kv=True``."""
    from fadsl.frontend.attention_args import flag

    value = flag(value, "v_from_k", loc)
    if value and paged_kv is not True:
        raise UsageError(
            "v_from_k=True without paged_kv=True: V is read from the columns of the "
            "paged cache `k_cache`, which only a paged kernel has",
            loc,
            hint="add paged_kv=True (and page_size=...), or pass v (with its own Dv) "
            "to a dense kernel instead",
            code="v_from_k_needs_paged",
        )
    return value


def check_value_columns(shape: Mapping[str, int], loc: Loc) -> None:
    """With ``v_from_k`` V is the first Dv of k_cache's D columns: Dv <= D."""
    d, dv = shape.get("D"), shape.get("Dv")
    if d is not None and dv is not None and dv > d:
        raise UsageError(
            f"--shape D={d}, Dv={dv}: with v_from_k=True V is the first Dv columns "
            f"of k_cache's D, so Dv must be at most D",
            loc,
            hint=f"e.g. Dv={min(512, d)} for D={d} (DeepSeek MLA: D=576, Dv=512), or "
            "drop v_from_k and pass v_cache",
            code="v_from_k_value_dim",
        )


def require_value_dim(given: Collection[str], loc: Loc) -> None:
    """With ``v_from_k`` no input holds ``Dv``, and its usual default (``D``) would
    make V the whole K row, rotary columns too: the shape must give ``Dv``."""
    if "Dv" not in given:
        raise UsageError(
            "v_from_k=True but the shape does not give Dv: V is the first Dv columns "
            "of k_cache, no input holds Dv, and left out it would be D (V the whole "
            "K row, rotary columns too)",
            loc,
            hint="give it, e.g. --shape ...,D=576,Dv=512 (DeepSeek MLA), shape={'Dv': "
            "512} in Python; Dv=D (written out) keeps V the whole row",
            code="v_from_k_no_value_dim",
        )
