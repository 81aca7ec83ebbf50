"""The TPipe's event-ID pools: a freed queue buffer holds an ID until it is reused.

In Ascend C, ``TQue::FreeTensor`` takes an ID of its position's "buffer free" event from
the TPipe's pool (``AllocEventID``) and sets it; the next ``AllocTensor`` of that buffer
waits for the ID and releases it (asc-devkit ``impl/basic_api/kernel_tquebind_impl.h``,
``FreeBuffer`` and ``AllocBuffer``). So all the buffers of the queues whose positions
share that event can hold an ID at once. A pool has ``QUE_MAX_EVENT`` IDs per event: 8
on ``__NPU_ARCH__`` 2002 and 2201 (310P, 910B/A3), 4 on others
(``impl/basic_api/kernel_macros.h``); on a 2201 AIC the TPipe's constructor keeps three
``M_MTE1`` IDs for the matmul macros (``kernel_tpipe_impl.h``). One ID too many is an
assertion in a debug build and undefined behaviour on the chip, and fadsl's CPU runtime
stops there. The check counts every buffer of the queues that share a pool, an upper
bound of the IDs they hold at once, so it is sound and may be conservative.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fadsl.errors import Loc, ResourceError
from fadsl.plan.memory.buffer_plan import Buffer, BufferPlan
from fadsl.target import Target

FREE_EVENT = {
    "VECIN": "V_MTE2",
    "VECOUT": "MTE3_V",
    "A1": "MTE1_MTE2",
    "B1": "MTE1_MTE2",
    "A2": "M_MTE1",
    "B2": "M_MTE1",
    "CO1": "FIX_M",
}
"""The event a freed buffer of each queue position sets (the consumer frees, the
producer waits): GM->UB copies wait for the vector unit, L1 loads for MTE1, and so on."""

_EIGHT_ID_ARCHS = frozenset({2002, 2201, 3002, 3102, 3510, 5102})
_RESERVED = {(2201, "AIC", "M_MTE1"): 3}


def que_max_event(arch: int) -> int:
    """QUE_MAX_EVENT of an ``__NPU_ARCH__``."""
    return 8 if arch in _EIGHT_ID_ARCHS else 4


@dataclass(frozen=True)
class PoolUse:
    """The queue buffers of one core that draw on one event's pool."""

    core: str
    event: str
    buffers: tuple[Buffer, ...]
    capacity: int
    """IDs the kernel's queues can have: QUE_MAX_EVENT less those the TPipe keeps."""

    @property
    def ids(self) -> int:
        return sum(b.buffers for b in self.buffers)

    @property
    def ok(self) -> bool:
        return self.ids <= self.capacity


def pools(plan: BufferPlan, target: Target) -> tuple[PoolUse, ...]:
    """Per core and event, the queue buffers sharing its pool (generated targets only)."""
    if not target.codegen:
        return ()
    groups: dict[tuple[str, str], list[Buffer]] = {}
    for b in plan.buffers:
        event = FREE_EVENT.get(b.position)
        if b.kind == "queue" and event is not None:
            groups.setdefault((b.core, event), []).append(b)
    top = que_max_event(target.arch)
    return tuple(
        PoolUse(
            core, event, tuple(bs), top - _RESERVED.get((target.arch, core, event), 0)
        )
        for (core, event), bs in sorted(groups.items())
    )


def errors(
    uses: Sequence[PoolUse],
    kernel: str,
    target: Target,
    file: str,
    kernel_loc: Loc | None,
) -> list[ResourceError]:
    """One error per pool that its queues can exhaust."""
    return [_error(u, kernel, target, file, kernel_loc) for u in uses if not u.ok]


def _error(
    u: PoolUse,
    kernel: str,
    target: Target,
    file: str,
    kernel_loc: Loc | None,
) -> ResourceError:
    listed = ", ".join(
        f"{b.name} ({b.position}, {b.buffers} buffer{'s' if b.buffers > 1 else ''}, "
        f"{b.loc.short()})"
        for b in u.buffers
    )
    fix = (
        "single-buffer a pipelined loop (fd.pipelined(..., stages=1), or --set stages=1 "
        "where the kernel takes a `stages` constant), or load fewer blocks per iteration"
    )
    head = (
        f"event-ID pool overflow in kernel `{kernel}` ({file}) on {target.name}: the "
        f"{u.core}'s queues can hold {u.ids} IDs of HardEvent::{u.event} at once, and "
        f"the TPipe has {u.capacity}"
    )
    notes = (
        "each freed buffer of these queues holds one ID until it is allocated again "
        f"(TQue::FreeTensor takes it from the TPipe's pool): {listed}",
        f"a pool has QUE_MAX_EVENT = {que_max_event(target.arch)} IDs per event on this "
        "chip (asc-devkit impl/basic_api/kernel_macros.h); one more is undefined "
        "behaviour on the NPU",
    )
    loc = u.buffers[0].loc if u.buffers[0].loc is not None else kernel_loc
    return ResourceError(head, loc, fix, notes, code="event_pool_overflow")
