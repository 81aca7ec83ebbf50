"""The closed-form cost model: work counted from the IR, and BOUNDS on the kernel time.

The headline time and TFLOPS come from the modelled schedule (``fadsl/perf/kernel.py``);
this module gives the per-iteration work and two closed forms kept as labelled bounds:
nothing overlapped (serial) and the units perfectly overlapped.


Input: a kernel's typed IR as the frontend builds it (before pipelining: the KV loop is
one ``For`` with its ``stages``), a Target (its ``rates``, each with a source or marked
as an assumption) and the values of every shape and block-size symbol.
Output: an ``Estimate``: per KV iteration the MTE2/MTE3 bytes, cube FLOPs and vector
element-operations with the time each unit needs; the kernel time with and without the
overlap that ``stages >= 2`` buys; HBM traffic against its lower bound; predicted
TFLOPS. docs/cost-model.md states every formula and assumption.

The symbolic work per iteration and per task is derived once per kernel (``CostModel``)
and evaluated per configuration, so ``fadsl tune`` can rank thousands of tile choices;
``fadsl timeline`` reads the same per-iteration phase times.

Non-goals: the headline (perf/kernel.py), L2 reuse (perf/l2.py; here every load is
charged to HBM), bank conflicts, instruction issue; buffer sizes (check_resources).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import sympy

from fadsl.perf.cost_work import grid_of, kernel_type, tensor_bytes, workload
from fadsl.ir import nodes as ir
from fadsl.plan.resources.footprint_eval import BatchFn, batch, exact
from fadsl.target import Target

PHASES = ("mte2", "cube", "vector", "mte3")
"""The four units whose per-iteration times overlap when the loop is pipelined."""


@dataclass(frozen=True)
class PhaseTimes:
    """Seconds each unit spends per KV iteration (one full block), plus fixed overhead."""

    mte2: float
    cube: float
    vector: float
    mte3: float
    overhead: float

    @property
    def serial(self) -> float:
        return self.mte2 + self.cube + self.vector + self.mte3 + self.overhead

    @property
    def overlapped(self) -> float:
        return max(self.mte2, self.cube, self.vector, self.mte3) + self.overhead

    @property
    def bound(self) -> str:
        times = {p: getattr(self, p) for p in PHASES}
        return max(times, key=lambda p: times[p])


@dataclass(frozen=True)
class Estimate:
    """The model's answer for one configuration; every figure is modelled."""

    per_iteration: dict[str, int]
    """Work of one full KV iteration (bytes, FLOPs, element-operations)."""
    phases: PhaseTimes
    stages: int
    tasks: int
    block_dim: int
    iterations: int
    """KV iterations summed over all tasks (skipped blocks excluded)."""
    time_serial_s: float
    """Kernel time if nothing overlaps (stages = 1)."""
    time_overlap_s: float
    """Kernel time with MTE2 / cube / vector / MTE3 overlapped across iterations."""
    hbm_bytes: int
    hbm_lower_bound: int
    """Every input read once and every output written once."""
    workspace_bytes: int
    cube_flops: int

    @property
    def predicted_s(self) -> float:
        return self.time_overlap_s if self.stages >= 2 else self.time_serial_s

    @property
    def tflops(self) -> float:
        return self.cube_flops / self.predicted_s / 1e12 if self.predicted_s else 0.0

    @property
    def hbm_ratio(self) -> float:
        return self.hbm_bytes / self.hbm_lower_bound if self.hbm_lower_bound else 0.0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(
            predicted_s=self.predicted_s,
            tflops=self.tflops,
            hbm_ratio=self.hbm_ratio,
            bound=self.phases.bound,
            modelled=True,
        )
        return out


class CostModel:
    """The symbolic workload of one kernel on one target; ``estimate`` evaluates it."""

    def __init__(self, kernel: ir.Kernel, target: Target) -> None:
        self.kernel = kernel
        self.target = target
        self.grid = grid_of(kernel)
        self.task_work, self.loops = workload(self.grid, target.split)
        self.kernel_type = kernel_type(self.grid, target)
        self._task_fn = batch(self.task_work.amounts)
        self._loop_fns = [
            (lp, batch(lp.work.amounts), batch({"n": lp.trips})) for lp in self.loops
        ]
        self._bound = sum(
            (
                tensor_bytes(p)
                for p in kernel.params
                if p.kind in (ir.ParamKind.IN, ir.ParamKind.OUT)
            ),
            sympy.Integer(0),
        )

    def estimate(
        self, env: Mapping[str, Any], block_dim: int | None = None
    ) -> Estimate:
        """Modelled time and traffic at ``env`` (shape symbols and tile constants)."""
        extents = tuple(exact(e, env) for e in self.grid.extents)
        tasks = _product(extents)
        physical, _ = self.target.physical_cores(self.kernel_type)
        dim = block_dim or max(1, min(tasks, physical))
        task_w = _numbers(self._task_fn, env)
        base = self._phases(task_w, dim).serial + self._rate_s("task_overhead_cycles")
        serial, overlap = base, base
        totals = {k: v * tasks for k, v in task_w.items()}
        iterations, first = 0, None
        for lp, work_fn, trips_fn in self._loop_fns:
            n = _trip_counts(trips_fn, env, self.grid.vars, extents)
            w = _numbers(work_fn, env)
            ph = self._phases(w, dim)
            serial = serial + n * ph.serial
            overlap = overlap + _overlap_time(n, ph, lp.stages)
            count = _total(n, extents)
            iterations += count
            totals = {k: totals[k] + w[k] * count for k in totals}
            first = first or (w, ph, lp.stages)
        w0, ph0, stages = first or (task_w, self._phases(task_w, dim), 1)
        return Estimate(
            per_iteration=w0,
            phases=ph0,
            stages=stages,
            tasks=tasks,
            block_dim=dim,
            iterations=iterations,
            time_serial_s=_makespan(serial, extents, dim),
            time_overlap_s=_makespan(overlap, extents, dim),
            hbm_bytes=totals["mte2_bytes"] + totals["mte3_bytes"],
            hbm_lower_bound=exact(self._bound, env),
            workspace_bytes=totals["ws_bytes"],
            cube_flops=totals["cube_flops"] + totals["cube_f32_flops"],
        )

    def phase_times(self, w: Mapping[str, int], block_dim: int) -> PhaseTimes:
        """Seconds each unit needs for the work ``w`` (numbers, keys of
        ``cost_work.WORK_KEYS``) when ``block_dim`` blocks share the HBM."""
        return self._phases(w, block_dim)

    def trips(self, env: Mapping[str, Any], extents: tuple[int, ...]) -> Any:
        """KV trip count of every task (grid-shaped array; the first KV loop)."""
        import numpy as np

        if not self._loop_fns:
            return np.zeros(extents)
        _, _, trips_fn = self._loop_fns[0]
        n = _trip_counts(trips_fn, env, self.grid.vars, extents)
        return np.broadcast_to(n, extents).astype(np.int64)

    def block_dim(self, env: Mapping[str, Any]) -> int:
        """blockDim at ``env``: min(tasks, physical cores), as the checker chooses it."""
        tasks = _product(tuple(exact(e, env) for e in self.grid.extents))
        physical, _ = self.target.physical_cores(self.kernel_type)
        return max(1, min(tasks, physical))

    def _phases(self, w: Mapping[str, int], block_dim: int) -> PhaseTimes:
        """Closed-form engine times, the cube core's and the vector cores' engines
        merged per kind, every read at the L2 rate: with the units perfectly
        overlapped, a lower bound of the schedule's iteration (not the schedule)."""
        from fadsl.perf.engines import Engines

        e = Engines.of(self.target, block_dim)
        units = e.vector_units
        return PhaseTimes(
            mte2=e.read_s(w["mte2_bytes"] + w["ws_bytes"], 1.0),
            cube=max(
                e.cube_s(w["cube_flops"], w["cube_f32_flops"]),
                e.mte1_s(w["l0a_bytes"], w["l0b_bytes"]),
            ),
            vector=e.vector_s(
                w["vector_ops"] / units, w["vector_transcendental"] / units
            ),
            mte3=e.write_s(w["mte3_bytes"] / units) + e.fixpipe_s(w["ws_bytes"]),
            overhead=e.round_s,
        )

    def _rate_s(self, cycles_rate: str) -> float:
        return self.target.rate(cycles_rate) / self.target.rate("clock_hz")


def _overlap_time(n: Any, ph: PhaseTimes, stages: int) -> Any:
    """Pipelined loop: the first iteration fills the pipe, the rest run at the slowest
    unit's pace; with one stage nothing overlaps."""
    import numpy as np

    if stages < 2:
        return n * ph.serial
    fill = ph.serial - ph.overlapped
    return np.where(n > 0, n * ph.overlapped + fill, 0.0)


def _product(xs: tuple[int, ...]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def _trip_counts(
    fn: BatchFn,
    env: Mapping[str, Any],
    names: tuple[str, ...],
    extents: tuple[int, ...],
) -> Any:
    """Trip counts per task, as an array broadcastable to the grid's shape: only the
    grid variables the count depends on (e.g. the Q block under causal) get an axis."""
    import numpy as np

    values = dict(env)
    for axis, (name, ext) in enumerate(zip(names, extents)):
        shape = [1] * len(extents)
        shape[axis] = ext
        values[name] = np.arange(ext).reshape(shape)
    n = np.asarray(fn(values)["n"], dtype=np.float64)
    return np.maximum(np.rint(n), 0.0).reshape(n.shape or (1,) * len(extents))


def _total(n: Any, extents: tuple[int, ...]) -> int:
    import numpy as np

    return int(np.broadcast_to(n, extents).sum())


def _makespan(per_task: Any, extents: tuple[int, ...], block_dim: int) -> float:
    """Tasks dealt round-robin to blocks (task t runs on block t % blockDim), tasks
    numbered in grid order (last grid variable fastest)."""
    import numpy as np

    times = np.asarray(per_task, dtype=np.float64)
    tasks = _product(extents)
    if tasks == 0:
        return 0.0
    if times.size == 1:
        return float(times.reshape(-1)[0]) * -(-tasks // block_dim)
    flat = np.broadcast_to(times, extents).reshape(-1)
    sums = np.bincount(np.arange(tasks) % block_dim, weights=flat, minlength=block_dim)
    return float(sums.max())


def _numbers(fn: BatchFn, env: Mapping[str, Any]) -> dict[str, int]:
    return {k: int(round(float(v))) for k, v in fn(env).items()}
