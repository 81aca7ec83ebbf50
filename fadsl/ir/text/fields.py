"""How an op's dataclass fields map onto the generic textual form.

The printer and the parser share this view of an op class: which fields are operands
(``OPERANDS``), which one binds a symbol (``LoadScalar.name``), which are attributes
(every other field except ``loc``, ``result`` and region bodies), their resolved type
hints and their defaults. Nothing here is specific to one op.
"""

from __future__ import annotations

import dataclasses
import typing
from functools import lru_cache
from typing import Any

from fadsl.ir.expr import Expr, is_int_expr
from fadsl.ir.nodes import (
    For,
    Grid,
    LoadScalar,
    Op,
    ScalarDef,
    all_op_classes,
    op_name,
)
from fadsl.ir.types import DType

_NOT_ATTRS = frozenset({"loc", "result", "body"})
_FOR_SYNTAX = frozenset(
    {"var", "start", "stop", "kind", "inits", "iter_args", "yields", "loop_results"}
)

BINDER_FIELDS: dict[type[Op], str] = {LoadScalar: "name", ScalarDef: "name"}
"""Ops that bind a plain symbol (no ``%``): ``q0 = load_scalar() {...}``."""

REGION_OPS: tuple[type[Op], ...] = (Grid, For)
"""Ops with their own syntax (a block of statements) instead of the generic form."""

MISSING = dataclasses.MISSING


@lru_cache(maxsize=None)
def ops_by_name() -> dict[str, type[Op]]:
    """Textual op name -> class, for every concrete op class."""
    return {op_name(cls): cls for cls in all_op_classes()}


@lru_cache(maxsize=None)
def hints(cls: type) -> dict[str, Any]:
    """Resolved field type hints of a dataclass (``Expr | None``, ``Shape``, ...)."""
    return typing.get_type_hints(cls)


@lru_cache(maxsize=None)
def attr_fields(cls: type[Op]) -> tuple[dataclasses.Field[Any], ...]:
    """The fields printed as ``{name = value}`` attributes, in declaration order."""
    skip = set(_NOT_ATTRS) | set(cls.OPERANDS)
    binder = BINDER_FIELDS.get(cls)
    if binder is not None:
        skip.add(binder)
    if issubclass(cls, For):
        skip |= _FOR_SYNTAX
    return tuple(f for f in dataclasses.fields(cls) if f.name not in skip)


def default_of(f: dataclasses.Field[Any]) -> Any:
    """The field's default value, or MISSING when the field is required."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def is_default(f: dataclasses.Field[Any], value: Any) -> bool:
    default = default_of(f)
    if default is MISSING:
        return False
    return type(default) is type(value) and bool(default == value)


def printed_attrs(op: Op) -> list[tuple[str, Any]]:
    """(name, value) of the attributes of ``op`` that differ from their defaults."""
    out = []
    for f in attr_fields(type(op)):
        value = getattr(op, f.name)
        if not is_default(f, value):
            out.append((f.name, value))
    return out


def operand_default(cls: type[Op], name: str) -> Any:
    """Default of operand field ``name`` (MISSING if the operand is required)."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            return default_of(f)
    raise KeyError(name)


def default_imm_dtype(e: Expr) -> DType:
    """The dtype the frontend gives a scalar operand: i32 if integral, else f32."""
    return DType.I32 if is_int_expr(e) else DType.F32
