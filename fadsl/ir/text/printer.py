"""Kernel -> textual IR (house style 3.7), the form ``ir/text/grammar.lark`` parses back.

Every op prints in one generic form, attributes named after dataclass fields and
omitted when equal to their default::

    %s = dot(%qt, %kt) {transpose_b = true} : f32[block_q, block_kv]
    store(%out) {dst = o, index = [b, h, block_q*i +: block_q, 0 +: D]}
    q0 = load_scalar() {src = cu_seqlens, index = [b]}

The kernel header, ``grid`` and ``for`` have a readable syntax of their own. The
printer never raises: broken IR (poisoned types, missing operands) still prints, so
InternalError reports can include it.
"""

from __future__ import annotations

import json
import math
import re
from enum import Enum
from typing import Any

import sympy

from fadsl.ir.expr_print import to_text
from fadsl.ir.text.fields import BINDER_FIELDS, default_imm_dtype, printed_attrs
from fadsl.ir.nodes import (
    For,
    Grid,
    Imm,
    Kernel,
    LoopKind,
    Op,
    Param,
    Point,
    Slice,
    Value,
    ValueOp,
    op_name,
)
from fadsl.ir.types import QueueType, ScalarType, TensorType, TileType
from fadsl.ir.visitor import IRVisitor

KEYWORDS = frozenset(
    "kernel in out scratch scalar symbols consts grid for iter yield true false none "
    "queue".split()
)
"""Words the grammar reserves; strings equal to one are printed quoted."""

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INDENT = "  "


def print_kernel(kernel: Kernel) -> str:
    """The textual IR of ``kernel``; deterministic, ends with a newline."""
    printer = _Printer()
    printer.visit_kernel(kernel)
    return "\n".join(printer.lines) + "\n"


def print_op(op: Op) -> str:
    """One op (with its body, if any) as text, for messages and tests."""
    printer = _Printer()
    printer.visit(op)
    return "\n".join(printer.lines)


class _Printer(IRVisitor):
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def emit(self, text: str) -> None:
        self.lines.append(_INDENT * self.depth + text)

    def visit_kernel(self, kernel: Kernel) -> None:
        self.lines += _header(kernel)
        self.region(kernel.body)

    def region(self, body: tuple[Op, ...], tail: str | None = None) -> None:
        self.depth += 1
        self.visit_block(body)
        if tail is not None:
            self.emit(tail)
        self.depth -= 1
        self.emit("}")

    def visit_Grid(self, op: Grid) -> None:
        names = ", ".join(op.vars)
        extents = ", ".join(to_text(e) for e in op.extents)
        self.emit(f"grid ({names}) in ({extents}) {{")
        self.region(op.body)

    def visit_For(self, op: For) -> None:
        self.emit(_for_head(op))
        tail = "yield " + _values(op.yields) if op.yields else None
        self.region(op.body, tail)

    def generic_visit(self, op: Op) -> None:
        self.emit(op_text(op))


# ----------------------------------------------------------------------------
# Kernel header
# ----------------------------------------------------------------------------


def _header(kernel: Kernel) -> list[str]:
    lines = [f"kernel {kernel.name}("]
    lines += [f"    {param_text(p)}," for p in kernel.params]
    tail = ")"
    if tuple(kernel.shape_syms) != derived_shape_syms(kernel.params):
        tail += f" symbols({', '.join(kernel.shape_syms)})"
    if kernel.consts:
        items = ", ".join(f"{k} = {const_text(v)}" for k, v in kernel.consts)
        tail += f" consts({items})"
    if not kernel.params:
        return [f"kernel {kernel.name}(){tail[1:]} {{"]
    return lines + [tail + " {"]


def derived_shape_syms(params: tuple[Param, ...]) -> tuple[str, ...]:
    """Shape symbols in order of first appearance in tensor parameter shapes."""
    names: list[str] = []
    for p in params:
        if not isinstance(p.type, TensorType):
            continue
        for d in p.type.shape:
            if isinstance(d, sympy.Symbol) and d.name not in names:
                names.append(d.name)
    return tuple(names)


def param_text(p: Param) -> str:
    text = f"{p.kind.value} {p.name}: {type_text(p.type)}"
    if p.default is not None:
        text += f" = {to_text(p.default)}"
    return text


def const_text(v: int | float | bool | str) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    return value_text(v)


# ----------------------------------------------------------------------------
# Ops
# ----------------------------------------------------------------------------


def op_text(op: Op) -> str:
    """The generic one-line form of a non-region op."""
    head = ""
    if isinstance(op, ValueOp):
        head = f"%{op.result.name} = "
    binder = BINDER_FIELDS.get(type(op))
    if binder is not None:
        head = f"{getattr(op, binder)} = "
    text = f"{head}{op_name(type(op))}({_operands(op)})"
    attrs = printed_attrs(op)
    if attrs:
        text += " {" + ", ".join(f"{k} = {value_text(v)}" for k, v in attrs) + "}"
    if isinstance(op, ValueOp):
        text += f" : {type_text(op.result.type)}"
    return text


def _operands(op: Op) -> str:
    items = [getattr(op, name, None) for name in op.OPERANDS]
    while items and items[-1] is None:
        items.pop()
    return ", ".join(operand_text(v) for v in items)


def operand_text(v: Any) -> str:
    if isinstance(v, Value):
        return f"%{v.name}"
    if isinstance(v, Imm):
        text = to_text(v.expr)
        if v.dtype is not default_imm_dtype(v.expr):
            text += f" : {v.dtype.value}"
        return text
    if isinstance(v, tuple):
        return "[" + ", ".join(operand_text(x) for x in v) + "]"
    return str(v)


def _values(vs: tuple[Value, ...]) -> str:
    return ", ".join(f"%{v.name}" for v in vs)


def _for_head(op: For) -> str:
    head = f"{_values(op.loop_results)} = " if op.loop_results else ""
    head += f"for {op.var} in {to_text(op.start)} .. {to_text(op.stop)}"
    extra = printed_attrs(op)
    if op.kind is not LoopKind.SERIAL or extra:
        head += f" {op.kind.value}"
    if extra:
        head += "(" + ", ".join(f"{k} = {value_text(v)}" for k, v in extra) + ")"
    if op.iter_args:
        pairs = zip(op.iter_args, op.inits)
        head += " iter(" + ", ".join(f"%{a.name} = %{i.name}" for a, i in pairs) + ")"
    return head + " {"


# ----------------------------------------------------------------------------
# Values of attributes and types
# ----------------------------------------------------------------------------


def value_text(v: Any) -> str:
    """Attribute value text; ``fields.attr_fields`` types say how it parses back."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Enum):
        return str(v.value)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return float_text(v)
    if isinstance(v, str):
        return v if _IDENT.match(v) and v not in KEYWORDS else json.dumps(v)
    if isinstance(v, sympy.Basic):
        return _expr_text(v)
    if isinstance(v, Point):
        return _expr_text(v.at)
    if isinstance(v, Slice):
        text = f"{_expr_text(v.start)} +: {_expr_text(v.size)}"
        return text if v.stop is None else f"{text} < {_expr_text(v.stop)}"
    if isinstance(v, (TileType, QueueType, TensorType, ScalarType)):
        return type_text(v)
    if isinstance(v, tuple):
        return "[" + ", ".join(value_text(x) for x in v) + "]"
    return str(v)


def float_text(v: float) -> str:
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def _expr_text(e: sympy.Basic) -> str:
    try:
        return to_text(e)  # type: ignore[arg-type]
    except ValueError:
        return str(e)


def type_text(t: Any) -> str:
    if isinstance(t, TileType):
        text = f"{t.dtype.value}{_dims(t.shape)}"
        return text if t.space.value == "tile" else f"{text} @{t.space.value}"
    if isinstance(t, QueueType):
        return f"queue<{t.position}, {t.buffers}, {type_text(t.tile)}>"
    if isinstance(t, TensorType):
        return f"{t.dtype.value}{_dims(t.shape)}"
    if isinstance(t, ScalarType):
        return t.dtype.value
    return str(t)


def _dims(shape: tuple[Any, ...]) -> str:
    return "[" + ", ".join(_expr_text(d) for d in shape) + "]"


__all__ = ["print_kernel", "print_op", "op_text", "value_text", "type_text"]
