"""The loop over a grid's tasks that opens each core class's ``Process``.

Round-robin in grid order (core ``c`` runs tasks ``c, c + GetBlockNum(), ...``), or,
when the plan orders the tasks longest first (``plan/schedule/task_order.py``: causal fa2), a
loop over the core's slots whose task and grid point are the plan's expressions,
printed here and evaluated by the kernel model, so both deal the same tasks to the
same cores.
"""

from __future__ import annotations

from dataclasses import dataclass

from fadsl.backends.ascendc.names import Names
from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.ir import nodes as ir
from fadsl.ir.expr import isym
from fadsl.ir.expr_print import to_cxx
from fadsl.plan.schedule.task_order import CORES, POINTS, SLOT, TASK, task_order


@dataclass(frozen=True)
class TaskLoop:
    header: list[Stmt]
    cube: str
    vector: str
    cube_prologue: list[Stmt]
    vector_prologue: list[Stmt]


def task_loop(grid: ir.Grid, names: Names, l2_bytes: int) -> TaskLoop:
    ext = [names.expr(e) for e in grid.extents]
    tasks = " * ".join(f"({e})" for e in ext) if ext else "1"
    header: list[Stmt] = [Line(f"const int64_t tasks = {tasks};")]
    aic, aiv = "AscendC::GetBlockIdx()", (
        "AscendC::GetBlockIdx() / AscendC::GetSubBlockNum()"
    )
    order = task_order(grid, l2_bytes)
    if order is None:
        step = "task < tasks; task += AscendC::GetBlockNum())"
        return TaskLoop(
            header,
            f"for (int64_t task = {aic}; {step}",
            f"for (int64_t task = {aiv}; {step}",
            decompose(grid.vars, ext, names),
            decompose(grid.vars, ext, names),
        )
    header += [
        Line("// longest tasks first, dealt in a snake (plan/schedule/task_order.py)"),
        Line(f"const int64_t {CORES} = AscendC::GetBlockNum();"),
        Line(
            f"// Q-block-major groups of {POINTS} (b, h) points: their K/V fit half the L2"
        ),
        Line(f"const int64_t {POINTS} = {names.expr(order.group)};"),
    ]
    bound = f"fadsl::CeilDiv<int64_t>(tasks, {CORES}) * {CORES}"
    step = f"{SLOT} < {bound}; {SLOT} += {CORES})"
    symbols = {**names.symbols, SLOT: SLOT, CORES: CORES, POINTS: POINTS}

    def prologue() -> list[Stmt]:
        out: list[Stmt] = []
        for name, e in order.task():
            out.append(Line(f"const int64_t {name} = {to_cxx(e, symbols)};"))
            symbols[name] = name
        out.append(Block(f"if ({TASK} >= tasks)", (Line("continue;"),)))
        for name, e in order.point(isym(TASK)):
            var = names.var(name) if name in grid.vars else name
            out.append(Line(f"const int64_t {var} = {to_cxx(e, symbols)};"))
            symbols[name] = var
        return out

    return TaskLoop(
        header,
        f"for (int64_t {SLOT} = {aic}; {step}",
        f"for (int64_t {SLOT} = {aiv}; {step}",
        prologue(),
        prologue(),
    )


def decompose(vars_: tuple[str, ...], ext: list[str], names: Names) -> list[Stmt]:
    """Grid order: the grid point of ``task``, last variable fastest."""
    out: list[Stmt] = []
    div = "task"
    for v, e in zip(reversed(vars_), reversed(ext)):
        out.append(Line(f"const int64_t {names.var(v)} = {div} % ({e});"))
        div = f"{div} / ({e})"
    return list(reversed(out))


NEXT = "Next"
"""Suffix of the C++ locals that hold the core's next task (``next_task``)."""


def next_task(
    grid: ir.Grid, names: Names, l2_bytes: int
) -> tuple[list[Stmt], str, list[Stmt], dict[str, str]]:
    """The core's next task, for the cross-task preload (``plan/schedule/carry.py``):
    (the statements that compute its position, the C++ condition that it exists, the
    statements of its grid point, to run only when it exists (a snake's group size of
    a task past the end is 0), each grid variable -> the C++ local of its value)."""
    ext = [names.expr(e) for e in grid.extents]
    order = task_order(grid, l2_bytes)
    task = TASK + NEXT
    if order is None:
        lines: list[Stmt] = [
            Line(f"const int64_t {task} = task + AscendC::GetBlockNum();")
        ]
        got: dict[str, str] = {}
        point: list[Stmt] = []
        div = task
        for v, e in zip(reversed(grid.vars), reversed(ext)):
            got[v] = names.var(v) + NEXT
            point.append(Line(f"const int64_t {got[v]} = {div} % ({e});"))
            div = f"{div} / ({e})"
        return lines, f"{task} < tasks", point[::-1], got
    symbols = {**names.symbols, SLOT: f"({SLOT} + {CORES})", CORES: CORES}
    symbols[POINTS] = POINTS
    lines = []
    for name, e in order.task():
        lines.append(Line(f"const int64_t {name}{NEXT} = {to_cxx(e, symbols)};"))
        symbols[name] = name + NEXT
    got = {}
    point = []
    for name, e in order.point(isym(TASK)):
        var = (names.var(name) if name in grid.vars else name) + NEXT
        point.append(Line(f"const int64_t {var} = {to_cxx(e, symbols)};"))
        symbols[name] = var
        if name in grid.vars:
            got[name] = var
    return lines, f"{task} < tasks", point, got
