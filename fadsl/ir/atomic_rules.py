"""The rule of ``atomic_add`` outputs: written by atomic adds only, never read.

An output that ``atomic_add`` writes holds, after the grid, the rounded f32 sum of
every addition; a ``store`` into it would be overwritten by that sum and a ``load``
would read a partial sum, so both are refused (by the frontend at the user's line, by
``verify`` in textual IR).
"""

from __future__ import annotations

from collections.abc import Iterator

from fadsl.errors import Loc
from fadsl.ir.nodes import AtomicAdd, Load, Op, Store


def atomic_conflicts(body: tuple[Op, ...]) -> list[tuple[str, Loc]]:
    """(message, location) of every load or store of an output atomic_add writes."""
    ops = list(_walk(body))
    targets = {op.dst: op for op in ops if isinstance(op, AtomicAdd)}
    found = []
    for op in ops:
        if isinstance(op, AtomicAdd):
            continue
        if isinstance(op, Store) and op.dst in targets:
            first = targets[op.dst].loc
            found.append(
                (
                    f"store to `{op.dst}`, which atomic_add writes (at {first.short()}): "
                    "its sum would overwrite the stored values",
                    op.loc,
                )
            )
        if isinstance(op, Load) and op.src in targets:
            found.append(
                (
                    f"load of `{op.src}`, which atomic_add writes: the sum is complete "
                    "only after the grid",
                    op.loc,
                )
            )
    return found


def _walk(ops: tuple[Op, ...]) -> Iterator[Op]:
    for op in ops:
        yield op
        yield from _walk(getattr(op, "body", ()))


__all__ = ["atomic_conflicts"]
