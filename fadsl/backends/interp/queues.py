"""Impls of the queue ops (QueueAlloc, AllocTensor, Enqueue, Dequeue, FreeTensor).

Every grid point has its own ``buffers`` slots per queue (a TQue lives in one core's
local memory). A slot is FREE, HELD (allocated, or dequeued, by the core) or QUEUED
(enqueued, waiting in the FIFO). AllocTensor takes the lowest free slot and fills it
with NaN; Load(into=t) writes the loaded block into t's slot; Enqueue appends a held
slot to the FIFO (enqueueing a plain tile copies it into a free slot); Dequeue takes the
oldest enqueued slot; FreeTensor releases a held slot and poisons it with NaN, so a use
after free reads NaN. Misuse is an ExecutionError at the op: AllocTensor or an Enqueue
of a plain tile with every slot in use, Dequeue of an empty queue, Enqueue of a tensor
that is not held, FreeTensor of a tensor that is not held.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fadsl.backends.interp.reductions import tile_shape
from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.slots import (
    FREE,
    HELD,
    QUEUED,
    Handle,
    QueueRef,
    QueueState,
    pick_slot,
    put_slot,
)
from fadsl.backends.interp.storage import nan_of
from fadsl.backends.interp.impls import impl
from fadsl.errors import ExecutionError, Loc
from fadsl.ir.nodes import AllocTensor, Dequeue, Enqueue, FreeTensor, QueueAlloc, Value

_STATE_NAMES = {FREE: "free", HELD: "held", QUEUED: "enqueued"}


def _ref(fr: Frame, v: Value) -> QueueRef:
    ref = fr.raw(v)
    assert isinstance(ref, QueueRef), f"%{v.name} is not a queue"
    return ref


def _collapse(slot: np.ndarray) -> int | np.ndarray:
    """A per-point slot index, as an int when every point uses the same slot."""
    if slot.size and (slot == slot.flat[0]).all():
        return int(slot.flat[0])
    return slot


def _status(state: QueueState, slot: int | np.ndarray) -> np.ndarray:
    if isinstance(slot, int):
        return state.status[slot]
    return pick_slot(state.status, slot)


def _put(arr: np.ndarray, slot: int | np.ndarray, value: Any) -> None:
    if isinstance(slot, int):
        arr[slot] = value
    else:
        put_slot(arr, slot, value)


def _free_slot(fr: Frame, ref: QueueRef, state: QueueState, what: str, loc: Loc) -> Any:
    free = state.status == FREE
    has_free = free.any(axis=0)
    if not has_free.all():
        pos = np.unravel_index(int(np.argmin(has_free)), has_free.shape)
        slots = state.status[(slice(None),) + pos]
        held, queued = int((slots == HELD).sum()), int((slots == QUEUED).sum())
        raise ExecutionError(
            f"{what} on queue `%{ref.name}`: all {ref.buffers} slot(s) are in use "
            f"({held} held, {queued} enqueued) at {fr.describe(~has_free)}",
            loc,
            hint="free a tensor (FreeTensor) before taking another, or give the queue "
            "more buffers",
        )
    return _collapse(free.argmax(axis=0))


def _require_held(
    fr: Frame, ref: QueueRef, h: Any, name: str, what: str, loc: Loc
) -> QueueState:
    if not isinstance(h, Handle) or h.queue.key is not ref.key:
        raise ExecutionError(
            f"{what}: `%{name}` is not a tensor of queue `%{ref.name}`",
            loc,
            hint="only tensors from this queue's AllocTensor or DeQue can be passed",
        )
    state = fr.queue(ref)
    status = _status(state, h.slot)
    stale = status != HELD
    if not np.any(stale):  # the common case, without a batch-shaped copy
        return state
    bad = np.broadcast_to(stale, fr.bshape)
    if bad.any():
        found = int(np.broadcast_to(status, fr.bshape).flat[int(np.argmax(bad))])
        raise ExecutionError(
            f"{what}: tensor `%{name}` is not held (its slot of queue `%{ref.name}` is "
            f"{_STATE_NAMES[found]}) at {fr.describe(bad)}",
            loc,
            hint="a tensor is held from AllocTensor or DeQue until EnQue or FreeTensor",
        )
    return state


def _owned(data: np.ndarray) -> np.ndarray:
    """``data`` itself if nothing else can see it (a fresh gather), else a copy."""
    if data.flags.owndata and data.flags.writeable:
        return data
    return np.array(data)


def write_slot(fr: Frame, into: Value, data: np.ndarray, loc: Loc) -> Handle:
    """Load(into=t): store ``data`` in t's slot; the loaded value is that slot."""
    h = fr.raw(into)
    if not isinstance(h, Handle):
        raise ExecutionError(
            f"load into `%{into.name}`, which is not a queue tensor", loc
        )
    state = _require_held(fr, h.queue, h, into.name, "load into a queue tensor", loc)
    if data.shape[fr.k :] != h.queue.tile_shape:
        raise ExecutionError(
            f"load of a {list(data.shape[fr.k:])} block into queue `%{h.queue.name}` of "
            f"{list(h.queue.tile_shape)} tiles",
            loc,
        )
    state.write(h.slot, _owned(data))
    return Handle(h.queue, h.slot)


@impl(QueueAlloc)
def _queue_alloc(op: QueueAlloc, fr: Frame) -> QueueRef:
    if op.buffers < 1:
        raise ExecutionError(
            f"a queue needs at least one buffer, got {op.buffers}", op.loc
        )
    shape = tile_shape(fr, op.tile.shape, op.loc)
    ref = QueueRef(op.result.name, op.tile.dtype, shape, op.buffers)
    fr.new_queue(ref)
    return ref


@impl(AllocTensor)
def _alloc_tensor(op: AllocTensor, fr: Frame) -> Handle:
    ref = _ref(fr, op.queue)
    state = fr.queue(ref)
    slot = _free_slot(fr, ref, state, "AllocTensor", op.loc)
    _put(state.status, slot, HELD)
    state.poison(slot, nan_of(ref.dtype))
    return Handle(ref, slot)


@impl(Enqueue)
def _enqueue(op: Enqueue, fr: Frame) -> None:
    ref = _ref(fr, op.queue)
    h = fr.raw(op.x)
    if isinstance(h, Handle):
        state = _require_held(fr, ref, h, op.x.name, "Enqueue", op.loc)
        slot = h.slot
    else:
        state = fr.queue(ref)
        slot = _free_slot(fr, ref, state, "Enqueue beyond capacity", op.loc)
        state.write(slot, np.array(fr.val(op.x)))
    _put(state.status, slot, QUEUED)
    _put(state.seq, slot, fr.machine.next_seq())


@impl(Dequeue)
def _dequeue(op: Dequeue, fr: Frame) -> Handle:
    ref = _ref(fr, op.queue)
    state = fr.queue(ref)
    queued = state.status == QUEUED
    nonempty = queued.any(axis=0)
    if not nonempty.all():
        raise ExecutionError(
            f"Dequeue of an empty queue `%{ref.name}` at {fr.describe(~nonempty)}",
            op.loc,
            hint="every DeQue needs an earlier EnQue of the same queue",
        )
    order = np.where(queued, state.seq, np.iinfo(np.int64).max)
    slot = _collapse(order.argmin(axis=0))
    _put(state.status, slot, HELD)
    return Handle(ref, slot)


@impl(FreeTensor)
def _free_tensor(op: FreeTensor, fr: Frame) -> None:
    ref = _ref(fr, op.queue)
    h = fr.raw(op.x)
    state = _require_held(fr, ref, h, op.x.name, "FreeTensor", op.loc)
    _put(state.status, h.slot, FREE)
    state.poison(h.slot, nan_of(ref.dtype))
