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

from dataclasses import dataclass, field

import sympy

from fadsl.errors import UsageError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.ir.types import DType, TensorType, TileType
from fadsl.target import Target

TRANSCENDENTAL = (ir.Exp, ir.Exp2, ir.Log, ir.Tanh, ir.Sqrt)
FREE = (
    ir.ExpandDims,
    ir.QueueAlloc,
    ir.AllocTensor,
    ir.Enqueue,
    ir.Dequeue,
    ir.FreeTensor,
)
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
            count_body(op.body, w, producers, split, sympy.Integer(1))
            loops.append(Loop(op.var, op.stop - op.start, op.stages, w))
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


def count_op(
    op: ir.Op, w: Work, producers: dict[ir.Value, ir.Op], split: bool, times: Expr
) -> None:
    if isinstance(op, FREE):
        return
    if isinstance(op, ir.Load):
        w.add("mte2_bytes", times * value_bytes(op.result))
    elif isinstance(op, ir.Store):
        w.add("mte3_bytes", times * value_bytes(op.value))
    elif isinstance(op, ir.Dot):
        count_dot(op, w, producers, split, times)
    elif isinstance(op, TRANSCENDENTAL):
        w.add("vector_transcendental", times * elems(op.result.type))
    elif isinstance(op, ir.Reduce):
        w.add("vector_ops", times * elems(op.x.type))
    elif isinstance(op, ir.ValueOp):
        w.add("vector_ops", times * elems(op.result.type))
    if split and not isinstance(op, ir.Dot):
        for v in op.operand_values():
            if isinstance(producers.get(v), ir.Dot):
                cross(v, w, times)


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
