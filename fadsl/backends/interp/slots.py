"""Queue slots: the per-point state behind QueueAlloc / AllocTensor / EnQue / DeQue.

Every grid point has its own ``buffers`` slots per queue (a TQue lives in one core's
local memory): ``mem[buffers, *batch, *tile]`` holds their data, ``status`` whether
each slot is FREE, HELD (allocated or dequeued by the core) or QUEUED (in the FIFO),
``seq`` the FIFO order. A queue tensor value is a ``Handle``: the slot it occupies at
each point, an int when that is the same slot everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fadsl.backends.interp.batch import Along, Flat, Fork, Transform
from fadsl.backends.interp.storage import nan_of
from fadsl.ir.types import DType
from fadsl.numerics import np_dtype

FREE, HELD, QUEUED = 0, 1, 2
"""Slot states: free, held by the core (allocated or dequeued), waiting in the FIFO."""


@dataclass(frozen=True)
class QueueRef:
    """The runtime identity of one executed ``QueueAlloc``."""

    name: str
    dtype: DType
    tile_shape: tuple[int, ...]
    buffers: int
    key: object = field(default_factory=object, compare=False)


@dataclass(frozen=True)
class Handle:
    """A queue tensor: the slot it occupies at each point (int: the same everywhere)."""

    queue: QueueRef
    slot: int | np.ndarray


@dataclass
class QueueState:
    """Slots of one queue for every point of one frame."""

    mem: np.ndarray
    """[buffers, *batch, *tile] slot memory."""
    status: np.ndarray
    """[buffers, *batch] FREE / HELD / QUEUED."""
    seq: np.ndarray
    """[buffers, *batch] enqueue order of QUEUED slots (FIFO)."""

    @staticmethod
    def fresh(ref: QueueRef, bshape: tuple[int, ...]) -> QueueState:
        lead = (ref.buffers, *bshape)
        mem = np.full(lead + ref.tile_shape, nan_of(ref.dtype), np_dtype(ref.dtype))
        status = np.full(lead, FREE, np.int8)
        return QueueState(mem, status, np.zeros(lead, np.int64))

    def select(self, tr: Transform, bshape: tuple[int, ...]) -> QueueState:
        """This state as seen by a child frame of batch shape ``bshape``."""
        if tr is None:
            return self
        if isinstance(tr, Fork):

            def grow(a: np.ndarray) -> np.ndarray:
                a = tr.take(a, 1)
                return np.array(
                    np.broadcast_to(a, a.shape[:1] + bshape + a.shape[1 + tr.k :])
                )

            return QueueState(grow(self.mem), grow(self.status), grow(self.seq))
        return QueueState(
            tr.take(self.mem, 1), tr.take(self.status, 1), tr.take(self.seq, 1)
        )

    def write_back(self, parent: QueueState, tr: Along | Flat) -> None:
        tr.put(parent.mem, self.mem, 1)
        tr.put(parent.status, self.status, 1)
        tr.put(parent.seq, self.seq, 1)


def _slot_index(arr: np.ndarray, slot: np.ndarray) -> np.ndarray:
    return slot.reshape((1,) + slot.shape + (1,) * (arr.ndim - 1 - slot.ndim))


def pick_slot(arr: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """``arr[slot[p], p]`` for every point p (arr is [buffers, *batch, ...])."""
    return np.take_along_axis(arr, _slot_index(arr, slot), axis=0)[0]


def put_slot(arr: np.ndarray, slot: np.ndarray, value: Any) -> None:
    """``arr[slot[p], p] = value[p]`` for every point p."""
    value = np.broadcast_to(value, arr.shape[1:])[None]
    np.put_along_axis(arr, _slot_index(arr, slot), value, axis=0)
