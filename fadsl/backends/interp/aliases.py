"""The interpreter's in-place outputs (``fadsl/ir/aliases.py``): each starts as a
writable copy of the input it aliases."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fadsl.errors import ExecutionError
from fadsl.ir.nodes import Param


def aliased_start(
    p: Param,
    inputs: Mapping[str, np.ndarray],
    shape: tuple[int, ...],
    dtype: np.dtype,  # type: ignore[type-arg]
) -> np.ndarray:
    """The first contents of in-place output ``p``: its input's data, copied."""
    assert p.alias is not None
    arr = inputs.get(p.alias)
    if not isinstance(arr, np.ndarray) or arr.shape != shape or arr.dtype != dtype:
        raise ExecutionError(
            f"in-place output `{p.name}` starts as input `{p.alias}`, which must be "
            f"{dtype}{list(shape)}",
            p.loc,
        )
    return np.array(arr, copy=True)
