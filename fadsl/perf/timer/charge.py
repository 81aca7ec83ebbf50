"""What one executed instruction costs, from the cost table (``fadsl/perf/costs.py``).

``charge(instr, table)`` gives the cycles the instruction keeps its pipe busy, the
cycles after that until its result is usable (what a barrier or a flag on that pipe
waits for), and the GM bytes it reads or writes (the timer shares those between the
cores: ``perf/timer/memory.py``). Sync calls (flags, barriers, SyncAll) are timed by
the engine, not here.
"""

from __future__ import annotations

from dataclasses import dataclass

from fadsl.perf.costs import CostTable
from fadsl.perf.timer.instr import Instr

REPEAT_BYTES = 256
"""Bytes one vector repeat processes (asc-devkit kernel_utils_constants.h:
ONE_REPEAT_BYTE_SIZE = 256)."""

TRANSCENDENTAL = frozenset(
    {"Exp", "Ln", "Log", "Sqrt", "Rsqrt", "Reciprocal", "Tanh", "Power", "Sin", "Cos"}
)
"""Vector calls charged ``vector_transcendental_cost`` times a plain repeat."""

SYNC = frozenset(
    {
        "SetFlag",
        "WaitFlag",
        "PipeBarrier",
        "CrossCoreSetFlag",
        "CrossCoreWaitFlag",
        "SyncAll",
    }
)

SCALAR_ACCESS = frozenset({"GetValue", "SetValue"})

DTYPE_BYTES = {
    "f16": 2, "half": 2, "bf16": 2, "bfloat16_t": 2, "f32": 4, "float": 4, "i32": 4,
    "int32_t": 4,
    "u32": 4, "uint32_t": 4, "i16": 2, "int16_t": 2, "u16": 2, "uint16_t": 2,
    "i8": 1, "int8_t": 1, "u8": 1, "uint8_t": 1, "i64": 8, "int64_t": 8,
}  # fmt: skip


@dataclass(frozen=True)
class Charge:
    busy: float
    """Cycles the pipe is occupied."""
    latency: float
    """Cycles after ``busy`` until the result is usable."""
    gm_read: int = 0
    gm_write: int = 0
    rate: float = 0.0
    """Bytes per cycle of the transfer path (the one core's own limit)."""
    startup: float = 0.0
    """Cycles of ``busy`` that are not bytes (for re-timing under shared bandwidth)."""


def dtype_bytes(dtype: str | None) -> int:
    return DTYPE_BYTES.get((dtype or "f32").lower(), 4)


def repeats(i: Instr) -> int:
    """The record's repeat count, or the repeats a count-based call needs."""
    if i.repeats is not None:
        return max(1, i.repeats)
    if i.elems is not None:
        return max(1, -(-i.elems * dtype_bytes(i.dtype) // REPEAT_BYTES))
    return 1


def charge(i: Instr, t: CostTable, operands: str | None = None) -> Charge:
    """Busy cycles, latency and GM bytes of one non-sync instruction; ``operands``:
    the dtype of the cube's operands (of the last LoadData into L0A/L0B) for Mmad."""
    if i.pipe == "S" or i.api in SCALAR_ACCESS:
        cycles = t["scalar_access_cycles"] if i.api in SCALAR_ACCESS else 0.0
        return Charge(cycles, 0.0)
    if i.pipe == "V":
        return _vector(i, t)
    if i.pipe == "M":
        return _mmad(i, t, operands or i.dtype)
    if i.pipe == "MTE1":
        return _load_data(i, t)
    if i.pipe == "FIX":
        return _transfer(
            i, t, t["fixpipe_bytes_per_cycle"], t["fixpipe_startup_cycles"]
        )
    if i.pipe in ("MTE2", "MTE3"):
        return _copy(i, t)
    return Charge(0.0, 0.0)


def _vector(i: Instr, t: CostTable) -> Charge:
    per = REPEAT_BYTES / (4 * t["vector_elems_per_cycle"])
    if i.api in TRANSCENDENTAL:
        per *= t["vector_transcendental_cost"]
    if i.api == "DataCopy" or i.api == "Copy":  # UB -> UB on the vector pipe
        per = REPEAT_BYTES / (4 * t["vector_elems_per_cycle"])
    busy = t["vector_startup_cycles"] + repeats(i) * per
    return Charge(busy, t["vector_latency_cycles"])


def _mmad(i: Instr, t: CostTable, operands: str | None) -> Charge:
    m, k, n = (max(1, x or 1) for x in (i.m, i.k, i.n))
    fractals = -(-m // 16) * -(-k // 16) * -(-n // 16)
    wide = dtype_bytes(operands) == 4
    rate = "cube_f32_flops_per_cycle" if wide else "cube_flops_per_cycle"
    busy = t["mmad_startup_cycles"] + fractals * 2 * 16 * 16 * 16 / t[rate]
    return Charge(busy, 0.0)


def _load_data(i: Instr, t: CostTable) -> Charge:
    rate = (
        t["l1_to_l0b_bytes_per_cycle"]
        if i.dst == "L0B"
        else t["l1_to_l0a_bytes_per_cycle"]
    )
    return Charge(t["load_data_startup_cycles"] + (i.nbytes or 0) / rate, 0.0)


def _transfer(i: Instr, t: CostTable, rate: float, startup: float) -> Charge:
    nbytes = i.nbytes or 0
    write = nbytes if i.dst == "GM" else 0
    read = nbytes if i.src == "GM" else 0
    return Charge(
        startup + nbytes / rate, t["mte_latency_cycles"], read, write, rate, startup
    )


def _copy(i: Instr, t: CostTable) -> Charge:
    """A DataCopy / DataCopyPad: start-up, a cost per burst, then the bytes at the
    path's rate (a GM read at the L2 rate here; the timer re-times misses at the HBM
    share: ``perf/timer/memory.py``)."""
    startup = t["copy_startup_cycles"] + (i.blocks or 1) * t["burst_cycles"]
    if i.src == "GM":
        rate = t["mte2_bytes_per_cycle"]
    elif i.dst == "GM":
        rate = t["mte3_bytes_per_cycle"]
    else:  # UB -> L1 and other local moves: at the L2 read rate (assumption)
        rate = t["mte2_bytes_per_cycle"]
    return _transfer(i, t, rate, startup)
