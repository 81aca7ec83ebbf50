"""Parse-tree leaves -> IR values: expressions, types and attribute values.

Expressions are built from the tree with sympy operations (nothing is evaluated from
text). Attribute values are converted by the dataclass field's type hint, so a new
op with fields of known kinds (Expr, int, bool, str, enums, TileType, tuples,
optionals, Point/Slice indices) needs no parser change.
"""

from __future__ import annotations

import difflib
import json
import types
import typing
from enum import Enum
from typing import Any

import sympy

from fadsl.errors import IRParseError, Loc
from fadsl.ir.expr import CeilDiv, Expr, FloorDiv, as_expr, fsym, is_int_expr, isym
from fadsl.ir.expr_parse import ExprSyntaxError, check_defined, checked_int, checked_pow
from fadsl.ir.nodes import Point, Slice
from fadsl.ir.types import DType, MemSpace, QueueType, TileType

_EXPR_RULES = frozenset(
    {"int", "float", "sym", "add", "sub", "mul", "div", "neg", "pow", "call"}
)
_CALLS: dict[str, tuple[int | None, Any]] = {
    "cdiv": (2, CeilDiv),
    "floordiv": (2, FloorDiv),
    "mod": (2, sympy.Mod),
    "min": (None, sympy.Min),
    "max": (None, sympy.Max),
    "sqrt": (1, sympy.sqrt),
}


class Mismatch(Exception):
    """An attribute value of the wrong kind; the caller adds the location."""


def is_expr_tree(node: Any) -> bool:
    return getattr(node, "data", None) in _EXPR_RULES


class ValueReader:
    """Converts parse-tree leaves; knows the text (for locations) and float names."""

    def __init__(self, text: str, file: str) -> None:
        self.file = file
        self.lines = text.splitlines()
        self.floats: frozenset[str] = frozenset()

    # --- locations ----------------------------------------------------------
    def loc(self, node: Any) -> Loc:
        """Loc of a tree (its meta) or token; multi-line spans run to the line's end."""
        meta = getattr(node, "meta", node)
        if getattr(meta, "empty", False) or getattr(meta, "line", None) is None:
            return Loc(self.file, 1, 0, None, text=self._line(1))
        line, col = meta.line, meta.column - 1
        src = self._line(line)
        end = meta.end_column - 1 if meta.end_line == line else len(src)
        return Loc(self.file, line, col, max(end, col + 1), text=src)

    def _line(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""

    def error(
        self,
        message: str,
        node: Any,
        hint: str | None = None,
        notes: tuple[str, ...] = (),
        code: str | None = None,
    ) -> IRParseError:
        return IRParseError(message, self.loc(node), hint=hint, notes=notes, code=code)

    # --- expressions --------------------------------------------------------
    def expr(self, node: Any) -> Expr:
        kind = getattr(node, "data", None)
        if kind == "expr_only":
            return self.expr(node.children[0])
        if kind not in _EXPR_RULES:
            raise Mismatch("expected an expression")
        try:
            value = getattr(self, "_expr_" + kind)(node)
            return check_defined(value, self._span_text(node))
        except ExprSyntaxError as exc:
            raise self.error(str(exc), node) from None

    def _span_text(self, node: Any) -> str:
        loc = self.loc(node)
        return loc.source_line()[loc.col : loc.end_col].strip() or "this expression"

    def _expr_int(self, node: Any) -> Expr:
        return checked_int(str(node.children[0]))

    def _expr_float(self, node: Any) -> Expr:
        return as_expr(float(node.children[0]))

    def _expr_sym(self, node: Any) -> Expr:
        name = str(node.children[0])
        if name == "inf":
            return sympy.oo
        return fsym(name) if name in self.floats else isym(name)

    def _expr_add(self, node: Any) -> Expr:
        return sympy.Add(*self._terms(node, []))

    _expr_sub = _expr_add

    def _expr_mul(self, node: Any) -> Expr:
        return sympy.Mul(*self._factors(node, [], False))

    _expr_div = _expr_mul

    def _terms(self, node: Any, out: list[Expr]) -> list[Expr]:
        """A chain of + and - as one n-ary Add, the way sympy builds it from Python."""
        kind = getattr(node, "data", None)
        if kind not in ("add", "sub"):
            out.append(self.expr(node))
            return out
        left, right = node.children
        self._terms(left, out)
        out.append(self.expr(right) if kind == "add" else -self.expr(right))
        return out

    def _factors(self, node: Any, out: list[Expr], inverse: bool) -> list[Expr]:
        """A chain of * and / as one n-ary Mul: a 2-factor sympy Mul would distribute
        a number over a sum (-3*(a + 1) -> -3*a - 3) where the printed Mul did not."""
        kind = getattr(node, "data", None)
        if kind not in ("mul", "div"):
            e = self.expr(node)
            out.append(e**-1 if inverse else e)
            return out
        left, right = node.children
        self._factors(left, out, inverse)
        self._factors(right, out, inverse != (kind == "div"))
        return out

    def _expr_neg(self, node: Any) -> Expr:
        return -self.expr(node.children[0])

    def _expr_pow(self, node: Any) -> Expr:
        return checked_pow(self.expr(node.children[0]), self.expr(node.children[1]))

    def _expr_call(self, node: Any) -> Expr:
        name, *args = node.children
        spec = _CALLS.get(str(name))
        if spec is None:
            close = difflib.get_close_matches(str(name), list(_CALLS), n=1)
            hint = (
                f"did you mean `{close[0]}`?"
                if close
                else "functions: " + ", ".join(_CALLS)
            )
            raise self.error(f"unknown function `{name}` in an expression", node, hint)
        arity, fn = spec
        if arity is not None and len(args) != arity:
            raise self.error(
                f"`{name}` takes {arity} argument(s), got {len(args)}", node
            )
        values = [self.expr(a) for a in args]
        try:
            return fn(*values)  # type: ignore[no-any-return]
        except (ZeroDivisionError, ValueError, TypeError) as exc:
            raise self.error(f"`{name}` cannot take these arguments: {exc}", node)

    # --- types --------------------------------------------------------------
    def dtype(self, token: Any) -> DType:
        try:
            return DType(str(token))
        except ValueError:
            pass
        names = [d.value for d in DType]
        try:
            hint = f"write `{DType.parse(str(token)).value}`"
        except ValueError:
            close = difflib.get_close_matches(str(token), names, n=1)
            hint = (
                f"did you mean `{close[0]}`?"
                if close
                else "dtypes: " + ", ".join(names)
            )
        raise self.error(f"unknown dtype `{token}`", token, hint)

    def dims(self, node: Any) -> tuple[Expr, ...]:
        return tuple(self.int_expr(c) for c in node.children if c is not None)

    def int_expr(self, node: Any, what: str = "a dimension") -> Expr:
        """A size, bound or index: an integer expression (no floats, fractions or inf)."""
        e = self.expr(node)
        if not is_int_expr(e) or e.has(sympy.oo, -sympy.oo):
            raise self.error(
                f"{what} is an integer expression, not `{self._span_text(node)}`",
                node,
                "use shape symbols, constants, loop variables and integers, "
                "e.g. cdiv(Sq, block_q)",
            )
        return e

    def tile_type(self, node: Any) -> TileType:
        dtype_tok, dims, space_tok = node.children
        space = MemSpace.TILE if space_tok is None else self._space(space_tok)
        return TileType(self.dims(dims), self.dtype(dtype_tok), space)

    def _space(self, token: Any) -> MemSpace:
        try:
            return MemSpace(str(token))
        except ValueError:
            names = ", ".join(m.value for m in MemSpace)
            raise self.error(
                f"unknown memory space `@{token}`", token, f"spaces: {names}"
            )

    def queue_type(self, node: Any) -> QueueType:
        position, buffers, tile = node.children
        return QueueType(self.tile_type(tile), int(buffers), str(position))

    def type(self, node: Any) -> TileType | QueueType:
        if node.data == "queue_type":
            return self.queue_type(node)
        return self.tile_type(node)

    # --- attribute values by type hint --------------------------------------
    def convert(self, hint: Any, node: Any) -> Any:
        """The value of ``node`` for a field annotated ``hint``; Mismatch if wrong."""
        origin = typing.get_origin(hint)
        if origin in (typing.Union, types.UnionType):
            return self._union(typing.get_args(hint), node)
        if origin is tuple:
            return self._tuple(typing.get_args(hint)[0], node)
        kind = getattr(node, "data", None)
        simple = _SIMPLE.get(hint)
        if simple is not None:
            return simple(self, node, kind)
        if isinstance(hint, type) and issubclass(hint, Enum):
            return _enum(hint, _name(node, kind))
        if isinstance(hint, type) and issubclass(hint, sympy.Basic):
            return self.expr(node)
        raise Mismatch(f"attributes of type {hint} cannot be written in the IR text")

    def _union(self, options: tuple[Any, ...], node: Any) -> Any:
        if getattr(node, "data", None) == "none" and type(None) in options:
            return None
        problems = []
        for option in options:
            if option is type(None):
                continue
            try:
                return self.convert(option, node)
            except Mismatch as exc:
                problems.append(str(exc))
        raise Mismatch(" or ".join(dict.fromkeys(problems)))

    def _tuple(self, item: Any, node: Any) -> tuple[Any, ...]:
        if getattr(node, "data", None) != "list":
            raise Mismatch("expected a list `[...]`")
        return tuple(self.convert(item, c) for c in node.children if c is not None)


def _name(node: Any, kind: str | None) -> str:
    if kind == "sym":
        return str(node.children[0])
    if kind == "string":
        return str(json.loads(str(node.children[0])))
    raise Mismatch("expected a name")


def _enum(cls: type[Enum], name: str) -> Enum:
    try:
        return cls(name)
    except ValueError:
        names = ", ".join(str(m.value) for m in cls)  # type: ignore[attr-defined]
        raise Mismatch(f"`{name}` is not one of {names}") from None


def _bool(reader: ValueReader, node: Any, kind: str | None) -> bool:
    if kind in ("true", "false"):
        return kind == "true"
    raise Mismatch("expected true or false")


def _int(reader: ValueReader, node: Any, kind: str | None) -> int:
    value = reader.expr(node) if is_expr_tree(node) else None
    if value is None or not value.is_Integer:
        raise Mismatch("expected an integer")
    return int(value)


def _float(reader: ValueReader, node: Any, kind: str | None) -> float:
    value = reader.expr(node) if is_expr_tree(node) else None
    if value is None or not (value.is_Number or value in (sympy.oo, -sympy.oo)):
        raise Mismatch("expected a number")
    return float(value)


def _str(reader: ValueReader, node: Any, kind: str | None) -> str:
    return _name(node, kind)


def _point(reader: ValueReader, node: Any, kind: str | None) -> Point:
    if not is_expr_tree(node):
        raise Mismatch("expected an index expression")
    return Point(reader.int_expr(node, "an index"))


def _slice(reader: ValueReader, node: Any, kind: str | None) -> Slice:
    if kind == "bounded_slice":
        start, size, stop = node.children
        return Slice(
            reader.int_expr(start, "a block start"),
            reader.int_expr(size, "a block size"),
            reader.int_expr(stop, "a block bound"),
        )
    if kind != "slice":
        raise Mismatch("expected a block `start +: size` or `start +: size < stop`")
    start, size = node.children
    return Slice(
        reader.int_expr(start, "a block start"), reader.int_expr(size, "a block size")
    )


def _tile(reader: ValueReader, node: Any, kind: str | None) -> TileType:
    if kind != "tile_type":
        raise Mismatch("expected a tile type such as f16[128, 64] @UB")
    return reader.tile_type(node)


def _queue(reader: ValueReader, node: Any, kind: str | None) -> QueueType:
    if kind != "queue_type":
        raise Mismatch("expected a queue type such as queue<VECIN, 2, f16[128] @UB>")
    return reader.queue_type(node)


_SIMPLE: dict[Any, Any] = {
    bool: _bool,
    int: _int,
    float: _float,
    str: _str,
    Point: _point,
    Slice: _slice,
    TileType: _tile,
    QueueType: _queue,
}
