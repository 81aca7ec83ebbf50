"""Queue slots: the per-point state behind QueueAlloc / AllocTensor / EnQue / DeQue.

Every grid point has its own ``buffers`` slots per queue (a TQue lives in one core's
local memory). ``status[buffers, *batch]`` says whether each slot is FREE, HELD
(allocated or dequeued by the core) or QUEUED (in the FIFO), ``seq`` gives the FIFO
order. A queue tensor value is a ``Handle``: the slot it occupies at each point, an int
when that is the same slot everywhere (the usual case).

A slot's contents keep the batch structure of what was written: a K tile loaded into a
slot at ``k[b, h, ...]`` stays ``[B, N, 1, block, D]`` rather than being copied for every
Q block. When a loop's iteration (a run of points along one batch axis) writes a slot,
the enclosing frame records the new contents for that run only, as ``Segments`` along
the axis; contents are expanded to one copy per point only when points must be
addressed one by one (slots that differ between points, gathered frames).
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
class Segments:
    """Slot contents that differ between runs of batch axis ``axis``: rows
    [start, stop) hold ``array`` (its size along the axis is stop - start, or 1)."""

    axis: int
    parts: list[tuple[int, int, np.ndarray]]

    def covering(self, first: int, stop: int) -> np.ndarray | None:
        """Rows [first, stop) if one part holds them all."""
        for start, end, array in self.parts:
            if start <= first and stop <= end:
                if array.shape[self.axis] == 1:
                    return array
                key = (slice(None),) * self.axis + (slice(first - start, stop - start),)
                return array[key]
        return None

    def expand(self, bshape: tuple[int, ...]) -> np.ndarray:
        pieces = []
        for start, stop, array in self.parts:
            shape = list(bshape) + list(array.shape[len(bshape) :])
            shape[self.axis] = stop - start
            pieces.append(np.broadcast_to(array, tuple(shape)))
        return np.concatenate(pieces, axis=self.axis)


Contents = np.ndarray | Segments


def _splice(
    old: Contents, axis: int, first: int, stop: int, new: Contents, extent: int
) -> Segments:
    """``old`` with rows [first, stop) along ``axis`` replaced by ``new``."""
    if isinstance(old, np.ndarray):
        old = Segments(axis, [(0, extent, old)])
    parts: list[tuple[int, int, np.ndarray]] = []
    for start, end, array in old.parts:
        for lo, hi in ((start, min(end, first)), (max(start, stop), end)):
            if lo < hi:
                parts.append((lo, hi, _rows(array, axis, lo - start, hi - start)))
    if isinstance(new, Segments):
        parts += [(first + s, first + e, a) for s, e, a in new.parts]
    else:
        parts.append((first, stop, new))
    return Segments(axis, sorted(parts, key=lambda p: p[0]))


def _rows(array: np.ndarray, axis: int, first: int, stop: int) -> np.ndarray:
    if array.shape[axis] == 1:
        return array
    return array[(slice(None),) * axis + (slice(first, stop),)]


@dataclass
class QueueState:
    """Slots of one queue for every point of one frame (batch ``bshape``)."""

    bshape: tuple[int, ...]
    status: np.ndarray
    """[buffers, *batch] FREE / HELD / QUEUED."""
    seq: np.ndarray
    """[buffers, *batch] enqueue order of QUEUED slots (FIFO)."""
    contents: list[Contents]
    """Per slot: ``[*batch or 1, *tile]`` data, or Segments of it."""
    own: list[bool]
    """Per slot: the contents belong to this frame (may be overwritten in place)."""
    taken: list[Contents] = field(default_factory=list)
    """Per slot: the contents as inherited from the parent frame (to see changes)."""

    @staticmethod
    def fresh(ref: QueueRef, bshape: tuple[int, ...]) -> QueueState:
        lead = (ref.buffers, *bshape)
        nan = nan_of(ref.dtype)
        shape = (1,) * len(bshape) + ref.tile_shape
        contents: list[Contents] = [
            np.full(shape, nan, np_dtype(ref.dtype)) for _ in range(ref.buffers)
        ]
        return QueueState(
            bshape,
            np.full(lead, FREE, np.int8),
            np.zeros(lead, np.int64),
            contents,
            [True] * ref.buffers,
        )

    # -- contents ----------------------------------------------------------------

    def value(self, slot: int) -> np.ndarray:
        """Contents of ``slot`` as an array (Segments are expanded and kept expanded)."""
        found = self.contents[slot]
        if isinstance(found, Segments):
            found = self.contents[slot] = found.expand(self.bshape)
            self.own[slot] = True
        return found

    def read(self, slot: int | np.ndarray) -> np.ndarray:
        """What a queue tensor holds at every point."""
        if isinstance(slot, int):
            return self.value(slot)
        tile = self.value(0).shape[len(self.bshape) :]
        out = np.empty(self.bshape + tile, self.value(0).dtype)
        for s in range(len(self.contents)):
            mask = slot == s
            if mask.any():
                out[mask] = np.broadcast_to(self.value(s), out.shape)[mask]
        return out

    def write(self, slot: int | np.ndarray, data: np.ndarray) -> None:
        """Store ``data`` (owned by the caller, given away) in ``slot`` at every point."""
        if isinstance(slot, int):
            self.contents[slot] = data
            self.own[slot] = True
            return
        for s in range(len(self.contents)):
            mask = slot == s
            if mask.any():
                full = self._expanded(s)
                full[mask] = np.broadcast_to(data, full.shape)[mask]

    def poison(self, slot: int | np.ndarray, fill: Any) -> None:
        """Fill ``slot`` with ``fill`` (NaN): in place, so aliases of it see it too."""
        if isinstance(slot, int):
            found = self.contents[slot]
            if (
                self.own[slot]
                and isinstance(found, np.ndarray)
                and found.flags.writeable
            ):
                found[...] = fill
            else:
                sample = found.parts[0][2] if isinstance(found, Segments) else found
                shape = (1,) * len(self.bshape) + sample.shape[len(self.bshape) :]
                self.write(slot, np.full(shape, fill, sample.dtype))
            return
        for s in range(len(self.contents)):
            mask = slot == s
            if mask.any():
                self._expanded(s)[mask] = fill

    def _expanded(self, slot: int) -> np.ndarray:
        """Contents of ``slot`` as a writable array with one copy per point."""
        found = self.value(slot)
        full = self.bshape + found.shape[len(self.bshape) :]
        if found.shape != full or not self.own[slot] or not found.flags.writeable:
            found = np.array(np.broadcast_to(found, full))
            self.contents[slot] = found
            self.own[slot] = True
        return found

    # -- frames ------------------------------------------------------------------

    def select(self, tr: Transform, bshape: tuple[int, ...]) -> QueueState:
        """This state as seen by a child frame of batch shape ``bshape``."""
        if tr is None:
            return self
        if isinstance(tr, Fork):
            status = _grow(tr.take(self.status, 1), bshape)
            seq = _grow(tr.take(self.seq, 1), bshape)
            contents = [tr.take(self.value(s)) for s in range(len(self.contents))]
        else:
            status, seq = tr.take(self.status, 1), tr.take(self.seq, 1)
            contents = [self._take(s, tr) for s in range(len(self.contents))]
        return QueueState(
            bshape, status, seq, list(contents), [False] * len(contents), list(contents)
        )

    def _take(self, slot: int, tr: Along | Flat) -> np.ndarray:
        found = self.contents[slot]
        if isinstance(found, Segments) and isinstance(tr, Along):
            if found.axis == tr.axis and isinstance(tr.sel, slice):
                part = found.covering(tr.sel.start, tr.sel.stop)
                if part is not None:
                    return part
        return tr.take(self.value(slot))

    def write_back(self, parent: QueueState, tr: Along | Flat) -> None:
        """Give the parent what this child changed (its points only)."""
        if isinstance(tr, Flat) or isinstance(tr.sel, np.ndarray):
            tr.put(parent.status, self.status, 1)
            tr.put(parent.seq, self.seq, 1)
        for s, contents in enumerate(self.contents):
            if contents is self.taken[s]:
                continue
            if isinstance(tr, Along) and isinstance(tr.sel, slice):
                extent = parent.bshape[tr.axis]
                before = parent.contents[s]
                if isinstance(before, Segments) and before.axis != tr.axis:
                    before = before.expand(parent.bshape)
                if isinstance(contents, Segments) and contents.axis != tr.axis:
                    contents = contents.expand(self.bshape)
                parent.contents[s] = _splice(
                    before,
                    tr.axis,
                    tr.sel.start,
                    tr.sel.stop,
                    contents,
                    extent,
                )
                parent.own[s] = False
                continue
            value = (
                contents.expand(self.bshape)
                if isinstance(contents, Segments)
                else contents
            )
            tr.put(
                parent._expanded(s),
                np.broadcast_to(value, self.bshape + value.shape[len(self.bshape) :]),
            )


def _grow(a: np.ndarray, bshape: tuple[int, ...]) -> np.ndarray:
    return np.array(
        np.broadcast_to(a, a.shape[:1] + bshape + a.shape[1 + len(bshape) :])
    )


def _slot_index(arr: np.ndarray, slot: np.ndarray) -> np.ndarray:
    return slot.reshape((1,) + slot.shape + (1,) * (arr.ndim - 1 - slot.ndim))


def pick_slot(arr: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """``arr[slot[p], p]`` for every point p (arr is [buffers, *batch, ...])."""
    return np.take_along_axis(arr, _slot_index(arr, slot), axis=0)[0]


def put_slot(arr: np.ndarray, slot: np.ndarray, value: Any) -> None:
    """``arr[slot[p], p] = value[p]`` for every point p."""
    value = np.broadcast_to(value, arr.shape[1:])[None]
    np.put_along_axis(arr, _slot_index(arr, slot), value, axis=0)
