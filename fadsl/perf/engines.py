"""The engines of one AI core and the time each needs for its work.

A split chip's AI core (arch 2201: 910B, A3) is one cube core (AIC) and two vector
cores (AIV). Each has its own engines, and every transfer is charged to the engine
that performs it (docs/cost-model.md, "Engines"):

- AIC: ``AIC MTE2`` (GM -> L1), ``MTE1`` (L1 -> L0A/L0B), ``CUBE`` (Mmad),
  ``FIXPIPE`` (L0C -> GM);
- each AIV: ``AIV MTE2`` (GM -> UB), ``VECTOR``, ``AIV MTE3`` (UB -> GM), ``SCALAR``.

A coupled chip (910A, 310P) has one AI core holding both: ``MTE2``, ``MTE1``, ``CUBE``,
``VECTOR``, ``MTE3``, ``SCALAR``.

An MTE2 read is served from L2 at ``mte2_bytes_per_cycle`` when it hits and from HBM at
``ddr_bytes_per_cycle`` (capped by the chip's ``hbm_bytes_per_s`` shared by the cores
that run) when it misses; ``perf/l2.py`` says which fraction hits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fadsl.target import Target

SPLIT_LANES = (
    "AIC MTE2",
    "MTE1",
    "CUBE",
    "FIXPIPE",
    "AIV MTE2",
    "VECTOR",
    "AIV MTE3",
    "SCALAR",
)
COUPLED_LANES = ("MTE2", "MTE1", "CUBE", "VECTOR", "MTE3", "SCALAR")
LANES = tuple(dict.fromkeys(SPLIT_LANES + COUPLED_LANES))
"""Every lane name, top to bottom in the picture."""


def lanes_of(target: Target) -> tuple[str, ...]:
    return SPLIT_LANES if target.split else COUPLED_LANES


def load_lane(target: Target, to_cube: bool) -> str:
    """The engine that reads GM for the cube (into L1) or for the vector (into UB)."""
    if not target.split:
        return "MTE2"
    return "AIC MTE2" if to_cube else "AIV MTE2"


def store_lane(target: Target) -> str:
    return "AIV MTE3" if target.split else "MTE3"


@dataclass(frozen=True)
class Engines:
    """Per-engine rates of one AI core of ``target`` with ``active`` cores running."""

    clock: float
    ddr: float
    """HBM -> L1/UB bytes per second of one core (its share of the chip's HBM)."""
    l2_read: float
    mte3: float
    fixpipe: float
    l0a: float
    l0b: float
    cube: float
    cube_f32: float
    vector: float
    """Element-ops per second of ONE vector core."""
    transcendental: float
    vector_units: int
    """Vector cores sharing a task's vector work (2 on split chips: half the rows each)."""
    barrier_s: float
    flag_s: float
    round_s: float
    task_s: float
    launch_s: float

    copy_s: float = 0.0
    """Start-up of one GM transfer (``copy_startup_cycles``)."""
    load_data_s: float = 0.0
    mmad_s: float = 0.0
    fixpipe_start_s: float = 0.0
    issue_s: float = 0.0
    """Scalar issue of one call (``scalar_issue_cycles``)."""
    dispatch_s: float = 0.0
    """Between the starts of block b and b + 1 (``block_dispatch_cycles``);
    ``launch_s`` holds ``active - 1`` of them (the last block's start)."""
    burst_s: float = 0.0
    """One burst (blockCount) of a GM transfer (``burst_cycles``)."""
    call_s: float = 0.0
    """Start-up of one vector call beyond its repeats (``vector_startup_cycles``)."""
    drain_s: float = 0.0
    """One PipeBarrier<PIPE_V>: the drain of the call before it
    (``vector_latency_cycles``) and the barrier (``pipe_barrier_cycles``)."""
    scalar_read_s: float = 0.0
    """One GetValue of a local tensor (``scalar_access_cycles``)."""
    target: Target | None = None
    active: int = 1

    @classmethod
    def of(cls, t: Target, active: int) -> Engines:
        """The rates and the cost table's constants (``perf/costs.py``) of ``t``
        with ``active`` AI cores running: a vector call is charged its start-up, a
        PipeBarrier the drain before it and the barrier (``barrier_s``, both with a
        start-up, is the charge per op of the closed forms); a kernel its launch and
        the dispatch of its blocks one after another."""
        from fadsl.perf.costs import cost_table

        tb = cost_table(t)
        f = t.rate("clock_hz")
        share = t.rate("hbm_bytes_per_s") / max(1, active)
        per_op = (
            tb["vector_startup_cycles"]
            + tb["vector_latency_cycles"]
            + tb["pipe_barrier_cycles"]
        )
        dispatch = tb["block_dispatch_cycles"] * max(0, active - 1)
        return cls(
            clock=f,
            ddr=min(t.rate("ddr_bytes_per_cycle") * f, share),
            l2_read=t.rate("mte2_bytes_per_cycle") * f,
            mte3=t.rate("mte3_bytes_per_cycle") * f,
            fixpipe=t.rate("fixpipe_bytes_per_cycle") * f,
            l0a=t.rate("l1_to_l0a_bytes_per_cycle") * f,
            l0b=t.rate("l1_to_l0b_bytes_per_cycle") * f,
            cube=t.rate("cube_flops_per_cycle") * f,
            cube_f32=t.rate("cube_f32_flops_per_cycle") * f,
            vector=t.rate("vector_elems_per_cycle") * f,
            transcendental=t.rate("vector_transcendental_cost"),
            vector_units=2 if t.split else 1,
            barrier_s=per_op / f,
            flag_s=tb["flag_handover_cycles"] / f,
            round_s=t.rate("iteration_overhead_cycles") / f,
            task_s=t.rate("task_overhead_cycles") / f,
            launch_s=(tb["launch_overhead_cycles"] + dispatch) / f,
            copy_s=tb["copy_startup_cycles"] / f,
            load_data_s=tb["load_data_startup_cycles"] / f,
            mmad_s=tb["mmad_startup_cycles"] / f,
            fixpipe_start_s=tb["fixpipe_startup_cycles"] / f,
            issue_s=tb["scalar_issue_cycles"] / f,
            dispatch_s=tb["block_dispatch_cycles"] / f,
            burst_s=tb["burst_cycles"] / f,
            call_s=tb["vector_startup_cycles"] / f,
            drain_s=(tb["vector_latency_cycles"] + tb["pipe_barrier_cycles"]) / f,
            scalar_read_s=tb["scalar_access_cycles"] / f,
            target=t,
            active=active,
        )

    def dispatched(self, per_task: Any, cores: Any) -> tuple[float, float]:
        """(launch until the busiest core's start, that core's tasks): core c is
        block c of the launch, started c dispatches after the first, so the busiest
        is the core whose start plus tasks ends last (with equal tasks the last one,
        as ``launch_s`` assumes)."""
        import numpy as np

        base = self.launch_s - self.dispatch_s * max(0, self.active - 1)
        if len(per_task) == 0:
            return self.launch_s, 0.0
        sums = np.bincount(cores, weights=per_task)
        ends = sums + np.arange(sums.size) * self.dispatch_s
        c = int(np.argmax(ends))
        return base + c * self.dispatch_s, float(sums[c])

    def read_s(self, nbytes: float, hit: float) -> float:
        """MTE2: ``hit`` of the bytes from L2, the rest from HBM."""
        return nbytes * hit / self.l2_read + nbytes * (1.0 - hit) / self.ddr

    def write_s(self, nbytes: float) -> float:
        """AIV MTE3 (UB -> GM, landing in L2)."""
        return nbytes / self.mte3

    def fixpipe_s(self, nbytes: float) -> float:
        return nbytes / self.fixpipe

    def mte1_s(self, l0a_bytes: float, l0b_bytes: float) -> float:
        return l0a_bytes / self.l0a + l0b_bytes / self.l0b

    def cube_s(self, flops: float, f32_flops: float = 0.0) -> float:
        return flops / self.cube + f32_flops / self.cube_f32

    def vector_s(self, ops: float, transcendental: float, barriers: int = 0) -> float:
        """One vector core doing ``ops`` + ``transcendental`` element-operations (its
        own share) with ``barriers`` PipeBarriers."""
        work = ops + transcendental * self.transcendental
        return work / self.vector + barriers * self.barrier_s
