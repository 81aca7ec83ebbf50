"""The CPU implementation: fadsl's numpy interpreter, through the Python API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def interpret(
    kernel: Any,
    consts: Mapping[str, Any],
    dtype: Any,
    arrays: Mapping[str, Any],
    shape: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The kernel's outputs by name for these inputs (``fd.interpret``); ``shape``:
    the symbols when some are fixed at registration (``op(..., shape=)``)."""
    import fadsl

    return dict(
        fadsl.interpret(kernel, shape=shape, consts=dict(consts), dtype=dtype, **arrays)
    )
