"""The shared L2: which reads of a load it serves, and HBM against L2 bytes.

Tasks are numbered in the order the kernel deals them (grid order, or longest first:
``plan/schedule/task_order.py``), so task t runs in round t // blockDim, alongside the other
tasks of its round (``perf/kernel.py`` passes them in that order). A load
whose address does not depend on some grid variables (K and V do not depend on the Q
block) reads the same data in several tasks: a "key" names that data (the values of the
grid variables it depends on). The model:

1. in each round, the first read of a key that is not resident comes from HBM, every
   other read of it in the round from L2 (the concurrent cores share it); when the
   tasks read different lengths of it (causal), the longest read is the HBM part;
2. a key stays resident for later rounds while the keys read since fit in the load's
   share of the L2 (least recently used first out; a key larger than the share is
   never kept);
3. the share: the L2 size less the workspace the cores keep in it, split evenly among the
   loads that are shared at all.

A load inside the KV loop whose tasks of one key read disjoint ranges of KV blocks
(split-KV: the parts of one sequence) shares nothing: each task is its own key.

Non-goals: set associativity, write-back traffic, prefetch, timing of concurrent misses.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fadsl.ir import nodes as ir
from fadsl.ir.op_base import Slice


def task_keys(extents: Sequence[int], axes: Sequence[int]) -> np.ndarray:
    """For every task in grid order, the index of the data a load reads when it
    depends only on grid ``axes``."""
    grid = np.indices(tuple(extents)).reshape(len(extents), -1)
    if not axes:
        return np.zeros(grid.shape[1], dtype=np.int64)
    sub = tuple(extents[a] for a in axes)
    return np.ravel_multi_index(tuple(grid[a] for a in axes), sub).astype(np.int64)


def hit_fraction(
    keys: np.ndarray, reads: Any, block_dim: int, capacity: float
) -> float:
    """Fraction of the bytes read (``reads``: per task, or one number for all) that L2
    serves. The tasks reading one key share what the longest of them reads."""
    tasks = int(keys.size)
    per_task = np.broadcast_to(np.asarray(reads, dtype=np.float64), (tasks,))
    total = float(per_task.sum())
    if tasks == 0 or capacity <= 0 or total <= 0:
        return 0.0
    distinct, inverse = np.unique(keys, return_inverse=True)
    longest = np.zeros(distinct.size)
    np.maximum.at(longest, inverse, per_task)
    if float(longest.sum()) <= capacity:
        return 1.0 - float(longest.sum()) / total  # every key read from HBM once
    resident: OrderedDict[int, float] = OrderedDict()
    missed = 0.0
    dim = max(1, block_dim)
    for start in range(0, tasks, dim):
        part = inverse[start : start + dim]
        for k in np.unique(part).tolist():
            need = float(per_task[start : start + dim][part == k].max())
            have = resident.pop(k, 0.0)
            missed += max(0.0, need - have)
            resident[k] = max(need, have)
        while sum(resident.values()) > capacity and len(resident) > 1:
            resident.popitem(last=False)
        if sum(resident.values()) > capacity:
            resident.clear()
    return 1.0 - missed / total


def disjoint(keys: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> bool:
    """Whether, among the tasks of each key that read anything, the KV ranges
    [start, stop) do not overlap (split-KV parts), and some key has two such tasks."""
    busy = stops > starts
    k, a, b = keys[busy], starts[busy], stops[busy]
    if k.size < 2 or np.unique(k).size == k.size:
        return False
    order = np.lexsort((a, k))
    k, a, b = k[order], a[order], b[order]
    same = k[1:] == k[:-1]
    return bool((a[1:][same] >= b[:-1][same]).all())


def grid_loads(
    grid: ir.Grid, loop: ir.For
) -> list[tuple[ir.Load, tuple[int, ...], bool]]:
    """Every load of the grid body: (op, the grid axes its address depends on, inside
    the KV loop). An address through a scalar read per task (``cu_seqlens_q[b]``)
    depends on the grid variables of that read."""
    via: dict[str, set[str]] = {}
    for op in grid.body:
        if isinstance(op, ir.LoadScalar):
            via[op.name] = _names(op.index, via)
    out = []
    for op, in_loop in [(o, False) for o in grid.body] + [(o, True) for o in loop.body]:
        if not isinstance(op, ir.Load):
            continue
        names = _names(op.index + getattr(op, "row", ()), via)  # a page's sequence
        axes = tuple(i for i, v in enumerate(grid.vars) if v in names)
        out.append((op, axes, in_loop))
    return out


def _names(index: Any, via: Mapping[str, set[str]]) -> set[str]:
    """The symbols of ``index``, each scalar read of ``via`` replaced by its own."""
    names: set[str] = set()
    for ix in index:
        for e in _exprs(ix):
            for s in getattr(e, "free_symbols", ()):
                names |= via.get(str(s), {str(s)})
    return names


def _exprs(ix: Any) -> list[Any]:
    if isinstance(ix, Slice):
        return [ix.start, ix.size] + ([ix.stop] if ix.stop is not None else [])
    return [getattr(ix, "at", ix)]
