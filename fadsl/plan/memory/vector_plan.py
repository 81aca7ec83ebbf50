"""UB buffers of the vector unit: homes of vector values, temporaries, reuse by liveness.

Program points are numbered by ``linearize`` (depth first over the grid body, loops
bracketed by their start and end points). A value is live from its definition to its
last use; a use inside a loop the value was defined outside of keeps it live to the
loop's end. Homes:
  * loop-carried values (init, iteration argument, result) share one state buffer;
    an update that cannot be computed in place is copied in at the end of the body;
  * dot results arriving from the cube get a VECIN queue (staging), values going to
    GM (stores, dot operands for the cube) a VECOUT queue, vector loads a VECIN queue,
    pipelined loads the queue the pipeline pass made;
  * every other value takes a dying operand's buffer when its form computes in place,
    else any VECCALC buffer whose occupants are all dead (growing it if needed).
Temporaries of instruction forms come from the same VECCALC pool for one point.
A row chunk region (``plan/memory/row_chunk.py``) runs once per chunk of rows: inside it the
forms see chunk-sized row tiles, values made and used only there are chunk-sized, and
values that live across it keep all the rows (``chunk_place``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fadsl.errors import Loc
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, as_expr, evaluate
from fadsl.ir.types import QueueType, Shape, TileType
from fadsl.plan.memory.row_chunk_plan import (
    chunk_end,
    chunk_may_share,
    chunk_place,
    chunk_regions,
)
from fadsl.plan.memory.row_chunk import ChunkRegion
from fadsl.plan.schedule.sides import CUBE, Sides
from fadsl.plan.memory.vector_queues import QueueHomes
from fadsl.plan.memory.vector_forms import Form, TempSpec, count, form_of, is_compare
from fadsl.plan.memory.vector_slots import (
    Slot,
    VecPlan,
    camel,
    grow_bytes,
    linearize,
    spec_bytes,
)

_IN_PLACE = (
    "unary",
    "full",
    "scalar",
    "rscalar",
    "row_bcast",
    "col_bcast",
    "mask_full",
    "mask_cols",
    "mask_outer",
    "mask_diag",
)


class VectorPlanner(QueueHomes):
    """Plans the UB buffers of one grid body: ``plan(env)`` gives its VecPlan.

    ``core_shape`` maps a tile shape to the part one vector core holds (its half of the
    rows on split chips); ``queues`` are the queue allocations of the pipeline pass.
    """

    def __init__(
        self,
        grid: ir.Grid,
        sides: Sides,
        core_shape: Callable[[ir.Operand], Shape],
        queues: dict[ir.Value, ir.QueueAlloc],
        chunks: tuple[ChunkRegion, ...] = (),
    ) -> None:
        self.grid = grid
        self.chunks = chunks
        self.region: ChunkRegion | None = None
        """The chunk region of the point being planned."""
        self.chunked: set[str] = set()
        """Values made in a region and dead at its end: chunk-sized."""
        self.sides = sides
        self.core_shape = core_shape
        self.queues = queues
        self.points: dict[int, ir.Op] = {}
        self.loops: list[tuple[int, int, ir.For]] = []
        linearize(grid.body, self.points, self.loops, [0])
        self.defpos: dict[ir.Value, int] = {}
        self.uses: dict[ir.Value, list[int]] = {}
        self.views: dict[str, str] = {}
        self.root: dict[ir.Value, ir.Value] = {}
        self.slots: list[Slot] = []
        self.home: dict[ir.Value, Slot] = {}
        self.forms: dict[int, Form] = {}
        self.temps: dict[int, tuple[str, ...]] = {}
        self.state_copies: dict[str, list[tuple[str, str]]] = {}
        self.names: set[str] = set()
        self._tmp_count = 0
        self._ends: dict[ir.Value, int] = {}
        """``end_of`` per root value (fixed once ``analyse`` has run)."""
        self._values: dict[Any, float] = {}
        """``_value`` per expression at ``env``."""

    # --- analysis ------------------------------------------------------------
    def vector_op(self, op: ir.Op) -> bool:
        return self.sides.op_side.get(id(op)) not in (CUBE, None) and not isinstance(
            op, (ir.Grid, ir.For, ir.LoadScalar, ir.ScalarDef)
        )

    def shape(self, v: ir.Operand) -> Shape | None:
        if isinstance(v, ir.Imm):
            return None
        t = v.type
        if isinstance(t, QueueType):
            t = t.tile
        assert isinstance(t, TileType)
        core = self.core_shape(v)
        r = self.region
        return r.chunk_shape(core) if r is not None and r.is_row(v) else core

    def find_root(self, v: ir.Value) -> ir.Value:
        while v in self.root:
            v = self.root[v]
        return v

    def analyse(self) -> None:
        for pos, op in self.points.items():
            if isinstance(op, ir.For):
                self._loop_defs(pos, op)
            for r in op.results():
                self.defpos.setdefault(r, pos)
            if isinstance(op, ir.ExpandDims):
                self.root[op.result] = op.x
                self.views[op.result.name] = op.x.name
        for pos, op in self.points.items():
            for v in self._read(op, pos):
                self.uses.setdefault(self.find_root(v), []).append(pos)

    def _loop_defs(self, pos: int, op: ir.For) -> None:
        for init, arg, res in zip(op.inits, op.iter_args, op.loop_results):
            self.root[arg] = init
            self.root[res] = init
        end = next(e for s, e, lp in self.loops if lp is op)
        for y in op.yields:
            self.uses.setdefault(y, []).append(end)

    def _read(self, op: ir.Op, pos: int) -> list[ir.Value]:
        reads = list(op.operand_values())
        if isinstance(op, ir.Where) and isinstance(op.cond, ir.Value):
            cmp = self.sides.defs.get(op.cond)
            if cmp is not None and is_compare(cmp):
                reads += list(cmp.operand_values())
        return reads

    def end_of(self, v: ir.Value) -> int:
        root = self.find_root(v)
        end = self._ends.get(root)
        if end is None:
            end = self._ends[root] = self._end_of(root)
        return end

    def _end_of(self, root: ir.Value) -> int:
        start = self.defpos.get(root, 0)
        end = max(self.uses.get(root, [start]) + [start])
        spans = [(ls, le) for ls, le, _ in self.loops]
        for ls, le in spans + [(c.start - 1, c.end) for c in self.chunks]:
            if (
                any(ls < u <= le for u in self.uses.get(root, []))
                and not ls < start <= le
            ):
                end = max(end, le)
        return chunk_end(self, root, start, end)

    # --- allocation ----------------------------------------------------------
    def plan(self, env: dict[str, int]) -> VecPlan:
        self.env = env
        self._values = {}
        self.analyse()
        self._ends = {}
        self._arg_last = self._iter_arg_last_uses()
        frees: dict[int, list[str]] = {}
        for pos, op in sorted(self.points.items()):
            self.region = next((c for c in self.chunks if c.covers(pos)), None)
            if isinstance(op, ir.Dot) and op.result in self.sides.to_vector:
                self._place(op, op.result, None, pos)
            if not self.vector_op(op):
                continue
            form = self._form(op)
            if form is not None:
                self.forms[pos] = form
            for r in op.results():
                if isinstance(r.type, TileType):
                    self._place(op, r, form, pos)
            if form is not None and form.temps:
                self.temps[pos] = tuple(self._temp(t, pos, op.loc) for t in form.temps)
        self.region = None
        for slot in self.slots:
            if slot.kind == "queue" and slot.role != "pipelined":
                for end in slot.allocs:
                    frees.setdefault(end, []).append(slot.name)
        return VecPlan(
            self.slots,
            {v.name: s.name for v, s in self.home.items()},
            self.views,
            self.forms,
            self.temps,
            self.points,
            {k: tuple(v) for k, v in frees.items()},
            {k: tuple(v) for k, v in self.state_copies.items()},
            tuple(self.loops),
            chunk_regions(self),
        )

    def _form(self, op: ir.Op) -> Form | None:
        if isinstance(op, ir.ScatterAdd):  # plan/memory/scatter_form.py
            return form_of(op, self.shape, self.sides.defs)
        if not isinstance(op, ir.ValueOp) or isinstance(
            op, (ir.Load, ir.Dequeue, ir.AllocTensor)
        ):
            return None
        return form_of(op, self.shape, self.sides.defs)

    def _iter_arg_last_uses(self) -> dict[ir.Value, int]:
        """Last point (in the loop body) reading each loop's iteration argument."""
        last: dict[ir.Value, int] = {}
        for pos, op in self.points.items():
            for v in self._read(op, pos):
                base = self._unview(v)
                if _is_iter_arg(base, self.loops):
                    last[base] = max(last.get(base, 0), pos)
        return last

    def _unview(self, v: ir.Value) -> ir.Value:
        while isinstance(self.sides.defs.get(v), ir.ExpandDims):
            v = self.sides.defs[v].x  # type: ignore[attr-defined]
        return v

    def _bytes(self, v: ir.Value, whole: bool = False) -> Expr:
        """Bytes of ``v``'s home: chunk-sized for a value living inside a region
        (unless ``whole``: the size of all the core's rows)."""
        s = self.core_shape(v)
        r = self.region
        if not whole and r is not None and v.name in self.chunked:
            s = r.chunk_shape(s)
        t = v.type.tile if isinstance(v.type, QueueType) else v.type  # type: ignore[union-attr]
        return count(s) * t.dtype.itemsize  # type: ignore[union-attr]

    def _place(self, op: ir.Op, r: ir.Value, form: Form | None, pos: int) -> None:
        if form is not None and form.name in ("view", "fused"):
            return
        group = self._group_of(r)
        if group is not None:
            slot = self._new_slot(
                group, "VECCALC", "tbuf", "state", op.loc, pinned=True
            )
            self._occupy(slot, r, self.end_of(r))
            return
        at = chunk_place(self, r, pos)
        special = self._special(op, r, pos)
        if special is not None:
            self._occupy(special, r, self.end_of(r), fresh=True)
            return
        slot = self._in_place(op, r, form, pos) or self._pool(
            self._bytes(r), at, op.loc, r.name
        )
        self._occupy(slot, r, self.end_of(r))
        self._note_state_yield(r, slot)

    def _group_of(self, v: ir.Value) -> str | None:
        for _, _, loop in self.loops:
            if v in loop.inits:
                return camel(v.name)
        return None

    def _dies_here(self, v: ir.Value, pos: int) -> bool:
        base = self._unview(v)
        if _is_iter_arg(base, self.loops):
            return self._arg_last.get(base) == pos
        return self.end_of(base) == pos

    def _in_place(
        self, op: ir.Op, r: ir.Value, form: Form | None, pos: int
    ) -> Slot | None:
        if form is None or form.name not in _IN_PLACE:
            return None
        yielded = any(r in loop.yields for _, _, loop in self.loops)
        for v in op.operand_values():
            base = self._unview(v)
            slot = self.home.get(self.find_root(base)) or self.home.get(base)
            if (
                slot is None
                or slot.role == "pipelined"
                or self.shape(base) != self.shape(r)
                or (yielded and slot.kind == "queue")
            ):
                # a yielded value lives to the loop's end, where the loop is closed:
                # a queue tile cannot be freed there (its FreeTensor would follow the
                # loop, out of the tile's scope) and the state copy would read it
                continue
            if self._bytes(base, True) != self._bytes(r, True):
                continue
            if not self._dies_here(v, pos) or not chunk_may_share(self, r, slot):
                continue
            return slot
        return None

    def _note_state_yield(self, r: ir.Value, slot: Slot) -> None:
        for _, _, loop in self.loops:
            if r not in loop.yields:
                continue
            # a loop whose inits are an earlier loop's results shares that loop's state
            init = self.find_root(loop.inits[loop.yields.index(r)])
            state = self.home.get(init)
            if state is not None and state is not slot:
                self.state_copies.setdefault(loop.var, []).append((r.name, init.name))

    def _value(self, e: Expr) -> float:
        """``e`` at the planning sizes, to choose among buffers (sizes stay symbolic)."""
        got = self._values.get(e)
        if got is None:
            try:
                got = float(evaluate(as_expr(e), self.env))
            except (KeyError, TypeError, ValueError):
                got = 0.0
            self._values[e] = got
        return got

    def _pool(self, need: Expr, pos: int, loc: Loc, hint: str) -> Slot:
        free = [s for s in self.slots if s.kind == "tbuf" and s.free_at(pos)]
        want = self._value(need)
        fits = [s for s in free if self._value(s.bytes) >= want]
        if fits:
            slot = min(fits, key=lambda s: self._value(s.bytes))
        elif free:
            slot = max(free, key=lambda s: self._value(s.bytes))
        else:
            slot = self._new_slot(
                f"tmp{self._tmp_count}", "VECCALC", "tbuf", "temp", loc
            )
            self._tmp_count += 1
        slot.bytes = grow_bytes(slot.bytes, need)
        return slot

    def _temp(self, spec: TempSpec, pos: int, loc: Loc) -> str:
        need = spec_bytes(spec)
        slot = self._pool(need, pos, loc, spec.role.replace("-", "_") + "Tmp")
        slot.ends.append(pos)
        return slot.name

    def _new_slot(
        self,
        hint: str,
        position: str,
        kind: str,
        role: str,
        loc: Loc,
        pinned: bool = False,
        buffers: int = 1,
        exact: str | None = None,
    ) -> Slot:
        base = exact or camel(hint) + ("Que" if kind == "queue" else "Buf")
        name, n = base, 0
        while name in self.names:
            n += 1
            name = f"{base}{n}"
        self.names.add(name)
        slot = Slot(name, position, kind, role, loc, buffers=buffers, pinned=pinned)
        self.slots.append(slot)
        return slot

    def _occupy(self, slot: Slot, v: ir.Value, end: int, fresh: bool = False) -> None:
        if slot.kind == "queue" and slot.role != "pipelined":
            if fresh or not slot.allocs:
                slot.allocs.append(end)
            else:
                slot.allocs[-1] = max(slot.allocs[-1], end)
        self.home[v] = slot
        slot.values.append(v.name)
        slot.ends.append(end)
        b = self._bytes(v)
        if self._value(b) > self._value(slot.bytes) or slot.bytes == 0:
            t = v.type.tile if isinstance(v.type, QueueType) else v.type  # type: ignore[union-attr]
            slot.shape = self._home_shape(v)
            slot.dtype = t.dtype  # type: ignore[union-attr]
        slot.bytes = grow_bytes(slot.bytes, b)

    def _home_shape(self, v: ir.Value) -> Shape:
        r, core = self.region, self.core_shape(v)
        return r.chunk_shape(core) if r and v.name in self.chunked else core


def _is_iter_arg(v: ir.Value, loops: list[tuple[int, int, ir.For]]) -> bool:
    return any(v in loop.iter_args for _, _, loop in loops)
