"""The cube's task loop with its ring carried across tasks (``plan/schedule/carry.py``).

In the last ``lead`` iterations of a task the cube issues stage A of the core's next
task (its Q load after freeing the current Q, its K loads and S dots) so that the next
task's vector cores find their first S ready. The tiles loaded before the loop (Q, and
Q's resident L0A copy) are declared before the task loop, so that the next task's copy
made inside the current task survives into it; ``preloaded`` counts the next task's
stage-A iterations already issued, ``ringBase`` the stream's slot base.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fadsl.backends.ascendc.names import source_comment
from fadsl.backends.ascendc.task_loop import NEXT, next_task
from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.ir import nodes as ir
from fadsl.ir.expr import isym
from fadsl.plan.schedule.carry import BASE
from fadsl.plan.schedule.ring import Ring

if TYPE_CHECKING:
    from fadsl.backends.ascendc.cube import CubeEmitter

_DECL = re.compile(r"^AscendC::LocalTensor<(.+?)> (\w+) = (.*)$")
PRELOADED, PRE_NEXT, J_NEXT = "preloaded", "preNext", "jNext"


def hoist(stmts: list[Stmt]) -> tuple[list[str], list[Stmt]]:
    """(declarations before the task loop, ``stmts`` with those locals assigned)."""
    decls: list[str] = []
    out: list[Stmt] = []
    for s in stmts:
        m = _DECL.match(s.text) if isinstance(s, Line) else None
        if m is None:
            out.append(s)
            continue
        decls.append(f"AscendC::LocalTensor<{m.group(1)}> {m.group(2)};")
        out.append(Line(f"{m.group(2)} = {m.group(3)}"))
    return decls, out


def assigned(stmts: list[Stmt]) -> list[Stmt]:
    return hoist(stmts)[1]


def process(em: CubeEmitter, ring: Ring) -> tuple[list[str], list[Stmt]]:
    """(declarations before the task loop, the task body) of the carried ring."""
    body = em.low.kernel_grid_body
    at = next(i for i, op in enumerate(body) if op is ring.loop)
    before, after = body[:at], body[at + 1 :]
    decls, pre = hoist(em.walk(before))
    loop = _loop(em, ring, before)
    em.last_loc = None
    rest = em.walk(after)
    guard = Block(f"if ({PRELOADED} == 0)", tuple(pre)) if pre else None
    head = [
        Line("// the Q of this task is in L1 already when the task before preloaded it"),
    ] + ([guard] if guard else [])
    return decls, head + loop + rest


def _loop(em: CubeEmitter, ring: Ring, before: tuple[ir.Op, ...]) -> list[Stmt]:
    op = ring.loop
    names = em.names
    var = names.var(op.var)
    ahead = names.m.claim("ring", op.var, var + "Ahead", ("kernel",))
    first = ring.stages.ahead
    early = em._part(op.body, lambda o: id(o) in first)
    late = em._part(
        op.body, lambda o: id(o) not in first or isinstance(o, ir.LoadScalar)
    )
    start, stop = names.expr(op.start), names.expr(op.stop)
    lead = ring.lead

    def stage_a(lo: str, hi: str, it: str = ahead) -> Block:
        em.last_loc = None
        with em.rebound(op.var, it):
            inner = em.walk(early)
        header = f"for (int64_t {it} = {lo}; {it} < fadsl::Min<int64_t>({hi}, {stop}); ++{it})"
        return Block(header, tuple(inner))

    prologue = stage_a(f"{start} + {PRELOADED}", names.expr(op.start + lead))
    ahead_a = stage_a(
        names.expr(isym(op.var) + lead), names.expr(isym(op.var) + lead + 1)
    )
    end = em.end_at[id(op)]
    frees = em._frees(end)
    nxt = _next(em, ring, before, var, start, stop, early, frees)
    em.last_loc = None
    late_body = em.walk(late)
    em.pos = end
    em.last_loc = None
    header = f"for (int64_t {var} = {start}; {var} < {stop}; ++{var})"
    what = (
        f"// ring of {ring.depth} workspace slots carried across tasks "
        f"(plan/schedule/carry.py): the cube runs {lead} iteration"
        f"{'s' if lead > 1 else ''} ahead of the core's iteration stream, stage A of "
        f"{op.var} + {lead} (the next task's first ones at the end), then stage B of {op.var}"
    )
    tail: list[Stmt] = []
    if frees:
        tail.append(Block(f"if ({PRE_NEXT} == 0)", tuple(frees)))
    tail += [
        Line(f"{BASE} += fadsl::Max<int64_t>(0, {stop} - {start});"),
        Line(f"{PRELOADED} = {PRE_NEXT};"),
    ]
    return [
        Line(f"int64_t {PRE_NEXT} = 0;  // the next task's stage-A iterations issued here"),
        Line(source_comment(op.loc)),
        Line(what),
        prologue,
        Block(header, tuple([ahead_a, nxt] + late_body)),
    ] + tail


def _next(
    em: CubeEmitter,
    ring: Ring,
    before: tuple[ir.Op, ...],
    var: str,
    start: str,
    stop: str,
    early: tuple[ir.Op, ...],
    frees: list[Stmt],
) -> Block:
    """Stage A of the next task's iterations due before stage B of ``var``."""
    op, names, lead = ring.loop, em.names, ring.lead
    grid = em.low.grid
    lines, cond, point, got = next_task(grid, names, int(em.low.target.rate("l2_bytes")))
    base = BASE + NEXT
    saved = {v: names.symbols.get(v) for v in list(got) + [BASE, op.var]}
    try:
        for v, cxx in got.items():
            names.local(v)
            names.symbols[v] = cxx
        names.symbols[BASE] = base
        start_n, stop_n = names.expr(op.start), names.expr(op.stop)
        em.last_loc = None
        q = assigned(em.walk(before))
        names.symbols[op.var] = J_NEXT
        em.last_loc = None
        stage = em.walk(early)
    finally:
        for v, old in saved.items():
            if old is None:
                names.symbols.pop(v, None)
            else:
                names.symbols[v] = old
    due = f"{start_n} + ({var} + {lead + 1} - ({stop}))"
    header = (
        f"for (int64_t {J_NEXT} = {start_n} + {PRE_NEXT}; {J_NEXT} < fadsl::Min<int64_t>("
        f"fadsl::Min<int64_t>({stop_n}, {start_n} + {lead}), {due}); ++{J_NEXT})"
    )
    swap = Block(f"if ({J_NEXT} == {start_n})", tuple(frees + q))
    inner = Block(header, tuple([swap] + stage + [Line(f"++{PRE_NEXT};")]))
    found = Block(
        f"if ({cond})",
        tuple(point)
        + (
            Line(f"const int64_t {base} = {BASE} + fadsl::Max<int64_t>(0, {stop} - {start});"),
            inner,
        ),
    )
    return Block(
        f"if ({var} + {lead} >= {stop})",
        (Line("// the core's next task: its first stage-A iterations (cross-task preload)"),)
        + tuple(lines)
        + (found,),
    )
