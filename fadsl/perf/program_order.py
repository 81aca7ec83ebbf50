"""Rule 6 of ``fadsl/perf/timeline.py``: the order the cube and vector programs issue
a KV iteration's steps in (``program_order``): loads ``stages - 1`` iterations ahead,
stage A (cube work that needs no vector result) ``lead`` iterations ahead with a ring of
workspace slots, vector work on stage B's result deferred behind the next iteration's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from fadsl.ir import nodes as ir
from fadsl.perf.schedule import Schedule
from fadsl.perf.timeline_schedule import ROUND, Step

CUBE_LANES = ("AIC MTE2", "MTE1", "CUBE", "FIXPIPE")


@dataclass(frozen=True)
class Order:
    """A KV iteration's steps in the order the programs issue them (rules 3, 6)."""

    loads: list[Step]
    """Loads issued ``stages - 1`` iterations ahead of the iteration's own work."""
    cube_ahead: list[Step]
    """Stage A: cube work that needs no vector result, issued ``lead`` iterations
    ahead of the rest of its iteration."""
    now: list[Step]
    deferred: list[Step]
    """Vector work on the cube's stage-B result, issued after the next iteration's."""
    lead: int
    ring: int = 1
    a_loads: list[Step] = field(default_factory=list)
    """Loads only stage A reads (K): prefetched with stage A, ``stages - 1`` ahead."""

    def slots(self, step: Step) -> int:
        """Workspace slots of a write: the ring for stage-A results, two for results
        a deferred step reads, else one."""
        if any(step is s for s in self.cube_ahead):
            return self.ring
        if any(set(step.defs) & set(s.uses) for s in self.deferred):
            return 2
        return 1


def program_order(body: list[Step], loop: ir.For, plan: Schedule) -> Order:
    """Rule 6: with a ring of R >= 2 workspace slots the cube core issues the steps
    that need no vector-core value of their iteration (stage A: S = Q K^T and its
    write, with the loads only they read) R - 1 iterations ahead; with
    ``defer_update`` the vector core issues the steps that wait for a cube result made
    from its own values (the read of P V and the update) one iteration late, unless a
    step of the next iteration needs what they make (then in program order)."""
    loads = [s for s in body if s.kind == "load"]
    rest = [s for s in body if s.kind != "load"]
    if plan.lead == 0:
        return Order(loads, [], rest, [], 0)
    carried = {a.name for a in loop.iter_args}
    vector_made: set[str] = set()
    after_vector: set[str] = set()
    ahead: list[Step] = []
    now: list[Step] = []
    later: list[Step] = []
    for s in rest:
        uses = set(s.uses) - {ROUND}
        on_cube = s.lane in CUBE_LANES
        if on_cube and not uses & (vector_made | after_vector | carried):
            ahead.append(dataclasses.replace(s, uses=tuple(sorted(uses))))
        elif uses & after_vector or (on_cube and uses & vector_made):
            after_vector.update(s.defs)
            (now if on_cube else later).append(s)
        else:
            vector_made.update(s.defs)
            now.append(s)
    if plan.defer_update:
        now, later = _defer(now, later, loop, rest)
    else:
        now, later = _in_order(now + later, rest), []
    a_loads = [ld for ld in loads if _only_read_by(ld, rest, ahead)]
    b_loads = [ld for ld in loads if ld not in a_loads]
    return Order(b_loads, ahead, _gated(now), later, plan.lead, plan.ring, a_loads)


def _defer(
    now: list[Step], later: list[Step], loop: ir.For, order: list[Step]
) -> tuple[list[Step], list[Step]]:
    """Move to ``later`` the vector steps of ``now`` that use a loop-carried value made
    by a later step (acc * alpha before the update); keep program order when a step
    left in ``now`` would need a value a later step makes."""
    if not later:
        return now, later
    yields = {y.name: a.name for a, y in zip(loop.iter_args, loop.yields)}
    moved = list(later)
    while True:
        made = {d for s in moved for d in s.defs}
        late = made | {yields[d] for d in made if d in yields}
        more = [
            s
            for s in now
            if s not in moved and s.lane not in CUBE_LANES and set(s.uses) & late
        ]
        if not more:
            break
        moved += more
    kept = [s for s in now if s not in moved]
    if any(set(s.uses) & late for s in kept):
        return _in_order(now + later, order), []
    return kept, _in_order(moved, order)


def _in_order(steps: list[Step], order: list[Step]) -> list[Step]:
    return [s for s in order if s in steps]


def _only_read_by(load: Step, steps: list[Step], stage_a: list[Step]) -> bool:
    """Whether only stage-A steps read ``load`` (compared by name: stage-A steps are
    copies without the loop-control gate)."""
    names = {s.name for s in stage_a}
    readers = [s for s in steps if set(load.defs) & set(s.uses)]
    return bool(readers) and all(s.name in names for s in readers)


def _gated(steps: list[Step]) -> list[Step]:
    """Rule 5 for the vector core's program: its first step waits for the loop
    control (the cube's steps issued ahead no longer carry the gate)."""
    out = list(steps)
    i = next((i for i, s in enumerate(out) if s.kind != "scalar"), None)
    if i is not None and ROUND not in out[i].uses:
        out[i] = dataclasses.replace(out[i], uses=out[i].uses + (ROUND,))
    return out
