"""Impl of LoadPages: a KV block of a paged cache that spans several pages.

Page ``i`` of the block is ``table[row..., c + i]``; its rows are gathered like the
block of a Load (``memory.plan_block``) with the page number as a point index and the
block's bound moved by ``i * P``. The table entry of a page with no row before the
bound is not read (the kernel's guard does the same), so a sequence's unused columns
may hold anything; a column or page number out of range where it is read faults.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.impls import impl
from fadsl.backends.interp.memory import _check_range, _fill, _gather, _gm, plan_block
from fadsl.backends.interp.queues import write_slot
from fadsl.ir.expr import as_expr, isym
from fadsl.ir.nodes import LoadPages, Point, Slice
from fadsl.ir.types import TensorType


@impl(LoadPages)
def _load_pages(op: LoadPages, fr: Frame) -> Any:
    p, arr = _gm(fr, op.src)
    assert isinstance(p.type, TensorType)
    rows = op.index[1]
    assert isinstance(rows, Slice) and isinstance(op.index[0], Point)
    size = fr.static_int(rows.size, op.loc, "a block size")
    page = arr.shape[1]
    op.check_whole_pages(size, page)
    fill = _fill(fr, op, p.type.dtype)
    stop = rows.stop
    bound = size if stop is None else fr.int_scalar(stop, op.loc, "a block bound")
    first = fr.int_scalar(op.index[0].at, op.loc, "a block-table column")
    parts = []
    for i in range(size // page):
        name = f"{op.result.name}.page{i}"
        fr.define(name, _page_numbers(op, fr, first + i, bound - i * page > 0))
        index = (
            Point(isym(name)),
            Slice(rows.start, as_expr(page), None if stop is None else stop - i * page),
        ) + op.index[2:]
        parts.append(_gather(arr, plan_block(fr, p, index, "read", op.loc), fill))
    batch = np.broadcast_shapes(*(x.shape[: fr.k] for x in parts))
    data = np.concatenate(
        [np.broadcast_to(x, batch + x.shape[fr.k :]) for x in parts], axis=fr.k
    )
    if op.into is not None:
        return write_slot(fr, op.into, data, op.loc)
    return data


def _page_numbers(op: LoadPages, fr: Frame, column: Any, used: Any) -> int | np.ndarray:
    """``table[row..., column]`` where the page is used, else 0 (not read)."""
    t, table = _gm(fr, op.table)
    src, _ = _gm(fr, op.src)
    if not np.any(used):
        return 0
    at = np.where(used, column, 0)
    dim = len(op.row)
    _check_range(fr, _collapse(at), t, dim, "index", "read", op.loc)
    idx = tuple(fr.int_scalar(e, op.loc, "an index") for e in op.row)
    pages = np.where(used, table[idx + (at,)].astype(np.int64), 0)
    _check_range(fr, _collapse(pages), src, 0, "page", "read", op.loc)
    return _collapse(pages)


def _collapse(x: np.ndarray) -> int | np.ndarray:
    """A number when every point agrees (or there is one), else the array."""
    x = np.asarray(x)
    if x.ndim == 0 or x.size == 1 or (x == x.flat[0]).all():
        return int(x.flat[0]) if x.size else 0
    return x
