"""What the cube and the vector class emitters share: the plan, names and the task loop."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fadsl.backends.ascendc.names import Names
from fadsl.backends.ascendc.view import Stmt
from fadsl.ir import nodes as ir
from fadsl.ir.expr import isym
from fadsl.plan.memory.plan_buffers import Lowering
from fadsl.plan.schedule.carry import BASE, carried
from fadsl.plan.sync.slot_free import SUFFIX


class CoreEmitter:
    """Base of CubeEmitter and VectorEmitter: one core class of the kernel.

    ``flags`` and ``ws`` name the cross-core flags and GM workspaces both sides use;
    ``task_header``, ``task_loop`` and ``prologue`` open the loop over the grid's tasks.
    """

    def __init__(
        self,
        low: Lowering,
        names: Names,
        flags: dict[str, str],
        ws: dict[str, str],
        task_header: list[Stmt],
        task_loop: str,
        prologue: list[Stmt],
    ) -> None:
        self.low = low
        self.sides = low.sides
        self.names = names
        self.flags = flags
        self.ws = ws
        self.task_header = task_header
        self.task_loop = task_loop
        self.prologue = prologue
        self.pos = 0
        self.last_loc: tuple[str, int] | None = None
        self.carry = carried(
            low.kernel_grid_body, low.rings, low.sides, low.free, bool(low.plan.atomics)
        )
        """The ring carried across tasks (``plan/schedule/carry.py``), if any."""
        if self.carry is not None:
            names.symbols[BASE] = BASE
        self.setup()

    def setup(self) -> None:
        """State of the subclass, made after the shared fields are set."""

    def ring_slot(self, value: str) -> tuple[str, str] | None:
        """(flag ID, element offset of the slot) of an exchange that has a workspace
        ring (``plan/schedule/ring.py``): slot ``(var - start) % depth`` of the loop (``(ringBase + var - start) % depth``
        when the ring is carried across tasks); None for a
        one-slot exchange."""
        r = self.low.ring_of(value)
        if r is None:
            return None
        base = isym(BASE) if r is self.carry else 0
        it = self.names.expr(base + isym(r.loop.var) - r.loop.start)
        slot = f"({it}) % {r.depth}"
        v = next(
            x
            for x in list(self.sides.to_vector) + list(self.sides.to_cube)
            if x.name == value
        )
        elems = self.names.count(v.type.shape)  # type: ignore[union-attr]
        flag = f"static_cast<uint16_t>({self.flags[value]} + {slot})"
        return flag, f"{slot} * {elems}"

    def free_wait(self, value: str, after_loop: bool = False) -> list[str]:
        """The cube's wait for the slot-free flag of one-slot exchange ``value``
        (``plan/sync/slot_free.py``): before each write but the loop's first, or
        (``after_loop``) once after the loop when it ran; none without the flag."""
        loop = self.low.free.get(value)
        if loop is None:
            return []
        flag = self.flags[value + SUFFIX]
        start = self.names.expr(loop.start)
        cond = (
            f"{start} < {self.names.expr(loop.stop)}"
            if after_loop
            else f"{self.names.expr(isym(loop.var))} > {start}"
        )
        return [f"if ({cond}) {{ AscendC::CrossCoreWaitFlag({flag}); }}"]

    def free_set(self, value: str) -> list[str]:
        """A vector core's set of the slot-free flag of ``value`` after its read of
        the slot (mode 2: the cube's wait pairs with one set on each AIV)."""
        if value not in self.low.free:
            return []
        flag = self.flags[value + SUFFIX]
        return [f"AscendC::CrossCoreSetFlag<2, PIPE_MTE2>({flag});"]

    def flag_of(self, value: str) -> str:
        """The flag ID expression of exchange ``value`` (its ring slot's, if any)."""
        ring = self.ring_slot(value)
        return ring[0] if ring else self.flags[value]

    def ws_of(self, value: str) -> str:
        """The GlobalTensor of exchange ``value`` at its ring slot, if any."""
        ring = self.ring_slot(value)
        return f"{self.ws[value]}[{ring[1]}]" if ring else self.ws[value]

    def ws_at(self, value: str, offset: str) -> str:
        """The GlobalTensor of exchange ``value`` at element ``offset`` of its slot."""
        ring = self.ring_slot(value)
        return (
            f"{self.ws[value]}[{ring[1]} + {offset}]"
            if ring
            else f"{self.ws[value]}[{offset}]"
        )

    @contextmanager
    def rebound(self, var: str, cxx: str) -> Iterator[None]:
        """Print IR loop variable ``var`` as ``cxx`` (code of a later iteration)."""
        self.names.local(var)
        old = self.names.symbols[var]
        self.names.symbols[var] = cxx
        try:
            yield
        finally:
            self.names.symbols[var] = old


def positions(body: tuple[ir.Op, ...]) -> tuple[dict[int, int], dict[int, int]]:
    """Program points of ``linearize`` (vector_slots): ``id(op)`` -> point, and for a
    loop ``id(loop)`` -> the point of its end."""
    at: dict[int, int] = {}
    end: dict[int, int] = {}
    counter = [0]

    def number(ops: tuple[ir.Op, ...]) -> None:
        for op in ops:
            counter[0] += 1
            at[id(op)] = counter[0]
            if isinstance(op, ir.For):
                number(op.body)
                counter[0] += 1
                end[id(op)] = counter[0]
            elif isinstance(op, ir.Grid):
                number(op.body)

    number(body)
    return at, end
