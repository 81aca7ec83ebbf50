"""``ScatterAdd`` on the vector cores: the gradients of a mod's captured tensors.

Issue 29, item 3. Each vector core adds the part of its own rows of ``g`` (a split
tile: the two AIVs hold different rows; a tile both hold whole is added by sub-block
0 only) into the f32 sum of ``d<name>`` under ``SetAtomicAdd<float>``
(``atomic_io.bracket``), as dQ's rows are added; the sums are zeroed before the grid
and cast into ``d<name>`` after it (``atomic_io``).

- a scalar read (``dalpha[h] += sum(g)``): the level-2 ``ReduceSum`` into element 0
  of a 32-byte f32 buffer, one ``DataCopyPad`` of 4 bytes;
- a gather (``drel[index] += g``, the indices in the window ``[base, base + width)``
  the forward gather loaded): per window entry a ``CompareScalar`` of the index tile,
  a ``Select`` of ``g`` and a ``ReduceSum`` into an f32 UB window, then one
  ``DataCopyPad`` of the window's entries inside the tensor;
- a block of columns (``dkey_bias[kv0 + j] += sum_i g[i, j]``): the column sums (an
  ``Add`` per row) into the window, then the same copy.

A V -> MTE3 wait comes before each copy and an MTE3 -> V wait after it (the window is
written again by the next block). Costs: ``perf/cost_work.py``; UB temporaries:
``plan/memory/scatter_form.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy

from fadsl.backends.ascendc import atomic_io, vector_temps
from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, as_expr, evaluate
from fadsl.errors import BackendError
from fadsl.ir.types import DType, TensorType, TileType
from fadsl.plan.memory.gm_geometry import strides
from fadsl.plan.schedule.atomic_plan import AtomicSum

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter

__all__ = ["scalar_add", "window_add"]


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
    reduce = Line(f"AscendC::ReduceSum({top}, {e.var(g)}, {work}, {e.count(g)});")
    return out + [_added(e, pos, g, [reduce], atomic_io.bracket((copy,)))]


def window_add(e: VectorEmitter, op: ir.ScatterAdd, pos: int) -> list[Stmt]:
    """A gather's gradient: per window entry ``w``, CompareScalar of the index tile
    with ``base + w``, Select of ``g`` there (0 elsewhere), ReduceSum into element
    ``w`` of an f32 window. A block of columns': the column sums of this core's rows
    (one Add per row). Then the window's part inside the tensor is added to GM with
    one DataCopyPad under SetAtomicAdd<float>. Each vector core adds its own rows."""
    assert op.base is not None and op.width is not None
    form = e.vec.forms[pos]
    names = vector_temps.names(form)
    g, window = op.value, names[0] if form.name == "scatter_columns" else names[1]
    touched = {e.vec.homes.get(v.name, "") for v in (g, *op.at)}
    out: list[Stmt] = list(e._barrier(touched | set(e.vec.temps.get(pos, ()))))
    if form.name == "scatter_columns":
        body = _column_sums(e, g, window)
    else:
        body = _entries(e, op, names)
    base, width = e.names.expr(op.base), e.names.expr(op.width)
    dst = atomic_io.sum_gm(e.names, _sum(e, op.dst))
    p = _param(e, op.dst)
    ext = e.names.expr(p.type.shape[op.axes[0]])  # type: ignore[union-attr]
    start = e.names.expr(_offset(e, op) + op.base * _stride(e, op))
    copy = Line(
        f"AscendC::DataCopyPad({dst}[{start}], {window}, AscendC::DataCopyExtParams{{1, "
        'fadsl::Field<uint32_t>(windowLen * sizeof(float), "DataCopyExtParams.blockLen"), '
        "0, 0, 0});"
    )
    length = f"({ext}) - ({base}) < ({width}) ? ({ext}) - ({base}) : ({width})"
    add = (Block("if (windowLen > 0)", atomic_io.bracket((copy,))),)
    first = [Line(f"const int64_t windowLen = {length};"), *body]  # inside the tensor
    return out + [_added(e, pos, g, first, add)]


def _added(
    e: VectorEmitter,
    pos: int,
    g: ir.Value,
    compute: list[Stmt],
    add: tuple[Stmt, ...],
) -> Stmt:
    """The op's temporaries, ``compute``, then the atomic ``add`` between a V -> MTE3
    and an MTE3 -> V wait; by sub-block 0 alone where both cores hold ``g`` whole."""
    if e.low.split.blocks and e.low.split.block_of(g) is None:
        add = (Block("if (AscendC::GetSubBlockIdx() == 0)", add),)
    calls = [
        *compute,
        Line("fadsl::SetWaitFlag<AscendC::HardEvent::V_MTE3>();"),
        *add,
        Line("fadsl::SetWaitFlag<AscendC::HardEvent::MTE3_V>();"),
    ]
    decls = [Line(t) for t in vector_temps.decls(e, pos, e.vec.forms[pos])]
    e.dirty |= set(e.vec.temps.get(pos, ()))
    return Block("", tuple(decls + calls))


def _column_sums(e: VectorEmitter, g: ir.Value, window: str) -> list[Stmt]:
    """window = the sum of this core's rows of ``g`` (each row 32-byte aligned: the
    columns are a multiple of 8 f32)."""
    if int(evaluate(as_expr(e.shape(g)[-1]), e.low.env)) % 8:
        raise BackendError(
            f"the column sums of a {e.shape(g)} tile: its rows are not whole 32-byte "
            "blocks, where each row's Add must start",
            None,
            hint="use a block_kv that is a multiple of 16",
            code="tensor_grad_not_on_ascendc",
        )
    rows, cols = (e.names.expr(d) for d in e.shape(g))
    var = e.var(g)
    return [
        Line(f"AscendC::Adds({window}, {var}, 0.0f, {cols});"),
        _BARRIER,
        Block(
            f"for (int64_t r = 1; r < {rows}; ++r)",
            (
                Line(f"AscendC::Add({window}, {window}, {var}[r * {cols}], {cols});"),
                _BARRIER,
            ),
        ),
    ]


def _entries(e: VectorEmitter, op: ir.ScatterAdd, names: tuple[str, ...]) -> list[Stmt]:
    """The gather's per-entry loop (after the index copy, where needed)."""
    assert op.base is not None
    work, window, mask, sel = names[:4]
    g, at = op.value, op.at[0]
    n = e.count(g)
    idx = e.var(at) + _rows_of(e, at, g)
    cmp_n, pre = n, []
    if len(names) > 4:
        pre, idx, cmp_n = _index_copy(e, op, names[4], idx, n)
    elif int(evaluate(as_expr(e.shape(g)[0] * e.shape(g)[-1]), e.low.env)) % 64:
        raise BackendError(
            f"scatter_add into `{op.dst}`: {n} f32 indices are not whole 256-byte "
            "repeats, which CompareScalar reads",
            op.loc,
            hint="use a block_kv that is a multiple of 16",
            code="tensor_grad_not_on_ascendc",
        )
    base = e.names.expr(op.base)
    entry = Block(
        "for (int32_t w = 0; w < static_cast<int32_t>(windowLen); ++w)",
        (
            Line(
                f"AscendC::CompareScalar({mask}, {idx}, static_cast<float>(({base}) + w), "
                f"AscendC::CMPMODE::EQ, {cmp_n});"
            ),
            _BARRIER,
            Line(
                f"AscendC::Select({sel}, {mask}, {e.var(g)}, 0.0f, "
                f"AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, {n});"
            ),
            _BARRIER,
            Line(f"AscendC::ReduceSum({window}[w], {sel}, {work}, {n});"),
            _BARRIER,
        ),
    )
    return pre + [entry]


_BARRIER = Line("AscendC::PipeBarrier<PIPE_V>();")


def _index_copy(
    e: VectorEmitter, op: ir.ScatterAdd, temp: str, idx: str, n: str
) -> tuple[list[Stmt], str, str]:
    """The indices as f32 in ``temp``, its lanes past ``n`` up to a whole repeat set to
    -1 (no window entry): (statements, the tensor to compare, the compare count)."""
    t = op.at[0].type
    assert isinstance(t, TileType)
    padded = f"fadsl::CeilDiv<int64_t>({n}, 64) * 64"
    copy = (
        f"AscendC::Cast({temp}, {idx}, AscendC::RoundMode::CAST_NONE, {n});"
        if t.dtype is not DType.F32
        else f"AscendC::Adds({temp}, {idx}, 0.0f, {n});"
    )
    stmts = [
        Line(f"AscendC::Duplicate({temp}, -1.0f, {padded});"),
        _BARRIER,
        Line(copy),
        _BARRIER,
    ]
    return stmts, temp, padded


def _rows_of(e: VectorEmitter, at: ir.Value, g: ir.Value) -> str:
    """The index tile at this core's rows of ``g``: ``""`` when it is split as ``g``
    is, else (held whole by both vector cores) a view from this core's first row."""
    split = e.low.split
    if not split.blocks or split.block_of(at) is not None:
        return ""
    if split.block_of(g) is None:
        return ""
    rows, cols = e.shape(g)[0], e.shape(at)[-1]
    return f"[AscendC::GetSubBlockIdx() * {e.names.expr(rows * cols)}]"


def _param(e: VectorEmitter, name: str) -> ir.Param:
    return next(p for p in e.low.kernel.params if p.name == name)


def _stride(e: VectorEmitter, op: ir.ScatterAdd) -> Expr:
    t = _param(e, op.dst).type
    assert isinstance(t, TensorType)
    return strides(t.shape)[op.axes[0]]


def _sum(e: VectorEmitter, name: str) -> AtomicSum:
    return next(a for a in e.low.plan.atomics if a.output == name)


def _offset(e: VectorEmitter, op: ir.ScatterAdd) -> Expr:
    p = _param(e, op.dst)
    assert isinstance(p.type, TensorType)
    terms = [ix * s for ix, s in zip(op.index, strides(p.type.shape))]
    return sympy.Add(*terms)
