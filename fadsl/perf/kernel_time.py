"""``KernelTime``: what the cost model says of one kernel at one shape (MODELLED): the
headline time, the tasks and rounds behind it, traffic, per-engine work and bounds.
``fadsl/perf/kernel.py`` makes it; tune, timeline and the benches read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fadsl.perf.cost_model import Estimate


@dataclass(frozen=True)
class KernelTime:
    """The modelled kernel: every figure comes from the schedule (MODELLED)."""

    time_s: float
    tasks: int
    block_dim: int
    rounds: int
    """Rounds of tasks: ceil(tasks / blockDim)."""
    tail_tasks: int
    """Tasks in the last round (blockDim when it is full)."""
    busiest_tasks: int
    """Tasks on the busiest core."""
    launch_s: float
    task_overhead_s: float
    iterations: int
    cube_flops: int
    hbm_bytes: int
    l2_bytes: int
    hbm_lower_bound: int
    workspace_bytes: int
    hits: dict[str, float]
    """Per loaded tensor: the fraction of its reads served by L2."""
    engine_iteration_s: dict[str, float]
    """Per engine: seconds it works in one KV iteration (one AI core)."""
    serial_iteration_s: float
    """One KV iteration with nothing overlapped (the sum over engines)."""
    lower_bound_s: float
    """Launch plus the busiest core's tasks with every KV iteration at the busiest
    engine's pace and nothing else: a lower bound of ``time_s``."""
    bounds: Estimate
    """The closed form (cost_model): lower and upper bounds, not the headline."""
    atomic_phase_s: float = 0.0
    """The zeroing and cast of ``atomic_add`` sums around the grid, in ``time_s``."""
    post_s: float = 0.0
    """The post phase (a second fd.grid after SyncAll, ``perf/post_phase.py``): its
    seconds, included in ``time_s``; 0 without one."""
    post_tasks: int = 0
    handover_s: float = 0.0
    """Seconds the busiest core's tasks overlap the task before them on the core
    (``perf/task_overlap.py``), taken off its summed tasks in ``time_s``."""

    @property
    def tflops(self) -> float:
        return self.cube_flops / self.time_s / 1e12 if self.time_s else 0.0

    @property
    def bound_engine(self) -> str:
        """The engine with the most work per KV iteration."""
        eng = self.engine_iteration_s
        return max(eng, key=lambda k: eng[k]) if eng else "-"

    @property
    def overlapped_iteration_s(self) -> float:
        return max(self.engine_iteration_s.values(), default=0.0)

    @property
    def hbm_ratio(self) -> float:
        return self.hbm_bytes / self.hbm_lower_bound if self.hbm_lower_bound else 0.0

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "bounds"}
        out.update(tflops=self.tflops, hbm_ratio=self.hbm_ratio, modelled=True)
        out["bounds"] = self.bounds.as_dict()
        return out
