"""``fd.create_block_mask``: FlexAttention's ``BlockMask``, made once and reused.

``create_block_mask(mask_mod, B, H, Sq, Skv, block_q=128, block_kv=128)`` evaluates a
mask_mod on every (batch, head, q_idx, kv_idx) and keeps, per block row, the blocks
partly kept and wholly kept in FlexAttention's form (``kv_num_blocks`` / ``kv_indices``
and the ``full_`` pair), plus the transposed lists the backward's KV-major loop reads
(``q_num_blocks`` / ``q_indices`` and their ``full_`` pair). ``B`` or ``H`` None is one
mask for every batch or head (evaluated at 0, as FlexAttention does). ``and_masks`` /
``or_masks`` combine mask_mods. Kernels take a BlockMask through ``fd.attention(...,
block_mask=)``, ``fd.interpret(..., block_mask=)``, ``fd.sim`` and fadsl.torch operators
(``block_mask_inputs`` turns it into the kernel's inputs, after checking that it was
made for the kernel's block sizes and shape).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fadsl.errors import Loc, UsageError
from fadsl.frontend.attention_inputs import (
    block_lists,
    blocks_of_lists,
    classify_blocks,
    transpose_blocks,
)
from fadsl.frontend.source import user_frame_loc

MaskMod = Callable[..., Any]
FORWARD = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices")
BACKWARD = ("q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices")


@dataclass(frozen=True, eq=False)
class BlockMask:
    """The blocks a mask_mod keeps, for one shape and one pair of block sizes.

    ``shape`` is (B, H, Sq, Skv) with B or H None when made for every batch or head;
    ``block_size`` is (block_q, block_kv). The eight arrays are i32, [B, H, rows] and
    [B, H, rows, cols] (B and H 1 when broadcast), as FlexAttention's BlockMask."""

    mask_mod: MaskMod
    shape: tuple[int | None, int | None, int, int]
    block_size: tuple[int, int]
    arrays: Mapping[str, np.ndarray]
    loc: Loc | None

    def __getattr__(self, name: str) -> np.ndarray:
        if name in FORWARD + BACKWARD:
            return self.arrays[name]
        raise AttributeError(f"'BlockMask' object has no attribute {name!r}")

    def sparsity(self) -> float:
        """Percent of the (Q block, KV block) pairs the kernel skips."""
        counts = self.arrays["kv_num_blocks"] + self.arrays["full_kv_num_blocks"]
        total = counts.size * self.arrays["kv_indices"].shape[-1]
        return 100.0 * (1.0 - float(counts.sum()) / total)

    def __repr__(self) -> str:
        b, h, sq, skv = self.shape
        return (
            f"BlockMask(shape=({b}, {h}, {sq}, {skv}), block_size={self.block_size}, "
            f"sparsity={self.sparsity():.2f}%, mask_mod={self.mask_mod.__name__})"
        )


def create_block_mask(
    mask_mod: MaskMod,
    B: int | None,
    H: int | None,
    Sq: int,
    Skv: int,
    *,
    block_q: int = 128,
    block_kv: int = 128,
    inputs: Mapping[str, Any] | None = None,
) -> BlockMask:
    """The BlockMask of ``mask_mod`` for sequences of Sq queries and Skv keys.

    ``inputs`` gives the arrays of the ``fd.tensor`` objects the mod reads (by name).
    A block with a KV tail is never full (the kernel masks tails in partial blocks)."""
    loc = user_frame_loc()
    from fadsl.frontend.attention_args import mod

    fn = mod(mask_mod, 4, "mask_mod", loc or Loc("<unknown>", 1))
    sizes = [_size(v, n, loc, n in "BH") for n, v in (("B", B), ("H", H))]
    sq, skv = _size(Sq, "Sq", loc, False), _size(Skv, "Skv", loc, False)
    bq, bk = _size(block_q, "block_q", loc, False), _size(
        block_kv, "block_kv", loc, False
    )
    tensors = _tensors(fn, inputs or {}, loc)
    part, full = _maps(fn, sizes[0] or 1, sizes[1] or 1, sq, skv, bq, bk, tensors)
    arrays = dict(zip(FORWARD, block_lists(part) + block_lists(full)))
    tpart, tfull = transpose_blocks(part, full, bq, sq)
    arrays.update(zip(BACKWARD, block_lists(tpart) + block_lists(tfull)))
    return BlockMask(fn, (sizes[0], sizes[1], sq, skv), (bq, bk), arrays, loc)


def transposed_lists(
    forward: Mapping[str, np.ndarray], bq: int, sq: int
) -> dict[str, np.ndarray]:
    """The backward's ``q_`` lists from a forward's ``kv_`` lists (by name)."""
    part = blocks_of_lists(forward["kv_num_blocks"], forward["kv_indices"])
    full = blocks_of_lists(forward["full_kv_num_blocks"], forward["full_kv_indices"])
    tpart, tfull = transpose_blocks(part, full, bq, sq)
    return dict(zip(BACKWARD, block_lists(tpart) + block_lists(tfull)))


def _size(value: Any, name: str, loc: Loc | None, optional: bool) -> Any:
    if optional and value is None:
        return None
    if (
        isinstance(value, (int, np.integer))
        and not isinstance(value, bool)
        and value > 0
    ):
        return int(value)
    raise UsageError(
        f"fd.create_block_mask: {name}={value!r} is not a positive int"
        + (" (or None: every one)" if optional else ""),
        loc,
        hint="call fd.create_block_mask(mask_mod, B, H, Sq, Skv, block_q=..., "
        "block_kv=...) with the kernel's sizes",
        code="shape_not_positive",
    )


def _tensors(fn: MaskMod, given: Mapping[str, Any], loc: Loc | None) -> dict:
    from fadsl.frontend.mod_tensors import find_tensors

    wanted = [t.name for t in find_tensors(fn)]
    missing = [n for n in wanted if n not in given]
    if missing:
        raise UsageError(
            f"fd.create_block_mask: mask_mod `{fn.__name__}` reads "
            f"{', '.join(missing)}, which inputs= does not give",
            loc,
            hint="pass its arrays by name: inputs={"
            + ", ".join(f"{n!r}: ..." for n in missing)
            + "}",
        )
    return {n: np.asarray(given[n]) for n in wanted}


def _maps(
    fn: MaskMod, nb: int, nh: int, sq: int, skv: int, bq: int, bk: int, tensors: dict
) -> tuple[np.ndarray, np.ndarray]:
    """(partial, full) [nb, nh, nq, nk] block maps of the mod."""
    from fadsl.frontend.attention_ref import mod_scalars
    from fadsl.frontend.mods import eager_tensors

    nq, nk = -(-sq // bq), -(-skv // bk)
    part = np.zeros((nb, nh, nq, nk), bool)
    full = np.zeros((nb, nh, nq, nk), bool)
    q_idx, kv_idx = np.arange(sq)[:, None], np.arange(skv)[None, :]
    shape = {"B": nb, "N": nh, "Sq": sq, "Skv": skv}
    with eager_tensors(tensors, shape):
        for b in range(nb):
            for h in range(nh):
                keep = np.asarray(fn(*mod_scalars(b, h), q_idx, kv_idx), bool)
                keep = np.broadcast_to(keep, (sq, skv))
                part[b, h], full[b, h] = classify_blocks(keep, bq, bk)
    return part, full


def and_masks(*mask_mods: MaskMod) -> MaskMod:
    """A mask_mod keeping what every one of ``mask_mods`` keeps (FlexAttention's:
    with none, everything)."""
    mods = _mods(mask_mods)

    def and_mask(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        keep = [m(b, h, q_idx, kv_idx) for m in mods] or [q_idx >= 0]
        return functools.reduce(lambda x, y: x & y, keep)

    return and_mask


def or_masks(*mask_mods: MaskMod) -> MaskMod:
    """A mask_mod keeping what any one of ``mask_mods`` keeps (FlexAttention's:
    with none, nothing)."""
    mods = _mods(mask_mods)

    def or_mask(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        keep = [m(b, h, q_idx, kv_idx) for m in mods] or [q_idx < 0]
        return functools.reduce(lambda x, y: x | y, keep)

    return or_mask


def _mods(mask_mods: tuple[MaskMod, ...]) -> tuple[MaskMod, ...]:
    from fadsl.frontend.attention_args import mod

    loc = user_frame_loc() or Loc("<unknown>", 1)
    return tuple(mod(m, 4, "mask_mod", loc) for m in mask_mods)  # type: ignore[misc]
