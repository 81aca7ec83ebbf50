"""Global memory (load, store, scalar loads, random numbers) and queues (TQue mirrors)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import sympy

from fadsl.errors import DTypeError, Loc, ShapeError, UsageError
from fadsl.ir.expr import Expr
from fadsl.ir.types import (
    DType,
    QueueType,
    Shape,
    TensorType,
    TileType,
    ValueType,
)
from fadsl.ir.op_base import (
    Index,
    Op,
    Param,
    ParamKind,
    Point,
    Slice,
    TypeContext,
    Value,
    ValueOp,
    shape_text,
    tile_type,
)

# ----------------------------------------------------------------------------
# Global memory
# ----------------------------------------------------------------------------


def _index_shape(index: tuple[Index, ...]) -> Shape:
    return tuple(ix.size for ix in index if isinstance(ix, Slice))


def _check_index(
    name: str, index: tuple[Index, ...], ptype: TensorType, loc: Loc
) -> None:
    if len(index) != len(ptype.shape):
        raise ShapeError(
            f"`{name}` has rank {len(ptype.shape)} ({ptype}) but is indexed with "
            f"{len(index)} subscript(s)",
            loc,
            hint="give one index or slice per dimension, e.g. q[b, h, rows, :]",
        )


def viewed(p: Param, view: Shape | None, loc: Loc | None = None) -> Param:
    """``p`` as a load or store with ``view`` indexes it: the same row-major elements
    seen with another shape (q [B, N, Sq, D] as [B, N * Sq, D]: a block of rows that
    spans several heads). A view of another size is refused."""
    if view is None:
        return p
    assert isinstance(p.type, TensorType)
    if sympy.simplify(sympy.Mul(*view) - sympy.Mul(*p.type.shape)) != 0:
        raise ShapeError(
            f"`{p.name}` ({p.type}) cannot be seen as {shape_text(view)}: the sizes "
            "differ",
            loc or p.loc,
            hint="a view keeps every element, e.g. q [B, N, Sq, D] as [B, N * Sq, D]",
            code="view_size",
        )
    return replace(p, type=TensorType(tuple(view), p.type.dtype))


def _tensor_param(ctx: TypeContext, name: str, loc: Loc) -> Param:
    p = ctx.param(name, loc)
    if not isinstance(p.type, TensorType):
        raise DTypeError(f"`{name}` is a scalar parameter, not a tensor", loc)
    return p


@dataclass(frozen=True, slots=True, kw_only=True)
class Load(ValueOp):
    """out = src[index]; slice positions past the extent read ``pad`` (NaN if None).

    A block whose first position is already past the extent, or a point index out of
    range, is an out-of-bounds read and faults.
    """

    src: str
    index: tuple[Index, ...]
    pad: Expr | None = None
    into: Value | None = None
    """After pipelining: the queue slot (from AllocTensor) that receives the data."""
    view: Shape | None = None
    """The shape ``index`` indexes when not the tensor's own: adjacent dims merged."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("into",)

    def infer(self, ctx: TypeContext) -> ValueType:
        p = viewed(_tensor_param(ctx, self.src, self.loc), self.view, self.loc)
        assert isinstance(p.type, TensorType)
        _check_index(self.src, self.index, p.type, self.loc)
        return TileType(_index_shape(self.index), p.type.dtype)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadPages(Load):
    """out = rows of consecutive pages of ``src`` [Pages, P, ...], each page named by a
    block table: a KV block of a paged cache that spans several pages.

    ``index[0]`` is ``Point(c)``, the block-table column of the block's first page;
    ``index[1]`` is ``Slice(0, n * P, stop)``, the tile's rows, P per page: rows
    ``i * P .. i * P + P - 1`` come from page ``table[row..., c + i]``. Rows at or past
    ``stop`` are a tail (``pad``), and a page none of whose rows is before ``stop`` is
    not read, nor is its block-table entry. The other indices are those of a Load.
    """

    table: str
    row: tuple[Expr, ...] = ()
    """The point indices of the table's row (the sequence ``b``)."""

    def infer(self, ctx: TypeContext) -> ValueType:
        p = _tensor_param(ctx, self.src, self.loc)
        t = _tensor_param(ctx, self.table, self.loc).type
        assert isinstance(p.type, TensorType) and isinstance(t, TensorType)
        if not t.dtype.is_int or len(t.shape) != len(self.row) + 1:
            raise DTypeError(
                f"the block table `{self.table}` ({t}) of a paged load must be an "
                f"integer tensor of rank {len(self.row) + 1} (one row per sequence)",
                self.loc,
                hint="give the table as fd.pages(block_table[b, first_column])",
            )
        ix = self.index
        if not (
            len(ix) >= 2
            and isinstance(ix[0], Point)
            and isinstance(ix[1], Slice)
            and ix[1].start == 0
        ):
            raise ShapeError(
                f"a paged load of `{self.src}` takes the pages as its first subscript "
                "and their rows, from 0, as its second",
                self.loc,
                hint="write src[fd.pages(table[b, c]), fd.ds(0, rows, valid), ...]",
            )
        return Load.infer(self, ctx)

    def check_whole_pages(self, rows: int, page: int) -> None:
        """Refuse a block of ``rows`` rows that is not a whole number of ``page``-row
        pages (the interpreter and the planner call this with the bound sizes)."""
        if rows > 0 and rows % page == 0:
            return
        raise UsageError(
            f"a paged load of `{self.src}` takes {rows} rows, not a whole number of its "
            f"pages of {page} rows",
            self.loc,
            notes=(f"rows {rows} / page {page} = {rows / page:g} pages",),
            hint=f"make the rows of the block (the size of the second subscript) a "
            f"multiple of {page}",
            code="paged_load_not_whole_pages",
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Store(Op):
    """dst[index] = value, writing only positions inside the extent (tails are cut)."""

    dst: str
    index: tuple[Index, ...]
    value: Value
    view: Shape | None = None
    """The shape ``index`` indexes when not the tensor's own: adjacent dims merged."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("value",)

    def check_block(self, p: Param, what: str) -> TileType | None:
        """The index fits ``p`` and the tile has the block's shape; the tile's type."""
        p = viewed(p, self.view, self.loc)
        assert isinstance(p.type, TensorType)
        _check_index(self.dst, self.index, p.type, self.loc)
        t = tile_type(self.value)
        want = _index_shape(self.index)
        if t is not None and tuple(t.shape) != tuple(want):
            raise ShapeError(
                f"{what} to `{self.dst}`: tile {t} does not match the block {shape_text(want)}",
                self.loc,
            )
        return t

    def check(self, ctx: TypeContext) -> None:
        p = _tensor_param(ctx, self.dst, self.loc)
        assert isinstance(p.type, TensorType)
        if p.kind is ParamKind.IN:
            raise DTypeError(
                f"`{self.dst}` is an input; stores go to outputs",
                self.loc,
                hint="declare it as fd.Out(...) or fd.Scratch(...)",
                code="store_to_input",
            )
        t = self.check_block(p, "store")
        if t is None:
            return
        if t.dtype is not p.type.dtype:
            raise DTypeError(
                f"store to `{self.dst}` ({p.type}): tile is {t.dtype.value}",
                self.loc,
                hint=f"cast first: fd.cast(x, fd.{p.type.dtype.value})",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class AtomicAdd(Store):
    """dst[index] += value, summed over every grid point (tails are cut).

    ``dst`` starts at 0 and accumulates in f32 (``value`` is an f32 tile); after the
    grid it holds the sum rounded to its dtype once. Grid points may add to the same
    positions: this is how a backward pass sums dQ over the KV blocks that see a Q
    block (CANN: ``SetAtomicAdd<float>`` into an f32 workspace, then a cast). The
    order of the additions is not defined, so the bits of the sum may vary by the
    rounding of f32 additions. ``dst`` is written by atomic adds only.
    """

    def check(self, ctx: TypeContext) -> None:
        p = _tensor_param(ctx, self.dst, self.loc)
        assert isinstance(p.type, TensorType)
        if p.kind is not ParamKind.OUT:
            raise DTypeError(
                f"atomic_add adds into outputs; `{self.dst}` is {p.kind.value}",
                self.loc,
                hint="declare it as fd.Out(...)",
            )
        t = self.check_block(p, "atomic_add")
        if t is None:
            return
        if t.dtype is not DType.F32 or not p.type.dtype.is_float:
            raise DTypeError(
                f"atomic_add to `{self.dst}` ({p.type}) adds an f32 tile, got "
                f"{t.dtype.value}",
                self.loc,
                hint="add the f32 result of a dot; the output is rounded once at the end",
                code="atomic_add_not_f32",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadScalar(Op):
    """Defines symbol ``name`` = src[index] (all point indices): an integer symbol for
    an integer tensor (loop bounds, block indices), a float one for f32 (ALiBi slopes).
    """

    name: str
    src: str
    index: tuple[Expr, ...]

    def check(self, ctx: TypeContext) -> None:
        p = _tensor_param(ctx, self.src, self.loc)
        assert isinstance(p.type, TensorType)
        if len(self.index) != len(p.type.shape):
            raise ShapeError(
                f"`{self.src}` has rank {len(p.type.shape)}, indexed with "
                f"{len(self.index)} subscripts",
                self.loc,
            )
        if not (p.type.dtype.is_int or p.type.dtype is DType.F32):
            raise DTypeError(
                f"scalar loads read integer or f32 tensors; `{self.src}` is "
                f"{p.type.dtype.value}",
                self.loc,
                hint="declare per-head constants such as ALiBi slopes as f32",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class RandomUniform(ValueOp):
    """out[r, c] = uniform [0, 1) f32 from Philox4x32-10 (fadsl.rng.philox_uniform).

    Counter-based: the value at row position ``row_start + r`` and column position
    ``col_start + c`` depends only on the key (``seed0``, ``seed1``), ``offset``,
    ``stream`` and the two positions, never on tiling or order, so interpreter and
    generated code draw bit-identical numbers (dropout masks that can be replayed).
    """

    shape: Shape
    seed0: Expr
    seed1: Expr
    offset: Expr
    stream: Expr
    row_start: Expr
    col_start: Expr

    def infer(self, ctx: TypeContext) -> ValueType:
        if len(self.shape) != 2:
            raise ShapeError(
                f"random_uniform makes 2-D tiles, got shape {shape_text(self.shape)}",
                self.loc,
            )
        return TileType(self.shape, DType.F32)


# ----------------------------------------------------------------------------
# Queues (made explicit by passes/pipeline.py; mirror Ascend C TQue one to one)
# ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueAlloc(ValueOp):
    """A queue of ``buffers`` tiles (pipe.InitBuffer(que, buffers, bytes))."""

    tile: TileType
    buffers: int
    position: str

    def infer(self, ctx: TypeContext) -> ValueType:
        return QueueType(self.tile, self.buffers, self.position)


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocTensor(ValueOp):
    """out = queue.AllocTensor(): a free slot, contents undefined (NaN)."""

    queue: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("queue",)

    def infer(self, ctx: TypeContext) -> ValueType:
        assert isinstance(self.queue.type, QueueType)
        return self.queue.type.tile


@dataclass(frozen=True, slots=True, kw_only=True)
class Enqueue(Op):
    """queue.EnQue(x): hand a filled slot to the consumer."""

    queue: Value
    x: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("queue", "x")


@dataclass(frozen=True, slots=True, kw_only=True)
class Dequeue(ValueOp):
    """out = queue.DeQue(): the oldest enqueued slot; faults if the queue is empty."""

    queue: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("queue",)

    def infer(self, ctx: TypeContext) -> ValueType:
        assert isinstance(self.queue.type, QueueType)
        return self.queue.type.tile


@dataclass(frozen=True, slots=True, kw_only=True)
class FreeTensor(Op):
    """queue.FreeTensor(x): release the slot; its contents become undefined."""

    queue: Value
    x: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("queue", "x")
