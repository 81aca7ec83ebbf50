"""The derivative of a score_mod in its score, by differentiating the traced IR.

The mod is traced as in the forward (its ops land in the open block); then the ops it
emitted are walked in order, forward mode, carrying d(value)/d(score) for every value
that depends on the score, and the derivative is emitted as more vector ops (the way
FlexAttention derives a mod's backward from its traced graph). Values that do not
depend on the score (positions, extra tensors, constants) have derivative 0; a mask
made from the score may choose between branches (``fd.where``: the derivative of the
branch taken). A mod is refused, at its own line, when the score passes through an op
with no derivative (floor, ``//``, ``%``, a comparison used as a number, a reduction).
The gradients of the extra tensors a mod reads (a learnable bias) start from the same
traced ops: ``mod_tensor_grad.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from fadsl.errors import KernelSyntaxError
from fadsl.frontend import ops
from fadsl.frontend import tile_ops as fd
from fadsl.frontend.tile_trig import is_reduction_floor
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType

Deriv = Any
"""None (the value does not depend on the score), the float 1.0, or a Tile."""


def score_mod_with_grad(
    spec: Any, s: ops.Tile, b: Any, h: Any, q_idx: Any, kv_idx: Any
) -> tuple[ops.Tile, Deriv]:
    """(score_mod(s, ...), d score_mod / d s); the derivative is 1.0 or a Tile or None."""
    out, deriv, _ = score_mod_traced(spec, s, b, h, q_idx, kv_idx)
    return out, deriv


def score_mod_traced(
    spec: Any, s: ops.Tile, b: Any, h: Any, q_idx: Any, kv_idx: Any
) -> tuple[ops.Tile, Deriv, tuple[ir.Op, ...]]:
    """As ``score_mod_with_grad``, plus the ops the mod emitted (the gradients of the
    tensors it reads start from them: ``mod_tensor_grad.py``)."""
    builder = ops.current().builder
    start = builder.mark()
    out = spec.check_score(spec.score_mod(s, b, h, q_idx, kv_idx), s)
    traced = builder.ops_since(start)
    grads: dict[str, Deriv] = {s.value.name: 1.0}
    depends = {s.value.name}
    for op in traced:
        _step(spec, op, grads, depends)
    return out, grads.get(out.value.name), traced


def _step(spec: Any, op: ir.Op, grads: dict[str, Deriv], depends: set[str]) -> None:
    used = [v for v in op.operand_values() if v.name in depends]
    if not used or not isinstance(op, ir.ValueOp) or is_reduction_floor(op):
        return  # (fd.sin / fd.cos's integral steps: derivative 0)
    depends.add(op.result.name)
    rule = _RULES.get(type(op))
    if rule is None:
        if isinstance(op, (ir.And, ir.Or, ir.Not)) or _compares(op):
            return  # a mask of the score: only fd.where may read it
        _refuse(spec, op)
    if isinstance(op, ir.Cast) and not op.dtype.is_float:
        _refuse(spec, op)
    if isinstance(op, ir.Cast) and op.x.type.dtype is DType.BOOL:  # type: ignore[union-attr]
        _refuse(spec, op)
    d = rule(op, lambda x: _d(grads, x), _tile)
    if d is not None:
        grads[op.result.name] = d


def _compares(op: ir.Op) -> bool:
    return isinstance(op, ir.Binary) and op.RESULT_BOOL


def _refuse(spec: Any, op: ir.Op) -> None:
    raise KernelSyntaxError(
        f"score_mod `{spec.score_mod.__name__}` is not differentiable in the score: "
        f"its `{ir.op_name(type(op))}` takes a value made from the score",
        op.loc,
        hint="the backward needs d score_mod / d score; floor, //, % and comparisons "
        "used as numbers have none (a comparison may choose with fd.where)",
        code="score_mod_not_differentiable",
    )


def _d(grads: dict[str, Deriv], x: ir.Operand) -> Deriv:
    return grads.get(x.name) if isinstance(x, ir.Value) else None


def _tile(x: ir.Operand) -> Any:
    """The operand as the frontend computes with it: a Tile or a scalar expression."""
    return ops.Tile(x) if isinstance(x, ir.Value) else x.expr


# --- arithmetic on derivatives (None is 0, 1.0 is one) ---------------------------


def _mul(a: Deriv, b: Any) -> Deriv:
    if a is None:
        return None
    if isinstance(a, float) and a == 1.0:
        return b
    return a * b


def _add(a: Deriv, b: Deriv) -> Deriv:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _neg(a: Deriv) -> Deriv:
    return None if a is None else -a


def _pick(cond: Any, a: Deriv, b: Deriv) -> Deriv:
    """a where cond else b; two scalars become a tile through the mask as 0 / 1."""
    if a is None and b is None:
        return None
    a, b = (0.0 if a is None else a), (0.0 if b is None else b)
    if isinstance(a, ops.Tile) or isinstance(b, ops.Tile):
        return fd.where(cond, a, b)
    return fd.cast(cond, DType.F32) * (a - b) + b


def _expand(a: Deriv, axis: int) -> Deriv:
    if not isinstance(a, ops.Tile):
        return a
    return ops.emit_op(ir.ExpandDims, x=a.value, axis=axis)


Rule = Callable[[Any, Callable[[Any], Deriv], Callable[[Any], Any]], Deriv]

_RULES: dict[type, Rule] = {
    ir.Add: lambda op, d, t: _add(d(op.lhs), d(op.rhs)),
    ir.Sub: lambda op, d, t: _add(d(op.lhs), _neg(d(op.rhs))),
    ir.Mul: lambda op, d, t: _add(
        _mul(d(op.lhs), t(op.rhs)), _mul(d(op.rhs), t(op.lhs))
    ),
    ir.Div: lambda op, d, t: _mul(
        _add(d(op.lhs), _neg(_mul(d(op.rhs), t(op.result)))), 1.0 / t(op.rhs)
    ),
    ir.Neg: lambda op, d, t: _neg(d(op.x)),
    ir.Exp: lambda op, d, t: _mul(d(op.x), t(op.result)),
    ir.Exp2: lambda op, d, t: _mul(d(op.x), t(op.result) * math.log(2.0)),
    ir.Log: lambda op, d, t: _mul(d(op.x), 1.0 / t(op.x)),
    ir.Sqrt: lambda op, d, t: _mul(d(op.x), 0.5 / t(op.result)),
    ir.Tanh: lambda op, d, t: _mul(d(op.x), 1.0 - t(op.result) * t(op.result)),
    ir.Sigmoid: lambda op, d, t: _mul(d(op.x), t(op.result) * (1.0 - t(op.result))),
    ir.Abs: lambda op, d, t: _pick(t(op.x) >= 0.0, d(op.x), _neg(d(op.x))),
    ir.Maximum: lambda op, d, t: _pick(t(op.lhs) >= t(op.rhs), d(op.lhs), d(op.rhs)),
    ir.Minimum: lambda op, d, t: _pick(t(op.lhs) <= t(op.rhs), d(op.lhs), d(op.rhs)),
    ir.Where: lambda op, d, t: _pick(t(op.cond), d(op.a), d(op.b)),
    ir.Cast: lambda op, d, t: d(op.x),
    ir.ExpandDims: lambda op, d, t: _expand(d(op.x), op.axis),
}


__all__ = ["score_mod_traced", "score_mod_with_grad"]
