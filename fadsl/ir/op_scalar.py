"""Scalar math: a symbol defined by a function of scalar expressions.

``x = scalar_def() {fn = "exp2", args = [...], dtype = f32}`` binds the symbol ``x``
(like ``load_scalar``) to ``fn(*args)``. It is what a mod's math on ``b``, ``h``, loaded
scalars and shape symbols becomes (``fd.exp2(-8.0 * (h + 1) / N)``): a value per task,
computed by the scalar unit (``fadsl::Scalar*`` in fadsl_tile.h) and hoisted out of the
loops it does not depend on (passes/hoist_scalars.py). Plain ``+ - * /`` of scalars
stay expressions; only what an expression cannot say is a ``scalar_def``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fadsl.errors import DTypeError
from fadsl.ir.expr import Expr
from fadsl.ir.op_base import Op, TypeContext
from fadsl.ir.types import DType

SCALAR_FNS: dict[str, int] = {
    "exp": 1,
    "exp2": 1,
    "log": 1,
    "log2": 1,
    "sqrt": 1,
    "abs": 1,
    "floor": 1,
    "sin": 1,
    "cos": 1,
    "tanh": 1,
    "sigmoid": 1,
    "float": 1,
    "int": 1,
    "pow": 2,
    "min": 2,
    "max": 2,
    "lt": 2,
    "le": 2,
    "gt": 2,
    "ge": 2,
    "eq": 2,
    "ne": 2,
    "select": 3,
}
"""Function name -> number of arguments. Comparisons give 0 / 1 (i32); ``int``
truncates toward zero; ``select(c, a, b)`` is ``a`` where ``c != 0``, else ``b``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScalarDef(Op):
    """Defines symbol ``name`` = ``fn(*args)``: f32 or i32 (``dtype``)."""

    name: str
    fn: str
    args: tuple[Expr, ...]
    dtype: DType = DType.F32

    def check(self, ctx: TypeContext) -> None:
        arity = SCALAR_FNS.get(self.fn)
        if arity is None or arity != len(self.args):
            raise DTypeError(
                f"scalar_def: `{self.fn}` with {len(self.args)} argument(s) is not a "
                "scalar function",
                self.loc,
                hint="one of " + ", ".join(sorted(SCALAR_FNS)),
            )
        if self.dtype not in (DType.F32, DType.I32):
            raise DTypeError(
                f"scalar_def defines f32 or i32 values, not {self.dtype.value}",
                self.loc,
            )
