"""Cross-core flag IDs of a MIX kernel's cube/vector exchanges.

One ID per exchanged value (a ring value takes one per slot; a one-slot dot result with
a slot-free flag, ``plan/sync/slot_free.py``, takes a second), 16 in all, of which
SyncAll uses 11-14 in a kernel with atomic_add or a post phase (split-KV). Exchanges of
sibling loops that never run at once share an ID (``plan/memory/l1_share.py`` says when): a
flag is a counter, and on each core every Set or Wait of the first loop's value comes
before any of the second's. The block-masked backward's two KV loops need 8 IDs this way
instead of 16.
"""

from __future__ import annotations

from fadsl.errors import BackendError
from fadsl.plan.memory.plan_buffers import Lowering
from fadsl.plan.schedule.ring import MAX_FLAGS, SYNC_ALL_FIRST_FLAG
from fadsl.plan.sync.flag_share import shared_ids
from fadsl.plan.sync.slot_free import SUFFIX


def flag_list(low: Lowering) -> list[tuple[str, str]]:
    out = [
        (v.name, f"cube -> vector: %{v.name} is in its workspace")
        for v in low.sides.to_vector
    ]
    out += [
        (v.name, f"vector -> cube: %{v.name} is in its workspace")
        for v in low.sides.to_cube
    ]
    out += [
        (v + SUFFIX, f"vector -> cube: the slot of %{v} was read (slot free)")
        for v in low.free
    ]
    return out  # how many IDs they take once shared: flag_ids


def flag_ids(low: Lowering) -> list[tuple[str, int, str]]:
    """(value, first flag ID, comment): a ring value takes one ID per slot."""
    out: list[tuple[str, int, str]] = []
    at = 0
    shared = _shared(low)
    given: dict[str, int] = {}
    for v, why in flag_list(low):
        r = low.ring_of(v)
        if r is None:
            first = shared.get(v, v)
            if first in given:
                out.append((v, given[first], why + f" (the ID of %{first})"))
                continue
            given[v] = at
            out.append((v, at, why))
            at += 1
            continue
        why += f" ring slot s: this ID + s ({r.depth} slots)"
        out.append((v, at, why))
        at += r.depth
    if at > MAX_FLAGS:
        raise BackendError(
            f"{at} cross-core flags exceed the {MAX_FLAGS} flag IDs", low.kernel.loc
        )
    if low.post is not None and at > SYNC_ALL_FIRST_FLAG:
        raise BackendError(
            f"the post phase (a second fd.grid) needs SyncAll, which sets and waits "
            f"on cross-core flag IDs {SYNC_ALL_FIRST_FLAG}-{SYNC_ALL_FIRST_FLAG + 3}, "
            f"but the first grid's cube/vector exchanges take IDs 0-{at - 1}",
            low.kernel.loc,
        )
    if low.plan.atomics and at > SYNC_ALL_FIRST_FLAG:
        a = low.plan.atomics[0]
        raise BackendError(
            f"atomic_add into `{a.output}` needs SyncAll, which sets and waits on "
            f"cross-core flag IDs {SYNC_ALL_FIRST_FLAG}-{SYNC_ALL_FIRST_FLAG + 3}, "
            f"but the kernel's cube/vector exchanges take IDs 0-{at - 1}",
            a.loc,
            hint=f"a kernel with atomic_add may have at most {SYNC_ALL_FIRST_FLAG} "
            "cube/vector exchanges (dot results the vector cores read, vector tiles "
            "a dot reads): add dot results on the cube side, or split the kernel",
            code="atomic_sync_flags",
        )
    return out


def _shared(low: Lowering) -> dict[str, str]:
    """Exchanged value -> the first value of its group (``plan/sync/flag_share.py``)."""
    return shared_ids(low.grid, low.sides, low.rings)


__all__ = ["flag_ids", "flag_list", "MAX_FLAGS"]
