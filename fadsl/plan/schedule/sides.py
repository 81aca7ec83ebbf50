"""Which unit runs each op of a kernel: the cube (AIC) or the vector unit (AIV).

Dots run on the cube. A load whose every reader is a dot is a cube load (GM -> L1);
queue ops follow their queue's position (A1/B1 cube, VECIN vector). Everything else
runs on the vector unit. A dot operand made by vector ops travels vector -> cube through
a GM workspace; a dot result read by vector ops travels cube -> vector the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from fadsl.errors import BackendError
from fadsl.ir import nodes as ir

CUBE, VECTOR = "cube", "vector"


def walk(body: tuple[ir.Op, ...]) -> Iterator[ir.Op]:
    """Every op of ``body``, depth first, in program order."""
    for op in body:
        yield op
        if isinstance(op, (ir.Grid, ir.For)):
            yield from walk(op.body)


def grid_of(kernel: ir.Kernel) -> ir.Grid:
    grids = [op for op in kernel.body if isinstance(op, ir.Grid)]
    if len(grids) != 1:
        raise BackendError(
            f"kernel `{kernel.name}` needs exactly one fd.grid loop", kernel.loc
        )
    return grids[0]


@dataclass
class Sides:
    """The unit of every op, and the values crossing between the units."""

    op_side: dict[int, str] = field(default_factory=dict)
    """id(op) -> cube | vector."""
    readers: dict[ir.Value, list[ir.Op]] = field(default_factory=dict)
    defs: dict[ir.Value, ir.Op] = field(default_factory=dict)
    cube_loads: list[ir.Value] = field(default_factory=list)
    """Tiles the cube reads straight from GM into L1 (outside queues)."""
    to_cube: list[ir.Value] = field(default_factory=list)
    """Vector-made dot operands sent to the cube through GM."""
    to_vector: list[ir.Value] = field(default_factory=list)
    """Dot results sent to the vector unit through GM."""
    dots: list[ir.Dot] = field(default_factory=list)

    def side(self, op: ir.Op) -> str:
        return self.op_side[id(op)]


def classify(grid: ir.Grid, queues: dict[ir.Value, ir.QueueAlloc]) -> Sides:
    s = Sides()
    for op in walk(grid.body):
        for v in op.results():
            s.defs[v] = op
        for v in op.operand_values():
            s.readers.setdefault(v, []).append(op)
        if isinstance(op, ir.For):
            for v in op.yields:
                s.readers.setdefault(v, []).append(op)
            for v in op.iter_args:
                s.defs[v] = op
    for op in walk(grid.body):
        s.op_side[id(op)] = _side_of(op, s, queues)
    _crossings(s)
    return s


def _side_of(op: ir.Op, s: Sides, queues: dict[ir.Value, ir.QueueAlloc]) -> str:
    if isinstance(op, ir.Dot):
        s.dots.append(op)
        return CUBE
    queue = queue_of(op, s)
    if queue is not None:
        q = queues.get(queue)
        return CUBE if q is not None and q.position in ("A1", "B1") else VECTOR
    if isinstance(op, ir.Load) and op.into is None:
        readers = s.readers.get(op.result, [])
        if readers and all(isinstance(r, ir.Dot) for r in readers):
            s.cube_loads.append(op.result)
            return CUBE
    if isinstance(op, (ir.Grid, ir.For, ir.LoadScalar, ir.ScalarDef)):
        return "both"
    return VECTOR


def queue_of(op: ir.Op, s: Sides) -> ir.Value | None:
    if isinstance(op, (ir.AllocTensor, ir.Dequeue, ir.Enqueue, ir.FreeTensor)):
        return op.queue
    if isinstance(op, ir.Load) and op.into is not None:
        alloc = s.defs.get(op.into)
        return alloc.queue if isinstance(alloc, ir.AllocTensor) else None
    return None


def _crossings(s: Sides) -> None:
    for dot in s.dots:
        for operand in (dot.a, dot.b):
            d = s.defs.get(operand)
            if d is None or s.side(d) == CUBE or operand in s.to_cube:
                continue
            s.to_cube.append(operand)
        readers = s.readers.get(dot.result, [])
        if any(isinstance(r, ir.Dot) for r in readers):
            raise BackendError(
                "a dot result feeds another dot directly; the backend sends dot results "
                "to the vector unit only",
                dot.loc,
                hint="apply a vector op (e.g. a cast) between the two dots",
            )
        if readers:
            s.to_vector.append(dot.result)
