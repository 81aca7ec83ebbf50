"""Checks of the cube's dot operands that the buffer plan runs before sizing L1/L0:
tile dimensions are whole 16 x 16 fractals, and a transposed A operand is 16-bit
(LoadData transposes only 16-bit fractals). Split out of plan_buffers.py."""

from __future__ import annotations

from typing import Any

import sympy

from fadsl.errors import BackendError, UsageError
from fadsl.ir.expr import Expr, as_expr, evaluate
from fadsl.ir.types import TileType
from fadsl.user_site import user_site
from fadsl.plan.schedule.sides import Sides

FRACTAL = 16


def check_transposed_a(sides: Sides) -> None:
    for d in sides.dots:
        if d.transpose_a and d.a.type.dtype.itemsize != 2:  # type: ignore[union-attr]
            raise BackendError(
                f"dot(transpose_a=True) with a {d.a.type.dtype.value} A operand: "  # type: ignore[union-attr]
                "LoadData transposes only 16-bit fractals on the cube",
                d.loc,
                hint="use fp16 or bf16 operands for this dot",
            )


def check_fractal(
    t: TileType, loc: Any, env: dict[str, Any], what: str, kernel_loc: Any = None
) -> None:
    for d in t.shape:
        try:
            v = int(evaluate(as_expr(d), env))
        except (KeyError, TypeError, ValueError):
            continue
        if v % FRACTAL:
            loc, notes = user_site(loc, kernel_loc, "the tile is loaded by")
            raise UsageError(
                f"{what} {t} has a dimension of {v}, not a multiple of {FRACTAL}: the cube "
                "unit works on 16 x 16 fractals",
                loc,
                hint=fractal_hint(as_expr(d), v),
                notes=notes,
                code="block_size_not_fractal",
            )


def fractal_hint(d: Expr, v: int) -> str:
    """Names the constant to change when the dimension is one (block_kv = 40 -> 48)."""
    if isinstance(d, sympy.Symbol):
        up = -(-v // FRACTAL) * FRACTAL
        return (
            f"{d} = {v}: choose a multiple of {FRACTAL}, e.g. --set {d}={up} "
            "(or that default in the kernel)"
        )
    return "choose block sizes and a head dim that are multiples of 16"
