"""A ``BlockMask`` as a kernel's inputs, after checking it fits the kernel.

A forward kernel with a mask_mod reads ``kv_num_blocks`` / ``kv_indices`` and the
``full_`` pair; its backward reads the transposed ``q_`` lists. Both come from one
BlockMask, which must have been made for the kernel's ``block_q`` / ``block_kv``
(E106) and its shape: Sq and Skv equal, B and H equal or broadcast (E107). That the
lists agree with the kernel's masks (causal, window, its mask_mod) is checked with the
other index inputs (``attention_checks``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from fadsl.errors import Loc, UsageError
from fadsl.frontend.block_mask import BlockMask


def block_mask_inputs(
    bm: Any,
    kdef: Any,
    shape: Mapping[str, int],
    consts: Mapping[str, Any],
    loc: Loc | None,
) -> dict[str, np.ndarray]:
    """The block-mask inputs of ``kdef`` (a KernelDef) bound at ``shape``."""
    names = tuple(getattr(kdef, "derived", ()) or ())
    if not isinstance(bm, BlockMask):
        raise UsageError(
            f"block_mask= takes what fd.create_block_mask returns, not a "
            f"{type(bm).__name__}",
            loc,
            hint="bm = fd.create_block_mask(mask_mod, B, H, Sq, Skv, block_q=..., "
            "block_kv=...)",
            code="block_mask_unfit",
        )
    if not names:
        raise UsageError(
            f"kernel `{getattr(kdef, 'name', kdef)}` reads no block mask, so "
            "block_mask= has nothing to give it",
            loc,
            hint="a kernel of fd.attention(..., mask_mod=...) on fixed-length "
            "sequences (no TND, no paged cache) reads one; leave block_mask= out",
            code="block_mask_unfit",
        )
    _check_blocks(bm, kdef.name, consts, loc)
    _check_shape(bm, kdef.name, shape, loc)
    b, n = shape["B"], shape["N"]
    return {
        name: np.ascontiguousarray(
            np.broadcast_to(bm.arrays[name], (b, n) + bm.arrays[name].shape[2:])
        )
        for name in names
    }


def _made(bm: BlockMask) -> tuple[str, ...]:
    return (f"the BlockMask was made at {bm.loc}",) if bm.loc is not None else ()


def _check_blocks(
    bm: BlockMask, kernel: str, consts: Mapping[str, Any], loc: Loc | None
) -> None:
    want = (int(consts["block_q"]), int(consts["block_kv"]))
    if bm.block_size == want:
        return
    raise UsageError(
        f"the BlockMask was made for blocks of block_q={bm.block_size[0]}, "
        f"block_kv={bm.block_size[1]}, but kernel `{kernel}` runs with "
        f"block_q={want[0]}, block_kv={want[1]}",
        loc,
        notes=_made(bm),
        hint=f"make it with fd.create_block_mask(..., block_q={want[0]}, "
        f"block_kv={want[1]}), or run the kernel with the BlockMask's blocks "
        f"(consts=dict(block_q={bm.block_size[0]}, block_kv={bm.block_size[1]}), "
        "--set)",
        code="block_mask_block_size",
    )


def _check_shape(
    bm: BlockMask, kernel: str, shape: Mapping[str, int], loc: Loc | None
) -> None:
    b, h, sq, skv = bm.shape
    want = (shape["B"], shape["N"], shape["Sq"], shape["Skv"])
    fits = (b in (None, want[0]), h in (None, want[1]), (sq, skv) == want[2:])
    if all(fits):
        return
    raise UsageError(
        f"the BlockMask was made for B={b}, H={h}, Sq={sq}, Skv={skv}, but kernel "
        f"`{kernel}` runs with B={want[0]}, N={want[1]}, Sq={want[2]}, Skv={want[3]}",
        loc,
        notes=_made(bm),
        hint=f"make it for this shape: fd.create_block_mask(mask_mod, {want[0]}, "
        f"{want[1]}, {want[2]}, {want[3]}, ...) (B or H None: one mask for every "
        "batch or head)",
        code="block_mask_unfit",
    )


def mask_mod_of(
    block_mask: Any, mask_mod: Callable[..., Any] | None, loc: Loc
) -> Callable[..., Any] | None:
    """The variant's mask_mod: ``mask_mod``, or the BlockMask's when only it is given
    (with both, the BlockMask's lists must agree with ``mask_mod``, as every block
    mask a kernel reads is checked against its masks)."""
    if block_mask is None:
        return mask_mod
    if not isinstance(block_mask, BlockMask):
        block_mask_inputs(block_mask, None, {}, {}, loc)  # raises: not a BlockMask
    if mask_mod is not None:  # its lists are checked against this mask_mod
        return mask_mod
    return block_mask.mask_mod


def bind_block_mask(kernel: Any, block_mask: BlockMask | None) -> None:
    """The kernel's block sizes and default shape become the BlockMask's; its runs
    read the BlockMask instead of computing one from the masks."""
    kernel.block_mask = block_mask
    if block_mask is None:
        return
    kernel.fixed_consts["block_q"], kernel.fixed_consts["block_kv"] = (
        block_mask.block_size
    )
    b, h, sq, skv = block_mask.shape
    kernel.default_shape.update(Sq=sq, Skv=skv)
    if b is not None:
        kernel.default_shape["B"] = b
    if h is not None:
        kernel.default_shape["N"] = h
        nkv = kernel.default_shape.get("Nkv")
        if nkv is not None and h % nkv:
            kernel.default_shape["Nkv"] = h
