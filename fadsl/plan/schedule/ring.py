"""Cross-iteration pipelining of cube and vector work (CANN's "preload"): which loops run
the cube core ahead of the vector cores, through GM workspace rings of how many slots.

In a loop whose dots exchange tiles with the vector cores (fa2: S = Q K^T out, P in,
P @ V out), the cube's ops split into two stages:

* stage A: the ops that need nothing the vector cores make in that iteration (the K
  load, S = Q K^T and its Fixpipe);
* stage B: the rest (waiting for P, its read, the V load, P @ V and its Fixpipe).

With a ring of ``r`` slots the cube runs stage A of iteration ``j + r - 1`` before stage
B of iteration ``j``: it computes S_{j+1} while the vector cores run the softmax of S_j.
Each stage-A result the vector cores read (S) lives in a ring of ``r`` GM workspace
slots, slot ``(j - start) % r``, each slot with its own cross-core flag
(``FLAG + slot``). Every other exchange keeps one slot.

Why ``r`` slots are enough and no extra "slot free" flag is needed (the CPU runtime checks
it at run time, fadsl/runtime/cpu/README.md): when the cube writes S_{j+r-1} it has
waited for the vector-made operands of iterations < j (stage B of j - 1), which the
vector cores write only after reading every stage-A result of that iteration (condition
3 below); so of the slots, only S_j .. S_{j+r-2} can still be unread: r - 1 slots, the
r-th is free. A one-slot exchange written in stage B (P @ V) or by the vector cores (P)
is released by the iteration order itself, as without the ring, provided stage B sends
something back (condition 2).

This argument needs a vector -> cube hand-over later in the iteration. A loop without
one (the cube only sends: S_j = Q K_j^T reduced by the vector cores into a row
accumulator, nothing back) is not eligible (condition 1), keeps one slot, and without a
hand-over nothing would stop the cube from writing S_{j+1} over an unread S_j: such a
one-slot exchange gets a "slot free" flag (vector -> cube, set by each AIV after its read,
waited for by the cube before every rewrite and once after the loop), chosen by
``plan/sync/slot_free.py`` after the rings and counted in the same flag IDs (a ScheduleError
at the dot's line when they do not fit).

A loop is eligible when (1) it has a dot whose operand the vector cores make (stage B)
and a stage-A dot the vector cores read; (2) a stage-B dot result goes to the vector
cores; (3) in the loop body every stage-A result is first read by the vector cores
before the first vector-made dot operand is written; (4) no cube tile is read by both
stages; (5) the loop reads no GM scalar (``load_scalar``). The depth is the loop's
``ring`` attribute when the IR sets one (1 turns it off), else ``DEFAULT_DEPTH``; the
flags of all exchanges (one per slot) must fit the 16 cross-core flag IDs, else a depth
the IR did not set drops to ``FALLBACK_DEPTH``, then the deferral goes, then the ring.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fadsl.errors import ScheduleError
from fadsl.ir import nodes as ir
from fadsl.plan.schedule import defer
from fadsl.plan.schedule.defer import Deferral
from fadsl.plan.schedule.sides import CUBE, Sides, queue_of, walk
from fadsl.plan.sync.flag_share import ids_needed
from fadsl.plan.sync.slot_free import free_slots

DEFAULT_DEPTH = 3
"""Slots of a stage-A ring: the cube runs two iterations ahead (issue 27: fa2 at B=1
N=8 S=8K, 910B2, MODELLED: 1985 us with 2 slots, 1795 with 3, 1872 with 4)."""
FALLBACK_DEPTH = 2
"""The depth of a ring the IR does not size when ``DEFAULT_DEPTH`` slots' flags do
not fit the flag IDs."""
MAX_FLAGS = 16
SYNC_ALL_FIRST_FLAG = 11
"""SyncAll on A2/A3 sets and waits on flag IDs 11-14 (asc-devkit dav_c220
SyncAllImpl): a kernel that calls it (``atomic_add``) takes its own IDs from 0-10."""
"""CrossCoreSetFlag flag IDs 0..15 (asc-devkit CrossCoreSetFlag(ISASI).md)."""


@dataclass(frozen=True)
class Stages:
    """The split of one loop's cube ops."""

    ahead: frozenset[int]
    """ids of the cube ops of stage A (top level or inside loops nested in the body),
    and of the loop's GM scalar reads (``load_scalar``: both stages compute them, each
    for its own iteration)."""
    ring_values: tuple[str, ...]
    """Stage-A dot results the vector cores read: each gets a ring of slots."""


@dataclass(frozen=True)
class Ring:
    """The chosen schedule of one loop."""

    loop: ir.For
    depth: int
    """Slots of each ring workspace (and flag IDs of its exchange)."""
    stages: Stages
    lead: int
    """Iterations the cube runs ahead of the vector cores: depth - 1 (fewer slots would
    let the cube overwrite a slot the vector cores have not released; the CPU runtime
    stops such a kernel, tests/backends/ascendc/test_ring_sim.py)."""
    deferral: Deferral | None = None
    """The vector steps run one iteration late (``plan/schedule/defer.py``), if any."""

    @property
    def slot_values(self) -> tuple[str, ...]:
        """Exchanges with a workspace slot (and flag) per ring entry: the stage-A
        results, and with a deferral the exchanges of stage B."""
        extra = self.deferral.values if self.deferral else ()
        return self.stages.ring_values + extra


def split(loop: ir.For, sides: Sides) -> Stages | str:
    """The stages of ``loop``'s cube ops, or why it is not eligible."""
    ops = list(walk(loop.body))
    made_here = {r for op in ops for r in op.results()}
    late: set[ir.Value] = {v for v in sides.to_cube if v in made_here}
    behind: set[int] = set()
    for op in ops:
        if isinstance(op, ir.Dot) and (op.a in late or op.b in late):
            behind.add(id(op))
            late.add(op.result)
    if not behind:
        return "no dot in the loop reads a tile the vector cores make"
    queues = _late_queues(ops, behind, sides)
    if isinstance(queues, str):
        return queues
    for op in ops:
        q = queue_of(op, sides)
        if q is not None and q in queues:
            behind.add(id(op))
        elif (
            isinstance(op, ir.Load) and op.into is None and _read_by(op, behind, sides)
        ):
            behind.add(id(op))
    cube = [op for op in ops if sides.op_side.get(id(op)) == CUBE]
    scalars = [op for op in ops if isinstance(op, (ir.LoadScalar, ir.ScalarDef))]
    ahead = frozenset(
        [id(op) for op in cube if id(op) not in behind] + [id(op) for op in scalars]
    )
    ring = tuple(
        op.result.name
        for op in cube
        if isinstance(op, ir.Dot) and id(op) in ahead and op.result in sides.to_vector
    )
    back = [
        op
        for op in cube
        if isinstance(op, ir.Dot) and id(op) in behind and op.result in sides.to_vector
    ]
    if not ring:
        return "no dot result the vector cores read can be computed ahead"
    if not back:
        return "no result of the dots that wait for the vector cores goes back to them"
    order = _reads_first(loop, ring, sides)
    if order:
        return order
    return Stages(ahead, ring)


def _late_queues(
    ops: list[ir.Op], behind: set[int], sides: Sides
) -> set[ir.Value] | str:
    """Queues whose tiles only stage-B dots read (their loads move with stage B)."""
    late: set[ir.Value] = set()
    for op in ops:
        if not isinstance(op, (ir.Dequeue, ir.Load)) or (
            isinstance(op, ir.Load) and op.into is not None
        ):
            continue
        readers = [r for r in sides.readers.get(op.result, []) if isinstance(r, ir.Dot)]
        stages = {id(r) in behind for r in readers}
        if len(stages) > 1:
            return f"the tile %{op.result.name} is read by dots of both stages"
        if stages == {True} and isinstance(op, ir.Dequeue):
            late.add(op.queue)
    return late


def _read_by(op: ir.Load, behind: set[int], sides: Sides) -> bool:
    readers = sides.readers.get(op.result, [])
    return bool(readers) and all(id(r) in behind for r in readers)


def _reads_first(loop: ir.For, ring: tuple[str, ...], sides: Sides) -> str:
    """Condition 3: each ring value is first read before any vector-made operand."""
    sent = [
        i for i, op in enumerate(loop.body) for r in op.results() if r in sides.to_cube
    ]
    if not sent:
        return "the vector-made dot operand is not made in the loop body"
    for name in ring:
        first = next(
            (i for i, op in enumerate(loop.body) if _reads(op, name, sides)), None
        )
        if first is not None and first > min(sent):
            return f"%{name} is first read after the vector cores send their operand"
    return ""


def _reads(op: ir.Op, name: str, sides: Sides) -> bool:
    for o in [op] + list(walk(getattr(op, "body", ()))):
        if sides.op_side.get(id(o)) == CUBE:
            continue
        if any(v.name == name for v in o.operand_values()):
            return True
    return False


def choose(
    grid: ir.Grid, sides: Sides, split_chip: bool, max_flags: int = MAX_FLAGS
) -> dict[int, Ring]:
    """The ring of every eligible loop of ``grid`` (by ``id`` of the loop op), none
    when their flags would not fit ``max_flags`` IDs."""
    if not split_chip:
        return {}
    out: dict[int, Ring] = {}
    for op in walk(grid.body):
        if not isinstance(op, ir.For):
            continue
        if not any(isinstance(o, ir.Dot) for o in op.body):
            if op.ring > 1:
                raise ScheduleError(
                    f"ring = {op.ring} cannot be honoured for this loop: it computes "
                    "no dot, so the cube has nothing to run ahead",
                    op.loc,
                    hint="remove the ring attribute (or set ring = 1)",
                    code="ir_ring_impossible",
                )
            if op.defer_update:
                _no_deferral(op, "it computes no dot")
            continue
        stages = split(op, sides)
        wanted = op.ring or DEFAULT_DEPTH
        if isinstance(stages, str):
            if op.ring > 1:
                raise ScheduleError(
                    f"ring = {op.ring} cannot be honoured for this loop: {stages}",
                    op.loc,
                    hint="remove the ring attribute (or set ring = 1)",
                )
            if op.defer_update:
                _no_deferral(op, f"the cube cannot run ahead ({stages})")
            continue
        if wanted > 1:
            out[id(op)] = Ring(
                op, wanted, stages, wanted - 1, _deferral(op, sides, stages)
            )
        elif op.defer_update:
            _no_deferral(
                op, "the loop has no ring (ring = 1): the cube does not run ahead"
            )
    if flag_count(sides, out) > max_flags:
        out = {k: _shallower(r) for k, r in out.items()}
    if flag_count(sides, out) > max_flags:
        out = {k: replace(r, deferral=None) for k, r in out.items()}
    if flag_count(sides, out) > max_flags:
        return {}
    return out


def _shallower(r: Ring) -> Ring:
    """``r`` at ``FALLBACK_DEPTH`` slots unless the IR set its depth."""
    if r.loop.ring or r.depth <= FALLBACK_DEPTH:
        return r
    return replace(r, depth=FALLBACK_DEPTH, lead=FALLBACK_DEPTH - 1)


def _deferral(loop: ir.For, sides: Sides, stages: Stages) -> Deferral | None:
    """The loop's deferred update (``plan/schedule/defer.py``) unless its ``defer_update`` is
    false; E85 when it is true and the loop does not qualify."""
    if loop.defer_update is False:
        return None
    found = defer.split(loop, sides, stages.ahead)
    if isinstance(found, str):
        if loop.defer_update:
            _no_deferral(loop, found)
        return None
    return found


def _no_deferral(loop: ir.For, why: str) -> None:
    raise ScheduleError(
        f"defer_update = true cannot be honoured for this loop: {why}",
        loop.loc,
        hint="remove the defer_update attribute (or set it to false)",
        code="ir_defer_impossible",
    )


def annotate(kernel: ir.Kernel, rings: dict[int, Ring]) -> ir.Kernel:
    """``kernel`` (as read, before the passes) with each ring loop's ``ring`` set to its
    depth and ``defer_update`` to whether its update is deferred, so that its textual
    IR shows the schedule; loops match by variable and line.
    """
    chosen = {(r.loop.var, r.loop.loc.file, r.loop.loc.line): r for r in rings.values()}

    def body(ops: tuple[ir.Op, ...]) -> tuple[ir.Op, ...]:
        out = []
        for op in ops:
            if isinstance(op, ir.For):
                r = chosen.get((op.var, op.loc.file, op.loc.line))
                d = r.depth if r else op.ring
                late = (r.deferral is not None) if r else op.defer_update
                op = replace(op, ring=d, defer_update=late, body=body(op.body))
            elif isinstance(op, ir.Grid):
                op = replace(op, body=body(op.body))
            out.append(op)
        return tuple(out)

    return replace(kernel, body=body(kernel.body))


def free_flags(
    grid: ir.Grid,
    sides: Sides,
    rings: dict[int, Ring],
    split_chip: bool,
    max_flags: int = MAX_FLAGS,
) -> dict[str, ir.For]:
    """The one-slot dot results whose rewrite needs a slot-free flag
    (``plan/sync/slot_free.py``); a ScheduleError at the first such dot when the flags do
    not fit ``max_flags`` IDs."""
    if not split_chip:
        return {}
    free = free_slots(grid, sides, set(rings))
    total = ids_needed(grid, sides, rings, len(free))
    if free and total > max_flags:
        name, loop = next(iter(free.items()))
        dot = next(op for op in walk(loop.body) if name in _names(op))
        raise ScheduleError(
            f"the cube/vector exchanges need {total} cross-core flag IDs, more than "
            f"the {max_flags} the kernel may use: the vector cores send nothing back "
            f"to the cube in this loop, so the workspace of %{name} needs a "
            '"slot free" flag (the cube must not overwrite it before the vector '
            "cores read it)",
            dot.loc,
            hint="compute fewer dot results for the vector cores in this loop (or "
            "send a dot operand back to the cube after they are read)",
            code="ir_slot_free_flags",
        )
    return free


def _names(op: ir.Op) -> set[str]:
    return {r.name for r in op.results()}


def flag_count(sides: Sides, rings: dict[int, Ring]) -> int:
    """Cross-core flag IDs the kernel uses: one per workspace slot that has a flag."""
    extra = sum(r.lead * len(r.slot_values) for r in rings.values())
    return len(sides.to_vector) + len(sides.to_cube) + extra


__all__ = [
    "DEFAULT_DEPTH",
    "MAX_FLAGS",
    "SYNC_ALL_FIRST_FLAG",
    "Ring",
    "Stages",
    "choose",
    "free_flags",
    "split",
]
