"""Parse tree of a textual-IR kernel -> ir.Kernel, checking names and types as it goes.

Statements are read in order with a stack of value scopes (a loop body's values are
not visible after the loop). Each op's type rule (``infer``/``check``, the one the
frontend's Builder runs) is re-run on the parsed operands; a rule that fails or a
declared ``: type`` that differs from the rule's result is collected in ``errors``,
and reading goes on with the declared type so later statements are still checked.
Structural mistakes (unknown op, undefined value, wrong operand count) raise at once.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import sympy

from fadsl.errors import DTypeError, ErrorGroup, FadslError, IRParseError, ShapeError
from fadsl.ir.text import fields
from fadsl.ir.expr import Expr
from fadsl.ir.nodes import (
    For,
    Grid,
    Kernel,
    ScalarDef,
    LoopKind,
    Op,
    Param,
    ParamKind,
    Value,
    ValueOp,
    op_name,
)
from fadsl.ir.kernel_name import check_kernel_name
from fadsl.ir.text.op_reader import OperandReader
from fadsl.ir.text.printer import derived_shape_syms, type_text
from fadsl.ir.types import DType, ErrorType, MemSpace, ScalarType, TensorType, TileType
from fadsl.ir.visitor import uses


class TreeReader(OperandReader):
    """Reads one kernel tree; ``errors`` collects type errors to raise after verify."""

    def __init__(self, text: str, file: str) -> None:
        super().__init__(text, file)
        self.errors = ErrorGroup()
        self.ctx: Kernel | None = None

    # --- kernel header -------------------------------------------------------
    def kernel(self, tree: Any) -> Kernel:
        name, params_tree, symbols, consts, block = tree.children
        check_kernel_name(str(name), self.loc(name))
        params = self._params(params_tree)
        self.floats = frozenset(p.name for p in params if p.kind is ParamKind.SCALAR)
        shape_syms = derived_shape_syms(params)
        if symbols is not None:
            shape_syms = tuple(str(t) for t in symbols.children if t is not None)
        header = Kernel(
            name=str(name),
            params=params,
            shape_syms=shape_syms,
            consts=self._consts(consts),
            body=(),
            loc=self.loc(name),
        )
        self.ctx = header
        return replace(header, body=self.block(block, allow_yield=False)[0])

    def _params(self, tree: Any) -> tuple[Param, ...]:
        if tree is None:
            return ()
        params = tuple(self._param(p) for p in tree.children if p is not None)
        seen: set[str] = set()
        for p, node in zip(params, tree.children):
            if p.name in seen:
                raise self.error(f"parameter `{p.name}` is declared twice", node)
            seen.add(p.name)
        return params

    def _param(self, tree: Any) -> Param:
        kind_tree, name, ptype, default = tree.children
        kind = ParamKind(str(kind_tree.children[0]))
        dtype_tok, dims = ptype.children
        dtype = self.dtype(dtype_tok)
        if kind is ParamKind.SCALAR:
            if dims is not None:
                raise self.error(
                    f"scalar `{name}` has a shape",
                    dims,
                    "scalars are written `scalar scale: f32`",
                )
            value = None if default is None else self._default(default)
            return Param(
                name=str(name),
                kind=kind,
                type=ScalarType(dtype),
                default=value,
                loc=self.loc(tree),
            )
        if dims is None:
            raise self.error(
                f"tensor `{name}` needs a shape",
                ptype,
                f"e.g. `{kind.value} {name}: {dtype.value}[B, N, Sq, D]`",
            )
        if default is not None:
            raise self.error("only scalar parameters have defaults", default)
        return Param(
            name=str(name),
            kind=kind,
            type=TensorType(self.dims(dims), dtype),
            loc=self.loc(tree),
        )

    def _default(self, node: Any) -> Expr:
        saved, self.floats = self.floats, frozenset()  # as the frontend parses defaults
        try:
            return self.expr(node)
        finally:
            self.floats = saved

    def _consts(self, tree: Any) -> tuple[tuple[str, int | float | bool | str], ...]:
        if tree is None:
            return ()
        items = []
        for const in tree.children:
            if const is None:
                continue
            name, value = const.children
            items.append((str(name), self._const_value(value)))
        return tuple(items)

    def _const_value(self, node: Any) -> int | float | bool | str:
        kind = getattr(node, "data", None)
        if kind in ("true", "false"):
            return kind == "true"
        if kind == "string":
            return str(json.loads(str(node.children[0])))
        value = self.expr(node)
        if value.is_Integer:
            return int(value)
        if value.is_Number or value in (sympy.oo, -sympy.oo):
            return float(value)
        raise self.error("a constant is a number, true, false or a string", node)

    # --- blocks and statements ----------------------------------------------
    def block(self, tree: Any, allow_yield: bool) -> tuple[tuple[Op, ...], Any]:
        """The ops of a block, and its trailing yield statement (or None)."""
        stmts = list(tree.children)
        tail = None
        if allow_yield and stmts and stmts[-1].data == "yield_stmt":
            tail = stmts.pop()
        ops = []
        for stmt in stmts:
            if stmt.data == "yield_stmt":
                where = "last statement of a for body" if allow_yield else "for body"
                raise self.error(f"`yield` is only allowed as the {where}", stmt)
            ops.append(getattr(self, stmt.data)(stmt))
        return tuple(ops), tail

    def value_stmt(self, tree: Any) -> Op:
        results, call, types_tree = tree.children
        cls = self.op_class(call, tree)
        if not issubclass(cls, ValueOp):
            raise self.error(
                f"`{op_name(cls)}` produces no value",
                tree,
                f"write it without `%name =` and `: type`: `{op_name(cls)}(...)`",
            )
        names, typs = list(results.children), list(types_tree.children)
        if len(names) != 1 or len(typs) != 1:
            raise self.error(f"`{op_name(cls)}` has one result and one type", tree)
        declared = self.type(typs[0])
        result = self.define(Value(str(names[0])[1:], declared), names[0])
        op = self.build(cls, call, tree, result=result)
        assert isinstance(op, ValueOp)
        self._retype(op, typs[0])
        return op

    def bind_stmt(self, tree: Any) -> Op:
        name, call = tree.children
        cls = self.op_class(call, tree)
        binder = fields.BINDER_FIELDS.get(cls)
        if binder is None:
            raise self.error(
                f"`{name} = {op_name(cls)}(...)`: value names start with `%`",
                name,
                "write `%" + f"{name} = ...`; only load_scalar binds a plain symbol",
            )
        op = self.build(cls, call, tree, **{binder: str(name)})
        self._check(op)
        if self._float_source(op):
            self.floats = self.floats | {str(name)}  # later uses read it as a float
        return op

    def _float_source(self, op: Op) -> bool:
        """A load_scalar of an f32 tensor, or an f32 scalar_def, binds a float symbol."""
        if isinstance(op, ScalarDef):
            return op.dtype is DType.F32
        src = getattr(op, "src", None)
        params = self.ctx.params if self.ctx is not None else ()
        return any(
            p.name == src
            and isinstance(p.type, TensorType)
            and p.type.dtype is DType.F32
            for p in params
        )

    def effect_stmt(self, tree: Any) -> Op:
        (call,) = tree.children
        cls = self.op_class(call, tree)
        if issubclass(cls, ValueOp):
            raise self.error(
                f"`{op_name(cls)}` produces a value",
                tree,
                f"write `%name = {op_name(cls)}(...) : type`",
            )
        if cls in fields.BINDER_FIELDS:
            raise self.error(
                f"`{op_name(cls)}` binds a symbol",
                tree,
                f"write `name = {op_name(cls)}(...)`",
            )
        op = self.build(cls, call, tree)
        self._check(op)
        return op

    def grid_stmt(self, tree: Any) -> Op:
        vars_tree, extents_tree, block = tree.children
        names = tuple(str(t) for t in vars_tree.children)
        extents = tuple(
            self.int_expr(e, "a grid extent") for e in extents_tree.children
        )
        if len(names) != len(extents):
            raise self.error(
                f"grid binds {len(names)} variable(s) over "
                f"{len(extents)} extent(s)",
                tree,
            )
        with self.scope():
            body = self.block(block, allow_yield=False)[0]
        return Grid(vars=names, extents=extents, body=body, loc=self.loc(tree))

    def for_stmt(self, tree: Any) -> Op:
        results, var, start, stop, kind_tree, iter_tree, block = tree.children
        kind, extra = self._loop_kind(kind_tree)
        pairs = [] if iter_tree is None else list(iter_tree.children)
        inits = tuple(self.use(p.children[1]) for p in pairs)
        with self.scope():
            iter_args = tuple(
                self.define(Value(str(p.children[0])[1:], i.type), p)
                for p, i in zip(pairs, inits)
            )
            body, tail = self.block(block, allow_yield=True)
            yields = self._yields(tail, len(iter_args), tree)
        out = self._loop_results(results, iter_args, tree)
        return For(
            var=str(var),
            start=self.int_expr(start, "a loop bound"),
            stop=self.int_expr(stop, "a loop bound"),
            kind=kind,
            inits=inits,
            iter_args=iter_args,
            body=body,
            yields=yields,
            loop_results=out,
            loc=self.loc(tree),
            **extra,
        )

    def _loop_kind(self, tree: Any) -> tuple[LoopKind, dict[str, Any]]:
        if tree is None:
            return LoopKind.SERIAL, {}
        name, *attrs = [c for c in tree.children if c is not None]
        try:
            kind = LoopKind(str(name))
        except ValueError:
            kinds = ", ".join(k.value for k in LoopKind)
            raise self.error(
                f"unknown loop kind `{name}`", name, f"loop kinds: {kinds}"
            )
        return kind, self.attributes(For, attrs, "for", tree)

    def _yields(self, tail: Any, count: int, tree: Any) -> tuple[Value, ...]:
        values = (
            ()
            if tail is None
            else tuple(self.use(v) for v in tail.children if v is not None)
        )
        if len(values) != count:
            where = tail if tail is not None else tree
            raise self.error(
                f"the loop carries {count} value(s) but yields {len(values)}",
                where,
                "yield one value per iter(...) argument, in order",
            )
        return values

    def _loop_results(
        self, results: Any, iter_args: tuple[Value, ...], tree: Any
    ) -> tuple[Value, ...]:
        names = [] if results is None else list(results.children)
        if names and len(names) != len(iter_args):
            raise self.error(
                f"the loop has {len(names)} result(s) but carries "
                f"{len(iter_args)} value(s)",
                results,
            )
        return tuple(
            self.define(Value(str(n)[1:], a.type), n) for n, a in zip(names, iter_args)
        )

    # --- type rules -----------------------------------------------------------
    def _retype(self, op: ValueOp, type_tree: Any) -> None:
        """Run the op's rule; record an error if it fails or disagrees with the text."""
        declared = op.result.type
        try:
            inferred = op.infer(self.ctx)  # type: ignore[arg-type]
        except FadslError as err:
            self.errors.add(err)
            return
        except (AssertionError, AttributeError, TypeError):
            self.errors.add(_wrong_operand_kinds(op))
            return
        if isinstance(inferred, ErrorType) or _same_type(declared, inferred):
            return
        cls = ShapeError if _shape_differs(declared, inferred) else DTypeError
        self.errors.add(
            cls(
                f"`%{op.result.name}` is declared {type_text(declared)} but "
                f"`{op_name(type(op))}` gives {type_text(inferred)}",
                self.loc(type_tree),
                hint=f"write `: {type_text(inferred)}`, or fix the operands",
            )
        )

    def _check(self, op: Op) -> None:
        check = getattr(op, "check", None)
        if check is None:
            return
        try:
            check(self.ctx)
        except FadslError as err:
            self.errors.add(err)


def _wrong_operand_kinds(op: Op) -> IRParseError:
    """A rule that crashed on its operands: they are of a kind it never expects."""
    kinds = ", ".join(f"%{v.name} : {type_text(v.type)}" for v in uses(op))
    return IRParseError(
        f"`{op_name(type(op))}` does not take operands of these kinds: {kinds}",
        op.loc,
        hint="queue ops take a queue value first (from queue_alloc)",
    )


def _same_type(declared: Any, inferred: Any) -> bool:
    """Equal up to memory space: rules give unplaced tiles, placed IR has @UB etc."""
    if isinstance(declared, TileType) and isinstance(inferred, TileType):
        if inferred.space is not MemSpace.TILE and inferred.space is not declared.space:
            return False
        return declared.dtype is inferred.dtype and not _shape_differs(
            declared, inferred
        )
    return bool(declared == inferred)


def _shape_differs(a: Any, b: Any) -> bool:
    sa, sb = getattr(a, "shape", None), getattr(b, "shape", None)
    if sa is None or sb is None or len(sa) != len(sb):
        return sa != sb
    return any(x != y and sympy.expand(x - y) != 0 for x, y in zip(sa, sb))
