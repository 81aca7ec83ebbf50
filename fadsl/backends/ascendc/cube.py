"""The cube-core (AIC) class: operands GM -> L1 (NZ) -> L0A/L0B, Mmad into L0C, Fixpipe.

Dot results go to GM workspaces followed by CrossCoreSetFlag; operands made by the
vector cores are waited for with CrossCoreWaitFlag and read back from their workspace.
Every L1/L0 tile moves through a TQue, whose EnQue/DeQue order the MTE2 -> MTE1 -> M ->
FIX pipes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any


from fadsl.backends.ascendc import cube_carry, gm
from fadsl.backends.ascendc.core_emitter import positions
from fadsl.backends.ascendc.cube_dot import CubeDots
from fadsl.backends.ascendc.cube_load import ct_of
from fadsl.backends.ascendc.names import buffer_len, source_comment
from fadsl.backends.ascendc.view import Block, CoreClass, Line, Member, Stmt
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, isym
from fadsl.ir.types import DType
from fadsl.plan.memory.plan_buffers import Lowering
from fadsl.plan.schedule import carry
from fadsl.plan.schedule.ring import Ring
from fadsl.plan.schedule.sides import CUBE, walk


class CubeEmitter(CubeDots):
    def setup(self) -> None:
        self.ends = _last_uses(self.low)
        self.alias: dict[str, str] = {}
        self.at, self.end_at = positions(self.low.kernel_grid_body)
        self.received: set[str] = set()
        """Vector-made operands already in L1 (a tile two dots read arrives once)."""

    def _var(self, v: ir.Value) -> str:
        return self.alias.get(v.name, self.names.var(v.name))

    def core_class(self, name: str) -> CoreClass:
        decls: list[str] = []
        if self.carry is not None:
            decls, body = cube_carry.process(self, self.carry)
            decls += [
                f"int64_t {carry.BASE} = 0;",
                f"int64_t {cube_carry.PRELOADED} = 0;",
            ]
        else:
            body = self.walk(self.low.kernel_grid_body)
        process = (
            tuple(self.task_header)
            + tuple(Line(x) for x in decls)
            + (Block(self.task_loop, tuple(self.prologue) + tuple(body)),)
        )
        return CoreClass(name, "cube", self._members(), (), process)

    def _members(self) -> tuple[Member, ...]:
        out = []
        for b in self.low.plan.buffers:
            if b.space == "UB":
                continue
            nbytes = buffer_len(
                b, self.low.target.align(b.space), self.names, self.low.env
            )
            name = self.names.buf(b.name)
            decl = (
                f"AscendC::TQue<AscendC::TPosition::{b.position}, {b.buffers}> {name};"
            )
            init = f"pipe_.InitBuffer({name}, {b.buffers}, {nbytes});"
            what = ", ".join(f"%{v}" for v in b.values) or b.role
            out.append(
                Member(decl, init, f"{b.space} {b.role}: {what} ({b.loc.short()})")
            )
        return tuple(out)

    # --- walking -------------------------------------------------------------
    def walk(self, body: tuple[ir.Op, ...]) -> list[Stmt]:
        out: list[Stmt] = []
        for op in body:
            self.pos = self.at[id(op)]
            if isinstance(op, ir.For):
                out += self._received_before(op)
                out += self._loop(op)
                continue
            stmts = self._op(op)
            stmts += self._frees(self.pos)
            if stmts:
                key = (op.loc.file, op.loc.line)
                if key != self.last_loc:
                    out.append(Line(source_comment(op.loc)))
                    self.last_loc = key
                out += stmts
        return out

    def _loop(self, op: ir.For) -> list[Stmt]:
        ring = self.low.rings.get(id(op))
        if ring is not None:
            return self._ring_loop(op, ring)
        var = self.names.var(op.var)
        self.last_loc = None
        body = self.walk(op.body)
        self.pos = self.end_at[id(op)]
        self.last_loc = None
        frees = self._frees(self.pos)  # tiles read in the loop, last used at its end
        if not body:
            return frees
        header = (
            f"for (int64_t {var} = {self.names.expr(op.start)}; {var} < "
            f"{self.names.expr(op.stop)}; ++{var})"
        )
        drain = [
            Line(x)
            for v, loop in self.low.free.items()
            if loop is op
            for x in self.free_wait(v, after_loop=True)
        ]
        return (
            [Line(source_comment(op.loc)), Block(header, tuple(body))] + drain + frees
        )

    def _received_before(self, loop: ir.For) -> list[Stmt]:
        """Receive, before ``loop``, each vector-made operand made outside it and
        first read inside it: the vector cores send it once, so the cube waits for it
        once (inside, it would wait every iteration, and a loop that runs no
        iteration would leave it undeclared for a later read)."""
        inside = {r for o in walk(loop.body) for r in o.results()}
        out: list[Stmt] = []
        for o in walk(loop.body):
            if not isinstance(o, ir.Dot):
                continue
            for v in (o.a, o.b):
                if v in self.sides.to_cube and v not in inside:
                    out += self._operand(v)[1]
        return out

    def _ring_loop(self, op: ir.For, ring: Ring) -> list[Stmt]:
        """The cube runs ahead (plan/schedule/ring.py): stage A of iteration j + lead before
        stage B of iteration j, after a prologue of stage A for the first ``lead``."""
        var = self.names.var(op.var)
        ahead = self.names.m.claim("ring", op.var, var + "Ahead", ("kernel",))
        first = ring.stages.ahead
        early = self._part(op.body, lambda o: id(o) in first)
        late = self._part(
            op.body, lambda o: id(o) not in first or isinstance(o, ir.LoadScalar)
        )
        start, stop = self.names.expr(op.start), self.names.expr(op.stop)
        lead = ring.lead

        def stage_a(lo: str, hi: str) -> Block:
            self.last_loc = None
            with self.rebound(op.var, ahead):
                body = self.walk(early)
            header = (
                f"for (int64_t {ahead} = {lo}; {ahead} < fadsl::Min<int64_t>({hi}, "
                f"{stop}); ++{ahead})"
            )
            return Block(header, tuple(body))

        what = (
            f"// ring of {ring.depth} workspace slots: the cube runs {lead} iteration"
            f"{'s' if lead > 1 else ''} ahead, stage A (no vector input) of iteration "
            f"{op.var} + {lead}, then stage B of {op.var}"
        )
        at = isym(op.var)
        prologue = stage_a(start, self.names.expr(op.start + lead))
        ahead_a = stage_a(self.names.expr(at + lead), self.names.expr(at + lead + 1))
        self.last_loc = None
        body = [ahead_a] + self.walk(late)
        self.pos = self.end_at[id(op)]
        self.last_loc = None
        frees = self._frees(self.pos)
        header = f"for (int64_t {var} = {start}; {var} < {stop}; ++{var})"
        return [
            Line(source_comment(op.loc)),
            Line(what),
            prologue,
            Block(header, tuple(body)),
        ] + frees

    def _part(
        self, body: tuple[ir.Op, ...], keep: Callable[[ir.Op], bool]
    ) -> tuple[ir.Op, ...]:
        """The ops of ``body`` that ``keep`` selects; a nested loop keeps the selected
        part of its body (at the program points of the original)."""
        out: list[ir.Op] = []
        for op in body:
            if not isinstance(op, ir.For):
                if keep(op):
                    out.append(op)
                continue
            inner = self._part(op.body, keep)
            if inner:
                part = replace(op, body=inner)
                self.at[id(part)] = self.at[id(op)]
                self.end_at[id(part)] = self.end_at[id(op)]
                out.append(part)
        return tuple(out)

    def _frees(self, pos: int) -> list[Stmt]:
        out: list[Stmt] = []
        for v, home in self.low.cube_homes.items():
            if self.ends.get(v) == pos:
                name = self.names.var(v)
                out.append(Line(f"{self.names.buf(home)}.FreeTensor({name});"))
                if v in self.low.resident:
                    que = self.names.buf(self.low.resident[v])
                    tile = self.names.m.claim("l0", v, name + "L0Tile", ("kernel",))
                    out.append(Line(f"{que}.FreeTensor({tile});"))
        return out

    # --- ops -----------------------------------------------------------------
    def _op(self, op: ir.Op) -> list[Stmt]:
        if isinstance(op, ir.LoadScalar):
            return gm.load_scalar(self.low.kernel, op, self.names)
        if isinstance(op, ir.ScalarDef):
            return gm.scalar_def(op, self.names)
        if self.sides.op_side.get(id(op)) != CUBE:
            return []
        if isinstance(op, ir.Dot):
            return self._dot(op)
        if isinstance(op, ir.Load) and op.into is None:
            return self._load_l1(op)
        return self._queue_op(op)

    def _queue_op(self, op: ir.Op) -> list[Stmt]:
        names = self.names
        if isinstance(op, ir.Load):
            assert op.into is not None
            self.alias[op.result.name] = names.var(op.into.name)
            return self._nd2nz(op, names.var(op.into.name), self._dequeued(op))
        queue = names.queue(op.queue.name)  # type: ignore[attr-defined]
        if isinstance(op, (ir.AllocTensor, ir.Dequeue)):
            ct, var = ct_of(op.result), names.var(op.result.name)
            call = "AllocTensor" if isinstance(op, ir.AllocTensor) else "DeQue"
            return [Line(f"AscendC::LocalTensor<{ct}> {var} = {queue}.{call}<{ct}>();")]
        if isinstance(op, ir.Enqueue):
            return [Line(f"{queue}.EnQue({self._var(op.x)});")]
        if isinstance(op, ir.FreeTensor):
            return [Line(f"{queue}.FreeTensor({self._var(op.x)});")]
        raise BackendError(f"{ir.op_name(type(op))} has no cube lowering", op.loc)


def _last_uses(low: Lowering) -> dict[str, int]:
    """Program point of the last read of each cube L1 value (loops extend it)."""
    ends: dict[str, int] = {}
    defs: dict[str, int] = {}
    for pos, op in low.vec.points.items():
        for r in op.results():
            defs[r.name] = pos
        for v in op.operand_values():
            if v.name in low.cube_homes:
                ends[v.name] = max(ends.get(v.name, 0), pos)
    for s, e, _ in low.vec_loops:
        for v, end in list(ends.items()):
            if s < end <= e and not s < defs.get(v, 0) <= e:
                ends[v] = max(ends[v], e)
    return ends


__all__ = ["CubeEmitter", "DType", "Expr", "Any"]
