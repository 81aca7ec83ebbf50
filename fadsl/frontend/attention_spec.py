"""``AttentionSpec``: the variant an ``fd.attention(...)`` call describes (layout,
mods, masks, paged / quantised / appended caches), and the checks of what its mods
return. ``fadsl.frontend.attention`` builds it from the call's keywords."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fadsl.errors import KernelSyntaxError
from fadsl.frontend import ops
from fadsl.frontend.conditions import spread
from fadsl.frontend.mods import ExtraTensor, mod_loc
from fadsl.ir.types import DType


@dataclass(frozen=True)
class AttentionSpec:
    """One attention variant: the compile-time constant ``spec`` of the FA2 program."""

    name: str
    score_mod: Callable[..., Any] | None
    mask_mod: Callable[..., Any] | None
    causal: bool
    window: tuple[int, int] | None
    """(left, right) relative to the bottom-right diagonal; -1 is unbounded."""
    softcap: float | None
    scale: float | None
    return_lse: bool
    dropout_p: float
    layout: str
    dtype: DType
    extras: tuple[ExtraTensor, ...]
    paged_kv: bool = False
    """K and V come from a paged cache through a block table (fadsl/lib/paged.py)."""
    page_size: int = 0
    shared_kv: bool = False
    """k and v have batch 1, shared by every query batch (a shared prefix)."""
    return_max_scores: bool = False
    """Adds the output ``max_scores``: each row's largest score after the mods and
    masks (FlexAttention's max_scores; -inf for a row that sees no key)."""
    v_from_k: bool = False
    """Paged MLA: no ``v_cache``; V is the first ``Dv`` columns of ``k_cache``."""
    pack_gqa: bool = False
    """Paged: one task's Q rows are query heads of one KV head: all (position, head)
    pairs of the group in BNSD ((s, g) packing), the heads at one position in BSND."""
    kv_dtype: str = ""
    """"int8": the paged cache is int8, dequantised after each load (attention_quant)."""
    kv_scale: str = ""
    """"channel" or "token": the granularity of k_scale / v_scale (int8 caches)."""
    kv_offset: bool = False
    """int8 caches: k_offset / v_offset are added before the scale."""

    @property
    def varlen(self) -> bool:
        return self.layout == "TND"

    @property
    def block_sparse(self) -> bool:
        """A mask_mod gets a block mask made ahead (not for packed varlen sequences,
        nor for a paged cache, whose pages are each masked as they are read)."""
        return self.mask_mod is not None and not self.varlen and not self.paged_kv

    def check_score(self, score: Any, scores: ops.Tile) -> Any:
        """score_mod's result must be a float tile shaped like the scores it was given."""
        assert self.score_mod is not None
        if isinstance(score, ops.Tile) and (score.dtype, score.shape) == (
            scores.dtype,
            scores.shape,
        ):
            return score
        got = type(score).__name__
        if isinstance(score, ops.Tile):
            got = f"a tile {score.type}"
        raise KernelSyntaxError(
            f"score_mod `{self.score_mod.__name__}` returned {got}; it must return the "
            f"scores, a float tile {scores.type}",
            mod_loc(self.score_mod),
            hint="return an expression of `score`, e.g. `return score + bias`; "
            "a condition belongs in mask_mod",
            code="score_mod_returns_mask",
        )

    def check_mask(self, mask: Any, q_idx: Any = None, kv_idx: Any = None) -> Any:
        """mask_mod's result must be a mask tile (a comparison of positions).

        A condition on the batch and head alone (``h < 4``, a Python bool) is spread over
        the tile of the positions, as FlexAttention broadcasts it.
        """
        assert self.mask_mod is not None
        if isinstance(mask, ops.Tile) and mask.dtype is DType.BOOL:
            return mask
        if q_idx is not None and kv_idx is not None:
            spread_mask = spread(mask, kv_idx * 0 + q_idx * 0)
            if spread_mask is not None:
                return spread_mask
        got = (
            f"a tile {mask.type}" if isinstance(mask, ops.Tile) else type(mask).__name__
        )
        raise KernelSyntaxError(
            f"mask_mod `{self.mask_mod.__name__}` returned {got}, not a mask (an i1 "
            "tile: True keeps the score)",
            mod_loc(self.mask_mod),
            hint="compare positions, e.g. `return (q_idx - kv_idx) < 256`; combine "
            "masks with & | ~",
            code="mask_mod_returns_score",
        )
