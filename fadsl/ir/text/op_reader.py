"""The generic op statement of the textual IR -> an op instance.

``name(operands) {attributes}`` is mapped onto a dataclass: the op name through
``op_name``, operands positionally onto ``OPERANDS``, attributes by field name and
converted by field type. Values are looked up in a stack of scopes, so a use of a
value that is undefined, or defined inside an already closed loop body, is reported
at the use with a did-you-mean hint.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fadsl.errors import Loc
from fadsl.ir.text import fields
from fadsl.ir.nodes import Imm, Op, Value, op_name
from fadsl.ir.text.tree_values import Mismatch, ValueReader, is_expr_tree


class OperandReader(ValueReader):
    """Value scopes plus the generic op form; subclassed by the statement reader."""

    def __init__(self, text: str, file: str) -> None:
        super().__init__(text, file)
        self.scopes: list[dict[str, Value]] = [{}]
        self.defined: dict[str, Loc] = {}

    # --- scopes ----------------------------------------------------------------
    @contextmanager
    def scope(self) -> Iterator[None]:
        self.scopes.append({})
        try:
            yield
        finally:
            self.scopes.pop()

    def define(self, value: Value, node: Any) -> Value:
        first = self.defined.get(value.name)
        if first is not None:
            raise self.error(
                f"`%{value.name}` is defined twice",
                node,
                "give every value its own name",
                notes=(f"first defined at {first}",),
            )
        self.defined[value.name] = self.loc(node)
        self.scopes[-1][value.name] = value
        return value

    def use(self, node: Any) -> Value:
        token = node.children[0] if hasattr(node, "children") else node
        name = str(token)[1:]
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.defined:
            raise self.error(
                f"`%{name}` is defined inside a loop body and not visible here",
                token,
                "carry it out of the loop: add it to iter(...) and yield it",
            )
        visible = [n for s in self.scopes for n in s]
        close = difflib.get_close_matches(name, visible, n=1)
        raise self.error(
            f"undefined value `%{name}`",
            token,
            (
                f"did you mean `%{close[0]}`?"
                if close
                else "define a value before using it"
            ),
        )

    # --- the generic op form ---------------------------------------------------
    def op_class(self, call: Any, stmt: Any) -> type[Op]:
        name = str(call.children[0])
        cls = fields.ops_by_name().get(name)
        if cls is None:
            close = difflib.get_close_matches(name, list(fields.ops_by_name()), n=1)
            raise self.error(
                f"unknown op `{name}`",
                call.children[0],
                (
                    f"did you mean `{close[0]}`?"
                    if close
                    else "op names are the snake_case IR class names, e.g. row_max"
                ),
                code="ir_unknown_op",
            )
        if cls in fields.REGION_OPS:
            raise self.error(
                f"`{name}` is a region, not an op call",
                call.children[0],
                "write `grid (b, h) in (B, N) { ... }` or " "`for j in 0 .. n { ... }`",
            )
        return cls

    def build(self, cls: type[Op], call: Any, stmt: Any, **fixed: Any) -> Op:
        _, operands, attrs = call.children
        kwargs = dict(fixed)
        kwargs.update(self.operands(cls, operands, call))
        attr_nodes = (
            [] if attrs is None else [a for a in attrs.children if a is not None]
        )
        kwargs.update(self.attributes(cls, attr_nodes, op_name(cls), call))
        return cls(loc=self.loc(stmt), **kwargs)

    def operands(self, cls: type[Op], tree: Any, call: Any) -> dict[str, Any]:
        nodes = [] if tree is None else list(tree.children)
        names = cls.OPERANDS
        if len(nodes) > len(names):
            listed = ", ".join(names) or "none"
            raise self.error(
                f"`{op_name(cls)}` takes {len(names)} operand(s) ({listed}), "
                f"got {len(nodes)}",
                nodes[len(names)],
            )
        out: dict[str, Any] = {}
        for i, name in enumerate(names):
            if i < len(nodes):
                out[name] = self.operand(fields.hints(cls)[name], nodes[i], name, cls)
            elif fields.operand_default(cls, name) is fields.MISSING:
                raise self.error(f"`{op_name(cls)}` needs operand `{name}`", call)
        return out

    def operand(self, hint: Any, node: Any, name: str, cls: type[Op]) -> Any:
        kind = getattr(node, "data", None)
        if kind == "value_ref":
            return self.use(node)
        if kind == "operand_list" and typing.get_origin(hint) is tuple:
            return tuple(self.use(c) for c in node.children if c is not None)
        if Imm in typing.get_args(hint) and (kind == "typed_imm" or is_expr_tree(node)):
            return self._imm(node)
        msg = f"operand `{name}` of `{op_name(cls)}` must be a value `%name`"
        hint_text = "did you forget the `%`?" if kind == "sym" else None
        raise self.error(msg, node, hint_text)

    def _imm(self, node: Any) -> Imm:
        if node.data == "typed_imm":
            expr_node, dtype_tok = node.children
            return Imm(self.expr(expr_node), self.dtype(dtype_tok))
        e = self.expr(node)
        return Imm(e, fields.default_imm_dtype(e))

    def attributes(
        self, cls: type[Op], nodes: list[Any], what: str, anchor: Any
    ) -> dict[str, Any]:
        known = {f.name: f for f in fields.attr_fields(cls)}
        out: dict[str, Any] = {}
        for node in nodes:
            key, value = node.children
            name = str(key)
            if name not in known:
                close = difflib.get_close_matches(name, list(known), n=1)
                raise self.error(
                    f"`{what}` has no attribute `{name}`",
                    key,
                    (
                        f"did you mean `{close[0]}`?"
                        if close
                        else "attributes: " + (", ".join(known) or "none")
                    ),
                )
            if name in out:
                raise self.error(f"attribute `{name}` is given twice", key)
            try:
                out[name] = self.convert(fields.hints(cls)[name], value)
            except Mismatch as exc:
                raise self.error(
                    f"attribute `{name}` of `{what}`: {exc}", value
                ) from None
        missing = [
            n
            for n, f in known.items()
            if n not in out and fields.default_of(f) is fields.MISSING
        ]
        if missing:
            example = ", ".join(f"{m} = ..." for m in missing)
            raise self.error(
                f"`{what}` needs attribute(s) {', '.join(missing)}",
                anchor,
                "add {" + example + "}",
            )
        return out
