"""The one table of per-instruction costs: the timer (``perf/timer/``), the cost model
(``perf/kernel.py`` via ``perf/engines.py``) and the native reference
(``perf/native.py``) all charge it (docs/cost-model.md, "The cost table").

Two kinds of entries:

- the chip's rates (clock, bytes per cycle of each path, cube and vector throughput,
  L2 size), which live in the target file (``fadsl/targets/*.json``) with their
  sources;
- the per-instruction constants below (issue cost, start-up, barrier drain, flag
  latencies, launch, per-block dispatch), the same for every arch-2201 chip, each
  with its public source or marked as an assumption.

Every entry that no measurement settles is ``uncertain``: ``bench/kernel_model.py``
moves each one to x0.5 and x2 and prints the range of every ratio it reports.
``CostTable.scaled`` makes such a variant without touching the files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from fadsl.target import Rate, Target

PTO_FA = (
    "hw-native-sys/pto-isa kernels/manual/common/flash_atten/scripts/fa_cost_model.py"
)
BEST_PRACTICE = (
    "mirror-cann/asc-devkit docs/zh/guide/算子实践参考/SIMD算子性能优化/内存访问/"
    "尽量一次搬运较大的数据块.md (one transfer needs more than 16 KB for full bandwidth)"
)


@dataclass(frozen=True)
class Const:
    """One per-instruction constant of the table."""

    name: str
    value: float
    unit: str
    source: str
    uncertain: bool = True


CONSTANTS: tuple[Const, ...] = (
    Const(
        "scalar_issue_cycles",
        8,
        "cycles of the scalar unit per Ascend C call it issues",
        "assumption: address and parameter arithmetic of one call; no public figure",
    ),
    Const(
        "scalar_access_cycles",
        40,
        "cycles per GetValue / SetValue of a local tensor (scalar access to UB)",
        "assumption: the scalar unit's UB access is not published",
    ),
    Const(
        "vector_startup_cycles",
        8,
        "cycles the vector pipe spends on an instruction beyond its repeats",
        "assumption; asc-devkit's performance advisor warns about vector instructions "
        "issued many times with repeat 1 (the start-up dominates them)",
    ),
    Const(
        "vector_latency_cycles",
        24,
        "cycles from a vector instruction's last repeat to its result (a "
        "PipeBarrier<PIPE_V> or a V flag waits for it)",
        "assumption: the vector pipeline depth is not published",
    ),
    Const(
        "pipe_barrier_cycles",
        16,
        "cycles of a PipeBarrier itself, after the drain",
        "assumption (the target files' pipe_barrier_cycles, same value)",
    ),
    Const(
        "copy_startup_cycles",
        64,
        "cycles per GM <-> UB/L1 transfer instruction before its first byte",
        "assumption sized by " + BEST_PRACTICE + ": with it, a 16 KB HBM read at 32 "
        "B/cycle reaches 89% of the full rate, a 2 KB read 50%",
    ),
    Const(
        "burst_cycles",
        2,
        "cycles per burst (blockCount) of a strided transfer",
        "assumption",
    ),
    Const(
        "load_data_startup_cycles",
        16,
        "cycles per LoadData (L1 -> L0A/L0B) instruction beyond its bytes",
        "assumption",
    ),
    Const(
        "mmad_startup_cycles",
        16,
        "cycles per Mmad beyond its fractal MACs",
        "assumption",
    ),
    Const(
        "fixpipe_startup_cycles",
        32,
        "cycles per Fixpipe (L0C -> GM) beyond its bytes",
        "assumption",
    ),
    Const(
        "mte_latency_cycles",
        64,
        "cycles from a copy's last byte to its data being usable (what a flag on "
        "that pipe waits for)",
        "assumption",
    ),
    Const(
        "flag_cycles",
        16,
        "cycles from a SetFlag to the WaitFlag it releases (same core)",
        "assumption",
    ),
    Const(
        "flag_handover_cycles",
        1000,
        "cycles from a CrossCoreSetFlag to the wait it releases on another core",
        f"{PTO_FA}: NPU_LOGICAL_TILE_SYNC_CYCLES = 1000, the onboard correction per "
        "logical cube/vector tile hand-over fitted to 910B3/B4 (220 in their "
        "simulator); taken per flag here",
    ),
    Const(
        "block_dispatch_cycles",
        2000,
        "cycles between the start of one block (blockDim index) and the next",
        f"{PTO_FA}: NPU_BLOCK_DISPATCH_CYCLES = 2000 per block, onboard correction",
    ),
    Const(
        "launch_overhead_cycles",
        10905,
        "cycles per kernel launch before the first block starts",
        f"{PTO_FA}: FitConstants.launch_overhead_cycles = 10904.841, fitted to "
        "their simulator traces (a target file may carry a value fitted to "
        "published native figures instead: perf/calibration.py)",
    ),
    Const(
        "pipe_queue_depth",
        32,
        "instructions the scalar unit may issue to one pipe ahead of its execution",
        "assumption: the depth of a pipe's instruction queue is not published",
    ),
)

CHIP_RATES: tuple[str, ...] = (
    "clock_hz",
    "cube_flops_per_cycle",
    "cube_f32_flops_per_cycle",
    "l1_to_l0a_bytes_per_cycle",
    "l1_to_l0b_bytes_per_cycle",
    "vector_elems_per_cycle",
    "vector_transcendental_cost",
    "hbm_bytes_per_s",
    "ddr_bytes_per_cycle",
    "mte2_bytes_per_cycle",
    "mte3_bytes_per_cycle",
    "fixpipe_bytes_per_cycle",
    "l2_bytes",
)
"""The target's rates the table charges (their sources are the target file's)."""

UNCERTAIN_RATES: tuple[str, ...] = (
    "cube_flops_per_cycle",
    "l1_to_l0a_bytes_per_cycle",
    "l1_to_l0b_bytes_per_cycle",
    "vector_elems_per_cycle",
    "vector_transcendental_cost",
    "hbm_bytes_per_s",
    "fixpipe_bytes_per_cycle",
    "iteration_overhead_cycles",
    "task_overhead_cycles",
)
"""Chip rates marked UNVERIFIED or assumption in the 910B files (moved in the range).
The clock, L2 read/write and ddr rates come from the platform .ini and stay put."""

BY_NAME = {c.name: c for c in CONSTANTS}


@dataclass(frozen=True)
class CostTable:
    """The per-instruction constants and the chip's rates of one target. A target
    file may carry a constant (a fitted value: ``perf/calibration.py``); then the
    file's value is the table's."""

    target: Target
    values: Mapping[str, float]
    """Every per-instruction constant, by name (``CONSTANTS``, or the target's)."""

    def __getitem__(self, name: str) -> float:
        if name in self.values:
            return float(self.values[name])
        return self.target.rate(name)

    def seconds(self, name: str) -> float:
        """A constant in cycles, in seconds at the target's clock."""
        return self[name] / self.target.rate("clock_hz")

    def scaled(self, factors: Mapping[str, float]) -> CostTable:
        """The table with some entries (constants or chip rates) multiplied."""
        return self.replaced({n: self[n] * k for n, k in factors.items()})

    def replaced(self, new: Mapping[str, float]) -> CostTable:
        """The table with some entries replaced. Its ``target`` carries every
        constant as a rate, so a model built from that target (``KernelModel``,
        ``native.estimate``) charges the same values."""
        values = dict(self.values)
        rates = dict(self.target.rates)
        for name, v in new.items():
            if name not in values and name not in rates:
                raise KeyError(f"no cost-table entry {name!r}")
            if name in values:
                values[name] = float(v)
        for name, v in values.items():
            old = rates.get(name)
            unit = old.unit if old else BY_NAME[name].unit
            source = old.source if old else BY_NAME[name].source
            rates[name] = Rate(name, float(v), unit, source)
        for name, v in new.items():
            if name not in values:
                r = rates[name]
                rates[name] = Rate(name, float(v), r.unit, r.source)
        return CostTable(dataclasses.replace(self.target, rates=rates), values)

    @property
    def clock(self) -> float:
        return self.target.rate("clock_hz")


def cost_table(
    target: Target, overrides: Mapping[str, float] | None = None
) -> CostTable:
    """The table for ``target`` (its file's value of a constant wins over the
    default); ``overrides`` replace constants by value."""
    rates = target.rates
    values = {
        c.name: rates[c.name].value if c.name in rates else float(c.value)
        for c in CONSTANTS
    }
    for name, v in (overrides or {}).items():
        if name not in values:
            raise KeyError(f"no per-instruction constant {name!r}")
        values[name] = float(v)
    return CostTable(target, values)


def uncertain_entries() -> tuple[str, ...]:
    """Every entry the range moves: the uncertain constants and chip rates."""
    return tuple(c.name for c in CONSTANTS if c.uncertain) + UNCERTAIN_RATES


def source_of(table: CostTable, name: str) -> str:
    if name in BY_NAME:
        return BY_NAME[name].source
    return table.target.rates[name].source
