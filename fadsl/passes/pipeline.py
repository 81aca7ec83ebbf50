"""Pipelining: make the multi-buffered loads of ``fd.pipelined`` loops explicit queues.

Input: typed IR. Output: the same program where every load in the body of a pipelined
loop (``stages`` = s) whose block moves with the loop variable goes through a queue of
s buffers, issued s - 1 iterations ahead:

    %kq = queue_alloc() {tile = f16[block_kv, D], buffers = 2, position = B1}
    for t in 0 .. min(1, n) { issue(t) }              # prologue
    for j in 0 .. n pipelined(stages = 2) {
      for t in j + 1 .. min(j + 2, n) { issue(t) }    # prefetch the next block
      %kt = dequeue(%kq)
      ...                                             # the original body
      free_tensor(%kq, %kt)                           # after the last use
    }

where ``issue(t)`` is ``alloc_tensor``, ``load(into=...)`` with the loop variable
replaced by t, and ``enqueue``. The queue position says which unit consumes the tile:
A1/B1 (L1, the cube's operands of a dot) or VECIN (UB, the vector unit).

Non-goals: deciding buffer sizes or memory spaces (plan_buffers), loads outside
pipelined loops, loads that do not depend on the loop variable (they stay as they are).
"""

from __future__ import annotations

from dataclasses import replace

import sympy

from fadsl.errors import ScheduleError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import isym
from fadsl.ir.types import QueueType, TileType
from fadsl.ir.verify import symbol_names
from fadsl.passes.fresh import FreshNames
from fadsl.target import Target

NAME = "pipeline"


def run(kernel: ir.Kernel, target: Target | None = None) -> ir.Kernel:
    names = FreshNames(kernel)
    queues: list[ir.Op] = []
    body = tuple(_rewrite_op(op, names, queues) for op in kernel.body)
    if not queues:
        return kernel
    return replace(kernel, body=tuple(queues) + body)


def _rewrite_op(op: ir.Op, names: FreshNames, queues: list[ir.Op]) -> ir.Op:
    if isinstance(op, ir.Grid):
        return replace(op, body=_rewrite_block(op.body, names, queues))
    if isinstance(op, ir.For):
        inner = replace(op, body=_rewrite_block(op.body, names, queues))
        if inner.kind is ir.LoopKind.PIPELINED:
            return _Pipeliner(inner, names, queues).rewrite()
        return inner
    return op


def _rewrite_block(
    body: tuple[ir.Op, ...], names: FreshNames, queues: list[ir.Op]
) -> tuple[ir.Op, ...]:
    out: list[ir.Op] = []
    for op in body:
        new = _rewrite_op(op, names, queues)
        if isinstance(new, tuple):
            out.extend(new)
        else:
            out.append(new)
    return tuple(out)


def consumers(value: ir.Value, body: tuple[ir.Op, ...]) -> list[ir.Op]:
    """Ops of ``body`` (searched recursively) that read ``value``."""
    found: list[ir.Op] = []
    for op in body:
        if value in op.operand_values() or (
            isinstance(op, ir.For) and value in op.yields
        ):
            found.append(op)
        if isinstance(op, (ir.Grid, ir.For)):
            found.extend(consumers(value, op.body))
    return found


def queue_position(value: ir.Value, body: tuple[ir.Op, ...]) -> str:
    """B1/A1 when only dots read the tile (the cube loads it into L1), else VECIN."""
    users = consumers(value, body)
    if users and all(isinstance(u, ir.Dot) for u in users):
        if all(u.b == value for u in users):  # type: ignore[attr-defined]
            return "B1"
        if all(u.a == value for u in users):  # type: ignore[attr-defined]
            return "A1"
    return "VECIN"


class _Pipeliner:
    """Rewrites one pipelined loop; returns (prologue loop?, new loop)."""

    def __init__(self, loop: ir.For, names: FreshNames, queues: list[ir.Op]) -> None:
        self.loop = loop
        self.names = names
        self.queues = queues
        self.ahead = loop.stages - 1
        self.var = isym(loop.var)
        self.read_at: dict[str, dict[sympy.Symbol, sympy.Expr]] = {}
        """Per issued iteration: the body's scalars already re-read for it."""

    def rewrite(self) -> ir.Op | tuple[ir.Op, ...]:
        loads = [
            op
            for op in self.loop.body
            if isinstance(op, ir.Load) and op.into is None and self._moves(op)
        ]
        if not loads:
            return self.loop
        plan = [(ld, self._queue(ld)) for ld in loads]
        prologue = self._prologue(plan) if self.ahead else None
        loop = replace(self.loop, body=self._new_body(plan))
        return loop if prologue is None else (prologue, loop)

    def _moves(self, load: ir.Load) -> bool:
        """The load's block changes with the loop variable, directly or through a
        scalar the body reads at an index that does (a page of a block table)."""
        moving = {self.var.name}
        for op in self.loop.body:
            if isinstance(op, ir.LoadScalar) and moving & set(_index_names(op.index)):
                moving.add(op.name)
        return bool(moving & set(_index_names(load.index)))

    def _queue(self, load: ir.Load) -> ir.Value:
        t = load.result.type
        assert isinstance(t, TileType)
        position = queue_position(load.result, self.loop.body)
        qtype = QueueType(t, self.loop.stages, position)
        q = ir.Value(self.names.fresh(load.result.name + "_q"), qtype)
        op = ir.QueueAlloc(
            result=q,
            tile=t,
            buffers=self.loop.stages,
            position=position,
            loc=load.loc.derived(NAME),
        )
        self.queues.append(op)
        return q

    def _issue(self, load: ir.Load, q: ir.Value, at: sympy.Expr) -> list[ir.Op]:
        loc = load.loc.derived(NAME)
        t = load.result.type
        slot = ir.Value(self.names.fresh(load.result.name + "_slot"), t)
        filled = ir.Value(self.names.fresh(load.result.name + "_next"), t)
        reads, subs = self._scalars_at(load.index, at)
        index = tuple(_subst_index(ix, self.var, at, subs) for ix in load.index)
        return reads + [
            ir.AllocTensor(result=slot, queue=q, loc=loc),
            replace(load, result=filled, index=index, into=slot, loc=loc),
            ir.Enqueue(queue=q, x=filled, loc=loc),
        ]

    def _scalars_at(
        self, index: tuple[ir.Index, ...], at: sympy.Expr
    ) -> tuple[list[ir.Op], dict[sympy.Symbol, sympy.Expr]]:
        """The body's scalar reads an issued load's index needs, re-read at ``at``.

        A page of a paged cache is ``block_table[b, j]``, read in the body of the loop:
        the load issued for iteration ``at`` reads ``block_table[b, at]`` into a fresh
        name first (and, in turn, the reads that index depends on).
        """
        scalars = {
            op.name: op for op in self.loop.body if isinstance(op, ir.LoadScalar)
        }
        reads: list[ir.Op] = []
        subs = self.read_at.setdefault(str(at), {self.var: at})  # shared by the loads
        pending = [n for n in _index_names(index) if n in scalars]
        while pending:
            name = pending.pop()
            if isym(name) in subs:
                continue
            op = scalars[name]
            inner = [n for n in _index_names(op.index) if n in scalars]
            if any(isym(n) not in subs for n in inner):
                pending += [name] + inner
                continue
            fresh = self.names.fresh(name + "_next")
            index = tuple(e.subs(subs, simultaneous=True) for e in op.index)
            reads.append(replace(op, name=fresh, index=index, loc=op.loc.derived(NAME)))
            subs[isym(name)] = isym(fresh)
        return reads, subs

    def _issue_loop(
        self, plan: list[tuple[ir.Load, ir.Value]], start: sympy.Expr, stop: sympy.Expr
    ) -> ir.For:
        t = isym(self.names.fresh(self.loop.var + "_pre"))
        body: list[ir.Op] = []
        for load, q in plan:
            body += self._issue(load, q, t)
        return ir.For(
            var=t.name,
            start=start,
            stop=stop,
            body=tuple(body),
            loc=self.loop.loc.derived(NAME),
        )

    def _prologue(self, plan: list[tuple[ir.Load, ir.Value]]) -> ir.For:
        start = self.loop.start
        return self._issue_loop(
            plan, start, sympy.Min(start + self.ahead, self.loop.stop)
        )

    def _new_body(self, plan: list[tuple[ir.Load, ir.Value]]) -> tuple[ir.Op, ...]:
        head: list[ir.Op] = []
        if self.ahead == 0:
            for load, q in plan:
                head += self._issue(load, q, self.var)
        else:
            nxt = self.var + self.ahead
            head.append(self._issue_loop(plan, nxt, sympy.Min(nxt + 1, self.loop.stop)))
        body = list(self.loop.body)
        by_load = {id(load): q for load, q in plan}
        out: list[ir.Op] = []
        for op in body:
            q = by_load.get(id(op))
            if q is None:
                out.append(op)
                continue
            assert isinstance(op, ir.Load)
            out.append(ir.Dequeue(result=op.result, queue=q, loc=op.loc.derived(NAME)))
        for load, q in plan:
            _insert_free(out, load, q, self.loop)
        return tuple(head + self._without_unread_scalars(out))

    def _without_unread_scalars(self, body: list[ir.Op]) -> list[ir.Op]:
        """The body's scalar reads that only the pipelined loads used (a page number):
        each issue reads its own now, so the body's would be read for nothing."""
        reread = {s.name for subs in self.read_at.values() for s in subs}
        out = []
        for op in body:
            if isinstance(op, ir.LoadScalar) and op.name in reread:
                others = (o for o in body if o is not op)
                if not any(op.name in symbol_names(o) for o in others):
                    continue
            out.append(op)
        return out


def _subst_index(
    ix: ir.Index,
    var: sympy.Symbol,
    at: sympy.Expr,
    scalars: dict[sympy.Symbol, sympy.Expr] | None = None,
) -> ir.Index:
    subs = dict(scalars or {})
    subs[var] = at

    def sub(e: sympy.Expr) -> sympy.Expr:
        return e.subs(subs, simultaneous=True)

    if isinstance(ix, ir.Point):
        return ir.Point(sub(ix.at))
    stop = None if ix.stop is None else sub(ix.stop)
    return ir.Slice(sub(ix.start), sub(ix.size), stop)


def _index_names(index: tuple[ir.Index, ...] | tuple[sympy.Expr, ...]) -> list[str]:
    """Names of the symbols an index (of a load, or of a scalar read) depends on."""
    exprs: list[sympy.Expr] = []
    for ix in index:
        if isinstance(ix, ir.Point):
            exprs.append(ix.at)
        elif isinstance(ix, ir.Slice):
            exprs += [ix.start, ix.size] + ([] if ix.stop is None else [ix.stop])
        else:
            exprs.append(ix)
    return sorted({s.name for e in exprs for s in e.free_symbols})


def _insert_free(out: list[ir.Op], load: ir.Load, q: ir.Value, loop: ir.For) -> None:
    value = load.result
    views = _views_of(value, out)
    if any(v in loop.yields for v in views):
        raise ScheduleError(
            f"the pipelined load %{value.name} is also a loop-carried value",
            load.loc,
            hint="copy it into a new tile before carrying it",
        )
    last = -1
    for i, op in enumerate(out):
        if any(_reads(op, v) for v in views):
            last = i
    free = ir.FreeTensor(queue=q, x=value, loc=load.loc.derived(NAME))
    out.insert(last + 1 if last >= 0 else len(out), free)


def _views_of(value: ir.Value, body: list[ir.Op]) -> list[ir.Value]:
    """``value`` and every expand_dims of it: views of the same queue buffer.

    A view dies with its buffer, so the buffer is freed after the last use of any view
    (a score_mod's ``tok_scale[kv_idx]`` is read as ``expand_dims`` of the loaded block).
    """
    views = [value]
    for op in body:
        if isinstance(op, ir.ExpandDims) and op.x in views:
            views.append(op.result)
    return views


def _reads(op: ir.Op, value: ir.Value) -> bool:
    return value in op.operand_values() or bool(consumers(value, _body_of(op)))


def _body_of(op: ir.Op) -> tuple[ir.Op, ...]:
    if isinstance(op, (ir.Grid, ir.For)):
        return op.body
    return ()
