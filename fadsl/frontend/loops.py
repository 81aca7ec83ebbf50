"""Loop constructors for kernel ``for`` statements: fd.grid, fd.pipelined, range.

They are markers: the AST walker recognises them as the iterable of a ``for`` and
builds Grid / For ops; calling them anywhere else is an error.
"""

from __future__ import annotations

from typing import Any


def grid(*extents: Any) -> Any:
    """Parallel loop over AI cores: ``for b, h, i in fd.grid(B, N, fd.cdiv(Sq, bq)):``.

    Each point of the grid is one task; tasks are spread over the cores. A kernel has
    exactly one grid loop, outermost.
    """
    raise TypeError("fd.grid is only valid as the iterable of a `for` in a kernel")


def pipelined(*bounds: Any, stages: int = 2) -> Any:
    """Sequential loop whose loads are multi-buffered: ``for j in fd.pipelined(n, stages=2)``.

    ``stages=2`` double-buffers: the loads of iteration j+1 overlap the compute of j.
    Takes ``(stop)`` or ``(start, stop)`` like range.
    """
    raise TypeError("fd.pipelined is only valid as the iterable of a `for` in a kernel")


def serial(*bounds: Any) -> Any:
    """Sequential loop without multi-buffering (same as Python's range in a kernel)."""
    raise TypeError("fd.serial is only valid as the iterable of a `for` in a kernel")
