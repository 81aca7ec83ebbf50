"""``fd.cast(x, fd.i32)`` of a float tile, for tiles that lower_vector keeps in f32.

lower_vector moves integer tiles to the f32 vector unit (exact below 2**24). A cast of
an f32 tile to an integer (truncation toward zero, docs/variants.md) would leave an
integer tile among f32 ones; it becomes the f32 truncation

    t = where(x >= 0, floor(x), -floor(-x))

and a cast of a mask ``where(mask, 1, 0)``, so every later op (a gather's index, ``fd.where`` with a position tile, a minimum)
sees f32 integers, as the interpreter's numpy truncation would give them.
"""

from __future__ import annotations

from fadsl.ir import nodes as ir
from fadsl.ir.expr import as_expr
from fadsl.ir.types import DType, TileType
from fadsl.passes.int_division import Fresh, _Emitter


def applies(op: ir.ValueOp) -> bool:
    """A cast of a float tile to an integer dtype."""
    if not isinstance(op, ir.Cast) or not op.dtype.is_int:
        return False
    t = op.x.type
    return isinstance(t, TileType) and (t.dtype.is_float or t.dtype is DType.BOOL)


def lower(
    op: ir.Cast, fresh: Fresh, ctx: ir.TypeContext
) -> tuple[list[ir.Op], ir.Value]:
    """The f32 ops truncating ``op.x`` and the value holding the result."""
    b = _Emitter(op, fresh, ctx)
    x = op.x
    t = x.type
    assert isinstance(t, TileType)
    if t.dtype is DType.BOOL:  # a mask: 1 where it holds, else 0
        one = b.emit(ir.Full, "one", shape=t.shape, value=as_expr(1), dtype=DType.F32)
        zero_b = ir.Imm(as_expr(0), DType.F32)
        return b.ops, b.emit(ir.Where, "t", cond=x, a=one, b=zero_b)
    if t.dtype is not DType.F32:
        x = b.emit(ir.Cast, "t", x=x, dtype=DType.F32)
    zero = ir.Imm(as_expr(0), DType.F32)
    down = b.emit(ir.Floor, "t", x=x)
    up = b.emit(ir.Neg, "t", x=b.emit(ir.Floor, "t", x=b.emit(ir.Neg, "t", x=x)))
    out = b.emit(
        ir.Where, "trunc", cond=b.emit(ir.Ge, "c", lhs=x, rhs=zero), a=down, b=up
    )
    return b.ops, out
