"""Walking and rewriting IR: IRVisitor, IRTransformer and value-use helpers.

``IRVisitor.visit(op)`` dispatches to ``visit_<ClassName>`` (pycparser style) and
falls back to ``generic_visit``, which descends into region bodies. ``IRTransformer``
rebuilds with ``dataclasses.replace`` and keeps identity: a method that returns its
argument means "unchanged", and a parent is rebuilt only when a child changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from fadsl.ir.nodes import For, Kernel, Op, Value

ValueMap = Callable[[Value], Value]


class IRVisitor:
    """Read-only walk; override ``visit_<ClassName>`` for the ops you care about."""

    def visit_kernel(self, kernel: Kernel) -> None:
        self.visit_block(kernel.body)

    def visit_block(self, ops: tuple[Op, ...]) -> None:
        for op in ops:
            self.visit(op)

    def visit(self, op: Op) -> Any:
        method = getattr(self, "visit_" + type(op).__name__, self.generic_visit)
        return method(op)

    def generic_visit(self, op: Op) -> Any:
        body = getattr(op, "body", None)
        if body is not None:
            self.visit_block(body)
        return None


class IRTransformer:
    """Rewrite; ``visit_<ClassName>`` returns the same op, a new op, or a tuple of ops.

    A tuple replaces the op by zero or more ops (deletion, expansion). Unchanged
    blocks, ops and kernels are returned as the very same objects.
    """

    def transform(self, kernel: Kernel) -> Kernel:
        body = self.visit_block(kernel.body)
        return kernel if body is kernel.body else replace(kernel, body=body)

    def visit_block(self, ops: tuple[Op, ...]) -> tuple[Op, ...]:
        out: list[Op] = []
        changed = False
        for op in ops:
            new = self.visit(op)
            if new is op:
                out.append(op)
                continue
            changed = True
            out.extend(new if isinstance(new, tuple) else (new,))
        return tuple(out) if changed else ops

    def visit(self, op: Op) -> Op | tuple[Op, ...]:
        method = getattr(self, "visit_" + type(op).__name__, self.generic_visit)
        return method(op)

    def generic_visit(self, op: Op) -> Op | tuple[Op, ...]:
        body = getattr(op, "body", None)
        if body is None:
            return op
        new_body = self.visit_block(body)
        if new_body is body:
            return op
        return replace(op, body=new_body)  # type: ignore[type-var]


def use_fields(op: Op) -> tuple[str, ...]:
    """Fields of ``op`` that hold used values: its operands, plus a loop's yields."""
    if isinstance(op, For):
        return op.OPERANDS + ("yields",)
    return op.OPERANDS


def uses(op: Op) -> tuple[Value, ...]:
    """Every value ``op`` reads (not counting ops nested in its body)."""
    out: list[Value] = []
    for name in use_fields(op):
        out.extend(_values_in(getattr(op, name)))
    return tuple(out)


def _values_in(v: object) -> tuple[Value, ...]:
    if isinstance(v, Value):
        return (v,)
    if isinstance(v, tuple):
        return tuple(x for x in v if isinstance(x, Value))
    return ()


def replace_uses(op: Op, fn: ValueMap) -> Op:
    """``op`` with each used value ``v`` replaced by ``fn(v)`` (same object if none)."""
    changes: dict[str, Any] = {}
    for name in use_fields(op):
        old = getattr(op, name)
        new = _map(old, fn)
        if new is not old:
            changes[name] = new
    return replace(op, **changes) if changes else op


def _map(v: Any, fn: ValueMap) -> Any:
    if isinstance(v, Value):
        new = fn(v)
        return v if new == v else new
    if isinstance(v, tuple):
        items = tuple(_map(x, fn) for x in v)
        return v if all(a is b for a, b in zip(items, v)) else items
    return v
