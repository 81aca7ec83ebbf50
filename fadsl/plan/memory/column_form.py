"""The vector form of ``TakeColumns`` (``out[r, c] = x[r, cols[c]]``, rotary's column
maps): the index cast to byte offsets in an i32 temporary of ``K`` elements (one row
of the result), then one level-2 ``Gather`` per row of this core's part, reading the
row of ``x`` (``backends/ascendc/vector_columns.py``)."""

from __future__ import annotations

from fadsl.ir import nodes as ir
from fadsl.ir.types import DType
from fadsl.plan.memory.vector_forms import Form, ShapeOf, TempSpec, form

__all__ = ["take_columns_form"]


@form(ir.TakeColumns)
def take_columns_form(
    op: ir.TakeColumns, shape: ShapeOf, defs: dict[ir.Value, ir.Op]
) -> Form:
    """Each row's Gather reads ``x[r * C]`` and writes ``out[r * K]``: both must start
    on a 32-byte block of UB, which the rule checks at the shape's values."""
    cols = shape(op.cols)
    assert cols is not None
    return Form("take_columns", (TempSpec("offsets", tuple(cols), DType.I32),))
