"""The order in which the AI cores take a grid's tasks (issue 16, causal balance).

By default core ``c`` of ``cores`` takes tasks ``c, c + cores, ...`` in grid order.
Under causal masking a task's KV loop is as long as its Q block is late, so in grid
order the cores that draw the late blocks of every head do up to twice the work of the
others (fa2, N=1, S=4K: the busiest core 1.8x the mean). When the KV loop's trip count
grows with one grid variable (the *heavy* axis: it is the only grid variable in the
loop's bounds, the start does not depend on it, and the stop is nondecreasing in it),
the tasks are instead

1. ordered longest first: the heavy variable outermost and descending, the other grid
   variables inside it in grid order, within groups of as many (b, h) points as keep
   the K/V those tasks read within half the L2 (the cores run a group's tasks at
   once; without groups, many long heads would each be read from HBM in every
   round);
2. dealt in a snake: in round ``r`` (``cores`` tasks each) core ``c`` takes position
   ``c`` when ``r`` is even and ``cores - 1 - c`` when it is odd (a position past the
   last task is skipped),

the longest-processing-time-first rule in closed form (CANN's causal tiling balances
its cores by a greedy cut instead; FlashAttention-2/3 schedule long blocks first).
Any order computes the same values: each task writes only its own output rows.

``fadsl/backends/ascendc/emit.py`` prints these expressions as the task loop, and the
kernel model (``perf/kernel.py``, ``perf/l2.py``) evaluates the same expressions to
know which core runs which task and in which round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, FloorDiv, evaluate, isym
from fadsl.ir.op_base import Slice

if TYPE_CHECKING:
    import numpy as np

SLOT = "taskSlot"
"""The name of a core's running position in the dealing: core + k * cores."""
CORES = "coreCount"
"""The name of the number of cores the tasks are dealt to (blockDim)."""
ROUND, POS, TASK = "taskRound", "taskPos", "task"
"""The names of the slot's round, its position in the round and its task."""
GROUP, IN_GROUP, SIZE = "taskGroup", "taskInGroup", "groupSize"
"""The names of the task's group, its place in the group and the group's size."""
POINTS = "groupPoints"
"""The name of ``TaskOrder.group`` (computed once per kernel)."""


@dataclass(frozen=True)
class TaskOrder:
    """Longest-first snake order of a grid whose ``heavy`` axis sets the KV length."""

    grid: ir.Grid
    heavy: int
    """Index into ``grid.vars`` of the variable the trip count grows with."""
    group: Expr
    """Points of the other grid variables ordered together (the heavy variable
    outermost within a group): as many as keep the K/V the group's tasks read within
    half the L2, so that the cores, which run the group's tasks at once, share them
    there; at least 1, at most all."""

    def task(self) -> tuple[tuple[str, Expr], ...]:
        """The task a slot runs (its position in the longest-first order), as named
        steps, each reading the slot, the core count and the steps before it."""
        slot, cores = isym(SLOT), isym(CORES)
        r, p = isym(ROUND), isym(POS)
        return (
            (ROUND, FloorDiv(slot, cores)),
            (POS, sympy.Mod(slot, cores)),
            (TASK, r * cores + p + sympy.Mod(r, 2) * (cores - 1 - 2 * p)),
        )

    def point(
        self, task: Expr, extents: tuple[Expr | int, ...] | None = None
    ) -> tuple[tuple[str, Expr], ...]:
        """The grid point of ``task`` (a position in the order) as named steps: the
        group, the task's place in it and the group's size, then each grid
        variable's value. ``extents`` replaces the grid's extents (numbers, for the
        model)."""
        ext = [sympy.sympify(e) for e in (extents or self.grid.extents)]
        rest = [a for a in range(len(ext)) if a != self.heavy]
        inner = sympy.Mul(*[ext[a] for a in rest])
        n = ext[self.heavy]
        g, u, size, gp = isym(GROUP), isym(IN_GROUP), isym(SIZE), isym(POINTS)
        steps: list[tuple[str, Expr]] = [
            (GROUP, FloorDiv(task, gp * n)),
            (IN_GROUP, sympy.Mod(task, gp * n)),
            (SIZE, sympy.Min(gp, inner - g * gp)),
        ]
        out: dict[int, Expr] = {self.heavy: n - 1 - FloorDiv(u, size)}
        div: Expr = g * gp + sympy.Mod(u, size)
        for a in reversed(rest):
            out[a] = sympy.Mod(div, ext[a]) if a != rest[0] else div
            div = FloorDiv(div, ext[a])
        return tuple(steps) + tuple(
            (self.grid.vars[a], out[a]) for a in range(len(ext))
        )

    def dealt(
        self, env: Mapping[str, Any], extents: tuple[int, ...], cores: int
    ) -> np.ndarray:
        """Core of every task (in grid order, C order of ``extents``) and the position
        it runs at in the order: an int array ``[2, tasks]``."""
        import numpy as np  # the model's use only: compile and check need no numpy

        tasks = int(np.prod(extents)) if extents else 1
        rounds = -(-tasks // cores)
        slot = np.arange(rounds * cores, dtype=np.int64)
        values: dict[str, Any] = {**env, SLOT: slot, CORES: cores}
        values[POINTS] = int(evaluate(self.group, values))
        for name, e in self.task():
            values[name] = np.asarray(evaluate(e, values), dtype=np.int64)
        keep = values[TASK] < tasks
        slot = slot[keep]
        values[TASK] = values[TASK][keep]
        for name, e in _point_steps(self, extents):
            values[name] = np.broadcast_to(
                np.asarray(evaluate(e, values), dtype=np.int64), slot.shape
            )
        coords = tuple(values[v] for v in self.grid.vars)
        flat = np.ravel_multi_index(coords, extents)
        out = np.empty((2, tasks), dtype=np.int64)
        out[0, flat] = slot % cores
        out[1, flat] = values[TASK]
        return out


@lru_cache(maxsize=256)
def _point_steps(
    order: TaskOrder, extents: tuple[int, ...]
) -> tuple[tuple[str, Expr], ...]:
    """``order.point`` of the symbolic task at numeric ``extents``, kept: sympy
    simplifies its Min of numbers anew each time, and ``fadsl tune`` deals the tasks
    of every configuration it models."""
    return order.point(isym(TASK), extents)


def task_order(grid: ir.Grid, l2_bytes: int) -> TaskOrder | None:
    """The longest-first order when the loops of ``grid``'s body (the KV loop, and
    the load prologue the pipeline pass puts before it) have trip counts that grow
    with one and the same grid variable; None keeps grid order and round-robin
    dealing. ``l2_bytes``: the target's L2 (0: unknown, one group)."""
    loops = [op for op in grid.body if isinstance(op, ir.For)]
    bounds = [(sympy.sympify(f.start), sympy.sympify(f.stop)) for f in loops]
    names = {s.name for a, b in bounds for s in (a - b).free_symbols}
    used = [a for a, v in enumerate(grid.vars) if v in names]
    if len(used) != 1 or len(grid.vars) < 2:
        return None
    if any(isinstance(op, ir.LoadScalar) and op.name in names for op in grid.body):
        return None  # lengths read per task (varlen, paged): not known before it
    for start, stop in bounds:
        var = next((s for s in stop.free_symbols if s.name == grid.vars[used[0]]), None)
        if var is None:
            continue
        if var.name in {s.name for s in start.free_symbols}:
            return None
        if not nondecreasing(stop, var):
            return None
    return TaskOrder(grid, used[0], _group(grid, used[0], loops, l2_bytes))


def _group(grid: ir.Grid, heavy: int, loops: list[ir.For], l2_bytes: int) -> Expr:
    """How many points of the other grid variables share half the L2: half of it
    over the bytes one point's longest task reads in its loops (the loads whose
    address does not depend on the heavy variable: K and V)."""
    ext = [sympy.sympify(e) for e in grid.extents]
    inner = sympy.Mul(*[e for a, e in enumerate(ext) if a != heavy])
    var = grid.vars[heavy]
    last = {isym(var): ext[heavy] - 1}
    loop = max(loops, key=lambda f: len(f.body))  # the KV loop, not its prologue
    trips = sympy.sympify(loop.stop - loop.start).subs(last)
    tiles: dict[str, Expr] = {}
    for op in _loads(loop.body):
        if var not in _index_names(op):
            t = op.result.type
            tiles[op.src] = sympy.Mul(*t.shape) * t.dtype.itemsize  # type: ignore
    per_point = sympy.Add(*tiles.values()) * trips if tiles else sympy.Integer(0)
    if l2_bytes <= 0 or per_point == 0:
        return inner
    fits = FloorDiv(sympy.Integer(l2_bytes // 2), sympy.Max(1, per_point))
    return sympy.Max(1, sympy.Min(inner, fits))


def _loads(body: tuple[ir.Op, ...]) -> list[ir.Load]:
    out: list[ir.Load] = []
    for op in body:
        if isinstance(op, ir.Load):
            out.append(op)
        if isinstance(op, ir.For):
            out += _loads(op.body)
    return out


def _index_names(load: ir.Load) -> set[str]:
    names: set[str] = set()
    for ix in load.index:
        parts = (
            [ix.start, ix.size] if isinstance(ix, Slice) else [getattr(ix, "at", ix)]
        )
        for e in parts:
            names |= {str(s) for s in getattr(e, "free_symbols", ())}
    return names


def nondecreasing(e: Expr, var: sympy.Symbol) -> bool:
    """Whether ``e`` is built so that it cannot decrease when ``var`` grows: sums,
    products by positive factors free of ``var``, Max, Min, ceiling, floor and
    CeilDiv/FloorDiv by positive divisors of such terms (a sufficient test)."""
    if var not in e.free_symbols:
        return True
    if e == var:
        return True
    if isinstance(e, (sympy.Add, sympy.Max, sympy.Min)):
        return all(nondecreasing(a, var) for a in e.args)
    if isinstance(e, (sympy.ceiling, sympy.floor)):
        return nondecreasing(e.args[0], var)
    if type(e).__name__ in ("CeilDiv", "FloorDiv"):
        a, b = e.args
        return var not in b.free_symbols and _positive(b) and nondecreasing(a, var)
    if isinstance(e, sympy.Mul):
        inner = [f for f in e.args if var in f.free_symbols]
        return (
            len(inner) == 1
            and all(_positive(f) for f in e.args if f is not inner[0])
            and nondecreasing(inner[0], var)
        )
    return False


def _positive(e: Expr) -> bool:
    """A factor known to be positive: a positive number, or a symbol (shape symbols
    and tile constants are positive integers)."""
    if e.is_Number:
        return bool(e > 0)
    return bool(e.is_Symbol or e.is_positive)
