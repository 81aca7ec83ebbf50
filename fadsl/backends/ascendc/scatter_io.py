"""``ScatterAdd`` into one element on the vector cores: a scalar read's gradient.

``dalpha[h] += sum(g)`` for ``alpha[h]`` in a score_mod (issue 29, item 3). Each vector
core sums its own rows of ``g`` (a split tile: the two AIVs hold different rows) with
the level-2 ``ReduceSum`` into element 0 of a 32-byte f32 buffer, and adds that
partial into the f32 sum of ``dalpha`` with one ``DataCopyPad`` of 4 bytes between
``SetAtomicAdd<float>`` and ``SetAtomicNone`` (``atomic_io.bracket``), as dQ's rows
are added. A tile both AIVs hold whole is added by sub-block 0 only. The sums are
zeroed before the grid and cast into ``dalpha`` after it (``atomic_io``).
Cost per block and core: one ReduceSum over the core's rows of ``g`` and one 4-byte
MTE3 copy, with a V -> MTE3 and an MTE3 -> V wait around it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy

from fadsl.backends.ascendc import atomic_io, vector_temps
from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.ir.types import TensorType
from fadsl.plan.memory.gm_geometry import strides
from fadsl.plan.schedule.atomic_plan import AtomicSum

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter

__all__ = ["scalar_add"]


def scalar_add(e: VectorEmitter, op: ir.ScatterAdd, pos: int) -> list[Stmt]:
    """The partial sum of this core's rows of ``op.value``, atomically added to GM."""
    form = e.vec.forms[pos]
    work, top = vector_temps.names(form)
    g = op.value
    touched = {e.vec.homes.get(g.name, "")} | set(e.vec.temps.get(pos, ()))
    out: list[Stmt] = list(e._barrier(touched))
    dst = atomic_io.sum_gm(e.names, _sum(e, op.dst))
    copy = Line(
        f"AscendC::DataCopyPad({dst}[{e.names.expr(_offset(e, op))}], {top}, "
        "AscendC::DataCopyExtParams{1, static_cast<uint32_t>(sizeof(float)), 0, 0, 0});"
    )
    add: tuple[Stmt, ...] = atomic_io.bracket((copy,))
    if e.low.split.blocks and e.low.split.block_of(g) is None:
        add = (Block("if (AscendC::GetSubBlockIdx() == 0)", add),)
    calls = [
        Line(f"AscendC::ReduceSum({top}, {e.var(g)}, {work}, {e.count(g)});"),
        Line("fadsl::SetWaitFlag<AscendC::HardEvent::V_MTE3>();"),
        *add,
        Line("fadsl::SetWaitFlag<AscendC::HardEvent::MTE3_V>();"),
    ]
    decls = [Line(t) for t in vector_temps.decls(e, pos, form)]
    out.append(Block("", tuple(decls + calls)))
    e.dirty |= set(e.vec.temps.get(pos, ()))
    return out


def _sum(e: VectorEmitter, name: str) -> AtomicSum:
    return next(a for a in e.low.plan.atomics if a.output == name)


def _offset(e: VectorEmitter, op: ir.ScatterAdd) -> Expr:
    p = next(p for p in e.low.kernel.params if p.name == op.dst)
    assert isinstance(p.type, TensorType)
    terms = [ix * s for ix, s in zip(op.index, strides(p.type.shape))]
    return sympy.Add(*terms)
