"""The cube core's loads: a GM block into an NZ tile in L1 (tails zeroed as the
interpreter pads them), and a dot A operand that stays in L0A for a whole task."""

from __future__ import annotations

from fadsl.backends.ascendc import gm
from fadsl.backends.ascendc.core_emitter import CoreEmitter
from fadsl.backends.ascendc.cube_pages import pages_nz
from fadsl.backends.ascendc.names import ctype
from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.types import TileType


class CubeLoads(CoreEmitter):
    """GM -> L1 (NZ) loads and resident L0A operands of the cube class."""

    def _load_l1(self, op: ir.Load) -> list[Stmt]:
        v = op.result
        home = self.names.buf(self.low.cube_homes[v.name])
        ct, var = ct_of(v), self.names.var(v.name)
        out: list[Stmt] = [
            Line(f"AscendC::LocalTensor<{ct}> {var} = {home}.AllocTensor<{ct}>();")
        ]
        out += self._nd2nz(op, var, v)
        out += [
            Line(f"{home}.EnQue({var});"),
            Line(f"{var} = {home}.DeQue<{ct}>();"),
        ]
        return out + self._to_l0(v, var, ct)

    def _l0_tile(self, v: ir.Value) -> str:
        """The local of resident L0A operand ``v`` (l0_plan.py)."""
        return self.names.m.claim(
            "l0", v.name, self.names.var(v.name) + "L0Tile", ("kernel",)
        )

    def _to_l0(self, v: ir.Value, var: str, ct: str) -> list[Stmt]:
        """A dot A operand kept in L0A for the whole task: moved there once."""
        if v.name not in self.low.resident:
            return []
        que = self.names.buf(self.low.resident[v.name])
        t = v.type
        assert isinstance(t, TileType)
        m, k = (self.names.expr(d) for d in t.shape)
        tile = self._l0_tile(v)
        return [
            Line(f"AscendC::LocalTensor<{ct}> {tile} = {que}.AllocTensor<{ct}>();"),
            Line(f"fadsl::LoadA({tile}, {var}, {m}, {k});"),
            Line(f"{que}.EnQue({tile});"),
            Line(f"{tile} = {que}.DeQue<{ct}>();"),
        ]

    def _nd2nz(self, op: ir.Load, var: str, user: ir.Value) -> list[Stmt]:
        """GM block -> NZ tile in L1; a contraction tail (rows of a B operand) is zeroed."""
        if isinstance(op, ir.LoadPages):
            zero = self._contracts_rows(user) or (op.pad is not None and op.pad == 0)
            return pages_nz(self.low.kernel, op, var, zero, self.names)
        param = next(p for p in self.low.kernel.params if p.name == op.src)
        a = gm.access(ir.viewed(param, op.view), op.index, self.names)
        if a.col_tail and (op.pad is None or op.pad != 0):
            raise BackendError(
                f"a cube operand block of `{op.src}` has a column tail padded with "
                f"{op.pad}; the cube pads with 0",
                op.loc,
                hint="load it with pad=0, or load whole head dims (`:`)",
            )
        bounded = any(gm.bounded(ix) for ix in op.index)
        valid = (
            "static_cast<uint32_t>(validRows)"
            if bounded
            else f"static_cast<uint32_t>({a.valid_rows})"
        )
        out: list[Stmt] = [
            Line(
                f"fadsl::CopyNdToNz({var}, {self.names.gm(op.src)}[{a.offset}], {valid}, "
                f"{a.valid_cols}, {a.stride}, {a.rows});"
            )
        ]
        if a.col_tail:  # a padded head dim: its columns past the valid ones are 0
            out.append(
                Line(f"fadsl::ZeroTailCols({var}, {a.valid_cols}, {a.cols}, {a.rows});")
            )
        # a row tail is zeroed where it is contracted (the full-size Mmad must add
        # nothing for it) and wherever the load asks for pad=0: dP = dO V^T of the
        # backward reads V's tail rows as columns of dP that no mask removes
        zero_tail = self._contracts_rows(user) or (op.pad is not None and op.pad == 0)
        if zero_tail:
            if op.pad is not None and op.pad != 0:
                raise BackendError(
                    f"the contraction tail of `{op.src}` is padded with {op.pad}; the cube "
                    "pads with 0",
                    op.loc,
                    hint="load it with pad=0",
                )
            out.append(
                Line(f"fadsl::ZeroTailRows({var}, {valid}, {a.cols}, {a.rows});")
            )
        if not bounded:
            return out
        # a bounded block may hold no row at all (a Q block past its sequence's end);
        # a zero-padded one is then all padding: zeroed, not left as whatever L1 held
        # (its LoadData and Mmad still run, and read every row)
        empty: tuple[Stmt, ...] = ()
        if zero_tail:
            fill = f"fadsl::ZeroTailRows({var}, 0, {a.cols}, {a.rows});"
            empty = (Block("else", (Line(fill),)),)
        return [
            Block(
                "",
                (
                    Line(f"const int64_t validRows = {a.valid_rows};"),
                    Block("if (validRows > 0)", tuple(out)),
                )
                + empty,
            )
        ]

    def _contracts_rows(self, v: ir.Value) -> bool:
        """Whether the rows of tile ``v`` are the contraction dimension of a dot
        (a B operand not transposed, or an A operand given as its transpose)."""
        return any(
            isinstance(r, ir.Dot)
            and ((r.b == v and not r.transpose_b) or (r.a == v and r.transpose_a))
            for r in self.sides.readers.get(v, [])
        )


def ct_of(v: ir.Value) -> str:
    """The C++ element type of tile ``v``."""
    t = v.type
    assert isinstance(t, TileType)
    return ctype(t.dtype)


__all__ = ["CubeLoads", "ct_of"]
