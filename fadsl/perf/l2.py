"""The shared L2: which reads of a load it serves, and HBM against L2 bytes.

Tasks are numbered in grid order and dealt round-robin to the blocks, so task t runs in
round t // blockDim, alongside the other tasks of its round (``perf/kernel.py``). A load
whose address does not depend on some grid variables (K and V do not depend on the Q
block) reads the same data in several tasks: a "key" names that data (the values of the
grid variables it depends on). The model:

1. in each round, the first read of a key that is not resident comes from HBM, every
   other read of it in the round from L2 (the concurrent cores share it);
2. a key stays resident for later rounds while the keys read since fit in the load's
   share of the L2 (least recently used first out);
3. the share: the L2 size less the workspace the cores keep in it, split evenly among the
   loads that are shared at all.

Non-goals: set associativity, write-back traffic, prefetch, timing of concurrent misses.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np


def task_keys(extents: Sequence[int], axes: Sequence[int]) -> np.ndarray:
    """For every task in grid order, the index of the data a load reads when it
    depends only on grid ``axes``."""
    grid = np.indices(tuple(extents)).reshape(len(extents), -1)
    if not axes:
        return np.zeros(grid.shape[1], dtype=np.int64)
    sub = tuple(extents[a] for a in axes)
    return np.ravel_multi_index(tuple(grid[a] for a in axes), sub).astype(np.int64)


def hit_fraction(
    keys: np.ndarray, footprint: float, block_dim: int, capacity: float
) -> float:
    """Fraction of the reads (one per task) that L2 serves; ``footprint`` bytes per key."""
    tasks = int(keys.size)
    if tasks == 0 or capacity <= 0:
        return 0.0
    distinct = np.unique(keys)
    if footprint <= 0 or footprint * distinct.size <= capacity:
        return 1.0 - distinct.size / tasks  # every key read from HBM once
    room = max(0, int(capacity // footprint))
    resident: OrderedDict[int, None] = OrderedDict()
    misses = 0
    dim = max(1, block_dim)
    for start in range(0, tasks, dim):
        for k in np.unique(keys[start : start + dim]).tolist():
            if k in resident:
                resident.move_to_end(k)
            else:
                misses += 1
                resident[k] = None
        while len(resident) > room:
            resident.popitem(last=False)
    return 1.0 - misses / tasks
