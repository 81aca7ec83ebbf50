"""The post phase in a kernel's Python: a second top-level ``fd.grid`` loop, run once
every core has finished the first (``plan/schedule/phases.py``; split-KV's merge in
``fadsl/lib/paged.py``). It runs on the vector cores alone, so it holds no dot."""

from __future__ import annotations

import ast

from fadsl.errors import Loc, ScheduleError
from fadsl.ir import nodes as ir


def after_grid_ok(node: ast.stmt) -> bool:
    """After the first grid, the top level may hold a second fd.grid loop (the post
    phase, run once every core has finished the first), or an ``if`` on constants
    around it."""
    if isinstance(node, (ast.Pass, ast.If)):
        return True
    return isinstance(node, ast.For) and isinstance(node.iter, ast.Call)


def refuse_post_dots(body: tuple[ir.Op, ...]) -> None:
    """The post phase runs on the vector cores alone: a dot there has no cube."""
    for op in body:
        if isinstance(op, ir.Dot):
            raise ScheduleError(
                "fd.dot in the second fd.grid loop (the post phase): the post phase "
                "runs on the vector cores only, after every core has finished the "
                "first grid",
                op.loc,
                hint="compute the dot in the first grid and hand its result to the "
                "post phase through an fd.Scratch tensor",
                code="post_grid_dot",
            )
        if isinstance(op, ir.For):
            refuse_post_dots(op.body)


def check_grid_place(grids_seen: int, loop_depth: int, loc: Loc) -> None:
    """An fd.grid loop is at the top level: the first, or the post phase after it."""
    if grids_seen >= 2 or loop_depth:
        raise ScheduleError(
            "fd.grid must be an outermost loop of the kernel: the grid, then at "
            "most one post-phase grid",
            loc,
            hint="nest sequential loops (range / fd.pipelined) inside a grid; a "
            "kernel has at most two grids",
            code="third_grid",
        )
