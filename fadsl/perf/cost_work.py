"""The work of a kernel counted from its IR, as sympy expressions (for the cost model).

Walks the grid body of a typed kernel (before pipelining): the task's own code and
each KV loop, whose body is counted once per iteration. Per op: MTE2/MTE3 bytes of
loads and stores, cube FLOPs and L1 -> L0 bytes of dots, vector element-operations
(transcendentals apart), and on split chips the bytes of values that cross between
the cube and the vector cores through a GM workspace. docs/cost-model.md has the
table. ``fadsl/perf/cost_model.py`` turns the amounts into times; ``fadsl/perf/timeline.py``
counts them op by op to schedule events.

Non-goals: times and rates (cost_model), anything about buffers (check_resources).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sympy

from fadsl.errors import InternalError, UsageError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.ir.op_table import OpTable
from fadsl.ir.types import DType, TensorType, TileType
from fadsl.perf.loop_nest import flatten
from fadsl.target import Target

FREE = (
    ir.ExpandDims,
    ir.QueueAlloc,
    ir.AllocTensor,
    ir.Enqueue,
    ir.Dequeue,
    ir.FreeTensor,
)
"""Views and queue bookkeeping: no work of their own."""
WORK_KEYS = (
    "mte2_bytes",
    "mte3_bytes",
    "cube_flops",
    "cube_f32_flops",
    "l0a_bytes",
    "l0b_bytes",
    "vector_ops",
    "vector_transcendental",
    "ws_bytes",
)


@dataclass
class Work:
    """Symbolic amounts of work of one KV iteration or of one task's own code."""

    amounts: dict[str, Expr] = field(
        default_factory=lambda: {k: sympy.Integer(0) for k in WORK_KEYS}
    )
    crossing: set[str] = field(default_factory=set)
    """Values already charged as cube <-> vector workspace traffic."""

    def add(self, key: str, amount: Expr) -> None:
        self.amounts[key] = self.amounts[key] + amount


@dataclass(frozen=True)
class Loop:
    """One KV loop of the grid body: its trip count, stages and per-iteration work."""

    var: str
    trips: Expr
    stages: int
    work: Work


def grid_of(kernel: ir.Kernel) -> ir.Grid:
    grids = [op for op in kernel.body if isinstance(op, ir.Grid)]
    if len(grids) != 1:
        raise UsageError(
            f"the cost model needs exactly one fd.grid loop in kernel "
            f"`{kernel.name}`, found {len(grids)}",
            kernel.loc,
        )
    return grids[0]


def kernel_type(grid: ir.Grid, target: Target) -> str:
    if not target.split:
        return "AICORE"
    has_dot = any(isinstance(op, ir.Dot) for op in walk(grid.body))
    return "MIX_AIC_1_2" if has_dot else "AIV_ONLY"


def walk(body: tuple[ir.Op, ...]) -> list[ir.Op]:
    out: list[ir.Op] = []
    for op in body:
        out.append(op)
        if isinstance(op, (ir.Grid, ir.For)):
            out += walk(op.body)
    return out


def workload(grid: ir.Grid, split: bool) -> tuple[Work, list[Loop]]:
    producers = {r: op for op in walk(grid.body) for r in op.results()}
    task = Work()
    loops: list[Loop] = []
    for op in grid.body:
        if isinstance(op, ir.For):
            w = Work()
            nest = flatten(op)  # a perfect nest: its innermost body per iteration
            count_body(nest.loop.body, w, producers, split, sympy.Integer(1))
            loops.append(Loop(nest.loop.var, nest.trips, nest.loop.stages, w))
        else:
            count_op(op, task, producers, split, sympy.Integer(1))
    return task, loops


def count_body(
    body: tuple[ir.Op, ...],
    w: Work,
    producers: dict[ir.Value, ir.Op],
    split: bool,
    times: Expr,
) -> None:
    for op in body:
        if isinstance(op, ir.For):
            count_body(op.body, w, producers, split, times * (op.stop - op.start))
        else:
            count_op(op, w, producers, split, times)


def elems(t: object) -> Expr:
    if isinstance(t, (TileType, TensorType)):
        return sympy.Mul(*t.shape) if t.shape else sympy.Integer(1)
    return sympy.Integer(1)


def value_bytes(v: ir.Value) -> Expr:
    assert isinstance(v.type, TileType)
    return elems(v.type) * v.type.dtype.itemsize


@dataclass(frozen=True)
class At:
    """Where an op is counted: the op making each value, split chip, times it runs."""

    producers: dict[ir.Value, ir.Op]
    split: bool
    times: Expr


CostOf = Callable[[Any, Work, At], None]
"""(op, the work it adds to, where it runs) -> None."""

COST: OpTable[CostOf] = OpTable("cost entry", "COST", "cost", "fadsl/perf/cost_work.py")
cost = COST.register


def count_op(
    op: ir.Op, w: Work, producers: dict[ir.Value, ir.Op], split: bool, times: Expr
) -> None:
    entry = COST.lookup(type(op))
    if entry is None:
        raise InternalError(f"{ir.op_name(type(op))} has no cost entry", op.loc)
    at = At(producers, split, times)
    entry(op, w, at)
    if split and not isinstance(op, (ir.Dot, *FREE)):
        for v in op.operand_values():
            if isinstance(producers.get(v), ir.Dot):
                cross(v, w, times)


@cost(*FREE, ir.LoadScalar, ir.ScalarDef)
def _free(op: ir.Op, w: Work, at: At) -> None:
    """Views, queue bookkeeping and scalar reads: no engine work counted."""


@cost(ir.ScatterAdd)
def _scatter_add(op: ir.ScatterAdd, w: Work, at: At) -> None:
    """backends/ascendc/scatter_io.py. A scalar read's gradient: one element-operation
    per element of the tile (ReduceSum) and a 4-byte atomic DataCopyPad per vector
    core (two on split chips). A gather's: per window entry a CompareScalar, a Select
    and a ReduceSum over the tile (3 x width element-operations per element), and the
    window's f32 sums copied out by each vector core. A block of columns': its column
    sums (one element-operation per element)."""
    cores = 2 if at.split else 1
    if op.width is None:
        w.add("vector_ops", at.times * elems(op.value.type))
        w.add("mte3_bytes", at.times * 4 * cores)
        return
    t = op.at[0].type
    column = isinstance(t, TileType) and len(t.shape) == 2 and t.shape[0] == 1
    per = 1 if column else 3 * op.width  # column sums: one Add per row
    w.add("vector_ops", at.times * per * elems(op.value.type))
    w.add("mte3_bytes", at.times * 4 * op.width * cores)


COST.not_applicable(
    ir.DebugPrint,
    ir.DeviceAssert,
    why="passes/strip_debug leaves it out of compiled builds, which the model times",
)


@cost(ir.Grid, ir.For)
def _loop(op: ir.Op, w: Work, at: At) -> None:
    """A loop adds nothing itself: count_body counts its body, times its trips."""


@cost(ir.Load, ir.LoadPages)
def _load(op: ir.Load, w: Work, at: At) -> None:
    w.add("mte2_bytes", at.times * value_bytes(op.result))


@cost(ir.Store, ir.AtomicAdd)
def _store(op: ir.Store, w: Work, at: At) -> None:
    w.add("mte3_bytes", at.times * value_bytes(op.value))


@cost(ir.Dot)
def _dot(op: ir.Dot, w: Work, at: At) -> None:
    count_dot(op, w, at.producers, at.split, at.times)


@cost(ir.Exp, ir.Exp2, ir.Log, ir.Tanh, ir.Sigmoid, ir.Sqrt)
def _transcendental(op: ir.Unary, w: Work, at: At) -> None:
    """One transcendental element-operation per element."""
    w.add("vector_transcendental", at.times * elems(op.result.type))


@cost(ir.RowMax, ir.RowSum)
def _reduce(op: ir.Reduce, w: Work, at: At) -> None:
    """One element-operation per element read."""
    w.add("vector_ops", at.times * elems(op.x.type))


@cost(
    ir.Abs,
    ir.Neg,
    ir.Not,
    ir.Floor,
    ir.Add,
    ir.Sub,
    ir.Mul,
    ir.Div,
    ir.Maximum,
    ir.Minimum,
    ir.FloorDivide,
    ir.Remainder,
    ir.Lt,
    ir.Le,
    ir.Gt,
    ir.Ge,
    ir.Eq,
    ir.Ne,
    ir.And,
    ir.Or,
    ir.Where,
    ir.Cast,
    ir.Full,
    ir.Arange,
    ir.RandomUniform,
)
def _elementwise(op: ir.ValueOp, w: Work, at: At) -> None:
    """One element-operation per result element."""
    w.add("vector_ops", at.times * elems(op.result.type))


@cost(ir.Gather)
def _gather(op: ir.Gather, w: Work, at: At) -> None:
    """Six element-operations per result element: the offsets (Cast, Adds, Maxs,
    Mins, Muls) and the Gather (vector_rules.gather); three more (ReduceMax, Muls,
    ReduceMax) where the kernel checks each index read from a tensor."""
    per = 9 if op.checks_each_index else 6
    w.add("vector_ops", at.times * per * elems(op.result.type))


@cost(ir.TakeColumns)
def _take_columns(op: ir.TakeColumns, w: Work, at: At) -> None:
    """One element-operation per result element (a Gather per row), two per index
    element (the offsets: Cast, Muls; vector_columns.take_columns)."""
    w.add("vector_ops", at.times * (elems(op.result.type) + 2 * elems(op.cols.type)))


def cross(v: ir.Value, w: Work, times: Expr) -> None:
    """A value made on one unit and read on the other travels through GM once."""
    if v.name not in w.crossing:
        w.crossing.add(v.name)
        w.add("ws_bytes", times * value_bytes(v))


def count_dot(
    op: ir.Dot, w: Work, producers: dict[ir.Value, ir.Op], split: bool, times: Expr
) -> None:
    ta, tb, tc = op.a.type, op.b.type, op.result.type
    assert (
        isinstance(ta, TileType)
        and isinstance(tb, TileType)
        and isinstance(tc, TileType)
    )
    k = ta.shape[0] if op.transpose_a else ta.shape[1]
    flops = 2 * tc.shape[0] * tc.shape[1] * k
    w.add("cube_f32_flops" if ta.dtype is DType.F32 else "cube_flops", times * flops)
    w.add("l0a_bytes", times * value_bytes(op.a))
    w.add("l0b_bytes", times * value_bytes(op.b))
    if not split:
        return
    for v in (op.a, op.b):
        made = producers.get(v)
        if made is not None and not isinstance(made, (ir.Load, ir.Dequeue)):
            cross(v, w, times)


def tensor_bytes(p: ir.Param) -> Expr:
    assert isinstance(p.type, TensorType)
    return elems(p.type) * p.type.dtype.itemsize
