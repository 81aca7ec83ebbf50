"""The rows of a shrinking loop's carried values (``control._shrinking_loop``).

Every point of such a loop starts at the same iteration and the running points are a
prefix (or a suffix) of one batch axis that only shrinks. An iteration runs on a view
of the running rows; the rows of points that stop are final. These helpers pick the
running rows and collect the final ones.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def span(running: int, rows: int, n: int, tail: bool) -> tuple[int, int]:
    """Positions of the points that were running (``rows``) and no longer are."""
    return (n - rows, n - running) if tail else (running, rows)


def prefix(x: np.ndarray, axis: int, rows: int, tail: bool = False) -> np.ndarray:
    """The last iteration's values of the points still running (its first or last
    ``rows`` along ``axis``)."""
    size = x.shape[axis]
    if size in (1, rows):
        return x
    first = size - rows if tail else 0
    return x[(slice(None),) * axis + (slice(first, first + rows),)]


def retire(
    finals: list[np.ndarray | None],
    carried: list[np.ndarray],
    axis: int,
    stopped: tuple[int, int],
    offset: int,
    bshape: tuple[int, ...],
) -> None:
    """Copy the points in ``stopped`` (positions along ``axis``) of the carried values,
    whose row 0 is position ``offset``, to ``finals``: the points that stopped."""
    first, stop = stopped
    if stop <= first:
        return
    key = (slice(None),) * axis + (slice(first, stop),)
    local = (slice(None),) * axis + (slice(first - offset, stop - offset),)
    for k, x in enumerate(carried):
        final = finals[k]
        if final is None:
            final = finals[k] = np.empty(bshape + x.shape[len(bshape) :], x.dtype)
        rows = x if x.shape[axis] == 1 else x[local]
        if not same_memory(final[key], rows):
            final[key] = rows


def adopt(
    finals: list[np.ndarray | None], carried: list[Any], bshape: tuple[int, ...]
) -> None:
    """Make the yields of an iteration that ran on every point the arrays that collect
    the final values, where nothing else holds them. Later iterations run on views of
    their running rows and mostly update them in place (``Frame.donate``): a point's
    rows are then already where ``retire`` would copy them, and the loop needs no
    second array per carried value (16 MB of fresh memory for FA2's causal ``acc`` at
    S=4096, N=8)."""
    for k in range(len(carried)):
        x = carried[k]
        if finals[k] is not None or type(x) is not np.ndarray:
            continue
        if x.base is not None or not x.flags.c_contiguous or not x.flags.writeable:
            continue
        if x.shape[: len(bshape)] != bshape or any(f is x for f in finals):
            continue
        # references: the list, the loop variable, getrefcount's argument
        if sys.getrefcount(x) <= 3:
            finals[k] = x


def same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether views ``a`` and ``b`` are the same elements of the same memory."""
    return (
        a.shape == b.shape
        and a.strides == b.strides
        and a.dtype == b.dtype
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    )
