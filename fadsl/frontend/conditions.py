"""Scalar conditions (on ``b``, ``h``, loop variables) met by mask tiles.

A mod may mix a condition on the batch or head with one on positions, as FlexAttention
users write ``(q_idx >= kv_idx) | (h >= 2)``. The scalar side is a sympy relation (or
And/Or/Not of them, or a Python bool); it is the same for every element of the tile, so
it is spread over a tile of zeros (``zero + h >= 2``), which broadcasts against the
position mask. The zero tile has one non-unit axis (a [block_q, 1] column or a
[1, block_kv] row), so the spread costs one short vector per task, not a whole tile.
"""

from __future__ import annotations

from typing import Any

import sympy
from sympy.logic.boolalg import Boolean

from fadsl.frontend import ops, tile_ops

_RELATIONS = {
    "StrictLessThan": lambda a, b: a < b,
    "LessThan": lambda a, b: a <= b,
    "StrictGreaterThan": lambda a, b: a > b,
    "GreaterThan": lambda a, b: a >= b,
    "Equality": lambda a, b: a == b,
    "Unequality": lambda a, b: a != b,
}


def is_condition(x: Any) -> bool:
    """A scalar condition: a Python bool or a sympy relation / boolean (not a tile)."""
    return isinstance(x, (bool, Boolean))


def spread(cond: Any, zero: ops.Tile) -> ops.Tile | None:
    """``cond`` as a mask tile shaped like ``zero`` (a tile of zeros); None if ``cond``
    is not a scalar condition."""
    if isinstance(cond, ops.Tile):
        return None
    if isinstance(cond, bool) or cond is sympy.true or cond is sympy.false:
        return zero == (0 if bool(cond) else 1)
    name = type(cond).__name__
    if name in _RELATIONS:
        return _RELATIONS[name](zero + cond.lhs, cond.rhs)
    parts = [spread(a, zero) for a in getattr(cond, "args", ())]
    if not parts or any(p is None for p in parts):
        return None
    if isinstance(cond, sympy.And):
        return _fold(parts, lambda x, y: x & y)
    if isinstance(cond, sympy.Or):
        return _fold(parts, lambda x, y: x | y)
    if isinstance(cond, sympy.Not):
        return ~parts[0]
    return None


def _fold(parts: list[Any], fn: Any) -> Any:
    out = parts[0]
    for p in parts[1:]:
        out = fn(out, p)
    return out


def spread_like(cond: Any, like: ops.Tile) -> ops.Tile:
    """``cond`` spread over a tile that broadcasts against ``like``."""
    mask = spread(cond, zeros_along(like))
    if mask is None:
        raise ops.KernelSyntaxError(
            f"the condition `{cond}` cannot be evaluated on the vector unit",
            ops.current().here(),
            hint="compare b, h or loop variables with <, <=, >, >=, ==, != and combine "
            "the comparisons with & | ~",
        )
    return mask


def zeros_along(like: ops.Tile) -> ops.Tile:
    """f32 zeros along the first non-unit axis of ``like``, unit along the others."""
    shape = like.type.shape
    keep = next((i for i, d in enumerate(shape) if d != 1), 0)
    zero = tile_ops.full((shape[keep],), 0.0, ops.f32)
    if len(shape) == 2:
        return zero[:, None] if keep == 0 else zero[None, :]
    return zero if len(shape) == 1 else tile_ops.full(shape, 0.0, ops.f32)
