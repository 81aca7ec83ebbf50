"""The cube-core (AIC) class: operands GM -> L1 (NZ) -> L0A/L0B, Mmad into L0C, Fixpipe.

Dot results go to GM workspaces followed by CrossCoreSetFlag; operands made by the
vector cores are waited for with CrossCoreWaitFlag and read back from their workspace.
Every L1/L0 tile moves through a TQue, whose EnQue/DeQue order the MTE2 -> MTE1 -> M ->
FIX pipes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any


from fadsl.backends.ascendc import cube_carry, cube_subdot, gm
from fadsl.backends.ascendc.core_emitter import positions
from fadsl.backends.ascendc.cube_load import CubeLoads, ct_of
from fadsl.backends.ascendc.names import buffer_len, source_comment
from fadsl.backends.ascendc.view import Block, CoreClass, Line, Member, Stmt
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, isym
from fadsl.ir.types import DType, TileType
from fadsl.plan.memory.l0_split import SubDots
from fadsl.plan.memory.plan_buffers import Lowering
from fadsl.plan.schedule import carry
from fadsl.plan.schedule.ring import Ring
from fadsl.plan.schedule.sides import CUBE, walk


class CubeEmitter(CubeLoads):
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
            decls += [f"int64_t {carry.BASE} = 0;", f"int64_t {cube_carry.PRELOADED} = 0;"]
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

    def _dequeued(self, load: ir.Load) -> ir.Value:
        """The value the rest of the program reads for a queued load (its Dequeue)."""
        assert load.into is not None
        queue = self.sides.defs[load.into].queue  # type: ignore[attr-defined]
        for op in self.low.vec.points.values():
            if isinstance(op, ir.Dequeue) and op.queue == queue:
                return op.result
        return load.result

    def _operand(self, v: ir.Value) -> tuple[str, list[Stmt]]:
        """The L1 tile of a dot operand (receiving it from the vector cores at its first
        read; it stays in L1 until its last, like a loaded operand)."""
        if v not in self.sides.to_cube or v.name in self.received:
            return self.names.var(v.name), []
        self.received.add(v.name)
        home = self.names.buf(self.low.cube_homes[v.name])
        ct = ct_of(v)
        t = v.type
        assert isinstance(t, TileType)
        rows, cols = (self.names.expr(d) for d in t.shape)
        name = self.names.var(v.name)
        return name, [
            Line(f"AscendC::CrossCoreWaitFlag({self.flag_of(v.name)});"),
            Line(f"AscendC::LocalTensor<{ct}> {name} = {home}.AllocTensor<{ct}>();"),
            Line(
                f"fadsl::CopyNdToNz({name}, {self.ws_of(v.name)}, {rows}, {cols}, {cols}, {rows});"
            ),
            Line(f"{home}.EnQue({name});"),
            Line(f"{name} = {home}.DeQue<{ct}>();"),
        ]

    def _dot(self, op: ir.Dot) -> list[Stmt]:
        ta, tb = op.a.type, op.b.type
        assert isinstance(ta, TileType) and isinstance(tb, TileType)
        if not op.transpose_b and tb.dtype.itemsize != 2:
            raise BackendError(
                f"dot with a {tb.dtype.value} B operand that is not transposed: LoadData "
                "transposes only 16-bit fractals on the cube",
                op.loc,
                hint="use fp16 or bf16 operands for this dot",
            )
        a, pre_a = self._operand(op.a)
        b, pre_b = self._operand(op.b)
        m, k = (
            self.names.expr(d)
            for d in (reversed(ta.shape) if op.transpose_a else ta.shape)
        )
        n = self.names.expr(tb.shape[0] if op.transpose_b else tb.shape[1])
        split = self.low.sub_dots.get(op.result.name)
        if split is not None:
            rows = (self.names.expr(ta.shape[0]), self.names.expr(tb.shape[0]))
            dims = cube_subdot.Dims(m, n, k, *rows)
            return pre_a + pre_b + self._sub_mmad(op, a, b, split, dims)
        return pre_a + pre_b + self._mmad(op, a, b, m, n, k, k)

    def _sub_mmad(
        self, op: ir.Dot, a: str, b: str, s: SubDots, dims: cube_subdot.Dims
    ) -> list[Stmt]:
        """The dot as sub-dots (plan/memory/l0_split.py): loops over the split dimensions,
        one L0C tile per (M, N) window accumulating over K, one Fixpipe each."""
        off, loops = cube_subdot.loops(op, s, dims, self.names)
        whole = self._mmad(op, a, b, str(s.m), str(s.n), str(s.k), str(s.k))
        lines = [x.text for x in whole[0].body]  # type: ignore[attr-defined]
        part_a = cube_subdot.load_a(op, s, dims, a, off)
        part_b = cube_subdot.load_b(op, s, dims, b, off)
        k_loop = next((lp for lp in loops if lp[0] == off["k"]), None)
        init = f"{off['k']} == 0" if k_loop else "true"
        inner: list[str] = []  # the K step: loads and Mmad
        outer_pre: list[str] = []  # before the K loop: the L0C tile
        outer_post: list[str] = []  # after it: Fixpipe
        for x in lines:
            if x.startswith("fadsl::LoadA") and part_a:
                x = part_a
            elif x.startswith("fadsl::LoadB") and part_b:
                x = part_b
            elif "AscendC::Mmad(" in x:
                x = x.replace(", 0, false, true});", f", 0, false, {init}}});")
            elif x.startswith("AscendC::Fixpipe("):
                dst = self._window_dst(op, off, dims)
                x = x.replace(
                    f"AscendC::Fixpipe({self.ws_of(op.result.name)},",
                    f"AscendC::Fixpipe({dst},",
                )
                x = x.replace(
                    f'Field<uint32_t>({s.n}, "FixpipeParamsV220.dstStride")',
                    f'Field<uint32_t>({dims.n}, "FixpipeParamsV220.dstStride")',
                )
            if "CrossCoreSetFlag" in x or "CrossCoreWaitFlag" in x:
                continue
            if "cL0Tile" not in x or "AscendC::Mmad(" in x:
                inner.append(x)
            elif "AllocTensor" in x:
                outer_pre.append(x)
            else:  # EnQue, DeQue, Fixpipe, FreeTensor of the L0C tile
                outer_post.append(x)
        body: list[Stmt] = [Line(x) for x in inner]
        if k_loop:
            body = [Block(cube_subdot.header(*k_loop), tuple(body))]
        mn: list[Stmt] = (
            [Line(x) for x in outer_pre] + body + [Line(x) for x in outer_post]
        )
        for lp in reversed([lp for lp in loops if lp is not k_loop]):
            mn = [Block(cube_subdot.header(*lp), tuple(mn))]
        wait = [Line(x) for x in self.free_wait(op.result.name)]
        out: list[Stmt] = [Line(cube_subdot.comment(op, s))] + wait + mn
        if op.result in self.sides.to_vector:
            out.append(
                Line(
                    f"AscendC::CrossCoreSetFlag<2, PIPE_FIX>({self.flag_of(op.result.name)});"
                )
            )
        return [Block("", tuple(out))]

    def _window_dst(
        self, op: ir.Dot, off: dict[str, str], dims: cube_subdot.Dims
    ) -> str:
        """The workspace at the (M, N) window of a sub-dot: row m, column n."""
        parts = ([f"{off['m']} * {dims.n}"] if off["m"] != "0" else []) + (
            [off["n"]] if off["n"] != "0" else []
        )
        if not parts:
            return self.ws_of(op.result.name)
        return self.ws_at(op.result.name, " + ".join(parts))

    def _mmad(
        self, op: ir.Dot, a: str, b: str, m: str, n: str, k: str, k_valid: str
    ) -> list[Stmt]:
        ct = ct_of(op.a)
        load_b = (
            f"fadsl::LoadBTransposed(bL0Tile, {b}, {k}, {n});"
            if op.transpose_b
            else f"fadsl::LoadB(bL0Tile, {b}, {k}, {n});"
        )
        v = op.result
        resident = op.a.name in self.low.resident
        a_tile = self._l0_tile(op.a) if resident else "aL0Tile"
        lines = [
            f"AscendC::LocalTensor<{ct}> aL0Tile = aL0.AllocTensor<{ct}>();",
            (
                f"fadsl::LoadATransposed(aL0Tile, {a}, {m}, {k});"
                if op.transpose_a
                else f"fadsl::LoadA(aL0Tile, {a}, {m}, {k});"
            ),
            "aL0.EnQue(aL0Tile);",
            f"AscendC::LocalTensor<{ct}> bL0Tile = bL0.AllocTensor<{ct}>();",
            load_b,
            "bL0.EnQue(bL0Tile);",
            f"aL0Tile = aL0.DeQue<{ct}>();",
            f"bL0Tile = bL0.DeQue<{ct}>();",
            "AscendC::LocalTensor<float> cL0Tile = cL0.AllocTensor<float>();",
            f"AscendC::Mmad(cL0Tile, {a_tile}, bL0Tile, AscendC::MmadParams{{"
            f'fadsl::Field<uint16_t>({m}, "MmadParams.m"), '
            f'fadsl::Field<uint16_t>({n}, "MmadParams.n"), '
            f'fadsl::Field<uint16_t>({k_valid}, "MmadParams.k"), 0, false, true}});',
            "aL0.FreeTensor(aL0Tile);",
            "bL0.FreeTensor(bL0Tile);",
            "cL0.EnQue(cL0Tile);",
            "cL0Tile = cL0.DeQue<float>();",
        ]
        if resident:  # Q stays in L0A (l0_plan.py): no LoadA per dot
            lines = [x for x in lines if "aL0Tile" not in x]
        if v in self.sides.to_vector:
            lines += self.free_wait(v.name) + [
                f"AscendC::Fixpipe({self.ws_of(v.name)}, cL0Tile, AscendC::FixpipeParamsV220{{"
                f'fadsl::Field<uint16_t>({n}, "FixpipeParamsV220.nSize"), '
                f'fadsl::Field<uint16_t>({m}, "FixpipeParamsV220.mSize"), '
                f'fadsl::Field<uint16_t>({m}, "FixpipeParamsV220.srcStride"), '
                f'fadsl::Field<uint32_t>({n}, "FixpipeParamsV220.dstStride"), false, '
                "QuantMode_t::NoQuant, 0, 1, 0, 0, 0});",
                "cL0.FreeTensor(cL0Tile);",
                f"AscendC::CrossCoreSetFlag<2, PIPE_FIX>({self.flag_of(v.name)});",
            ]
        else:
            lines.append("cL0.FreeTensor(cL0Tile);")
        # the L0 buffers as the Mangler named them (plan names aL0, bL0, cL0)
        l0 = {n: self.names.buf(n) for n in ("aL0", "bL0", "cL0")}
        lines = [re.sub(r"\b([abc]L0)\b", lambda m: l0[m.group(1)], x) for x in lines]
        return [Block("", tuple(Line(x) for x in lines))]


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
