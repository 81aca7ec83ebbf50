"""The backward's block mask from the forward's, in torch ops (so that autograd's
backward traces under ``torch.compile``): the forward's ``kv_`` lists (KV blocks per Q
block) become the ``q_`` lists (Q blocks per KV block) that ``fd.attention_backward``
reads, as ``fadsl.frontend.block_mask.transposed_lists`` does in numpy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

BACKWARD = ("q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices")


def transposed_lists(forward: Mapping[str, Any], bq: int, sq: int) -> dict[str, Any]:
    """The ``q_`` lists (i32 tensors) of a forward's ``kv_`` lists; a block with a Q
    tail is never full (the kernel masks tails in partial blocks)."""
    import torch

    part = _blocks(forward["kv_num_blocks"], forward["kv_indices"])
    full = _blocks(forward["full_kv_num_blocks"], forward["full_kv_indices"])
    nq = part.shape[-2]
    starts = torch.arange(nq, device=part.device) * bq
    whole = (torch.clamp(sq - starts, max=bq) == bq)[:, None]
    t_part = (part | (full & ~whole)).transpose(-1, -2)
    t_full = (full & whole).transpose(-1, -2)
    return dict(zip(BACKWARD, _lists(t_part) + _lists(t_full)))


def _blocks(num: Any, idx: Any) -> Any:
    """[.., rows, cols] bool: the blocks a (count, indices) pair lists."""
    import torch

    cols = idx.shape[-1]
    used = torch.arange(cols, device=idx.device) < num[..., None]
    where = torch.where(used, idx, 0).long()
    counts = torch.zeros(idx.shape, dtype=torch.int32, device=idx.device)
    return counts.scatter_add(-1, where, used.to(torch.int32)) > 0


def _lists(blocks: Any) -> tuple[Any, Any]:
    """FlexAttention's form: per row a count and the ascending indices, 0-padded."""
    import torch

    num = blocks.sum(-1).to(torch.int32)
    order = torch.argsort((~blocks).to(torch.int8), dim=-1, stable=True)
    cols = torch.arange(blocks.shape[-1], device=blocks.device)
    idx = torch.where(cols < num[..., None], order, 0).to(torch.int32)
    return num, idx.contiguous()
