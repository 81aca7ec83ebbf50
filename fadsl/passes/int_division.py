"""Integer ``//`` and ``%`` by a scalar, for tiles that lower_vector keeps in f32.

lower_vector stores integer tiles (positions, ids) as f32, which is exact below 2**24, and
the vector unit has no integer division. ``x // d`` becomes

    q0 = floor(x / d)                  # may be off by one: x / d is rounded
    r  = x - q0 * d                    # exact: small integers
    q  = where(r < 0, q0 - 1, where(r >= d, q0 + 1, q0))     (d > 0; mirrored for d < 0)

and ``x % d`` is ``x - q * d`` (Python's sign convention: the sign of d). Every step is
exact for |x|, |d| < 2**24, so the interpreter (which runs this same IR) and the
generated code give numpy's integer results.

Non-goals: tile divisors and scalar dividends (``100 // kv_idx``); a clear error says so.
"""

from __future__ import annotations

from collections.abc import Callable

from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import as_expr
from fadsl.ir.types import DType, ErrorType

Fresh = Callable[[str], str]


def lower(
    op: ir.FloorDivide | ir.Remainder, fresh: Fresh, ctx: ir.TypeContext
) -> tuple[list[ir.Op], ir.Value]:
    """The f32 ops computing ``op`` and the value holding its result."""
    x, d = op.lhs, op.rhs
    if not isinstance(x, ir.Value) or not isinstance(d, ir.Imm):
        raise BackendError(
            f"integer {_sym(op)} on tiles is lowered for a tile divided by a scalar",
            op.loc,
            hint="divide position tiles by constants or shape symbols, e.g. "
            "kv_idx // 64",
        )
    sign = _sign(d, op)
    b = _Emitter(op, fresh, ctx)
    dd = ir.Imm(d.expr, DType.F32)
    q0 = b.emit(ir.Floor, "q", x=b.emit(ir.Div, "t", lhs=x, rhs=dd))
    r = b.emit(ir.Sub, "r", lhs=x, rhs=b.emit(ir.Mul, "t", lhs=q0, rhs=dd))
    low, high = (ir.Lt, ir.Ge) if sign > 0 else (ir.Gt, ir.Le)
    zero, one = ir.Imm(as_expr(0), DType.F32), ir.Imm(as_expr(1), DType.F32)
    up = b.emit(
        ir.Where,
        "q",
        cond=b.emit(high, "c", lhs=r, rhs=dd),
        a=b.emit(ir.Add, "q", lhs=q0, rhs=one),
        b=q0,
    )
    q = b.emit(
        ir.Where,
        "q",
        cond=b.emit(low, "c", lhs=r, rhs=zero),
        a=b.emit(ir.Sub, "q", lhs=q0, rhs=one),
        b=up,
    )
    if isinstance(op, ir.Remainder):
        q = b.emit(ir.Sub, "rem", lhs=x, rhs=b.emit(ir.Mul, "t", lhs=q, rhs=dd))
    return b.ops, q


def _sym(op: ir.Op) -> str:
    return "//" if isinstance(op, ir.FloorDivide) else "%"


def _sign(d: ir.Imm, op: ir.Op) -> int:
    e = d.expr
    if e.is_zero:
        raise BackendError(f"integer {_sym(op)} by zero", op.loc)
    if e.is_positive or (e.is_nonnegative and not e.is_zero):
        return 1
    if e.is_negative:
        return -1
    raise BackendError(
        f"integer {_sym(op)} by {e}: its sign is not known",
        op.loc,
        hint="divide by a positive constant or shape symbol",
    )


class _Emitter:
    """Builds typed ops at ``op``'s location (marked as made by lower_vector)."""

    def __init__(self, op: ir.Op, fresh: Fresh, ctx: ir.TypeContext) -> None:
        self.loc = op.loc.derived("lower_vector")
        self.fresh = fresh
        self.ctx = ctx
        self.ops: list[ir.Op] = []

    def emit(self, cls: type[ir.ValueOp], hint: str, **fields: object) -> ir.Value:
        op = cls(result=ir.Value("?", ErrorType()), loc=self.loc, **fields)
        result = ir.Value(self.fresh(hint), op.infer(self.ctx))
        self.ops.append(cls(result=result, loc=self.loc, **fields))
        return result
