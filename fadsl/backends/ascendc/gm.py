"""Global-memory addressing shared by the cube and vector emitters: offsets, strides, tails."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from fadsl.backends.ascendc import guards
from fadsl.backends.ascendc.names import Names
from fadsl.backends.ascendc.view import Line, Stmt
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.ir.types import DType, TensorType
from fadsl.plan.memory.gm_geometry import bounded, geometry, limit, strides


@dataclass(frozen=True)
class Access:
    """A block of a GM tensor seen as rows x cols, as C++ expressions."""

    offset: str
    """element offset of the block's first element"""
    rows: str
    """rows of the tile (block size)"""
    cols: str
    valid_rows: str
    valid_cols: str
    stride: str
    """GM elements between consecutive rows"""
    col_tail: bool
    """whether the columns can have a tail"""
    gap_elems: Expr
    """GM elements skipped between rows when the columns are whole (stride - cols)"""


def access(
    param: ir.Param,
    index: tuple[ir.Index, ...],
    names: Names,
    shift: Expr | None = None,
    size: Expr | None = None,
) -> Access:
    """The rows x cols view of ``param[index]`` as C++ (``gm_geometry.geometry``).

    ``shift`` moves the start of the first sliced dimension and ``size`` replaces its
    length: a vector core's half of a split block.
    """
    t = param.type
    assert isinstance(t, TensorType)
    g = geometry(param, index, shift, size)
    starts, sizes, cd, rd = g.starts, g.sizes, g.col_dim, g.row_dim

    def valid(d: int) -> str:
        return (
            f"fadsl::Valid({names.expr(starts[d])}, {names.expr(sizes[d])}, "
            f"{names.expr(limit(index[d], t.shape[d]))})"
        )

    col_tail = g.col_tail
    return Access(
        offset=names.expr(g.offset),
        rows=names.expr(g.rows),
        cols=names.expr(g.cols),
        valid_rows="1" if rd is None else valid(rd),
        valid_cols=valid(cd) if col_tail else names.expr(g.cols),
        stride=names.expr(g.stride),
        col_tail=col_tail,
        gap_elems=sympy.simplify(g.stride - g.cols),
    )


def gaps(a: Access, ctype: str, names: Names) -> tuple[str, str]:
    """(UB gap in 32-byte blocks, GM gap in bytes) between the rows DataCopyPad moves."""
    if not a.col_tail:
        gm_gap = (
            "0" if a.gap_elems == 0 else f"{names.expr(a.gap_elems)} * sizeof({ctype})"
        )
        return "0", gm_gap
    ub = f"{a.cols} * sizeof({ctype}) / 32 - ({a.valid_cols} * sizeof({ctype}) + 31) / 32"
    return ub, f"({a.stride} - {a.valid_cols}) * sizeof({ctype})"


SCALAR_FNS: dict[str, str] = {
    "exp": "fadsl::ScalarExp({0})",
    "exp2": "fadsl::ScalarExp2({0})",
    "log": "fadsl::ScalarLog({0})",
    "log2": "fadsl::ScalarLog2({0})",
    "sqrt": "fadsl::ScalarSqrt({0})",
    "abs": "fadsl::ScalarAbs({0})",
    "floor": "fadsl::ScalarFloor({0})",
    "sin": "fadsl::ScalarSin({0})",
    "cos": "fadsl::ScalarCos({0})",
    "tanh": "fadsl::ScalarTanh({0})",
    "sigmoid": "fadsl::ScalarSigmoid({0})",
    "float": "({0})",
    "int": "static_cast<int64_t>({0})",
    "pow": "fadsl::ScalarPow({0}, {1})",
    "min": "fadsl::ScalarMin({0}, {1})",
    "max": "fadsl::ScalarMax({0}, {1})",
    "lt": "static_cast<int64_t>({0} < {1})",
    "le": "static_cast<int64_t>({0} <= {1})",
    "gt": "static_cast<int64_t>({0} > {1})",
    "ge": "static_cast<int64_t>({0} >= {1})",
    "eq": "static_cast<int64_t>({0} == {1})",
    "ne": "static_cast<int64_t>({0} != {1})",
    "select": "(({0}) != 0.0f ? ({1}) : ({2}))",
}
"""C++ of each scalar_def function on f32 arguments (fadsl_tile.h: plain float
arithmetic and bit manipulation on the scalar unit, no libm)."""


def scalar_def(op: ir.ScalarDef, names: Names) -> list[Stmt]:
    """``const float x = fadsl::ScalarExp2(...);``: a mod's per-task scalar math."""
    names.local(op.name)
    args = [names.scalar(a, DType.F32) for a in op.args]
    ct = "float" if op.dtype is DType.F32 else "int64_t"
    value = SCALAR_FNS[op.fn].format(*args)
    if op.dtype is DType.I32 and op.fn == "select":
        value = f"static_cast<int64_t>({value})"
    return [Line(f"const {ct} {names.symbols[op.name]} = {value};")]


def load_scalar(kernel: ir.Kernel, op: ir.LoadScalar, names: Names) -> list[Stmt]:
    """``const T x = srcGm.GetValue(i);``: a scalar the scalar unit reads from GM (loop
    bounds, block indices, slopes); both the cube and the vector cores read their own.
    Indirect indices are range-guarded before and after the read (``guards.py``).
    """
    before = guards.index_guards(kernel, op, names)
    p = next(x for x in kernel.params if x.name == op.src)
    assert isinstance(p.type, TensorType)
    names.local(op.name)
    flat = names.expr(
        sum((i * s for i, s in zip(op.index, strides(p.type.shape))), sympy.Integer(0))
    )
    ct = "float" if p.type.dtype.is_float else "int64_t"
    read = Line(
        f"const {ct} {names.symbols[op.name]} = static_cast<{ct}>("
        f"{names.gm(op.src)}.GetValue({flat}));"
    )
    return before + [read] + guards.value_guards(kernel, op, names)
