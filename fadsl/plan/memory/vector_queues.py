"""Queue homes of vector values (a part of ``VectorPlanner``, vector_plan.py).

Dot results arriving from the cube get a VECIN queue (staging), values going to GM
(stores, dot operands for the cube) a VECOUT queue (a stored value a loop yields
keeps a TBuf: ``_stored``), vector loads a VECIN queue,
pipelined loads the queue the pipeline pass made. One-slot queues are reused by
values whose lifetimes do not overlap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fadsl.errors import Loc
from fadsl.ir import nodes as ir
from fadsl.plan.memory.vector_slots import Slot, camel


class QueueHomes:
    """The queue-choosing methods of ``VectorPlanner``."""

    if TYPE_CHECKING:
        sides: Any
        slots: list[Slot]
        loops: list[tuple[int, int, ir.For]]
        queues: dict[ir.Value, ir.QueueAlloc]

        def _bytes(self, v: ir.Value, whole: bool = False) -> Any: ...
        def _value(self, e: Any) -> float: ...
        def _new_slot(self, *args: Any, **kwargs: Any) -> Slot: ...

    def _special(self, op: ir.Op, r: ir.Value, pos: int) -> Slot | None:
        if isinstance(op, (ir.AllocTensor, ir.Dequeue)) or (
            isinstance(op, ir.Load) and op.into is not None
        ):
            return self._pipeline_slot(op)
        if r in self.sides.to_vector or isinstance(op, ir.Load):
            return self._queue("VECIN", "inQue", r, pos, op.loc)
        if r in self.sides.to_cube or self._stored(r):
            return self._queue("VECOUT", "outQue", r, pos, op.loc)
        return None

    def _stored(self, r: ir.Value) -> bool:
        """``r`` goes to GM by a store and may take a VECOUT queue. A value a loop
        yields may not: it lives to the end of the loop body, where its queue tile
        would be freed out of its scope, and it must reach the loop-carried state.
        It keeps a TBuf, and its store waits on events (vector_io)."""
        if any(r in loop.yields for _, _, loop in self.loops):
            return False
        return any(isinstance(x, ir.Store) for x in self.sides.readers.get(r, []))

    def _queue(self, position: str, base: str, r: ir.Value, pos: int, loc: Loc) -> Slot:
        """A one-slot TQue at ``position`` free at ``pos``, reused by disjoint lifetimes."""
        need = self._value(self._bytes(r))
        free = [
            s
            for s in self.slots
            if s.kind == "queue"
            and s.position == position
            and s.role != "pipelined"
            and all(e < pos for e in s.ends)
        ]
        if free:
            return max(
                free,
                key=lambda s: (self._value(s.bytes) >= need, -self._value(s.bytes)),
            )
        role = "staging" if position == "VECIN" else "result"
        return self._new_slot(
            base, position, "queue", role, loc, pinned=True, exact=base
        )

    def _pipeline_slot(self, op: ir.Op) -> Slot:
        q = op.queue if hasattr(op, "queue") else self.sides.defs[op.into].queue  # type: ignore[union-attr]
        name = camel(q.name)
        for s in self.slots:
            if s.name == name:
                return s
        qa = self.queues[q]
        return self._new_slot(
            q.name,
            "VECIN",
            "queue",
            "pipelined",
            op.loc,
            pinned=True,
            buffers=qa.buffers,
            exact=name,
        )
