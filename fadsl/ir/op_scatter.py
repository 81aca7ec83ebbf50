"""Scatter-add by computed index: the gradient of a gather (issue 29, item 3).

The backward of a mod that reads ``rel_bias[q_idx - kv_idx + off]`` adds, for every
score, dL/dscore * dmod/dvalue into ``drel_bias`` at the index the score read
(``fadsl/frontend/mod_tensor_grad.py``). Like ``AtomicAdd`` the output starts at 0, sums
in f32 over every grid point and is rounded once after the grid; unlike it, the
positions come from index tiles, so several elements of one tile may add to the same
element. The interpreter runs it (``backends/interp/scatter.py``); the Ascend C
backend lowers one into a single element (a scalar read's) or with a window
(``base``, ``width``: a gather's, a column block's; ``backends/ascendc/scatter_io.py``)
and refuses one by index tiles without a window (``tensor_grad_not_on_ascendc``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fadsl.errors import DTypeError, ShapeError
from fadsl.ir.expr import Expr
from fadsl.ir.op_base import Op, ParamKind, TypeContext, Value, tile_type
from fadsl.ir.types import DType, TensorType

__all__ = ["ScatterAdd"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ScatterAdd(Op):
    """dst[i_0, ..., i_r] += value[e] for every element e of ``value`` (f32).

    Dimension ``d`` of ``dst`` is indexed by ``index[d]`` (a scalar expression, the
    same for the whole tile) unless ``d`` is in ``axes``: then by the integer tile
    ``at[axes.index(d)]``, broadcast against ``value``. Elements whose index falls
    outside ``dst`` are skipped (tail positions, whose values are 0). ``dst`` is an
    output written by atomic adds only.
    """

    dst: str
    value: Value
    at: tuple[Value, ...]
    index: tuple[Expr, ...]
    axes: tuple[int, ...]
    base: Expr | None = None
    """A gather's (a column block's) gradient: the first element of the window the
    gather (the block) read; the indices of the valid positions lie in
    ``[base, base + width)``. None for a scalar read."""
    width: Expr | None = None
    """The window's length (a constant the resource check sizes)."""
    OPERANDS: ClassVar[tuple[str, ...]] = ("value", "at")

    def check(self, ctx: TypeContext) -> None:
        p = ctx.param(self.dst, self.loc)
        t = p.type
        if not isinstance(t, TensorType) or p.kind is not ParamKind.OUT:
            raise DTypeError(
                f"scatter_add adds into tensor outputs; `{self.dst}` is not one",
                self.loc,
                hint="declare it as fd.Out(...)",
                code="store_to_input",
            )
        if len(self.index) != len(t.shape) or len(self.at) != len(self.axes):
            raise ShapeError(
                f"scatter_add into `{self.dst}` (rank {len(t.shape)}) has "
                f"{len(self.index)} subscripts and {len(self.at)} index tiles for "
                f"{len(self.axes)} axes",
                self.loc,
                code="index_rank",
            )
        v = tile_type(self.value)
        if v is not None and v.dtype is not DType.F32:
            raise DTypeError(
                f"scatter_add into `{self.dst}` adds an f32 tile, got {v.dtype.value}",
                self.loc,
                code="atomic_add_not_f32",
            )
        for a in self.at:
            at = tile_type(a)
            if at is not None and not (at.dtype.is_int or at.dtype is DType.F32):
                raise DTypeError(  # f32: lower_vector widened the integer tile
                    f"a scatter_add index is an integer tile, got {at.dtype.value}",
                    self.loc,
                    code="dtype_mismatch",
                )
