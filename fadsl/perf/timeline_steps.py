"""Steps of one task from the IR, one per engine action (for ``fadsl/perf/timeline.py``).

Each load is a step on the MTE2 of the core that reads it (the cube core's for a tile a
dot takes, the vector cores' otherwise); each dot is an MTE1 step (L1 -> L0A/L0B) then a
CUBE step; consecutive vector ops are one VECTOR step; a store is an MTE3 step. On split
chips a value made on one core and read on the other goes through a GM workspace: a
write by the producer's engine (FIXPIPE for a dot result, the vector cores' MTE3 for P)
and a read by the consumer's MTE2, after a flag hand-over. Each KV iteration starts with
a SCALAR step (loop control). ``fadsl/perf/timeline_schedule.py`` places the steps.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fadsl.perf.cost_work import FREE, Work, count_body, count_op, value_bytes, walk
from fadsl.ir import nodes as ir
from fadsl.perf.engines import load_lane, store_lane
from fadsl.perf.guard_share import tail_times
from fadsl.target import Target
from fadsl.perf.timeline_schedule import ROUND, Step
from fadsl.perf.step_calls import gm_copy, load_data_call, pad_fill, vector_calls
from fadsl.perf.sub_dot_steps import sub_dot_steps
from fadsl.plan.memory.l0_split import SubDots
from fadsl.plan.schedule.send_order import in_send_order, positions


class StepBuilder:
    """Turns op sequences into engine steps, adding workspace transfers on split chips."""

    def __init__(
        self,
        grid: ir.Grid,
        loop: ir.For,
        target: Target,
        resident: bool = False,
        sub_dots: dict[str, SubDots] | None = None,
        params: tuple[ir.Param, ...] = (),
    ) -> None:
        self.target = target
        self.params = {p.name: p for p in params}
        """The kernel's tensors: a vector load's pad fill depends on their shapes."""
        self.sub_dots = sub_dots or {}
        """Dots the planner splits (plan/memory/l0_split.py): one step per sub-dot."""
        self.written: set[str] = set()
        """Split dot results whose Fixpipe steps the sub-dot steps already made."""
        self.in_loop = {r.name for op in walk(loop.body) for r in op.results()}
        self.in_loop |= {a.name for a in loop.iter_args}
        self.resident = resident
        """Dot operands made outside the KV loop stay in L0 (perf/schedule.py)."""
        self.split = target.split
        self.part = ""
        self.alias: dict[str, str] = {}
        self.side: dict[str, str] = {}
        ops = walk(grid.body)
        self.producers = {r: op for op in ops for r in op.results()}
        self.made_at = positions(grid.body)
        self.to_cube = {
            v.name for op in ops if isinstance(op, ir.Dot) for v in (op.a, op.b)
        }
        self.vector_read = {
            v.name
            for op in ops
            if not isinstance(op, ir.Dot)
            for v in op.operand_values()
        }
        for arg, y in zip(loop.iter_args, loop.yields):
            self.side[arg.name] = side_of(self.producers.get(y))
        for res, y in zip(loop.loop_results, loop.yields):
            self.side[res.name] = side_of(self.producers.get(y))
        self.times = tail_times(grid, loop)
        """Ops of the KV loop that only a partial block runs: their share of blocks."""

    def steps(self, ops: tuple[ir.Op, ...], part: str = "") -> list[Step]:
        """Steps of ``ops``; ``part`` names vector steps outside the loop (init, finish)."""
        self.part = part
        out: list[Step] = []
        if not part:
            out.append(
                Step("SCALAR", "scalar", "scalar loop control", (), (ROUND,), {})
            )
        group: list[ir.Op] = []
        for op in ops:
            if isinstance(op, ir.ExpandDims):
                self.alias[op.result.name] = self._name(op.x)
                continue
            if isinstance(op, FREE):
                continue
            if lane_kind(op) == "vector":
                crossings = self._crossings(op, "vector")
                if crossings:
                    self._close(group, out)
                    group = []
                    out += crossings
                group.append(op)
                if self.split and any(r.name in self.to_cube for r in op.results()):
                    self._close(group, out)  # sent on right after it is made
                    group = []
                continue
            self._close(group, out)
            group = []
            if isinstance(op, ir.Dot):
                out += self._crossings(op, "cube") + self._dot(op)
            else:
                out.append(self._single(op))
        self._close(group, out)
        if not part:
            gate_first_step(out)
        return out

    def _name(self, v: ir.Value) -> str:
        return self.alias.get(v.name, v.name)

    def _crossings(self, op: ir.Op, side: str) -> list[Step]:
        if not self.split:
            return []
        out = []
        values = tuple(op.operand_values())
        if isinstance(op, ir.Dot):  # as the cube receives them (send_order.py)
            values = in_send_order(values, self.made_at)
        for v in values:
            name = self._name(v)
            made = self.side.get(name) or side_of(self.producers.get(v))
            if made in ("dma", side) or f"{name}@{side}" in self.side:
                continue
            self.side[f"{name}@{side}"] = side
            work = {"ws_bytes": value_bytes(v)}
            gm = f"{name}@gm>{side}"
            if name in self.written:  # each sub-dot window has its own Fixpipe
                read = Step(
                    "AIV MTE2",
                    "ws_read",
                    f"ws {name} read (cube -> vector)",
                    (gm,),
                    (f"{name}@{side}",),
                    work,
                )
                out.append(read)
                continue
            if side == "vector":  # S or P @ V: Fixpipe writes, the vector MTE2 reads
                writer, reader, arrow = "FIXPIPE", "AIV MTE2", "cube -> vector"
            else:  # P: the vector MTE3 writes, the cube MTE2 reads
                writer, reader, arrow = "AIV MTE3", "AIC MTE2", "vector -> cube"
            gm = f"{name}@gm>{side}"
            out.append(
                Step(
                    writer,
                    "ws_write",
                    f"ws {name} write ({arrow})",
                    (name,),
                    (gm,),
                    work,
                )
            )
            out.append(
                Step(
                    reader,
                    "ws_read",
                    f"ws {name} read ({arrow})",
                    (gm,),
                    (f"{name}@{side}",),
                    work,
                )
            )
        return out

    def _uses(self, ops: list[ir.Op], side: str) -> tuple[str, ...]:
        made = {r.name for op in ops for r in op.results()}
        names = []
        for op in ops:
            for v in op.operand_values():
                name = self._name(v)
                if name in made:
                    continue
                crossed = f"{name}@{side}"
                names.append(crossed if crossed in self.side else name)
        return tuple(dict.fromkeys(names))

    def _dot(self, op: ir.Dot) -> list[Step]:
        w = Work()
        count_op(op, w, {}, False, 1)
        work = dict(w.amounts)
        if self.resident:  # a loop-invariant operand is moved to L0 once, not here
            for key, v in (("l0a_bytes", op.a), ("l0b_bytes", op.b)):
                if self._name(v) not in self.in_loop:
                    work.pop(key, None)
        uses = self._uses([op], "cube")
        res = op.result.name
        self.side[res] = "cube"
        split = self.sub_dots.get(res)
        if split is not None:
            moved_a = "l0a_bytes" in work
            written = self.split and res in self.vector_read
            if written:
                self.written.add(res)
            return sub_dot_steps(op, split, uses, moved_a, written)
        bt = "^T" if op.transpose_b else ""
        what = f"{op.a.name} @ {op.b.name}{bt}"
        loads = (load_data_call(op, "l0a_bytes" in work),)
        return [
            Step(
                "MTE1",
                "mte1",
                f"L1->L0 {what}",
                uses,
                (f"{res}@l0",),
                work,
                calls=loads,
            ),
            Step("CUBE", "dot", f"cube {res} = {what}", (f"{res}@l0",), (res,), work),
        ]

    def _single(self, op: ir.Op) -> Step:
        w = Work()
        count_op(op, w, {}, False, 1)
        if isinstance(op, ir.Load):
            lane = load_lane(self.target, op.result.name in self.to_cube)
            kind, src = "load", op.src
        else:  # a store, or a For nested in the KV loop (counted as vector work)
            lane = store_lane(self.target) if isinstance(op, ir.Store) else "VECTOR"
            kind, src = ("store" if isinstance(op, ir.Store) else "vector"), ""
        if isinstance(op, ir.For):
            count_body(op.body, w, {}, False, op.stop - op.start)
        uses = self._uses([op], "vector")
        defs = tuple(r.name for r in op.results())
        for d in defs:
            self.side[d] = side_of(op)
        copy: tuple[Any, ...] = ()
        if isinstance(op, ir.Load) and not isinstance(op, ir.LoadPages):
            to_cube = op.result.name in self.to_cube
            copy = gm_copy(op.result)
            copy += pad_fill(op, self.params.get(op.src), to_cube)
        elif isinstance(op, ir.Store):
            copy = gm_copy(op.value)
        step = Step(lane, kind, label(op), uses, defs, dict(w.amounts), src)
        return dataclasses.replace(step, calls=copy) if copy else step

    def _close(self, group: list[ir.Op], out: list[Step]) -> None:
        if not group:
            return
        w = Work()
        for op in group:
            count_op(op, w, {}, False, self.times.get(id(op), 1))
        defs = tuple(r.name for op in group for r in op.results())
        for d in defs:
            self.side[d] = "vector"
        first, last = line_of(group[0]), line_of(group[-1])
        lines = f"line {first}" if first == last else f"lines {first}-{last}"
        kind = self.part or (
            "softmax" if any(isinstance(o, ir.Exp) for o in group) else "update"
        )
        made = defs[-1] if defs else "scalars"  # a group of scalar reads only
        name = f"vector {kind} -> {made} ({lines})"
        uses = self._uses(group, "vector")
        calls = vector_calls(group, self.producers, self.alias, self.times)
        out.append(
            Step(
                "VECTOR",
                "vector",
                name,
                uses,
                defs,
                dict(w.amounts),
                "",
                len(group),
                calls,
            )
        )


def chunked_steps(body: list[Step]) -> frozenset[int]:
    """``id``s of the KV iteration's vector steps the backend runs once per row chunk
    (plan/memory/row_chunk.py): from the first vector step to the one making a dot operand
    the cube reads (P), the region's end."""
    sent = {u.split("@")[0] for s in body if s.lane == "MTE1" for u in s.uses}
    vector = [k for k, s in enumerate(body) if s.kind == "vector"]
    ends = [k for k in vector if set(body[k].defs) & sent]
    if not ends:
        return frozenset()
    return frozenset(id(body[k]) for k in vector if k <= ends[-1])


def gate_first_step(out: list[Step]) -> None:
    """The iteration's first non-load step waits for its loop control (SCALAR)."""
    i = next((i for i, s in enumerate(out) if s.kind not in ("load", "scalar")), None)
    if i is not None:
        s = out[i]
        out[i] = dataclasses.replace(s, uses=s.uses + (ROUND,))


def lane_kind(op: ir.Op) -> str:
    if isinstance(op, ir.Load):
        return "load"
    if isinstance(op, ir.Store):
        return "store"
    if isinstance(op, ir.Dot):
        return "dot"
    return "vector"


def side_of(op: ir.Op | None) -> str:
    """Which core holds a value: dma (loaded: either may read it), cube or vector."""
    if op is None or isinstance(op, ir.Load):
        return "dma"
    return "cube" if isinstance(op, ir.Dot) else "vector"


def label(op: ir.Op) -> str:
    if isinstance(op, ir.LoadPages):  # one copy per page, each page's bytes charged
        return f"load {op.result.name} ({op.src}, one copy per page)"
    if isinstance(op, ir.Load):
        return f"load {op.result.name} ({op.src})"
    if isinstance(op, ir.Store):
        return f"store {op.dst}"
    return f"vector {type(op).__name__.lower()}"


def line_of(op: ir.Op) -> int:
    loc = op.loc
    while getattr(loc, "derived_from", None) is not None:
        loc = loc.derived_from  # type: ignore[assignment]
    return int(getattr(loc, "line", 0) or 0)
