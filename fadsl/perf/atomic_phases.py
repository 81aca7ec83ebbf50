"""The modelled time of the phases ``atomic_add`` adds around the grid (MODELLED).

The generated kernel (backends/ascendc/atomic_io.py) zeroes every f32 sum before the
grid and casts it into its output after it, each vector core its share, with a
``SyncAll`` after each phase. Each step of those loops waits for the one before
(``SetWaitFlag``), so the model adds, per AI core (its two vector cores share its
part): the MTE3 writes of the zeroing; the MTE2 reads, the vector Cast and the MTE3
writes of the cast; each bounded below by the chip's HBM bandwidth for all bytes;
and three cross-core flag handovers per SyncAll (AIV -> AIC, AIC -> AIC, AIC -> AIV).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.types import DType, TensorType
from fadsl.perf.engines import Engines
from fadsl.plan.resources.footprint_eval import exact
from fadsl.target import Target

HANDOVERS_PER_SYNC_ALL = 3


def _sums(kernel: ir.Kernel) -> list[ir.Param]:
    names: set[str] = set()

    def walk(ops: tuple[ir.Op, ...]) -> None:
        for op in ops:
            if isinstance(op, ir.AtomicAdd):
                names.add(op.dst)
            walk(getattr(op, "body", ()))

    walk(kernel.body)
    return [p for p in kernel.params if p.name in names]


def atomic_phases(
    kernel: ir.Kernel, target: Target, env: Mapping[str, Any], e: Engines, dim: int
) -> tuple[float, int]:
    """(seconds, HBM bytes) of the zero and cast phases; (0, 0) without atomic_add."""
    sums = _sums(kernel)
    if not sums or dim <= 0:
        return 0.0, 0
    hbm = target.rate("hbm_bytes_per_s")
    zero = read = write = elems = 0.0
    for p in sums:
        assert isinstance(p.type, TensorType)
        n = float(exact(sympy.Mul(*p.type.shape), env))
        zero += 4 * n
        if p.type.dtype is not DType.F32:  # an f32 output is its own sum
            read, write = read + 4 * n, write + p.type.dtype.itemsize * n
            elems += n
    units = e.vector_units
    zero_s = max(zero / dim / (units * e.mte3), zero / hbm)
    cast_s = 0.0
    if elems:
        per_core = (
            e.read_s(read / dim / units, 0.0)
            + elems / dim / units / e.vector
            + write / dim / units / e.mte3
        )
        cast_s = max(per_core, (read + write) / hbm)
    syncs = 2 if elems else 1
    sync_s = syncs * HANDOVERS_PER_SYNC_ALL * e.flag_s
    return zero_s + cast_s + sync_s, int(round(zero + read + write))


__all__ = ["atomic_phases", "HANDOVERS_PER_SYNC_ALL"]
