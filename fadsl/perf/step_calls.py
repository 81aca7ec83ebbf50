"""The Ascend C calls a model step stands for, counted as the backend emits them.

A vector step (a group of vector ops, ``perf/timeline_steps.py``) issues, per op, the
calls of the op's instruction form (``plan/memory/vector_forms.py`` decides the form as the
backend does; ``plan/memory/instr_counts.py`` counts the calls of the form's rule and the
``fadsl_tile.h`` helper it calls) and a PipeBarrier<PIPE_V> before each op that
touches a value an earlier op wrote since the last barrier (the emitter's rule,
``VectorEmitter._barrier``; the group starts after a hand-over, so its first op has
one). An MTE1 step issues one LoadData per 16-row strip (or column block) of the
operands it moves. The counts depend on the shapes, so a ``VectorCall`` keeps the
shape expressions and ``Timer`` evaluates them at the task's point.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
import dataclasses
from dataclasses import dataclass
from typing import Any

import sympy

from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, as_expr
from fadsl.ir.types import QueueType, Shape, TileType
from fadsl.plan.memory.gm_geometry import geometry
from fadsl.plan.resources.footprint_eval import exact
from fadsl.plan.memory.instr_counts import Calls, form_calls
from fadsl.plan.memory.vector_forms import form_of


@dataclass(frozen=True)
class VectorCall:
    """One op of a vector step: its form, its [rows, cols] (whole tile, before the
    split between vector cores and row chunks) and the barrier the emitter puts
    before it."""

    form: str
    select: str
    rows: Expr
    cols: Expr
    itemsize: int
    barrier: bool
    times: Expr
    """The op's share of the blocks that run it (1, or a guarded op's share)."""

    def calls(self, env: Mapping[str, Any], split: int, chunks: int) -> Calls:
        """Calls of one vector core for the whole tile: per row chunk of
        rows / (split x chunks) rows, ``chunks`` times."""
        rows = int(round(float(exact(self.rows, env))))
        cols = int(round(float(exact(self.cols, env))))
        part = max(1, -(-rows // (split * chunks)))
        c = form_calls(self.form, self.select, part, cols, self.itemsize)
        c = c + Calls(0, 1 if self.barrier else 0)
        share = share_of(self.times, env)
        return Calls(
            round(c.vector * chunks * share),
            round(c.barriers * chunks * share),
            round(c.scalar_reads * chunks * share),
        )


def share_of(times: Expr, env: Mapping[str, Any]) -> float:
    """A guarded op's share of the blocks (``perf/guard_share.py``: guarded blocks
    over the loop's blocks) as a fraction: ``exact`` rounds up, which charged a
    select run in one block of two to every block."""
    num, den = sympy.fraction(sympy.sympify(times))
    return float(exact(num, env)) / max(1, exact(den, env))


def _tile(v: ir.Operand) -> TileType | None:
    if isinstance(v, ir.Imm):
        return None
    t = v.type
    t = t.tile if isinstance(t, QueueType) else t
    return t if isinstance(t, TileType) else None


def _shape(v: ir.Operand) -> Shape | None:
    t = _tile(v)
    return None if t is None else t.shape


def vector_calls(
    group: Iterable[ir.Op],
    defs: dict[ir.Value, ir.Op],
    alias: Mapping[str, str],
    times: Mapping[int, Any],
) -> tuple[VectorCall, ...]:
    """The ops of a vector step with their forms and barriers, in issue order."""
    out = []
    dirty: set[str] | None = None  # None: the step starts dirty (after a hand-over)
    for op in group:
        if not isinstance(op, ir.ValueOp):
            continue
        forms = [(f, n) for f, n in _forms(op, defs) if n]
        if not forms:
            continue  # evaluated inside the op that reads it: no call, no barrier
        reads = list(op.operand_values())
        for v in list(reads):  # a where's Compare reads the comparison's operands
            made = defs.get(v)
            if made is not None and not forms_of_op(made, defs):
                reads += list(made.operand_values())
        touched = {alias.get(v.name, v.name) for v in reads}
        touched |= {r.name for r in op.results()}
        barrier = dirty is None or bool(touched & dirty)
        if barrier:
            dirty = set()
        assert dirty is not None
        for k, (f, name) in enumerate(forms):
            dirty |= {r.name for r in op.results()}
            out.append(_call(op, f, name, barrier, _share(op, k, defs, times)))
            barrier = False
    return tuple(out)


def _share(
    op: ir.ValueOp, k: int, defs: dict[ir.Value, ir.Op], times: Mapping[int, Any]
) -> Mapping[int, Any]:
    """The guard share of ``op``'s k-th select: a where of ``x & y`` runs one select
    per comparison, each guarded on its own (``perf/guard_share.py`` keys each
    comparison's share by its compare op, a feeder of its guard); the where's own
    share stood for the first only, so a causal select after the KV-tail one was
    charged the tail's share (none when Skv is a multiple of block_kv)."""
    if isinstance(op, ir.Where) and isinstance(op.cond, ir.Value):
        leaves = _compares(op.cond, defs)
        if len(leaves) > 1 and k < len(leaves):
            made = defs.get(leaves[k])
            if made is not None and id(made) in times:
                return {id(op): times[id(made)]}
    return times


def forms_of_op(op: ir.Op, defs: dict[ir.Value, ir.Op]) -> bool:
    """Whether ``op`` issues vector calls of its own (not a fused comparison, a view
    or a logic op, nor a load or a dot)."""
    if not isinstance(op, ir.ValueOp) or isinstance(op, (ir.Load, ir.Dot)):
        return True
    return any(n for _, n in _forms(op, defs))


def _forms(op: ir.ValueOp, defs: dict[ir.Value, ir.Op]) -> list[tuple[Any, str]]:
    """(form, counted form name) of the instructions ``op`` becomes after
    ``passes/lower_vector.py``: a where of ``x & y`` (``|``, ``~``) is one where per
    comparison; a logic op itself none; an integer arange is converted to f32 right
    after it is made; an op without a form here (integer // and %, lowered to f32
    sequences) is counted as one call."""
    if isinstance(op, (ir.And, ir.Or, ir.Not)):
        return [(None, "")]
    if isinstance(op, ir.Where) and isinstance(op.cond, ir.Value):
        leaves = _compares(op.cond, defs)
        if leaves and leaves != [op.cond]:
            return [
                (f, _form_name(op, f))
                for c in leaves
                for f in [form_of(dataclasses.replace(op, cond=c), _shape, defs)]
            ]
    try:
        f = form_of(op, _shape, defs)
    except BackendError:
        return [(None, "scalar")]
    if f.name in ("fused", "view"):
        return [(None, "")]
    name = _form_name(op, f)
    if isinstance(op, ir.Arange) and not op.result.type.dtype.is_float:  # type: ignore[union-attr]
        name = "iota_f32"
    return [(f, name)]


def _compares(v: ir.Value, defs: dict[ir.Value, ir.Op]) -> list[ir.Value]:
    """The comparisons a mask ``v`` is made of (through And, Or, Not)."""
    op = defs.get(v)
    if isinstance(op, ir.Not):
        return _compares(op.x, defs)  # type: ignore[arg-type]
    if isinstance(op, (ir.And, ir.Or)):
        return [
            c
            for x in (op.lhs, op.rhs)
            if isinstance(x, ir.Value)
            for c in _compares(x, defs)
        ]
    return [v]


def _call(
    op: ir.ValueOp, f: Any, name: str, barrier: bool, times: Mapping[int, Any]
) -> VectorCall:
    if True:
        t = _tile(op.result)
        shape = t.shape if t is not None else ()
        rows = shape[0] if len(shape) >= 1 else as_expr(1)
        cols = shape[1] if len(shape) >= 2 else as_expr(1)
        src = _tile(op.x) if isinstance(op, ir.Reduce) else None
        if src is not None:  # a reduction's calls go by its input's columns
            rows, cols = src.shape[0], src.shape[1]
        item = (src or t).dtype.itemsize if (src or t) is not None else 4
        select = f.select if f is not None else ""
        return VectorCall(
            name, select, rows, cols, item, barrier, as_expr(times.get(id(op), 1))
        )


def _form_name(op: ir.Op, f: Any) -> str:
    """The form, told apart where the rule differs within it (Exp2's helper; a
    mask_full whose comparison spreads a row or a column first)."""
    if isinstance(op, ir.Exp2):
        return "exp2"
    if f.name == "mask_full":
        roles = [t.role for t in f.temps]
        if roles.count("broadcast") == 2:
            return "mask_full_row"
        if roles.count("broadcast") == 1:
            return "mask_full_col"
    return str(f.name)


def total(
    calls: tuple[VectorCall, ...], env: Mapping[str, Any], split: int, chunks: int
) -> Calls:
    out = Calls()
    for c in calls:
        out = out + c.calls(env, split, chunks)
    return out


__all__ = ["VectorCall", "vector_calls", "total"]


@dataclass(frozen=True)
class LoadDataCall:
    """The LoadData calls of one MTE1 step: A [m, k] (unless resident) and B [k, n]
    windows, by the cube helper the backend calls (``plan/memory/instr_counts.py``)."""

    m: Expr
    k: Expr
    n: Expr
    transpose_a: bool
    transpose_b: bool
    moved_a: bool
    part: bool
    """A sub-dot window (``LoadAPart`` / ``LoadBPart`` / ``LoadBTransposedPart``)."""
    itemsize: int

    def count(self, env: Mapping[str, Any]) -> int:
        from fadsl.plan.memory.instr_counts import load_a, load_b

        m, k, n = (int(round(float(exact(x, env)))) for x in (self.m, self.k, self.n))
        a = load_a(m, k, self.transpose_a, self.itemsize) if self.moved_a else 0
        return a + load_b(k, n, self.transpose_b, self.itemsize, self.part)


def load_data_call(op: ir.Dot, moved_a: bool, window: Any = None) -> LoadDataCall:
    """``op``'s MTE1 step (``window``: a sub-dot's (m, k, n), else the whole dot)."""
    ta, tc = _tile(op.a), _tile(op.result)
    assert ta is not None and tc is not None
    if window is not None:
        m, k, n = (as_expr(x) for x in window)
    else:
        m, k = (ta.shape[1], ta.shape[0]) if op.transpose_a else ta.shape[:2]
        n = tc.shape[1]
    return LoadDataCall(
        m, k, n, op.transpose_a, op.transpose_b, moved_a, window is not None,
        ta.dtype.itemsize,
    )  # fmt: skip


@dataclass(frozen=True)
class GmCopy:
    """A load or store step's GM transfer: one burst per row of the tile (the
    backend's Nd2Nz copy into L1 and DataCopyPad to or from UB move a tile row by
    row; a workspace copy is contiguous: one burst)."""

    rows: Expr

    def bursts(self, env: Mapping[str, Any], per_core: int) -> int:
        rows = int(round(float(exact(self.rows, env))))
        return max(1, -(-rows // per_core))


def pad_fill(
    op: ir.Load, param: ir.Param | None, to_cube: bool
) -> tuple[VectorCall, ...]:
    """The Duplicate that fills a vector load's pad before its copy in every block
    (``backends/ascendc/vector_io._fill``): a load with ``pad`` whose columns can have
    a tail (``plan/memory/gm_geometry``: e.g. a row vector ``lse[b, h, rows]``). A
    tile with whole columns fills its pad only in a block with a row tail (not
    counted, as the model counts no tail block's extra calls)."""
    if to_cube or op.pad is None or param is None or isinstance(op, ir.LoadPages):
        return ()
    try:
        tail = geometry(param, op.index).col_tail
    except BackendError:
        return ()
    t = _tile(op.result)
    if not tail or t is None:
        return ()
    rows = t.shape[0] if t.shape else as_expr(1)
    cols = t.shape[1] if len(t.shape) >= 2 else as_expr(1)
    return (VectorCall("dup", "", rows, cols, t.dtype.itemsize, False, as_expr(1)),)


def gm_copy(v: ir.Operand) -> tuple[GmCopy, ...]:
    """The bursts of a load or store of ``v`` (a 2-D tile: its rows)."""
    t = _tile(v)
    if t is None or len(t.shape) < 2:
        return ()
    return (GmCopy(t.shape[0]),)
