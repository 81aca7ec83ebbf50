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

from fadsl.backends.interp.elementwise import tile_shape
from fadsl.backends.interp.frame import (
    FREE,
    HELD,
    QUEUED,
    Frame,
    Handle,
    QueueRef,
    QueueState,
    nan_of,
)
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


def _status(fr: Frame, state: QueueState, slot: int | np.ndarray) -> np.ndarray:
    if isinstance(slot, int):
        return state.status[slot]
    return state.status[slot, np.arange(fr.n)]


def _put(fr: Frame, arr: np.ndarray, slot: int | np.ndarray, value: Any) -> None:
    if isinstance(slot, int):
        arr[slot] = value
    else:
        arr[slot, np.arange(fr.n)] = value


def _free_slot(fr: Frame, ref: QueueRef, state: QueueState, what: str, loc: Loc) -> Any:
    free = state.status == FREE
    has_free = free.any(axis=0)
    if not has_free.all():
        pos = int(np.argmin(has_free))
        held = int((state.status[:, pos] == HELD).sum())
        queued = int((state.status[:, pos] == QUEUED).sum())
        raise ExecutionError(
            f"{what} on queue `%{ref.name}`: all {ref.buffers} slot(s) are in use "
            f"({held} held, {queued} enqueued) at {fr.describe_point(pos)}",
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
    status = _status(fr, state, h.slot)
    bad = status != HELD
    if bad.any():
        pos = int(np.argmax(bad))
        raise ExecutionError(
            f"{what}: tensor `%{name}` is not held (its slot of queue `%{ref.name}` is "
            f"{_STATE_NAMES[int(status[pos])]}) at {fr.describe_point(pos)}",
            loc,
            hint="a tensor is held from AllocTensor or DeQue until EnQue or FreeTensor",
        )
    return state


def write_slot(fr: Frame, into: Value, data: np.ndarray, loc: Loc) -> Handle:
    """Load(into=t): store ``data`` in t's slot; the loaded value is that slot."""
    h = fr.raw(into)
    if not isinstance(h, Handle):
        raise ExecutionError(f"load into `%{into.name}`, which is not a queue tensor", loc)
    state = _require_held(fr, h.queue, h, into.name, "load into a queue tensor", loc)
    if data.shape[1:] != h.queue.tile_shape:
        raise ExecutionError(
            f"load of a {list(data.shape[1:])} block into queue `%{h.queue.name}` of "
            f"{list(h.queue.tile_shape)} tiles",
            loc,
        )
    _put(fr, state.mem, h.slot, data if isinstance(h.slot, int) else
         np.broadcast_to(data, (fr.n,) + data.shape[1:]))
    return Handle(h.queue, h.slot)


@impl(QueueAlloc)
def _queue_alloc(op: QueueAlloc, fr: Frame) -> QueueRef:
    if op.buffers < 1:
        raise ExecutionError(f"a queue needs at least one buffer, got {op.buffers}", op.loc)
    shape = tile_shape(fr, op.tile.shape, op.loc)
    ref = QueueRef(op.result.name, op.tile.dtype, shape, op.buffers)
    fr.new_queue(ref)
    return ref


@impl(AllocTensor)
def _alloc_tensor(op: AllocTensor, fr: Frame) -> Handle:
    ref = _ref(fr, op.queue)
    state = fr.queue(ref)
    slot = _free_slot(fr, ref, state, "AllocTensor", op.loc)
    _put(fr, state.status, slot, HELD)
    _put(fr, state.mem, slot, nan_of(ref.dtype))
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
        data = fr.val(op.x)
        _put(fr, state.mem, slot, data if isinstance(slot, int) else
             np.broadcast_to(data, (fr.n,) + data.shape[1:]))
    _put(fr, state.status, slot, QUEUED)
    _put(fr, state.seq, slot, fr.machine.next_seq())


@impl(Dequeue)
def _dequeue(op: Dequeue, fr: Frame) -> Handle:
    ref = _ref(fr, op.queue)
    state = fr.queue(ref)
    queued = state.status == QUEUED
    nonempty = queued.any(axis=0)
    if not nonempty.all():
        pos = int(np.argmin(nonempty))
        raise ExecutionError(
            f"Dequeue of an empty queue `%{ref.name}` at {fr.describe_point(pos)}",
            op.loc,
            hint="every DeQue needs an earlier EnQue of the same queue",
        )
    order = np.where(queued, state.seq, np.iinfo(np.int64).max)
    slot = _collapse(order.argmin(axis=0))
    _put(fr, state.status, slot, HELD)
    return Handle(ref, slot)


@impl(FreeTensor)
def _free_tensor(op: FreeTensor, fr: Frame) -> None:
    ref = _ref(fr, op.queue)
    h = fr.raw(op.x)
    state = _require_held(fr, ref, h, op.x.name, "FreeTensor", op.loc)
    _put(fr, state.status, h.slot, FREE)
    _put(fr, state.mem, h.slot, nan_of(ref.dtype))
