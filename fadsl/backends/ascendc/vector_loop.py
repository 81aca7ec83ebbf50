"""Loops of the vector-core class: the loop-carried state, and the deferred update.

A loop whose ring has a deferral (``plan/schedule/defer.py``) is emitted as

    for (j = start; j < stop; ++j) {
        <the ops before the update>        // a saved value (alpha) is written into slot
                                           // (j - start) % 2 of its buffer (made by one
                                           // call) or copied there
        if (j > start) { <the update of iteration j - 1> }
        <state copies>
    }
    if (stop > start) { <the update of iteration stop - 1> }

The update's ops are emitted with the loop variable printed as the iteration they
belong to, so P @ V is read from that iteration's workspace slot and flag, and the
saved values from that iteration's slot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fadsl.backends.ascendc import vector_chunk, vector_guard
from fadsl.backends.ascendc.names import ctype, source_comment
from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import isym
from fadsl.ir.types import TileType
from fadsl.plan.schedule.defer import SAVED_SLOTS, Deferral, saved_buffer, saved_stride
from fadsl.plan.schedule.sides import CUBE

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter


def loop(e: VectorEmitter, op: ir.For) -> list[Stmt]:
    var = e.names.var(op.var)
    header = (
        f"for (int64_t {var} = {e.names.expr(op.start)}; {var} < "
        f"{e.names.expr(op.stop)}; ++{var})"
    )
    if not has_vector_work(e, op.body):
        e.pos += vector_guard.count(op.body) + 1
        return []
    pre = [Line(source_comment(op.loc))]
    e.last_loc = None
    for a, i in zip(op.iter_args, op.inits):
        e.vars[a.name] = e.vars.get(i.name) or e.names.var(i.name)
    ring = next((r for r in e.low.rings.values() if r.loop is op), None)
    deferral = ring.deferral if ring is not None else None
    drain: list[Stmt] = []
    if deferral is None:
        body = e.walk(op.body)
        body += state_copies(e, op, set())
    else:
        body, drain = _deferred(e, op, deferral)
    e.pos += 1
    e.last_loc = None
    for r, i in zip(op.loop_results, op.inits):
        e.vars[r.name] = e.vars.get(i.name) or e.names.var(i.name)
    frees = e._frees(e.pos)  # queue tiles read in the loop, last used at its end
    return pre + [Block(header, tuple(body))] + drain + frees


def has_vector_work(e: VectorEmitter, body: tuple[ir.Op, ...]) -> bool:
    for op in body:
        if isinstance(op, ir.For) and has_vector_work(e, op.body):
            return True
        if isinstance(op, ir.Dot) and op.result in e.sides.to_vector:
            return True
        if not isinstance(op, ir.For) and e.sides.op_side.get(id(op)) not in (
            CUBE,
            None,
        ):
            return True
    return False


def state_copies(
    e: VectorEmitter, op: ir.For, late: set[str], only: bool = False
) -> list[Stmt]:
    """Copies of yielded values into their loop-carried state: those of ``late``
    values when ``only``, else the others."""
    out: list[Stmt] = []
    for y, state in e.vec.state_copies.get(op.var, ()):
        if (y in late) != only:
            continue
        yv = next(v for v in op.yields if v.name == y)
        out.append(Line(f"// carry %{y} into the state of %{state}"))
        out += e._barrier({e.vec.homes.get(y, ""), e.vec.homes.get(state, "")})
        out.append(
            Line(
                f"AscendC::Muls({e.vars.get(state) or e.names.var(state)}, {e.var(yv)}, "
                f"{e.lit(1.0, yv.type.dtype)}, {e.count(yv)});"  # type: ignore[union-attr]
            )
        )
        e.dirty.add(e.vec.homes.get(state, ""))
    return out


# --- the deferred update ------------------------------------------------------
def _deferred(
    e: VectorEmitter, op: ir.For, d: Deferral
) -> tuple[list[Stmt], list[Stmt]]:
    """(the loop body, the update of the last iteration after the loop)."""
    for v in d.saved:
        if _is_queue(e, v):
            raise BackendError(
                f"%{v.name} lives in a queue tile, which the deferred update cannot "
                "read one iteration late",
                op.loc,
                hint="set defer_update = false on the loop (textual IR)",
            )
    it = isym(op.var) - op.start
    e.saving = {v.name: _slot(e, v, it) for v in d.saved}
    pending: list[ir.Dot] = []
    body = e.walk(op.body[: d.first], pending)
    body += _sent_frees(e, op, d)
    e.saving, e.saved_direct = {}, set()
    start_pos, waiting = e.pos, list(pending)
    late = {r.name for o in op.body if id(o) in d.ops for r in o.results()}
    var = e.names.var(op.var)
    start, stop = e.names.expr(op.start), e.names.expr(op.stop)
    update = _update(e, op, d, late, f"({var} - 1)", pending)
    body.append(Block(f"if ({var} > {start})", tuple(update)))
    body += state_copies(e, op, late)
    end_pos = e.pos
    e.pos = start_pos
    last = _update(e, op, d, late, f"({stop} - 1)", list(waiting))
    e.pos = end_pos
    comment = Line(f"// the deferred update of the last iteration of {op.var}")
    return body, [comment, Block(f"if ({stop} > {start})", tuple(last))]


def _sent_frees(e: VectorEmitter, op: ir.For, d: Deferral) -> list[Stmt]:
    """FreeTensor of the queue tiles the iteration still holds that no deferred
    vector op reads: a tile sent to the cube (dS, written to its workspace when made)
    whose last reader is a stage-B dot after ``d.first`` would else be freed in the
    update, which skips the first iteration (the next AllocTensor then finds its
    queue full: the backward's dK/dV loop)."""
    reads = {
        e.vec.homes.get(v.name)
        for o in op.body[d.first :]
        if id(o) in d.ops
        for v in o.operand_values()
    }
    end = next(stop for _, stop, lp in e.vec.loops if lp is op)
    out: list[Stmt] = []
    for pos in range(e.pos, end + 1):
        for slot in e.vec.frees.get(pos, ()):
            var = e.slot_var.get(slot)
            if var is not None and slot not in reads:
                e.slot_var.pop(slot)
                out.append(Line(f"{e.names.buf(slot)}.FreeTensor({var});"))
    return out


def _update(
    e: VectorEmitter,
    op: ir.For,
    d: Deferral,
    late: set[str],
    iteration: str,
    pending: list[ir.Dot],
) -> list[Stmt]:
    """The deferred ops of iteration ``iteration`` (C++), reading the saved values
    from that iteration's slot."""
    e.last_loc = None
    out: list[Stmt] = [Line("AscendC::PipeBarrier<PIPE_V>();")]
    e.dirty = set()  # the barrier above fences every earlier vector instruction
    old = dict(e.vars)
    with e.rebound(op.var, iteration):
        it = isym(op.var) - op.start
        for v in d.saved:
            name = e.names.m.claim(
                "prev", v.name, e.names.var(v.name) + "Prev", ("kernel",)
            )
            out.append(
                Line(f"AscendC::LocalTensor<{_ct(v)}> {name} = {_slot(e, v, it)};")
            )
            e.vars[v.name] = name
        out += e.walk(op.body[d.first :], pending)
        out += state_copies(e, op, late, only=True)
    e.vars = old
    e.dirty |= {b.name for b in e.low.plan.in_space("UB")}  # after an if: all may be
    return out


def save(e: VectorEmitter, op: ir.Op) -> list[Stmt]:
    """Copies of a saved value ``op`` made into its slot (deferred loops only)."""
    out: list[Stmt] = []
    for r in op.results():
        dest = e.saving.get(r.name)
        if dest is None or r.name in e.saved_direct:
            continue
        dest += vector_chunk.rows_offset(e, r)
        out += e._barrier({e.vec.homes.get(r.name, "")})
        out.append(
            Line(
                f"AscendC::Muls({dest}, {e.var(r)}, {e.lit(1.0, r.type.dtype)}, "  # type: ignore[union-attr]
                f"{e.count(r)});  // kept for the update one iteration late"
            )
        )
        e.dirty.add(saved_buffer(r))
    return out


def _slot(e: VectorEmitter, v: ir.Value, it: object) -> str:
    stride = e.names.expr(saved_stride(v, e.low.core_shape))
    ct = _ct(v)
    slot = e.names.expr(it)  # type: ignore[arg-type]
    return (
        f"{e.names.buf(saved_buffer(v))}.Get<{ct}>()"
        f"[({slot}) % {SAVED_SLOTS} * {stride}]"
    )


def _ct(v: ir.Value) -> str:
    t = v.type
    assert isinstance(t, TileType)
    return ctype(t.dtype)


def _is_queue(e: VectorEmitter, v: ir.Value) -> bool:
    home = e.vec.homes.get(v.name)
    return any(b.name == home and b.kind == "queue" for b in e.low.plan.in_space("UB"))
