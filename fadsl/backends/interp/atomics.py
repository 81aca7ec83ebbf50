"""Impl of AtomicAdd: outputs summed over grid points in f32, rounded once at the end.

Every output that an ``atomic_add`` writes gets an f32 accumulator of its shape,
zero before the grid (``accumulators``); each ``atomic_add`` adds the tile of every
point into it with ``np.add.at``, so points that add to the same positions all count
(an ordinary store keeps the last writer). After the grid ``finish`` rounds each sum to
its output's dtype. Within one thread the points add in batch order; the chunks of a
split grid (``threads.py``) add under a lock, in the order they get there, which changes
only the rounding of f32 sums that several chunks share.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np

from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.impls import impl
from fadsl.backends.interp.memory import GmBlock, plan_block, transposed, in_block_order
from fadsl.ir.nodes import AtomicAdd, Kernel, Op, ScatterAdd, viewed
from fadsl.ir.types import TensorType
from fadsl.numerics import np_dtype

LOCK = threading.Lock()
"""Held while a sum is added to (``scatter.py`` adds under it too)."""


def atomic_targets(kernel: Kernel) -> set[str]:
    """Names of the outputs some ``atomic_add`` (or ``ScatterAdd``) of ``kernel``
    writes."""
    atomic = (AtomicAdd, ScatterAdd)
    return {op.dst for op in _walk(kernel.body) if isinstance(op, atomic)}


def _walk(ops: tuple[Op, ...]) -> Iterator[Op]:
    for op in ops:
        yield op
        yield from _walk(getattr(op, "body", ()))


def accumulators(kernel: Kernel, gm: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A zero f32 array per atomic target, shaped like the output."""
    return {
        name: np.zeros(gm[name].shape, np.float32) for name in atomic_targets(kernel)
    }


def finish(
    kernel: Kernel, gm: dict[str, np.ndarray], sums: dict[str, np.ndarray]
) -> None:
    """Round every sum to its output's dtype (to nearest even) into the output."""
    for p in kernel.params:
        if p.name in sums:
            assert isinstance(p.type, TensorType)
            gm[p.name][...] = sums[p.name].astype(np_dtype(p.type.dtype))


@impl(AtomicAdd)
def _atomic_add(op: AtomicAdd, fr: Frame) -> None:
    p, target = fr.machine.params[op.dst], fr.machine.sums[op.dst]
    if op.view is not None:  # the same elements seen with some dims merged
        p = viewed(p, op.view)
        target = target.reshape(
            tuple(fr.static_int(d, op.loc, "a view dimension") for d in op.view)
        )
    block = plan_block(fr, p, op.index, "write", op.loc, target.shape)
    value = np.asarray(fr.val(op.value), np.float32)
    with LOCK:
        _add(target, block, value)


def _add(arr: np.ndarray, block: GmBlock, value: np.ndarray) -> None:
    """arr[block] += value of every point (the inverse of ``memory._gather``)."""
    value = in_block_order(block, value)
    lead = block.k + len(block.vsizes)
    target = transposed(arr, block.order)
    if not block.batched:
        rows = value.reshape((-1,) + value.shape[block.k :])
        for row in rows:  # every point adds to the same block, in batch order
            target[block.index] += row
        return
    arrays = [ix for ix in block.index if isinstance(ix, np.ndarray)]
    positions = np.broadcast_shapes(value.shape[:lead], *(a.shape for a in arrays))
    value = np.broadcast_to(value, positions + value.shape[lead:])
    valid = None if block.valid is None else np.broadcast_to(block.valid, positions)
    if valid is not None:
        value = value[valid]
    index = tuple(_spread(ix, positions, valid) for ix in block.index)
    np.add.at(target, index, value)


def _spread(ix: object, positions: tuple[int, ...], valid: np.ndarray | None) -> object:
    """An index array broadcast to every point (and kept where ``valid``)."""
    if not isinstance(ix, np.ndarray):
        return ix
    full = np.broadcast_to(ix, positions)
    return full if valid is None else full[valid]


__all__ = ["atomic_targets", "accumulators", "finish"]
