"""fadsl's CPU runtime of the Ascend C API subset generated kernels use (C++ headers)."""

from __future__ import annotations

import os


def include_dir() -> str:
    """The folder holding kernel_operator.h and tikicpulib.h of the CPU runtime."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpu", "include")
