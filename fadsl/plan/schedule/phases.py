"""The post phase: a kernel's second ``fd.grid`` loop, run once every core has
finished the first (``AscendC::SyncAll<false>()`` in a MIX kernel).

Split-KV decode (``fadsl/lib/paged.py``) uses it: the first grid writes partial
outputs and their LSE to ``fd.Scratch`` tensors, the post grid merges them. The post
grid has no dots (``ir/verify.py``), so it runs on the vector cores alone, with its own
core class and TPipe. Each phase is planned as a kernel of its own: ``split`` gives the
first grid with the top-level ops it reads, and the post grid with the ones it reads.
"""

from __future__ import annotations

from dataclasses import replace

from fadsl.ir import nodes as ir
from fadsl.ir.visitor import uses
from fadsl.plan.schedule.sides import walk


def split(kernel: ir.Kernel) -> tuple[ir.Kernel, ir.Kernel | None]:
    """(the kernel with its first grid only, the post-phase kernel or None)."""
    grids = [op for op in kernel.body if isinstance(op, ir.Grid)]
    if len(grids) < 2:
        return kernel, None
    post = grids[1]
    read = {v.name for op in walk(post.body) for v in uses(op)}
    mine = [
        op
        for op in kernel.body
        if not isinstance(op, ir.Grid) and any(r.name in read for r in op.results())
    ]
    first = tuple(op for op in kernel.body if op is not post and op not in mine)
    return replace(kernel, body=first), replace(kernel, body=tuple(mine) + (post,))


def post_grid(kernel: ir.Kernel) -> ir.Grid | None:
    """The kernel's post-phase grid, if it has one."""
    grids = [op for op in kernel.body if isinstance(op, ir.Grid)]
    return grids[1] if len(grids) > 1 else None
