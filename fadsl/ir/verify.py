"""Structural invariants of a kernel, checked between passes and after parsing.

- every value is defined exactly once, before its uses, in a scope that encloses them
  (a loop body's values are visible after the loop only as the loop's results), and
  each use carries the type of its definition;
- every symbol in an expression is defined: shape symbols, constants, scalar
  parameters, grid and loop variables in their bodies, load_scalar names after the
  load in the enclosing block;
- a loop's inits, iter_args, yields and results agree in number and type;
- one grid at the top level, then at most one post-phase grid without dots (it
  runs once every core has finished the first: ``SyncAll`` in Ascend C);
- every queue has at least one buffer.

Violations in IR made by fadsl are bugs: one InternalError carrying the printed IR.
Violations in parsed text are the author's: IRParseErrors at the offending op.
Non-goals: type rules of single ops (``passes/infer_types.py``), resources.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sympy

from fadsl.errors import ErrorGroup, InternalError, IRParseError, Loc
from fadsl.ir.atomic_rules import atomic_conflicts
from fadsl.ir.nodes import (
    AllocTensor,
    Dot,
    For,
    Grid,
    Kernel,
    Load,
    LoadScalar,
    ScalarDef,
    Op,
    QueueAlloc,
    Value,
    op_name,
)
from fadsl.ir.text.printer import print_kernel
from fadsl.ir.types import QueueType, TensorType
from fadsl.ir.visitor import IRVisitor, uses

_SKIP_FIELDS = frozenset(
    {"loc", "body", "result", "inits", "iter_args", "yields", "loop_results"}
)


@dataclasses.dataclass(frozen=True)
class Problem:
    message: str
    loc: Loc
    hint: str | None = None


def verify(kernel: Kernel, *, parsed: bool = False) -> None:
    """Raise if ``kernel`` breaks an invariant; ``parsed``: the IR came from text."""
    problems = find_problems(kernel)
    if not problems:
        return
    if parsed:
        group = ErrorGroup()
        for p in problems:
            group.add(IRParseError(p.message, p.loc, hint=p.hint))
        group.raise_if_any()
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    raise InternalError(
        f"invalid IR: {first.message}{more}", first.loc, _ir_text(kernel)
    )


def find_problems(kernel: Kernel) -> list[Problem]:
    checker = _Verifier(kernel)
    checker.visit_kernel(kernel)
    return checker.problems


def _ir_text(kernel: Kernel) -> str:
    return print_kernel(kernel)


class _Verifier(IRVisitor):
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.problems: list[Problem] = []
        self.values: list[dict[str, Value]] = [{}]
        self.symbols: list[set[str]] = [_kernel_symbols(kernel)]
        self.defined: set[str] = set()
        self.slots: set[str] = set()
        """Values made by alloc_tensor: the only ones a load may write into."""
        self.depth = 0

    def report(self, message: str, loc: Loc, hint: str | None = None) -> None:
        self.problems.append(Problem(message, loc, hint))

    @contextmanager
    def scope(self, symbols: tuple[str, ...] = ()) -> Iterator[None]:
        self.values.append({})
        self.symbols.append(set(symbols))
        self.depth += 1
        try:
            yield
        finally:
            self.values.pop()
            self.symbols.pop()
            self.depth -= 1

    # --- kernel -----------------------------------------------------------------
    def visit_kernel(self, kernel: Kernel) -> None:
        for p in kernel.params:
            self.check_symbols(p.type, p.loc, f"parameter `{p.name}`")
            if p.default is not None:
                self.check_symbols(p.default, p.loc, f"the default of `{p.name}`")
        grids = [op for op in kernel.body if isinstance(op, Grid)]
        if len(grids) not in (1, 2):
            self.report(
                f"kernel `{kernel.name}` has {len(grids)} grid loops; it needs "
                "one at the top level, and at most one post-phase grid after it",
                kernel.loc,
            )
        for post in grids[1:]:
            for op in _walk(post.body):
                if isinstance(op, Dot):
                    self.report(
                        "a dot in the post-phase grid: the post phase runs on the "
                        "vector cores only",
                        op.loc,
                        "compute dots in the first grid and hand results over "
                        "through an fd.Scratch tensor",
                    )
        self.visit_block(kernel.body)
        for message, loc in atomic_conflicts(kernel.body):
            self.report(message, loc, "write the output with atomic_add only")

    # --- ops --------------------------------------------------------------------
    def generic_visit(self, op: Op) -> None:
        what = f"`{op_name(type(op))}`"
        self.check_uses(op)
        for f in dataclasses.fields(op):
            if f.name not in _SKIP_FIELDS:
                self.check_symbols(getattr(op, f.name), op.loc, what)
        if isinstance(op, QueueAlloc) and op.buffers < 1:
            self.report(
                f"queue_alloc with {op.buffers} buffers",
                op.loc,
                "a queue needs at least one buffer",
            )
        if isinstance(op, Load) and op.into is not None:
            self.check_slot(op, op.into)
        for r in op.results():
            self.check_symbols(r.type, op.loc, what)
            self.define(r, op.loc)
        if isinstance(op, AllocTensor):
            self.slots.add(op.result.name)
        if isinstance(op, (LoadScalar, ScalarDef)):
            self.symbols[-1].add(op.name)

    def visit_Grid(self, op: Grid) -> None:
        if self.depth:
            self.report(
                "a grid loop inside another loop",
                op.loc,
                "the grid is the one outermost loop of a kernel",
            )
        self.check_symbols(op.extents, op.loc, "the grid extents")
        with self.scope(op.vars):
            self.visit_block(op.body)

    def visit_For(self, op: For) -> None:
        self.check_symbols((op.start, op.stop), op.loc, "the loop bounds")
        if op.ring < 0:
            self.report(
                f"loop `{op.var}` has ring = {op.ring} (0: planner's choice)", op.loc
            )
        if op.row_chunk < 0:
            self.report(
                f"loop `{op.var}` has row_chunk = {op.row_chunk} (0: planner's choice)",
                op.loc,
            )
        self.check_uses_of(op.inits, op.loc)
        _check_carried(self, op)
        with self.scope((op.var,)):
            for a in op.iter_args:
                self.define(a, op.loc)
            self.visit_block(op.body)
            self.check_uses_of(op.yields, op.loc)
        for r in op.loop_results:
            self.define(r, op.loc)

    # --- values -----------------------------------------------------------------
    def define(self, v: Value, loc: Loc) -> None:
        if v.name in self.defined:
            self.report(f"`%{v.name}` is defined more than once", loc)
        self.defined.add(v.name)
        self.values[-1][v.name] = v
        if isinstance(v.type, QueueType) and v.type.buffers < 1:
            self.report(
                f"queue `%{v.name}` has {v.type.buffers} buffers",
                loc,
                "a queue needs at least one buffer",
            )

    def check_uses(self, op: Op) -> None:
        self.check_uses_of(uses(op), op.loc)

    def check_uses_of(self, used: tuple[Value, ...], loc: Loc) -> None:
        for v in used:
            found = self.lookup(v.name)
            if found is None:
                where = (
                    "inside a closed loop body" if v.name in self.defined else "before"
                )
                self.report(
                    f"`%{v.name}` is used but not defined {where} in scope", loc
                )
            elif found.type != v.type:
                self.report(
                    f"`%{v.name}` is used as {v.type} but defined as {found.type}", loc
                )

    def check_slot(self, op: Load, into: Value) -> None:
        if into.name in self.slots:
            return
        self.report(
            f"`load` writes into `%{into.name}`, which is not a queue slot",
            op.loc,
            "a load's operand is a slot from `alloc_tensor(%queue)`; "
            "write `load()` to load into a fresh tile",
        )

    def lookup(self, name: str) -> Value | None:
        for scope in reversed(self.values):
            if name in scope:
                return scope[name]
        return None

    # --- symbols ----------------------------------------------------------------
    def check_symbols(self, value: Any, loc: Loc, what: str) -> None:
        visible = set().union(*self.symbols)
        for name in sorted(symbol_names(value) - visible):
            close = difflib.get_close_matches(name, sorted(visible), n=1)
            self.report(
                f"undefined symbol `{name}` in {what}",
                _narrowed(loc, name),
                (
                    f"did you mean `{close[0]}`?"
                    if close
                    else "symbols are shape symbols, constants, scalar parameters, "
                    "grid/loop variables and load_scalar names"
                ),
            )


def _check_carried(v: _Verifier, op: For) -> None:
    counts = {len(op.inits), len(op.iter_args), len(op.yields)}
    if op.loop_results:
        counts.add(len(op.loop_results))
    if len(counts) != 1:
        v.report(
            f"loop over `{op.var}`: {len(op.inits)} inits, {len(op.iter_args)} "
            f"iter_args, {len(op.yields)} yields, {len(op.loop_results)} results",
            op.loc,
            "a loop carries one value per iter(...) argument",
        )
        return
    for init, arg, out in zip(op.inits, op.iter_args, op.yields):
        if not init.type == arg.type == out.type:
            v.report(
                f"loop-carried `%{arg.name}` changes type: enters as {init.type}, "
                f"is {arg.type} in the body, yields {out.type}",
                op.loc,
                "a loop-carried value keeps its shape and dtype",
            )
    for arg, res in zip(op.iter_args, op.loop_results):
        if arg.type != res.type:
            v.report(
                f"loop result `%{res.name}` is {res.type} but the loop carries "
                f"{arg.type}",
                op.loc,
            )


def _narrowed(loc: Loc, name: str) -> Loc:
    """``loc`` narrowed to the first whole-word ``name`` inside its span, if any."""
    src = loc.source_line()
    end = loc.end_col if loc.end_col is not None else len(src)
    found = re.search(rf"\b{re.escape(name)}\b", src[loc.col : end])
    if found is None:
        return loc
    col = loc.col + found.start()
    return dataclasses.replace(loc, col=col, end_col=col + len(name))


def _kernel_symbols(kernel: Kernel) -> set[str]:
    names = set(kernel.shape_syms) | {k for k, _ in kernel.consts}
    names |= {p.name for p in kernel.params if not isinstance(p.type, TensorType)}
    return names


def symbol_names(value: Any) -> set[str]:
    """Names of the free symbols of every expression nested in ``value``."""
    if isinstance(value, sympy.Basic):
        return {s.name for s in value.free_symbols if isinstance(s, sympy.Symbol)}
    if isinstance(value, tuple):
        return set().union(*(symbol_names(x) for x in value)) if value else set()
    if isinstance(value, Value) or not dataclasses.is_dataclass(value):
        return set()
    return symbol_names(
        tuple(getattr(value, f.name) for f in dataclasses.fields(value))
    )


def _walk(body: tuple[Op, ...]) -> Iterator[Op]:
    for op in body:
        yield op
        if isinstance(op, (Grid, For)):
            yield from _walk(op.body)
