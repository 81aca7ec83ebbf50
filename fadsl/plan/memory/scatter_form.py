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
from fadsl.ir.types import DType
from fadsl.plan.memory.vector_forms import (
    Form,
    ShapeOf,
    TempSpec,
    elems_per_block,
    elems_per_repeat,
    form,
)

__all__ = ["scalar_scatter_form"]


@form(ir.ScatterAdd)
def scalar_scatter_form(
    op: ir.ScatterAdd, shape: ShapeOf, defs: dict[ir.Value, ir.Op]
) -> Form:
    """ReduceSum's sharedTmpBuffer (sized by ReduceMax.md's formula without indices,
    which bounds ReduceSum.md's) and the 8-float result the DataCopyPad reads."""
    if op.at:
        raise BackendError(
            f"scatter_add into `{op.dst}` by index tiles has no vector form",
            op.loc,
            code="tensor_grad_not_on_ascendc",
        )
    s = shape(op.value)
    assert s is not None
    n = sympy.Mul(*(as_expr(d) for d in s))
    per, block = elems_per_repeat(DType.F32), elems_per_block(DType.F32)
    work = CeilDiv(2 * CeilDiv(n, per), block) * block
    return Form(
        "scatter_sum",
        (
            TempSpec("reduce-work", (work,), DType.F32),
            TempSpec("reduce-top", (as_expr(block),), DType.F32),
        ),
    )
