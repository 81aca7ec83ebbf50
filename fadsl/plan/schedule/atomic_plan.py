"""The plan of ``atomic_add`` outputs on split chips, as CANN's FlashAttentionScoreGrad
sums dQ: an f32 GM region per output that the vector cores zero before the grid, add
into with ``SetAtomicAdd<float>`` during it, and cast into the output after it (two
``SyncAll``). An f32 output is its own sum (no region, no cast; ops-transformer's
``flash_attention_score_grad_pre.h`` zeroes ``dvGm`` itself when dV is f32).

The zero and cast steps move ``CHUNK`` elements at a time through two UB buffers of
the vector cores, which the resource proof counts like every other buffer.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import sympy

from fadsl.errors import Loc
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.ir.types import DType, Shape, TensorType
from fadsl.plan.memory.buffer_plan import Buffer

CHUNK = 1024
"""Elements each zero / cast step moves (4 KB of f32)."""
GM_ALIGN = 512
"""Bytes each sum region is aligned to in the workspace."""


@dataclass(frozen=True)
class AtomicSum:
    """One output that ``atomic_add`` writes."""

    output: str
    shape: Shape
    dtype: DType
    """The output's dtype; the sum is f32."""
    loc: Loc
    """The first ``atomic_add`` into it."""

    @property
    def direct(self) -> bool:
        """An f32 output accumulates in place: no workspace, no cast."""
        return self.dtype is DType.F32

    def bytes(self) -> Expr:
        """Bytes of its f32 GM region (0 when ``direct``), unaligned."""
        if self.direct:
            return sympy.Integer(0)
        return sympy.Mul(*self.shape) * 4


def _walk(ops: tuple[ir.Op, ...]) -> Iterator[ir.Op]:
    for op in ops:
        yield op
        yield from _walk(getattr(op, "body", ()))


def atomic_sums(kernel: ir.Kernel) -> tuple[AtomicSum, ...]:
    """The outputs some ``atomic_add`` (or scalar ``ScatterAdd``) writes, in
    parameter order."""
    first: dict[str, ir.AtomicAdd | ir.ScatterAdd] = {}
    for op in _walk(kernel.body):
        if isinstance(op, (ir.AtomicAdd, ir.ScatterAdd)):
            first.setdefault(op.dst, op)
    out = []
    for p in kernel.params:
        if p.name in first:
            assert isinstance(p.type, TensorType)
            out.append(AtomicSum(p.name, p.type.shape, p.type.dtype, first[p.name].loc))
    return tuple(out)


def atomic_buffers(sums: tuple[AtomicSum, ...], core: str, align: int) -> list[Buffer]:
    """The UB buffers of the zero and cast steps: an f32 chunk, and a chunk of the
    widest output dtype that needs a cast."""
    if not sums:
        return []
    loc = sums[0].loc
    out = [_tbuf("atomicSumBuf", DType.F32, core, loc, align)]
    casts = [s.dtype for s in sums if not s.direct]
    if casts:
        widest = max(casts, key=lambda d: d.itemsize)
        out.append(_tbuf("atomicCastBuf", widest, core, loc, align))
    return out


def _tbuf(name: str, dtype: DType, core: str, loc: Loc, align: int) -> Buffer:
    return Buffer(
        name,
        "UB",
        "VECCALC",
        core,
        (sympy.Integer(CHUNK),),
        dtype,
        1,
        "tbuf",
        "atomic sum",
        (),
        loc,
        0,
        align,
    )


__all__ = ["AtomicSum", "CHUNK", "GM_ALIGN", "atomic_sums", "atomic_buffers"]
