"""Vector-core data movement: GM loads and stores (tails through DataCopyPad), pipelined
VECIN queues, and the GM workspaces shared with the cube (with cross-core flags)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fadsl.backends.ascendc import atomic_io, gm, vector_chunk, vector_pages
from fadsl.backends.ascendc.names import ctype
from fadsl.backends.ascendc.view import Block, Line, Stmt
from fadsl.errors import BackendError, Loc
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType, TileType
from fadsl.plan.schedule.sides import walk

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter


def _ct(v: ir.Value) -> str:
    t = v.type
    assert isinstance(t, TileType)
    return ctype(t.dtype)


def _u32(text: str, name: str) -> str:
    return text if text == "0" else f'fadsl::Field<uint32_t>({text}, "{name}")'


_GM = "DataCopyExtParams.srcStride/dstStride (GM)"
_UB = "DataCopyExtParams.srcStride/dstStride (UB)"


def _rows() -> str:
    return 'fadsl::Field<uint16_t>(validRows, "DataCopyExtParams.blockCount")'


def _len(cols: str, ct: str) -> str:
    return (
        f'fadsl::Field<uint32_t>({cols} * sizeof({ct}), "DataCopyExtParams.blockLen")'
    )


def _enque_deque(e: VectorEmitter, v: ir.Value) -> list[Stmt]:
    slot = e.names.buf(e.vec.homes[v.name])
    var = e.var(v)
    return [Line(f"{slot}.EnQue({var});"), Line(f"{var} = {slot}.DeQue<{_ct(v)}>();")]


def _queue_position(e: VectorEmitter, v: ir.Value) -> str | None:
    """The TPosition of the queue ``v`` lives in (VECIN, VECOUT), None for a TBuf."""
    home = e.vec.homes.get(v.name)
    slot = next((s for s in e.vec.slots if s.name == home), None)
    return slot.position if slot is not None and slot.kind == "queue" else None


def _in_queue(e: VectorEmitter, v: ir.Value) -> bool:
    return _queue_position(e, v) is not None


def _copy_out(e: VectorEmitter, v: ir.Value) -> tuple[list[Stmt], list[Stmt]]:
    """(before, after) an MTE3 copy of ``v`` out of UB. A value in a VECOUT queue is
    handed over by EnQue/DeQue. A value stored as it arrived (a dot result in its
    VECIN staging queue) was written by MTE2, and that queue's events order MTE2 with
    V only: MTE3 waits for the copy in, and the next copy into the slot waits for
    MTE3's read (the sanitizer's write-after-read; TQue<VECIN>'s Free/Alloc pair is
    V_MTE2). A loop's result lives in its loop-carried state buffer (a TBuf, no
    queue): MTE3 waits for the vector writes, and the vector unit waits for the copy
    before it writes that buffer again."""
    position = _queue_position(e, v)
    if position == "VECIN":
        after = [Line("fadsl::SetWaitFlag<AscendC::HardEvent::MTE3_MTE2>();")]
        if _padded_load(e, v):  # the next load's pad (Duplicate, PIPE_V) writes it
            after.append(Line("fadsl::SetWaitFlag<AscendC::HardEvent::MTE3_V>();"))
        return (
            [Line("fadsl::SetWaitFlag<AscendC::HardEvent::MTE2_MTE3>();")],
            after,
        )
    if position is not None:
        return _enque_deque(e, v), []
    return (
        [Line("fadsl::SetWaitFlag<AscendC::HardEvent::V_MTE3>();")],
        [Line("fadsl::SetWaitFlag<AscendC::HardEvent::MTE3_V>();")],
    )


def _padded_load(e: VectorEmitter, v: ir.Value) -> bool:
    """``v`` is (the slot of) a load with a pad: each load first fills the slot."""
    return any(
        isinstance(op, ir.Load) and op.pad is not None and v in (op.result, op.into)
        for op in walk(e.low.kernel.body)
    )


def receive(e: VectorEmitter, dot: ir.Dot) -> list[Stmt]:
    """A dot result from the cube: wait for its flag, copy this core's rows into UB."""
    v = dot.result
    shape = e.shape(v)
    cols = e.names.expr(shape[1])
    wait = [Line(f"AscendC::CrossCoreWaitFlag({e.flag_of(v.name)});")]
    out: list[Stmt] = vector_chunk.before(e, wait)
    out += e._declare(v)
    ring = e.ring_slot(v.name)
    row0 = _row0(e, v)
    at = f"{ring[1]} + {row0} * {cols}" if ring else f"{row0} * {cols}"
    out.append(
        Line(f"AscendC::DataCopy({e.var(v)}, {e.ws[v.name]}[{at}], {e.count(v)});")
    )
    out += vector_chunk.after(e, [Line(x) for x in e.free_set(v.name)])
    _fenced_by_queue(e, v)
    return out + _enque_deque(e, v)


def _fenced_by_queue(e: VectorEmitter, v: ir.Value) -> None:
    """A tile copied into a depth-1 VECIN queue: every vector instruction on the
    buffer came before its last FreeTensor, which AllocTensor waited for (V -> MTE2),
    and DeQue waits for the copy (MTE2 -> V): none is still pending, so the next
    vector instruction on the buffer needs no PipeBarrier for them."""
    home = e.vec.homes.get(v.name, "")
    slot = next((s for s in e.vec.slots if s.name == home), None)
    if (
        slot is not None
        and slot.kind == "queue"
        and slot.position == "VECIN"
        and slot.buffers == 1
    ):
        e.dirty.discard(home)


def send(e: VectorEmitter, v: ir.Value) -> list[Stmt]:
    """A dot operand for the cube: copy this core's rows to the workspace, then set the flag."""
    shape = e.shape(v)
    cols = e.names.expr(shape[1])
    out, after = _copy_out(e, v)
    ring = e.ring_slot(v.name)
    src, count, first = e.var(v), e.count(v), None
    if e.low.split.blocks and e.low.split.block_of(v) is None:
        # held whole by both vector cores (a matrix made from fd.arange): each
        # sends half its rows, as it would its own rows of a split tile
        half = e.names.expr(shape[0] / 2)
        first = f"static_cast<int64_t>(AscendC::GetSubBlockIdx()) * {half}"
        src = f"{src}[{first} * {cols}]"
        count = e.names.count((shape[0] / 2,) + tuple(shape[1:]))
    row = f"{first if first is not None else _row0(e, v)} * {cols}"
    at = f"{ring[1]} + {row}" if ring else row
    out.append(Line(f"AscendC::DataCopy({e.ws[v.name]}[{at}], {src}, {count});"))
    out += after
    flag = Line(f"AscendC::CrossCoreSetFlag<2, PIPE_MTE3>({e.flag_of(v.name)});")
    return out + vector_chunk.after(e, [flag])


def send_loaded(e: VectorEmitter, op: ir.Op) -> list[Stmt]:
    """A loaded tile that vector code and a dot both read (the backward's dO): this
    core's rows go on to the cube through the workspace, like a computed operand."""
    sent = [r for r in op.results() if r in e.sides.to_cube]
    return [s for r in sent for s in send(e, r)]


def _row0(e: VectorEmitter, v: ir.Value) -> str:
    """C++ of this core's first row of ``v``, a tile exchanged with the cube."""
    block = e.low.split.block_of(v)
    if block is None:
        raise BackendError(
            f"`%{v.name}` crosses between the cube and the vector cores but is not "
            "split between the two vector cores",
            None,
        )
    return vector_chunk.row0(e, e.names.row0_var(block))


def _param(e: VectorEmitter, name: str) -> ir.Param:
    return next(p for p in e.low.kernel.params if p.name == name)


def _split(e: VectorEmitter, v: ir.Value) -> tuple[object, object]:
    shift = e.row_shift(v)
    if shift == 0:
        return None, None
    return shift, e.shape(v)[0]


def _whole_blocks(v: ir.Value, what: str, loc: Loc) -> None:
    """DataCopyPad starts every row of a UB tile at a 32-byte boundary, and fadsl's UB
    tiles are dense: a tile of several rows narrower than whole 32-byte blocks
    ([rows, 1] f32) would be copied from the wrong UB addresses. Refused rather than
    generated wrong."""
    t = v.type
    assert isinstance(t, TileType)
    if len(t.shape) != 2 or t.shape[0] == 1 or not t.shape[1].is_Integer:
        return
    row = int(t.shape[1]) * t.dtype.itemsize
    if row % 32:
        raise BackendError(
            f"{what} of a {t} tile: each row is {row} bytes, not whole 32-byte blocks, "
            "so DataCopyPad cannot move its rows from a dense UB tile",
            loc,
            hint="store rows of 32-byte multiples (e.g. a 1-D tile)",
        )


def store(e: VectorEmitter, op: ir.Store) -> list[Stmt]:
    """A tile to GM; an ``atomic_add`` adds it into its f32 sum (``atomic_io``)."""
    v = op.value
    _whole_blocks(v, f"store to `{op.dst}`", op.loc)
    shift, size = _split(e, v)
    a = gm.access(ir.viewed(_param(e, op.dst), op.view), op.index, e.names, shift, size)  # type: ignore[arg-type]
    ct = _ct(v)
    out, after = _copy_out(e, v)
    gap_ub, gap_gm = gm.gaps(a, ct, e.names)
    atomic = isinstance(op, ir.AtomicAdd)
    dst = atomic_io.target(e, op) if atomic else e.names.gm(op.dst)  # type: ignore[arg-type]
    body: tuple[Stmt, ...] = (
        Line(
            f"AscendC::DataCopyPad({dst}[{a.offset}], {e.var(v)}, "
            f"AscendC::DataCopyExtParams{{{_rows()}, {_len(a.valid_cols, ct)}, "
            f"{_u32(gap_ub, _UB)}, {_u32(gap_gm, _GM)}, 0}});"
        ),
    )
    out.append(
        Block(
            "",
            (
                Line(f"const int64_t validRows = {a.valid_rows};"),
                Block(_nonempty(a), atomic_io.bracket(body) if atomic else body),
            ),
        )
    )
    return out + after


def _nonempty(a: gm.Access) -> str:
    return (
        f"if (validRows > 0 && {a.valid_cols} > 0)"
        if a.col_tail
        else "if (validRows > 0)"
    )


def _fill(
    e: VectorEmitter, v: ir.Value, var: str, op: ir.Load, access: gm.Access
) -> list[Stmt]:
    pad, src = op.pad, op.src
    t = v.type
    assert isinstance(t, TileType)
    ct = ctype(t.dtype)
    out: list[Stmt] = []
    fill: list[Stmt] = []
    if pad is not None:
        fill = [
            _pad(e, v, var, pad, op),
            Line("fadsl::SetWaitFlag<AscendC::HardEvent::V_MTE2>();"),
        ]
    if access.col_tail:  # a column tail: every block may have one
        out, fill = fill, []
    if _param(e, src).kind is not ir.ParamKind.IN:
        out += _after_own_stores()
    if isinstance(op, ir.LoadPages):  # one copy per page (vector_pages.py): any
        # block may end inside a page, so the pad is always filled
        return out + fill + [vector_pages.copies(e, op, var, *_split(e, v))]
    gap_ub, gap_gm = gm.gaps(access, ct, e.names)
    copy = Line(
        f"AscendC::DataCopyPad({var}, {e.names.gm(src)}[{access.offset}], "
        "AscendC::DataCopyExtParams{"
        f"{_rows()}, {_len(access.valid_cols, ct)}, {_u32(gap_gm, _GM)}, "
        f"{_u32(gap_ub, _UB)}, 0}}, "
        f"AscendC::DataCopyPadExtParams<{ct}>{{false, 0, 0, 0}});"
    )
    # whole columns: only a block with a row tail has rows for the pad to fill (the
    # copy writes every row of the others), so the others skip the Duplicate and its
    # V -> MTE2 wait
    tail = [Block(f"if (validRows < {access.rows})", tuple(fill))] if fill else []
    out.append(
        Block(
            "",
            (
                Line(f"const int64_t validRows = {access.valid_rows};"),
                *tail,
                Block(_nonempty(access), (copy,)),
            ),
        )
    )
    return out


def _pad(e: VectorEmitter, v: ir.Value, var: str, pad: object, op: ir.Load) -> Line:
    """Fill a tile with its pad before the copy. Duplicate has no int8 form (16- and
    32-bit types, Duplicate.md): an int8 tile is filled as int16 pairs of the byte."""
    t = v.type
    assert isinstance(t, TileType)
    if t.dtype is not DType.I8:
        return Line(
            f"AscendC::Duplicate({var}, {e.names.scalar(pad, t.dtype)}, {e.count(v)});"
        )
    byte = int(float(str(pad)))
    if byte != float(str(pad)) or not -128 <= byte < 128:
        raise BackendError(
            f"an int8 load of `{op.src}` padded with {pad}, not an int8 value",
            op.loc,
            hint="pad int8 tiles with an integer in [-128, 127] (e.g. pad=0)",
        )
    pair = (byte & 0xFF) * 0x0101
    pair = pair - 0x10000 if pair >= 0x8000 else pair
    return Line(
        f"AscendC::Duplicate({var}.ReinterpretCast<int16_t>(), "
        f"static_cast<int16_t>({pair}), ({e.count(v)}) / 2);"
    )


def _after_own_stores() -> list[Stmt]:
    """A scratch or output tensor may hold this core's own earlier stores (running state
    in GM): the MTE2 read waits until the MTE3 writes before it have finished."""
    return [
        Line("fadsl::SetWaitFlag<AscendC::HardEvent::MTE3_MTE2>();"),
    ]


def load(e: VectorEmitter, op: ir.Load) -> list[Stmt]:
    v = op.result
    shift, size = _split(e, v)
    a = gm.access(ir.viewed(_param(e, op.src), op.view), op.index, e.names, shift, size)  # type: ignore[arg-type]
    out = e._declare(v)
    out += _fill(e, v, e.var(v), op, a)
    return out + _enque_deque(e, v)


def queue_op(e: VectorEmitter, op: ir.Op) -> list[Stmt]:
    if isinstance(op, ir.AllocTensor):
        slot = e.names.queue(op.queue.name)
        var = e.vars[op.result.name] = e.names.var(op.result.name)
        return [
            Line(
                f"AscendC::LocalTensor<{_ct(op.result)}> {var} = "
                f"{slot}.AllocTensor<{_ct(op.result)}>();"
            )
        ]
    if isinstance(op, ir.Load):
        assert op.into is not None
        v = op.result
        e.vars[v.name] = e.var(op.into)
        shift, size = _split(e, v)
        a = gm.access(ir.viewed(_param(e, op.src), op.view), op.index, e.names, shift, size)  # type: ignore[arg-type]
        return _fill(e, v, e.var(op.into), op, a)
    if isinstance(op, ir.Enqueue):
        return [Line(f"{e.names.queue(op.queue.name)}.EnQue({e.var(op.x)});")]
    if isinstance(op, ir.Dequeue):
        var = e.vars[op.result.name] = e.names.var(op.result.name)
        ct = _ct(op.result)
        return [
            Line(
                f"AscendC::LocalTensor<{ct}> {var} = "
                f"{e.names.queue(op.queue.name)}.DeQue<{ct}>();"
            )
        ]
    assert isinstance(op, ir.FreeTensor)
    return [Line(f"{e.names.queue(op.queue.name)}.FreeTensor({e.var(op.x)});")]
