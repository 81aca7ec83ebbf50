"""Dots on the cube core: operands in L1 (loaded, or received from the vector cores
through their workspace at the first read), LoadData into L0A/L0B, Mmad into L0C, and
the sub-dots an L0 split plans (``cube_subdot``). Mixed into ``CubeEmitter``."""

from __future__ import annotations

import re

from fadsl.backends.ascendc import cube_subdot
from fadsl.backends.ascendc.cube_load import CubeLoads, ct_of
from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.types import TileType
from fadsl.plan.memory.l0_split import SubDots
from fadsl.plan.schedule import send_order


class CubeDots(CubeLoads):
    """The dot lowering of the cube class (``_dot``) and the operands it reads."""

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

    def _send_order(self, op: ir.Dot) -> tuple[ir.Value, ...]:
        """op's operands in the order the vector cores send them (``a`` first unless
        both are vector-made and ``b`` is made first: plan/schedule/send_order.py)."""
        sent = all(v in self.sides.to_cube for v in (op.a, op.b))
        if op.a.name == op.b.name or not sent:
            return (op.a, op.b)
        made = send_order.positions(self.low.kernel_grid_body)
        return send_order.in_send_order((op.a, op.b), made)

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
        got = {v.name: self._operand(v) for v in self._send_order(op)}
        a, b = got[op.a.name][0], got[op.b.name][0]
        pre = [s for _, stmts in got.values() for s in stmts]  # in send order
        m, k = (
            self.names.expr(d)
            for d in (reversed(ta.shape) if op.transpose_a else ta.shape)
        )
        n = self.names.expr(tb.shape[0] if op.transpose_b else tb.shape[1])
        split = self.low.sub_dots.get(op.result.name)
        if split is not None:
            rows = (self.names.expr(ta.shape[0]), self.names.expr(tb.shape[0]))
            dims = cube_subdot.Dims(m, n, k, *rows)
            return pre + self._sub_mmad(op, a, b, split, dims)
        return pre + self._mmad(op, a, b, m, n, k, k)

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
