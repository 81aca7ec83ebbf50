"""Tensors to numpy arrays for the interpreter, and its outputs back (bf16 through
ml_dtypes, which numpy and torch share bit for bit)."""

from __future__ import annotations

from typing import Any


def to_numpy(t: Any) -> Any:
    import torch

    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def from_numpy(a: Any, dtype: str) -> Any:
    import numpy as np
    import torch

    if dtype == "bfloat16":
        bits = np.ascontiguousarray(a).view(np.int16)
        return torch.from_numpy(bits.copy()).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a).copy()).to(getattr(torch, dtype))
