"""The vector form of ``ScatterAdd`` into one element: a scalar read's gradient.

``alpha[h]`` in a score_mod gives ``dalpha[h] += sum(g)`` (``frontend/mod_tensor_grad``):
each vector core sums its own rows of ``g`` with the level-2 ``ReduceSum``
(asc-devkit ReduceSum.md: result in ``dst[0]``) into a 32-byte f32 buffer, and adds
that partial into the f32 sum of ``d<name>`` with one 4-byte ``DataCopyPad`` under
``SetAtomicAdd<float>`` (``backends/ascendc/scatter_io.py``). Gathers and column
blocks (a scatter by index tiles) have no form: ``driver/tensor_grads.py`` refuses
them before planning.
"""

from __future__ import annotations

import sympy

from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import CeilDiv, as_expr
from fadsl.ir.types import DType, TileType
from fadsl.plan.memory.vector_forms import (
    Form,
    ShapeOf,
    TempSpec,
    elems_per_block,
    elems_per_repeat,
    form,
)

__all__ = ["is_column_block", "needs_index_copy", "scalar_scatter_form"]

F32 = DType.F32


@form(ir.ScatterAdd)
def scalar_scatter_form(
    op: ir.ScatterAdd, shape: ShapeOf, defs: dict[ir.Value, ir.Op]
) -> Form:
    """ReduceSum's sharedTmpBuffer (sized by ReduceMax.md's formula without indices,
    which bounds ReduceSum.md's) and the 8-float result the DataCopyPad reads; for a
    gather also the f32 index (when the index tile is an integer one), the bit mask
    of CompareScalar, the Select's f32 result and the f32 window of sums."""
    if op.at and op.width is None:
        raise BackendError(
            f"scatter_add into `{op.dst}` by index tiles has no vector form",
            op.loc,
            code="tensor_grad_not_on_ascendc",
        )
    s = shape(op.value)
    assert s is not None
    n = sympy.Mul(*(as_expr(d) for d in s))
    per, block = elems_per_repeat(DType.F32), elems_per_block(DType.F32)
    work = TempSpec("reduce-work", (CeilDiv(2 * CeilDiv(n, per), block) * block,), F32)
    if not op.at:
        return Form(
            "scatter_sum", (work, TempSpec("reduce-top", (as_expr(block),), F32))
        )
    assert op.width is not None
    window = TempSpec("window", (CeilDiv(op.width, block) * block,), F32)
    if is_column_block(op):
        return Form("scatter_columns", (window,))
    padded = (CeilDiv(n, per) * per,)
    temps = [
        work,
        window,
        TempSpec("mask", padded, DType.U8, bits=1),
        TempSpec("dup", s, F32),
    ]
    if needs_index_copy(op):
        temps.append(TempSpec("index", padded, F32))
    return Form("scatter_window", tuple(temps))


def is_column_block(op: ir.ScatterAdd) -> bool:
    """A block of columns (``key_bias[kv_idx]``): a [1, cols] position tile; its
    gradient is the column sums of the value, added from the block's start."""
    t = op.at[0].type if op.at else None
    return isinstance(t, TileType) and len(t.shape) == 2 and t.shape[0] == 1


def needs_index_copy(op: ir.ScatterAdd) -> bool:
    """The index tile is copied into an f32 temporary of whole 256-byte repeats
    (CompareScalar reads whole repeats, CompareScalar.md): when it is an integer
    tile, or one index per row ([rows, 1]: a count below a repeat)."""
    t = op.at[0].type
    assert isinstance(t, TileType)
    return t.dtype is not DType.F32 or (len(t.shape) == 2 and t.shape[1] == 1)
