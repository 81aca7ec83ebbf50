"""The Ascend C rule of ``TakeColumns`` (``out[r, c] = x[r, cols[c]]``; form
``take_columns``, ``plan/memory/column_form.py``): the column index as byte offsets
(an f32 index cast with CAST_RINT, an integer one copied by Adds, then Muls by the
element width) in an i32 temporary of one row, and one level-2 ``Gather`` per row
(asc-devkit kernel_operator_vec_gather_intf.h: ``dst[i]`` = the element at byte
offset ``srcOffset[i]`` from ``src``; ``srcBaseAddr`` 0). No cube, no matrix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fadsl.backends.ascendc.vector_rules import rule, tile_dtype
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, evaluate
from fadsl.ir.types import DType

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter

ROW = "fadslRow"
"""The row counter of the Gather loop (a name no generated variable takes)."""


@rule(ir.TakeColumns)
def take_columns(
    e: VectorEmitter, op: ir.TakeColumns, form: Any, temps: tuple[str, ...]
) -> list[Any]:
    off = temps[0]
    rows, width = e.shape(op.result)[0], e.shape(op.x)[1]
    _aligned(e, op, width, "the tile it picks from")
    _aligned(e, op, e.shape(op.result)[1], "the result")
    k = e.count(op.cols)
    idx = e.var(op.cols)
    itemsize = tile_dtype(op.result).itemsize
    if tile_dtype(op.cols) is DType.F32:
        cast = f"AscendC::Cast({off}, {idx}, AscendC::RoundMode::CAST_RINT, {k});"
    else:
        cast = f"AscendC::Adds({off}, {idx}, static_cast<int32_t>(0), {k});"
    dst, src = e.var(op.result), e.var(op.x)
    n_rows, n_width = e.names.expr(rows), e.names.expr(width)
    gather = (
        f"AscendC::Gather({dst}[{ROW} * ({k})], {src}[{ROW} * ({n_width})], "
        f"{off}.ReinterpretCast<uint32_t>(), static_cast<uint32_t>(0), "
        f"static_cast<uint32_t>({k}));"
    )
    return [
        cast,
        "AscendC::PipeBarrier<PIPE_V>();",
        f"AscendC::Muls({off}, {off}, static_cast<int32_t>({itemsize}), {k});",
        "AscendC::PipeBarrier<PIPE_V>();",
        (f"for (int32_t {ROW} = 0; {ROW} < static_cast<int32_t>({n_rows}); ++{ROW})",
         [gather]),  # fmt: skip
    ]


def _aligned(e: VectorEmitter, op: ir.TakeColumns, n: Expr, what: str) -> None:
    """Each row's Gather reads ``x[r * C]`` and writes ``out[r * K]``: vector operands
    start on a 32-byte block of UB, so rows must be whole blocks."""
    dt = tile_dtype(op.result)
    per = 32 // dt.itemsize
    value = int(evaluate(n, e.low.env))
    if value % per:
        raise BackendError(
            f"picking columns of a tile by index: {what} has rows of {value} "
            f"{dt.value} elements, not a multiple of {per} (a 32-byte block of UB), so "
            "its rows cannot be Gather operands",
            op.loc,
            hint="rotary: give rotary_cos / rotary_sin a multiple of 8 columns "
            "(rotary_dim a multiple of 16, as FlashAttention requires)",
            code="take_columns_unaligned",
        )
