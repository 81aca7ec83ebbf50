"""The CPU implementation: fadsl's numpy interpreter, through the Python API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def interpret(
    kernel: Any, consts: Mapping[str, Any], dtype: Any, arrays: Mapping[str, Any]
) -> dict[str, Any]:
    """The kernel's outputs by name for these inputs (``fd.interpret``)."""
    import fadsl

    return dict(fadsl.interpret(kernel, consts=dict(consts), dtype=dtype, **arrays))
