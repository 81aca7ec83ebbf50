"""Which dot operands share one L1 queue (and which exchanges one cross-core flag ID):
tiles of sibling loops never live at once.

The backward with a block mask has two KV-block loops (blocks the mask cuts, then blocks
it keeps whole), each loading Q and dO and receiving P and dS: eight L1 operands of one
buffer each, where four are ever live. Every TQue holds an event ID of the TPipe's pool
(8 per event type, ``event_pool.py``), so they did not fit. Operands of the same shape,
dtype and position share one queue when their lifetimes (first to last program point,
a loop's end for a value read inside a loop it was made outside) do not overlap and no
ring loop holds both: within a ring loop the cube runs ahead of program order
(``ring.py``). Sibling loops inside one loop (the heads of a GQA group) may share.
The same rule lets the exchanges of the two loops share cross-core flag IDs
(``backends/ascendc/flag_ids.py``): a flag is a counter, and every Set and Wait of the
first loop's value comes before any of the second's on each core.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fadsl.ir import nodes as ir
from fadsl.plan.memory.vector_slots import linearize


@dataclass
class _Life:
    value: ir.Value
    start: int
    end: int
    loops: frozenset[int]
    """``id`` of each loop holding the value's definition."""


def share(
    grid: ir.Grid,
    values: list[ir.Value],
    key: Callable[[ir.Value], object],
    rings: set[int],
    same_loop: bool = True,
) -> list[list[ir.Value]]:
    """``values`` in groups (first-made first) whose lifetimes never overlap; values of
    one group have equal ``key``; ``rings`` holds the ``id`` of each ring loop. Without
    ``same_loop``, values made in the same loops never share."""
    points: dict[int, ir.Op] = {}
    loops: list[tuple[int, int, ir.For]] = []
    linearize(grid.body, points, loops, [0])
    lives = [_life(v, points, loops) for v in values]
    groups: list[list[_Life]] = []
    for life in sorted(lives, key=lambda x: x.start):
        home = next((g for g in groups if _fits(g, life, key, rings, same_loop)), None)
        if home is None:
            groups.append([life])
        else:
            home.append(life)
    return [[x.value for x in g] for g in groups]


def _life(
    v: ir.Value, points: dict[int, ir.Op], loops: list[tuple[int, int, ir.For]]
) -> _Life:
    start = next(p for p, op in points.items() if v in op.results())
    end = max(
        [p for p, op in points.items() if v in op.operand_values()], default=start
    )
    for s, e, _ in loops:
        if s < end <= e and not s < start <= e:
            end = max(end, e)
    inside = frozenset(id(lp) for s, e, lp in loops if s < start <= e)
    return _Life(v, start, end, inside)


def _fits(
    group: list[_Life],
    life: _Life,
    key: Callable[[ir.Value], object],
    rings: set[int],
    same_loop: bool,
) -> bool:
    if key(group[0].value) != key(life.value):
        return False
    if not same_loop and any(x.loops == life.loops for x in group):
        return False
    return all(x.end < life.start and not (x.loops & life.loops & rings) for x in group)


__all__ = ["share"]
