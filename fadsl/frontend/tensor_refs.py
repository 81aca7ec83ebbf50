"""The tensor side of the DSL: a kernel's tensor parameters (``TensorRef``), their
subscripts (``fd.ds`` dynamic slices, ``fd.pages`` of a block table) and the indexed
``Block`` that ``fd.load`` / ``fd.store`` take. Re-exported by ``fadsl.frontend.ops``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy

from fadsl.errors import KernelSyntaxError, Loc, ShapeError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, as_expr
from fadsl.ir.types import DType, TensorType


def _here() -> Loc:
    """The user's line being traced (ops imports this module, so not at the top)."""
    from fadsl.frontend.ops import current

    return current().here()


def _scalar(x: Any, what: str) -> Expr:
    from fadsl.frontend.ops import scalar_operand

    return scalar_operand(x, what)


@dataclass(frozen=True)
class Ds:
    """A dynamic slice ``start : start + size`` (like Pallas ``pl.ds``)."""

    start: Expr
    size: Expr
    stop: Expr | None = None


def ds(start: Any, size: Any, stop: Any = None) -> Ds:
    """A block of ``size`` positions starting at ``start``: q[b, h, fd.ds(i * bq, bq), :].

    Positions past the tensor's extent form a tail: loads pad them, stores skip them.
    ``stop`` bounds the block further (one sequence of a packed varlen tensor):
    positions at or past it are a tail too.
    """
    bound = None if stop is None else _scalar(stop, "ds stop")
    return Ds(_scalar(start, "ds start"), _scalar(size, "ds size"), bound)


class TensorRef:
    """A tensor parameter inside a kernel: index it to name a block."""

    __slots__ = ("param", "view_shape")

    def __init__(self, param: ir.Param, view: tuple[Expr, ...] | None = None) -> None:
        self.param = param
        self.view_shape = view

    @property
    def type(self) -> TensorType:
        """The tensor's type, e.g. ``f16[B, N, Sq, D]``."""
        assert isinstance(self.param.type, TensorType)
        return self.param.type

    @property
    def shape(self) -> tuple[Expr, ...]:
        """Its dimensions, the shape symbols: ``B, N, Sq, D = q.shape``."""
        return tuple(self.view_shape or self.type.shape)

    def view(self, *dims: Any) -> TensorRef:
        """The same elements (row-major) seen with shape ``dims`` by loads and stores:
        ``q.view(B, N * Sq, D)[b, fd.ds(r0, block_q), :]`` spans several heads."""
        return TensorRef(self.param, tuple(_scalar(d, "view") for d in dims))

    @property
    def dtype(self) -> DType:
        """Its element dtype: ``fd.cast(p, v.dtype)``."""
        return self.type.dtype

    def __getitem__(self, key: Any) -> Block:
        items = key if isinstance(key, tuple) else (key,)
        shape = self.shape
        if len(items) != len(shape):
            raise ShapeError(
                f"`{self.param.name}` has rank {len(shape)} ({self.type}) but is "
                f"indexed with {len(items)} subscript(s)",
                _here(),
                hint="give one index or slice per dimension, e.g. q[b, h, rows, :]",
                code="index_rank",
            )
        if items and isinstance(items[0], Pages):
            if self.view_shape is not None:
                raise KernelSyntaxError(
                    "fd.pages indexes a paged tensor itself, not a view of it",
                    _here(),
                )
            first = items[0]
            index = tuple(_index(it, ext) for it, ext in zip(items[1:], shape[1:]))
            return Block(self, (ir.Point(first.column),) + index, None, first)
        index = tuple(_index(it, ext) for it, ext in zip(items, shape))
        return Block(self, index, self.view_shape)

    def __repr__(self) -> str:
        return f"TensorRef({self.param.name}: {self.type})"


@dataclass(frozen=True)
class Pages:
    """``fd.pages(table[b, c])``: the pages that a block table lists from column ``c``
    on, as the first subscript of a paged tensor (``fd.load`` only)."""

    table: str
    row: tuple[Expr, ...]
    column: Expr


def pages(entry: Block) -> Pages:
    """The pages of a KV block that spans several pages of a paged cache.

    ``k_cache[fd.pages(block_table[b, c]), fd.ds(0, rows, valid), hk, :]`` names the
    rows of the pages ``block_table[b, c]``, ``block_table[b, c + 1]``, ... one page
    after another (``rows`` a multiple of the page's rows): ``fd.load`` reads them into
    one tile, one copy per page. Rows at or past ``valid`` are a tail, and a page with
    no row before ``valid`` is not read, nor is its block-table entry.
    """
    points = [ix for ix in getattr(entry, "index", ()) if isinstance(ix, ir.Point)]
    if (
        not isinstance(entry, Block)
        or len(points) != len(entry.index)
        or not entry.ref.dtype.is_int
    ):
        raise KernelSyntaxError(
            "fd.pages takes one element of an integer block table, the column of the "
            "first page: fd.pages(block_table[b, j * pages_per_block])",
            _here(),
        )
    return Pages(entry.ref.param.name, tuple(p.at for p in points[:-1]), points[-1].at)


@dataclass(frozen=True)
class Block:
    """A tensor parameter with an index: the operand of fd.load / fd.store. ``pages``:
    the first subscript is ``fd.pages(...)`` (a paged load)."""

    ref: TensorRef
    index: tuple[ir.Index, ...]
    view: tuple[Expr, ...] | None = None
    pages: Pages | None = None


def _index(item: Any, extent: Expr) -> ir.Index:
    if isinstance(item, Ds):
        return ir.Slice(item.start, item.size, item.stop)
    if isinstance(item, slice):
        if item.step is not None:
            raise KernelSyntaxError("strided slices are not supported", _here())
        start = as_expr(0) if item.start is None else _scalar(item.start, "slice start")
        stop = extent if item.stop is None else _scalar(item.stop, "slice stop")
        size = sympy.simplify(stop - start)
        if size.free_symbols & _loop_symbols(start):
            raise ShapeError(
                f"slice {start}:{stop} has a size that changes with the loop "
                f"({size}); tiles need a fixed size",
                _here(),
                hint="write fd.ds(start, size) with a constant size",
            )
        return ir.Slice(start, size)
    return ir.Point(_scalar(item, "index"))


def _loop_symbols(e: Expr) -> set[sympy.Symbol]:
    return set(e.free_symbols)
