"""Range guards of indirect indices in the generated kernel (``AscendC::Trap()``).

A scalar read from GM (``fd.load_scalar``) can choose what the kernel reads next: a page
of a paged KV cache (``k_cache[block_table[b, j], ...]``), a KV block of a block mask.
The interpreter refuses such inputs before any work (and faults on any out-of-range
read); the generated kernel checks them itself, so a bad table stops the kernel
instead of reading another sequence's data:

* before a scalar read whose index depends on a ``for`` loop variable or another
  loaded scalar (``block_table[b, j]`` with ``j`` bounded by a loaded length), the
  index is checked against the dimension it indexes;
* after a scalar read, every point index of a load or store that is computed from
  the value alone (``pg`` in ``k_cache[pg, ...]``) is checked against its dimension.

Out of range, the kernel calls ``AscendC::Trap()`` (asc-devkit
``kernel_operator_sys_var_intf.h``: it stops the AI Core; fadsl's CPU runtime reports
it and aborts). A guard costs two scalar comparisons per read.
"""

from __future__ import annotations

from collections.abc import Iterator

import sympy

from fadsl.backends.ascendc.names import Names
from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.ir.types import TensorType


def index_guards(kernel: ir.Kernel, op: ir.LoadScalar, names: Names) -> list[Stmt]:
    """Guards of the index of ``op`` itself, where a loop or a loaded value picks it."""
    p = _param(kernel, op.src)
    chosen = _loop_vars(kernel) | _loaded(kernel)
    out: list[Stmt] = []
    for d, (at, extent) in enumerate(zip(op.index, p.type.shape)):  # type: ignore[union-attr]
        if {s.name for s in at.free_symbols} & chosen:
            out.append(guard(at, extent, f"{op.src} index {d}", names))
    return out


def value_guards(kernel: ir.Kernel, op: ir.LoadScalar, names: Names) -> list[Stmt]:
    """Guards of the value ``op`` reads, wherever it alone computes a point index."""
    known = {op.name} | set(kernel.shape_syms) | {k for k, _ in kernel.consts}
    found: dict[tuple[str, str], tuple[Expr, Expr, list[str]]] = {}
    for target, d, at in _points(kernel.body):
        free = {s.name for s in at.free_symbols}
        if op.name not in free or not free <= known:
            continue
        extent = _param(kernel, target).type.shape[d]  # type: ignore[union-attr]
        entry = found.setdefault((str(at), str(extent)), (at, extent, []))
        if f"{target} index {d}" not in entry[2]:
            entry[2].append(f"{target} index {d}")
    return [guard(at, ext, ", ".join(what), names) for at, ext, what in found.values()]


def guard(at: Expr, extent: Expr, what: str, names: Names) -> Block:
    """``if (at < 0 || at >= extent) Trap();`` (``what`` names the index)."""
    value, size = names.expr(at), names.expr(extent)
    return Block(
        f"if ({value} < 0 || {value} >= {size})",
        (
            Line(f"// fadsl guard: {what} out of [0, {sympy.sstr(extent)})"),
            Line("AscendC::Trap();"),
        ),
    )


def _param(kernel: ir.Kernel, name: str) -> ir.Param:
    p = next(x for x in kernel.params if x.name == name)
    assert isinstance(p.type, TensorType)
    return p


def _ops(body: tuple[ir.Op, ...]) -> Iterator[ir.Op]:
    for op in body:
        yield op
        inner = getattr(op, "body", None)
        if inner is not None:
            yield from _ops(inner)


def _loop_vars(kernel: ir.Kernel) -> set[str]:
    return {op.var for op in _ops(kernel.body) if isinstance(op, ir.For)}


def _loaded(kernel: ir.Kernel) -> set[str]:
    return {op.name for op in _ops(kernel.body) if isinstance(op, ir.LoadScalar)}


def _points(body: tuple[ir.Op, ...]) -> Iterator[tuple[str, int, Expr]]:
    """(tensor, dimension, expression) of every point index of a load or store."""
    for op in _ops(body):
        if isinstance(op, (ir.Load, ir.Store)):
            name = op.src if isinstance(op, ir.Load) else op.dst
            for d, ix in enumerate(op.index):
                if isinstance(ix, ir.Point):
                    yield name, d, ix.at
        elif isinstance(op, ir.LoadScalar):
            for d, at in enumerate(op.index):
                yield op.src, d, at
