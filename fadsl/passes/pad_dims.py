"""Pad head dims that are not a multiple of the cube's fractal (compiled path only).

Input: IR after PIPELINE and the values of shape symbols (``plan_buffers.lower`` calls
this first, so the resource proof and the backend read the same padded kernel).
Output: when a dot operand has a dimension that is a shape symbol (the head dim ``D``)
whose value is not a multiple of the cube's fractal (16 elements; 32 for 8-bit types),
that symbol is widened to ``Dp = 16 * cdiv(D, 16)`` in every tile, as FlashAttention
pads its head dim internally: GM loads of ``D`` columns become bounded loads of ``Dp``
columns (the ``Dp - D`` extra columns are zeros in L1/UB), and stores write back only
the ``D`` real columns, so GM never sees the padding.

Zero columns change nothing: a dot that contracts over ``Dp`` adds ``0 * x`` for them,
and one whose output columns are ``Dp`` wide gives zeros there, which elementwise ops
keep apart from the real columns. Row reductions over the padded axis, and contractions
over it by an operand that is not a zero-padded load, would see the padding: they are
refused on the user's line.

Non-goals: padding block sizes (a tile constant the user picks: ``_check_fractal``
asks for a multiple of 16); the interpreter, which needs no padding.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import sympy

from fadsl.errors import UsageError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import CeilDiv, Expr, as_expr, evaluate
from fadsl.ir.types import QueueType, TileType
from fadsl.passes import infer_types

NAME = "pad_dims"
FRACTAL = 16
ZERO = sympy.Integer(0)


def run(kernel: ir.Kernel, env: dict[str, Any]) -> ir.Kernel:
    """``kernel`` with unaligned head dims padded (unchanged when all are aligned)."""
    padded = _unaligned(kernel, env)
    if not padded:
        return kernel
    body = _Padder(padded).block(kernel.body)
    out = infer_types.run(replace(kernel, body=body))
    _check_sound(out.body, set(padded.values()), {})
    return out


def _unaligned(kernel: ir.Kernel, env: dict[str, Any]) -> dict[Expr, Expr]:
    """Shape symbols a dot operand is sized by whose value needs padding -> padded size."""
    names = set(kernel.shape_syms)
    out: dict[Expr, Expr] = {}
    for dot in _ops(kernel.body, ir.Dot):
        align = max(_align(dot.a), _align(dot.b))
        for operand in (dot.a, dot.b):
            t = operand.type
            assert isinstance(t, TileType)
            for d in t.shape:
                d = as_expr(d)
                if not (d.is_Symbol and d.name in names) or d in out:
                    continue
                value = _value(d, env)
                if value is not None and value % align:
                    out[d] = align * CeilDiv(d, align)
    return out


def _align(v: ir.Operand) -> int:
    t = v.type  # type: ignore[union-attr]
    return max(FRACTAL, 32 // t.dtype.itemsize)


def _value(d: Expr, env: dict[str, Any]) -> int | None:
    try:
        return int(evaluate(d, env))
    except (KeyError, TypeError, ValueError):
        return None


def _ops(body: tuple[ir.Op, ...], cls: type) -> list[Any]:
    found: list[Any] = []
    for op in body:
        if isinstance(op, cls):
            found.append(op)
        if isinstance(op, (ir.Grid, ir.For)):
            found += _ops(op.body, cls)
    return found


class _Padder:
    """Widens the padded symbols in tile shapes, load/store blocks and queues."""

    def __init__(self, padded: dict[Expr, Expr]) -> None:
        self.padded = padded

    def block(self, body: tuple[ir.Op, ...]) -> tuple[ir.Op, ...]:
        return tuple(self.op(op) for op in body)

    def op(self, op: ir.Op) -> ir.Op:
        if isinstance(op, (ir.Grid, ir.For)):
            return replace(op, body=self.block(op.body))
        if isinstance(op, ir.Load):
            index = self.index(op.index)
            if index == op.index:
                return op
            return replace(op, index=index, pad=ZERO if op.pad is None else op.pad)
        if isinstance(op, ir.Store):
            return replace(op, index=self.index(op.index))
        if isinstance(op, ir.Full):
            return replace(op, shape=self.shape(op.shape))
        if isinstance(op, ir.QueueAlloc):
            tile = TileType(self.shape(op.tile.shape), op.tile.dtype, op.tile.space)
            qt = QueueType(tile, op.buffers, op.position)
            return replace(op, tile=tile, result=ir.Value(op.result.name, qt))
        return op

    def shape(self, shape: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return tuple(self.padded.get(as_expr(d), d) for d in shape)

    def index(self, index: tuple[ir.Index, ...]) -> tuple[ir.Index, ...]:
        out: list[ir.Index] = []
        for ix in index:
            wide = (
                self.padded.get(as_expr(ix.size)) if isinstance(ix, ir.Slice) else None
            )
            if wide is None or ix.stop is not None:  # type: ignore[union-attr]
                out.append(ix)
            else:
                assert isinstance(ix, ir.Slice)
                out.append(ir.Slice(ix.start, wide, ix.start + ix.size))
        return tuple(out)


def _check_sound(
    body: tuple[ir.Op, ...], wide: set[Expr], defs: dict[ir.Value, ir.Op]
) -> None:
    """Refuse what would read the padding columns as data."""
    for op in body:
        if isinstance(op, ir.ValueOp):
            defs[op.result] = op
        if isinstance(op, (ir.Grid, ir.For)):
            _check_sound(op.body, wide, defs)
        elif isinstance(op, (ir.RowMax, ir.RowSum)) and _last(op.x) in wide:
            _refuse(op, "a row reduction over the padded head dim")
        elif isinstance(op, ir.Dot):
            a, b = op.a.type, op.b.type
            assert isinstance(a, TileType) and isinstance(b, TileType)
            k = a.shape[0] if op.transpose_a else a.shape[1]
            if as_expr(k) in wide and not all(
                _zero_padded(v, defs) for v in (op.a, op.b)
            ):
                _refuse(op, "a dot over the padded head dim of a computed tile")


def _last(v: ir.Operand) -> Expr | None:
    t = getattr(v, "type", None)
    return as_expr(t.shape[-1]) if isinstance(t, TileType) and t.shape else None


def _zero_padded(v: ir.Operand, defs: dict[ir.Value, ir.Op]) -> bool:
    src = defs.get(v)  # type: ignore[arg-type]
    if isinstance(src, ir.Dequeue):
        return True  # a queued load: the pipeline issues it with pad 0 (above)
    return isinstance(src, ir.Load) and src.pad is not None and src.pad == 0


def _refuse(op: ir.Op, what: str) -> None:
    raise UsageError(
        f"the head dim is not a multiple of {FRACTAL} and is padded for the cube; "
        f"{what} would read the zero padding",
        op.loc,
        hint=f"use a head dim that is a multiple of {FRACTAL}, or reduce over "
        "another axis",
        code="padded_head_dim_reduction",
    )
