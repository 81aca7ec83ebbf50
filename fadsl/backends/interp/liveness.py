"""When a value of a block is used for the last time, so its array can be freed early.

Without this, every intermediate tile of a loop iteration would stay alive until the
iteration ends: each op would then get fresh memory from the OS (page faults on every
large tile) instead of reusing the block of the tile that just died.
"""

from __future__ import annotations

from collections.abc import Sequence

from fadsl.ir.nodes import For, Grid, Op, Value


def uses(op: Op) -> set[Value]:
    """Values ``op`` reads, including those read anywhere inside its regions."""
    found = set(op.operand_values())
    if isinstance(op, For):
        found.update(op.yields)
        for inner in op.body:
            found |= uses(inner)
    elif isinstance(op, Grid):
        for inner in op.body:
            found |= uses(inner)
    return found


def dead_after(
    ops: Sequence[Op], keep: Sequence[Value] = (), args: Sequence[Value] = ()
) -> tuple[tuple[Value, ...], ...]:
    """For each op of a block, the values defined in the block that die right after it.

    ``keep`` (a loop body's yields) stays alive to the end of the block; ``args`` (a
    loop body's iter_args) count as defined before the first op.
    """
    defined: set[Value] = set(args)
    last: dict[Value, int] = {v: 0 for v in args}
    for index, op in enumerate(ops):
        for v in uses(op):
            last[v] = index
        for v in op.results():
            defined.add(v)
            last.setdefault(v, index)
    for v in keep:
        last.pop(v, None)
    plan: list[list[Value]] = [[] for _ in ops]
    for v, index in last.items():
        if v in defined:
            plan[index].append(v)
    return tuple(tuple(p) for p in plan)
