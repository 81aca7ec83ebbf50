"""Loop-invariant scalar reads move out of their loop: read once per task, not per block.

A ``load_scalar`` (a per-head ALiBi slope ``slopes[h]``, a sequence's length) whose
index does not depend on the loop it sits in is read by the scalar unit from GM on
every iteration as written, e.g. ``slopesGm.GetValue(h)`` in every KV block of the
alibi kernel (issue 28). This pass moves each such read to just before its loop,
repeatedly, so a read leaves every loop it does not depend on; the interpreter, the
cost model and the Ascend C backend then all see it once per task.

A read stays where it is when its index names the loop's variable (or that of a
loop inside it), or any scalar another ``load_scalar`` defines (an indirect index
is range-checked at the read, and a loop that runs no iteration must not read it),
or when the kernel writes the tensor it reads.

Non-goals: reads of tiles (``load``), reads under a grid (a grid's variables are
its tasks), and common-subexpression elimination of equal reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from fadsl.ir.expr import free_names
from fadsl.ir.nodes import For, Grid, Kernel, LoadScalar, Op

if TYPE_CHECKING:
    from fadsl.target import Target

NAME = "hoist_scalars"


def run(kernel: Kernel, target: Target | None = None) -> Kernel:
    """``kernel`` with every loop-invariant ``load_scalar`` before its loop."""
    ops = list(_walk(kernel.body))
    written = {op.dst for op in ops if isinstance(getattr(op, "dst", None), str)}
    loaded = {op.name for op in ops if isinstance(op, LoadScalar)}
    return replace(kernel, body=_block(kernel.body, written, loaded))


def _block(body: tuple[Op, ...], written: set[str], loaded: set[str]) -> tuple[Op, ...]:
    out: list[Op] = []
    for op in body:
        if isinstance(op, Grid):
            out.append(replace(op, body=_block(op.body, written, loaded)))
        elif isinstance(op, For):
            inner = _block(op.body, written, loaded)
            bound = {op.var} | {x.var for x in _walk(inner) if isinstance(x, For)}
            stay = bound | loaded

            def moves(x: Op) -> bool:
                return (
                    isinstance(x, LoadScalar)
                    and x.src not in written
                    and not any(free_names(i) & stay for i in x.index)
                )

            out += [x for x in inner if moves(x)]
            out.append(replace(op, body=tuple(x for x in inner if not moves(x))))
        else:
            out.append(op)
    return tuple(out)


def _walk(body: tuple[Op, ...]) -> Iterator[Op]:
    for op in body:
        yield op
        if isinstance(op, (Grid, For)):
            yield from _walk(op.body)
