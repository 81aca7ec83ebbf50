"""``table[index]`` in a mod where ``index`` is a computed tile: a gather (issue 29, item 2).

``rel_bias[q_idx - kv_idx + Skv - 1]``, ``bias[h, bucket(q_idx - kv_idx)]``,
``offsets[document_id[q_idx]]``. The tensor is read as one window of ``W`` consecutive
elements (a ``Load``, DataCopy on the chip) and the index picks elements of it
(``ir.Gather``, the vector unit's ``Gather`` from UB). ``W`` must be a constant the
resource check can size:

* the index's range is known (interval analysis, ``gather_range.py``): the window
  starts at the smallest index the tile's valid positions produce and is as wide as
  the range over the whole tile (``block_q + block_kv - 1`` for ``q_idx - kv_idx``);
  the kernel checks ``0 <= lo`` and ``hi < extent`` once per tile unless sympy proves
  them;
* else the indexed dimension is an integer (``fd.tensor("bias", "N", 32)``): the
  whole row is the window and every index is checked;
* else the gather is refused (E129).
"""

from __future__ import annotations

from typing import Any

import sympy

from fadsl.errors import KernelSyntaxError
from fadsl.frontend import ops, tile_ops
from fadsl.frontend.gather_range import (
    Defs,
    Known,
    constant_width,
    interval,
    proven,
)
from fadsl.ir import nodes as ir
from fadsl.ir.expr import CeilDiv, Expr, as_expr, isym
from fadsl.ir.types import DType, TileType

MAX_WINDOW = 4096
"""Elements of the widest window a gather loads (16 KB of UB in f32)."""
ALIGN = 16
"""The window's width is rounded up to this many elements: whole 32-byte blocks of
UB for 2- and 4-byte elements (positions past the tensor's end read 0)."""


def record_positions(
    value: ir.Value, start: Expr, size: Expr, stop: Expr | None, axis: int
) -> None:
    """Remember the range of the arange behind ``q_idx`` / ``kv_idx`` for gathers:
    valid positions end at ``stop``, or at ``Sq`` / ``Skv`` (a packed TND sequence's
    positions restart at 0 and stay below the packed total)."""
    hi_all = start + size - 1
    end = stop if stop is not None else isym("Sq" if axis == 0 else "Skv")
    hi_valid = sympy.Min(start + size, end) - 1
    _known(ops.current()).setdefault(value.name, (start, hi_all, hi_valid))


def _known(tracer: ops.Tracer) -> Known:
    builder = tracer.builder
    found = getattr(builder, "fadsl_positions", None)
    if found is None:
        found = {}
        builder.fadsl_positions = found  # type: ignore[attr-defined]
    return found


def _defs(tracer: ops.Tracer) -> Defs:
    out: Defs = {}
    for block in tracer.builder._blocks:  # the open blocks: the mod's operands
        for op in block:
            if isinstance(op, ir.ValueOp):
                out[op.result.name] = op
    return out


def gather(t: Any, ref: ops.TensorRef, items: tuple[Any, ...]) -> ops.Tile:
    """``t[items]`` with exactly one computed tile among ``items``, the rest scalars."""
    tracer = ops.current()
    tiles = [i for i, x in enumerate(items) if isinstance(x, ops.Tile)]
    if len(tiles) != 1:
        raise KernelSyntaxError(
            f"`{t.name}` is indexed with {len(tiles)} tiles; a gather takes one computed "
            "index tile, the other subscripts b, h or integers",
            tracer.here(),
            hint=f"e.g. {t.name}[h, bucket] or {t.name}[q_idx - kv_idx + off]",
            code="gather_index_unbounded",
        )
    axis = tiles[0]
    index: ops.Tile = items[axis]
    itype = index.value.type
    if not (isinstance(itype, TileType) and itype.dtype.is_int):
        raise KernelSyntaxError(
            f"`{t.name}` is indexed with a {getattr(itype, 'dtype', itype)} tile; a "
            "gather index is an integer tile",
            tracer.here(),
            hint="cast it: fd.cast(x, fd.i32) (truncates toward zero)",
            code="gather_index_unbounded",
        )
    extent = ref.shape[axis]
    base, width, lo, hi = _window(t, index, extent, tracer)
    width = ALIGN * CeilDiv(width, ALIGN)  # whole 32-byte blocks of UB
    start = sympy.Min(sympy.Max(base, 0), sympy.Max(extent - 1, 0))
    key = tuple(
        ops.ds(start, width, None) if i == axis else x for i, x in enumerate(items)
    )
    table = tile_ops.load(ref[key], pad=0)
    if table.value.type.dtype not in (DType.F32, DType.I32):  # type: ignore[union-attr]
        table = tile_ops.cast(table, DType.F32)  # one 4-byte Gather for every table
    is_proven = lo is not None and proven(lo) and proven(extent - 1 - hi)
    value = tracer.builder.emit(
        ir.Gather,
        tracer.here(),
        hint=t.name + "_g",
        table=table.value,
        index=index.value,
        base=start,
        extent=as_expr(extent),
        src=t.name,
        lo=None if is_proven else lo,
        hi=None if is_proven else hi,
        proven=is_proven,
    )
    assert value is not None
    return ops.Tile(value)


def _window(
    t: Any, index: ops.Tile, extent: Expr, tracer: ops.Tracer
) -> tuple[Expr, Expr, Expr | None, Expr | None]:
    """(first element, width, lo, hi) of the window; lo/hi None: check every index."""
    defs, known = _defs(tracer), _known(tracer)
    valid = interval(index.value, defs, known, valid=True)
    whole = interval(index.value, defs, known, valid=False)
    consts = getattr(tracer.builder.ctx, "const_syms", {})
    width = None if whole is None else constant_width(*whole, consts)
    if (
        valid is not None
        and width is not None
        and int(width.subs(dict(consts))) <= MAX_WINDOW
    ):
        return valid[0], width, valid[0], valid[1]
    size = sympy.sympify(extent)
    if size.is_Integer and 0 < int(size) <= MAX_WINDOW:
        if valid is not None and proven(valid[0]) and proven(size - 1 - valid[1]):
            return sympy.Integer(0), size, valid[0], valid[1]
        return sympy.Integer(0), size, None, None
    raise KernelSyntaxError(
        f"cannot bound the index of `{t.name}`: its range over a tile is "
        + (
            "unknown"
            if whole is None
            else f"{whole[0]} .. {whole[1]}, not a constant width"
        )
        + f", and the indexed dimension ({size}) is not an integer up to {MAX_WINDOW}",
        tracer.here(),
        hint="build the index from q_idx / kv_idx with + - * // % and constants, "
        "clamp it (fd.minimum / fd.maximum with constants), or declare the dimension "
        f"with an integer, e.g. fd.tensor({t.name!r}, 64)",
        code="gather_index_unbounded",
    )
