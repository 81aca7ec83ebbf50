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

A ``scalar_def`` (a mod's per-head math, ``fd.exp2(-8.0 * (h + 1) / N)``) moves
the same way when none of its arguments names the loop's variables or a scalar that
stays inside the loop: computed once per task, before the KV loop.

Non-goals: reads of tiles (``load``), reads under a grid (a grid's variables are
its tasks), and common-subexpression elimination of equal reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from fadsl.ir.expr import free_names
from fadsl.ir.nodes import For, Grid, Kernel, LoadScalar, Op, ScalarDef

if TYPE_CHECKING:
    from fadsl.target import Target

NAME = "hoist_scalars"


def run(kernel: Kernel, target: Target | None = None) -> Kernel:
    """``kernel`` with every loop-invariant ``load_scalar`` / ``scalar_def`` before
    its loop."""
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

            moved: list[Op] = []
            kept: list[Op] = []
            # what a scalar_def may not read: the loops' variables and the scalars
            # defined by ops that stay inside the loop
            staying = bound | {
                y.name
                for x in inner
                if isinstance(x, For)
                for y in _walk(x.body)
                if isinstance(y, (LoadScalar, ScalarDef))
            }
            for x in inner:
                if _moves(x, written, stay, staying):
                    moved.append(x)
                else:
                    kept.append(x)
                    if isinstance(x, (LoadScalar, ScalarDef)):
                        staying.add(x.name)
            out += moved
            out.append(replace(op, body=tuple(kept)))
        else:
            out.append(op)
    return tuple(out)


def _moves(x: Op, written: set[str], stay: set[str], staying: set[str]) -> bool:
    if isinstance(x, LoadScalar):
        return x.src not in written and not any(free_names(i) & stay for i in x.index)
    if isinstance(x, ScalarDef):
        return not any(free_names(a) & staying for a in x.args)
    return False


def _walk(body: tuple[Op, ...]) -> Iterator[Op]:
    for op in body:
        yield op
        if isinstance(op, (Grid, For)):
            yield from _walk(op.body)
