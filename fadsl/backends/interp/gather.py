"""Impl of Gather: elements of a loaded window picked by an index tile, range-checked."""

from __future__ import annotations

import numpy as np

from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.impls import impl
from fadsl.errors import ExecutionError
from fadsl.ir.expr_print import to_text
from fadsl.ir.nodes import Gather


def _per_point(fr: Frame, x: int | np.ndarray, rank: int) -> int | np.ndarray:
    """A per-point integer shaped [*batch, 1, ...] to broadcast against a tile."""
    if isinstance(x, np.ndarray):
        return x.reshape(x.shape + (1,) * rank)
    return x


def _fail(op: Gather, fr: Frame, bad: np.ndarray | bool, what: str) -> None:
    raise ExecutionError(
        f"a mod reads `{op.src}` at {what}, outside [0, {to_text(op.extent)}), at "
        f"{fr.describe(bad)}",
        op.loc,
        hint=f"size `{op.src}` for every index the mod computes at valid positions "
        "(q_idx < Sq, kv_idx < Skv), or clamp the index with fd.minimum / fd.maximum",
        code="gather_index_out_of_range",
    )


def _first(bad: np.ndarray) -> tuple[int, ...]:
    bad = np.asarray(bad)
    return tuple(int(x) for x in np.unravel_index(int(np.argmax(bad)), bad.shape))


def _pick(x: int | np.ndarray, at: tuple[int, ...]) -> int:
    if not isinstance(x, np.ndarray):
        return int(x)
    return int(x[tuple(p if x.shape[a] > 1 else 0 for a, p in enumerate(at))])


def _check(op: Gather, fr: Frame, index: np.ndarray) -> None:
    if op.proven:
        return
    extent = fr.int_scalar(op.extent, op.loc, "gather extent", collapse=False)
    if op.lo is not None and op.hi is not None:
        lo = fr.int_scalar(op.lo, op.loc, "gather lo", collapse=False)
        hi = fr.int_scalar(op.hi, op.loc, "gather hi", collapse=False)
        bad = (np.asarray(lo) < 0) | (np.asarray(hi) >= extent)
        if np.any(bad):
            at = _first(bad)
            span = f"indices {_pick(lo, at)} .. {_pick(hi, at)}"
            _fail(op, fr, bad, f"{span} (`{op.src}` has {_pick(extent, at)})")
        return
    rank = index.ndim - fr.k
    ext = _per_point(fr, extent, rank)
    bad_el = (index < 0) | (index >= ext)
    if bad_el.any():
        bad = bad_el.reshape(bad_el.shape[: fr.k] + (-1,)).any(axis=-1)
        _fail(op, fr, bad, f"index {int(index[bad_el].flat[0])}")


@impl(Gather)
def _gather(op: Gather, fr: Frame) -> np.ndarray:
    table = np.asarray(fr.val(op.table))
    index = np.asarray(fr.val(op.index)).astype(np.int64)
    _check(op, fr, index)
    k, width = fr.k, table.shape[-1]
    rank = index.ndim - k
    base = _per_point(fr, fr.int_scalar(op.base, op.loc, "gather base"), rank)
    rel = np.clip(index - base, 0, width - 1)
    batch = np.broadcast_shapes(table.shape[:k], rel.shape[:k])
    tab = np.broadcast_to(table, batch + (width,)).reshape(-1, width)
    flat = np.broadcast_to(rel, batch + rel.shape[k:]).reshape(tab.shape[0], -1)
    out = np.take_along_axis(tab, flat, axis=1)
    return out.reshape(batch + rel.shape[k:])
