"""The vector-core (AIV) class: UB buffers, the task loop, one rule per vector op.

Each AIV owns ROWS = block_q / 2 rows of the Q block (row0 = sub-block * ROWS), and as
many of every other row block (ROWS_BLOCK_KV, row0BlockKv; ``plan/memory/row_split.py``). Dot
results arrive from the cube through GM workspaces after CrossCoreWaitFlag; vector-made
dot operands leave through GM before CrossCoreSetFlag. Vector instructions that depend
on an earlier one are separated by PipeBarrier<PIPE_V>.
"""

from __future__ import annotations

from typing import Any

import sympy

from fadsl.backends.ascendc import (
    gm,
    scatter_io,
    vector_chunk,
    vector_debug,
    vector_guard,
    vector_io,
    vector_loop,
    vector_temps,
)
from fadsl.backends.ascendc.core_emitter import CoreEmitter
from fadsl.backends.ascendc.names import buffer_len, ctype, source_comment
from fadsl.backends.ascendc.view import Block, CoreClass, Line, Member, Stmt
from fadsl.backends.ascendc.vector_rules import RULES
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import CeilDiv, Expr, as_expr, evaluate
from fadsl.ir.types import DType, QueueType, TileType
from fadsl.plan.memory.row_chunk import ChunkRegion
from fadsl.plan.schedule.carry import BASE
from fadsl.plan.schedule.sides import CUBE
from fadsl.plan.memory.vector_forms import elems_per_repeat

_DIRECT = ("unary", "cast", "full", "scalar", "rscalar")
"""Forms of one call whose destination may be any UB tensor: a saved value they make
is written into its slot directly."""


class VectorEmitter(CoreEmitter):
    def setup(self) -> None:
        self.vec = self.low.vec
        self.vars: dict[str, str] = {}
        self.slot_var: dict[str, str] = {}
        self.dirty: set[str] = set()
        self.guards: dict[int, Any] = {}
        self.late: dict[int, list[tuple[ir.Op, int]]] = {}
        self.chunk: ChunkRegion | None = None
        """The row chunk region being emitted (``vector_chunk.py``)."""
        self.chunk_pre: list[Stmt] = []
        self.chunk_post: list[Stmt] = []
        """Cross-core waits before the chunk loop, flag sets after it."""
        self.saving: dict[str, str] = {}
        """Saved value -> its slot (C++), while emitting a deferred loop's body."""
        self.saved_direct: set[str] = set()
        """Saved values computed straight into their slot (no copy; ``_declare``)."""
        self.at: dict[int, int] = {}
        """id(op) -> the program point it was emitted at (``walk``)."""

    # --- names and shapes ----------------------------------------------------
    def shape(self, v: ir.Operand) -> tuple[Expr, ...]:
        if isinstance(v, ir.Imm):
            return ()
        t = v.type.tile if isinstance(v.type, QueueType) else v.type
        assert isinstance(t, TileType)
        core = self.low.core_shape(v)
        c = self.chunk
        return c.chunk_shape(core) if c is not None and c.is_row(v) else core

    def var(self, v: ir.Operand) -> str:
        if isinstance(v, ir.Imm):
            raise BackendError("expected a tile operand", None)
        name = v.name
        while name in self.vec.views:
            name = self.vec.views[name]
        base = self.vars.get(name) or self.names.var(name)
        return base + vector_chunk.offset(self, name)

    def count(self, v: ir.Value) -> str:
        return self.names.count(self.shape(v))

    def padded(self, n: Expr, dt: DType) -> str:
        per = elems_per_repeat(dt)
        n = as_expr(n)
        value = int(evaluate(n, self.low.env))
        if value % per == 0:
            return self.names.expr(n)
        return self.names.expr(CeilDiv(n, per) * per)

    def padded_count(self, v: ir.Value, dt: DType) -> str:
        return self.padded(sympy.Mul(*self.shape(v)), dt)

    def lit(self, x: float, dt: DType) -> str:
        return self.names.scalar(as_expr(x), dt)

    def imm(
        self, v: ir.Operand, dt: DType, negate: bool = False, reciprocal: bool = False
    ) -> str:
        assert isinstance(v, ir.Imm)
        e = v.expr
        if negate:
            e = -e
        if reciprocal:
            e = 1 / e
        return self.names.scalar(e, dt)

    def row_shift(self, v: ir.Value) -> Expr:
        """First row of this core's part, for tiles split between the AIVs."""
        block = self.low.split.block_of(v)
        return as_expr(0) if block is None else self.names.row0_symbol(block)

    # --- class ---------------------------------------------------------------
    def core_class(self, name: str) -> CoreClass:
        members = self._members()
        body = self.walk(self.low.kernel_grid_body)
        base: tuple[Line, ...] = ()
        count: tuple[Line, ...] = ()
        if self.carry is not None:  # slots counted over the core's stream (carry.py)
            lp = self.carry.loop
            span = f"{self.names.expr(lp.stop)} - {self.names.expr(lp.start)}"
            base = (Line(f"int64_t {BASE} = 0;"),)
            count = (Line(f"{BASE} += fadsl::Max<int64_t>(0, {span});"),)
        process = tuple(self.task_header) + base + (
            Block(
                self.task_loop,
                tuple(self.prologue)
                + tuple(self._task_prologue())
                + tuple(body)
                + count
                + (
                    Line(
                        "fadsl::TaskDone();  // counts the task under the CPU runtime"
                    ),
                ),
            ),
        )
        return CoreClass(name, "vector", members, (), process)

    def _members(self) -> tuple[Member, ...]:
        out = []
        for b in self.low.plan.in_space("UB"):
            nbytes = buffer_len(b, self.low.target.ub_align, self.names, self.low.env)
            name = self.names.buf(b.name)
            if b.kind == "queue":
                decl = f"AscendC::TQue<AscendC::TPosition::{b.position}, {b.buffers}> {name};"
                init = f"pipe_.InitBuffer({name}, {b.buffers}, {nbytes});"
            else:
                decl = f"AscendC::TBuf<AscendC::TPosition::VECCALC> {name};"
                init = f"pipe_.InitBuffer({name}, {nbytes});"
            what = ", ".join(f"%{v}" for v in b.values) or b.role
            out.append(Member(decl, init, f"{b.role}: {what} ({b.loc.short()})"))
        return tuple(out)

    def _task_prologue(self) -> list[Stmt]:
        n = self.names
        return [
            Line(
                f"const int64_t {n.row0_var(b)} = "
                f"static_cast<int64_t>(AscendC::GetSubBlockIdx()) * {n.rows_const(b)};"
            )
            for b in self.low.split.blocks
        ]

    # --- walking -------------------------------------------------------------
    def walk(
        self, body: tuple[ir.Op, ...], pending: list[ir.Dot] | None = None
    ) -> list[Stmt]:
        """The statements of ``body``. Dot results are received where first read;
        those still unread at the end are received there, unless the caller passes
        its own ``pending`` list (which then keeps them)."""
        out: list[Stmt] = []
        flush = pending is None
        pending = [] if pending is None else pending
        self.guards.update(vector_guard.find(self, body, self.pos + 1))
        late = {id(f): id(g.where) for g in self.guards.values() for f in g.feeders}
        outer: list[Stmt] = []
        for op in body:
            self.pos += 1
            pos = self.pos
            if vector_chunk.begins(self, pos):  # the row chunk loop (row_chunk.py)
                outer, out = out, []
            out += self._one(op, pos, pending, late)
            if vector_chunk.ends(self, pos):
                out = outer + vector_chunk.finish(self, out)
        while flush and pending:
            dot = pending.pop(0)
            out += self._group(dot.loc, vector_io.receive(self, dot))
        return out

    def _one(
        self, op: ir.Op, pos: int, pending: list[ir.Dot], late: dict[int, int]
    ) -> list[Stmt]:
        """The statements of ``op`` at point ``pos`` (see ``walk``)."""
        self.at[id(op)] = pos
        out = self._receive_before(op, pending)
        if id(op) in late:  # run under its select's guard (vector_guard.py)
            self.late.setdefault(late[id(op)], []).append((op, pos))
            return out + self._frees(pos)
        if isinstance(op, ir.For):
            return out + self._loop(op)
        if isinstance(op, ir.Dot) and op.result in self.sides.to_vector:
            pending.append(op)  # received where it is first read (_receive_before)
            return out + self._frees(pos)  # e.g. the vector-made operand it read
        stmts = self._located(op, pos)
        stmts += vector_loop.save(self, op) if self.saving else []
        stmts += self._frees(pos)
        return out + (self._group(op.loc, stmts) if stmts else [])

    def _located(self, op: ir.Op, pos: int) -> list[Stmt]:
        """``_op``, with a location-less BackendError pointed at the op's line."""
        try:
            return self._op(op, pos)
        except BackendError as exc:
            if exc.loc is not None:
                raise
            raise BackendError(
                exc.message, op.loc, exc.hint, exc.notes, code=exc.code
            ) from None

    def _receive_before(self, op: ir.Op, pending: list[ir.Dot]) -> list[Stmt]:
        """Receive the dot results ``op`` reads. A dot result is waited for where it is
        first read, not where the dot is: the cube computes a later dot (the next block's
        scores) while the vector cores still work on an earlier one, each result in its
        own workspace (ping-pong)."""
        out: list[Stmt] = []
        reads = set(_reads_within(op, self._reads))
        for dot in [d for d in pending if d.result in reads]:
            pending.remove(dot)
            out += self._group(dot.loc, vector_io.receive(self, dot))
        return out

    def _group(self, loc: Any, stmts: list[Stmt]) -> list[Stmt]:
        key = (loc.file, loc.line)
        if key == self.last_loc:
            return stmts
        self.last_loc = key
        return [Line(source_comment(loc))] + stmts

    def _loop(self, op: ir.For) -> list[Stmt]:
        return vector_loop.loop(self, op)

    def _barrier(self, touched: set[str]) -> list[Stmt]:
        if touched & self.dirty:
            self.dirty.clear()
            return [Line("AscendC::PipeBarrier<PIPE_V>();")]
        return []

    def _frees(self, pos: int) -> list[Stmt]:
        out: list[Stmt] = []
        for slot in self.vec.frees.get(pos, ()):
            var = self.slot_var.pop(slot, None)
            if var is not None:
                out.append(Line(f"{self.names.buf(slot)}.FreeTensor({var});"))
        return out

    # --- ops -----------------------------------------------------------------
    def _op(self, op: ir.Op, pos: int) -> list[Stmt]:
        if isinstance(op, ir.LoadScalar):
            return self._load_scalar(op)
        if isinstance(op, ir.ScalarDef):
            return gm.scalar_def(op, self.names)
        if isinstance(op, ir.Dot):
            return (
                vector_io.receive(self, op) if op.result in self.sides.to_vector else []
            )
        if self.sides.op_side.get(id(op)) == CUBE:
            return []
        if isinstance(op, ir.Store):
            return vector_io.store(self, op)
        if isinstance(op, ir.ScatterAdd):
            add = scatter_io.window_add if op.at else scatter_io.scalar_add
            return add(self, op, pos)
        if isinstance(op, ir.Load) and op.into is None:
            return vector_io.load(self, op) + vector_io.send_loaded(self, op)
        if isinstance(op, (ir.AllocTensor, ir.Enqueue, ir.Dequeue, ir.FreeTensor)) or (
            isinstance(op, ir.Load)
        ):
            return vector_io.queue_op(self, op) + vector_io.send_loaded(self, op)
        if isinstance(op, ir.ValueOp):
            return self._compute(op, pos)
        if isinstance(op, (ir.DebugPrint, ir.DeviceAssert)):  # a --debug build
            return [vector_temps.stmt(x) for x in vector_debug.lower(self, op)]
        raise BackendError(f"{ir.op_name(type(op))} has no vector lowering", op.loc)

    def _declare(self, v: ir.Value, form: Any = None) -> list[Stmt]:
        """Bind ``v`` to its home; returns the declaration (if a new tensor variable).
        A value the deferred update reads one iteration late, made by a one-call form
        (``form``), is bound to its saved slot instead: written there, no copy."""
        if v.name in self.vec.views or v.name not in self.vec.homes:
            return []
        slot = self.vec.homes[v.name]
        t = v.type
        assert isinstance(t, TileType)
        ct = ctype(t.dtype, None)
        name = self.names.var(v.name)
        self.vars[v.name] = name
        kind = next(b.kind for b in self.low.plan.in_space("UB") if b.name == slot)
        member = self.names.buf(slot)
        if kind == "tbuf":
            home = f"{member}.Get<{ct}>()"
            if v.name in self.saving and form is not None and form.name in _DIRECT:
                home = self.saving[v.name]
                self.saved_direct.add(v.name)
            decl = [Line(f"AscendC::LocalTensor<{ct}> {name} = {home};")]
            return vector_chunk.hoisted(self, v.name, decl)
        prev = self.slot_var.get(slot)
        self.slot_var[slot] = name
        if prev is None:
            return [
                Line(
                    f"AscendC::LocalTensor<{ct}> {name} = {member}.AllocTensor<{ct}>();"
                )
            ]
        return [
            Line(f"AscendC::LocalTensor<{ct}> {name} = {prev}.ReinterpretCast<{ct}>();")
        ]

    def _compute(self, op: ir.ValueOp, pos: int) -> list[Stmt]:
        form = self.vec.forms.get(pos)
        if form is None or form.name in ("view", "fused"):
            return []
        rule = RULES.lookup(type(op))
        if rule is None:
            raise BackendError(f"{ir.op_name(type(op))} has no Ascend C rule", op.loc)
        guard = self.guards.get(id(op))
        if guard is not None:
            late = self.late.pop(id(op), [])
            calls = lambda: self._calls(op, form, rule, pos, False)  # noqa: E731
            return vector_guard.guarded(self, op, guard, late, calls, form.name)
        out = self._calls(op, form, rule, pos, True)
        if op.result in self.sides.to_cube:
            out += vector_io.send(self, op.result)
        return out

    def _calls(
        self, op: ir.ValueOp, form: Any, rule: Any, pos: int, declare: bool
    ) -> list[Stmt]:
        """A barrier if ``op`` touches an unfenced buffer, ``op.result``'s declaration
        (``declare``) and the rule's calls."""
        temps = vector_temps.names(form)
        touched = {self.vec.homes.get(v.name, "") for v in self._reads(op)}
        touched |= {self.vec.homes.get(op.result.name, "")} | set(
            self.vec.temps.get(pos, ())
        )
        out: list[Stmt] = list(self._barrier(touched))
        out += self._declare(op.result, form) if declare else []
        calls = [vector_temps.stmt(x) for x in rule(self, op, form, temps)]
        decls = [Line(t) for t in vector_temps.decls(self, pos, form)]
        out += [Block("", tuple(decls + calls))] if decls else calls
        self.dirty |= {self.vec.homes.get(op.result.name, "")} | set(
            self.vec.temps.get(pos, ())
        )
        return out

    def _reads(self, op: ir.Op) -> list[ir.Value]:
        reads = list(op.operand_values())
        if isinstance(op, ir.Where) and isinstance(op.cond, ir.Value):
            cmp = self.sides.defs.get(op.cond)
            if cmp is not None:
                reads += list(cmp.operand_values())
        out = []
        for v in reads:
            while isinstance(self.sides.defs.get(v), ir.ExpandDims):
                v = self.sides.defs[v].x  # type: ignore[attr-defined]
            out.append(v)
        return out

    def _load_scalar(self, op: ir.LoadScalar) -> list[Stmt]:
        return list(gm.load_scalar(self.low.kernel, op, self.names))


def _reads_within(op: ir.Op, reads: Any) -> list[ir.Value]:
    """Values ``op`` reads, including the ops of a loop body and its yields."""
    if not isinstance(op, ir.For):
        return reads(op)
    out = list(op.inits) + list(op.yields)
    for inner in op.body:
        out += _reads_within(inner, reads)
    return out
