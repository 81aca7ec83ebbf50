"""Walks a kernel function's Python AST and builds IR through ``ir.Builder``.

Statements: assignment (names, tuple unpacking, ``param[...] = tile`` as a store),
augmented assignment, expression statements, ``for`` over ``fd.grid`` / ``range`` /
``fd.pipelined``, ``if`` on compile-time values, ``assert`` on compile-time values,
``pass``. Loop-carried values are names rebound inside a loop body. Python helper
functions called from a kernel are traced with Tile proxies.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import textwrap
from collections.abc import Mapping
from typing import Any

import sympy

from fadsl.errors import DTypeError, FadslError, KernelSyntaxError, Loc, ShapeError
from fadsl.frontend import ops, tile_ops
from fadsl.frontend.kernel import KernelDef
from fadsl.frontend.source import boundary, node_loc
from fadsl.frontend.params import ParamBinder
from fadsl.frontend.statements import StatementWalker
from fadsl.ir import nodes as ir
from fadsl.ir.atomic_rules import atomic_conflicts
from fadsl.ir.builder import Builder
from fadsl.ir.types import DType

from fadsl.frontend.python_ops import (  # noqa: F401
    BINOPS,
    CMPOPS,
    SAFE_BUILTINS,
    bad_arguments,
    binds_arguments,
    const_value,
    describe,
    describe_value,
    python_eq,
    python_floordiv,
    helper_error,
    is_fadsl_op,
    is_plain_const,
    python_mod,
    python_ne,
    plain_params,
    qualified_name,
    type_text,
    ops_grid,
    ops_pipelined,
)


class LoopLocal:
    """Marks a name first bound inside a loop body, so later uses get a clear error."""

    def __init__(self, name: str, loc: Loc) -> None:
        self.name = name
        self.loc = loc


class Walker(ParamBinder, StatementWalker):
    """Evaluates expressions; statements live in StatementWalker."""

    def __init__(
        self, kdef: KernelDef, consts: Mapping[str, Any], dtype: DType
    ) -> None:
        self.kdef = kdef
        self.consts = dict(consts)
        self.dtype = dtype
        self.file = kdef.fn.__code__.co_filename
        self.globals = kdef.fn.__globals__
        self.env: dict[str, Any] = {}
        self.params: list[ir.Param] = []
        self.shape_syms: list[str] = []
        self.const_syms: dict[sympy.Symbol, Any] = {}
        self.builder = Builder(self)
        self.tracer = ops.Tracer(self.builder, kdef.loc)
        self.line_offset = 0
        self.col_offset = 0
        self.grid_seen = False
        self.grids_seen = 0
        self.loop_depth = 0

    # --- TypeContext -------------------------------------------------------
    def param(self, name: str, loc: Loc) -> ir.Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KernelSyntaxError(
            f"kernel `{self.kdef.name}` has no parameter `{name}`", loc
        )

    # --- entry -------------------------------------------------------------
    def run(self) -> ir.Kernel:
        fdef = self._parse_function()
        self._bind_params(fdef)
        token = ops.activate(self.tracer)
        try:
            self.block(fdef.body, top=True)
        finally:
            ops.deactivate(token)
        if not self.grid_seen:
            raise KernelSyntaxError(
                f"kernel `{self.kdef.name}` has no `for ... in fd.grid(...)` loop",
                self.kdef.loc,
                hint="wrap the body in `for b, h, i in fd.grid(B, N, fd.cdiv(Sq, block_q)):`",
            )
        consts = tuple(
            sorted(
                (k, const_value(v)) for k, v in self.consts.items() if is_plain_const(v)
            )
        )
        body = self.builder.finish()
        for message, loc in atomic_conflicts(body):
            raise KernelSyntaxError(
                message, loc, hint="write the output with fd.atomic_add only"
            )
        return ir.Kernel(
            name=self.kdef.name,
            params=tuple(self.params),
            shape_syms=tuple(self.shape_syms),
            consts=consts,
            body=body,
            loc=self.kdef.loc,
        )

    def _parse_function(self) -> ast.FunctionDef:
        try:
            lines, start = inspect.getsourcelines(self.kdef.fn)
        except (OSError, TypeError):
            raise KernelSyntaxError(
                f"cannot read the source of kernel `{self.kdef.name}`",
                self.kdef.loc,
                hint="kernels must be defined in a .py file, not typed at a prompt",
            ) from None
        raw = "".join(lines)
        text = textwrap.dedent(raw)
        self.col_offset = len(raw) - len(raw.lstrip()) if raw[:1].isspace() else 0
        self.line_offset = start - 1
        tree = ast.parse(text)
        fdef = tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            raise KernelSyntaxError("@fd.kernel decorates a function", self.kdef.loc)
        return fdef

    def loc(self, node: ast.AST) -> Loc:
        return node_loc(node, self.file, self.line_offset, self.col_offset)

    # --- parameters --------------------------------------------------------
    def concrete(self, value: Any, node: ast.AST, what: str) -> Any:
        """A Python value for ``value``, substituting tile constants; error if symbolic."""
        if isinstance(value, ops.Tile):
            raise KernelSyntaxError(
                f"{what} must be known at compile time, but `{ast.unparse(node)}` is a "
                f"tile ({value.type}) whose values exist only on the device",
                self.loc(node),
                hint="use fd.where(cond, a, b) for per-element choices",
                code="branch_on_tile",
            )
        if isinstance(value, sympy.Basic):
            sub = value.subs(self.const_syms) if self.const_syms else value
            if sub.free_symbols:
                names = ", ".join(sorted(s.name for s in sub.free_symbols))
                raise KernelSyntaxError(
                    f"{what} must be known at compile time, but depends on {names}",
                    self.loc(node),
                    hint="branch on tile constants (--set) only; shapes and loop "
                    "variables are runtime values",
                )
            if sub in (sympy.true, sympy.false):
                return bool(sub)
            return int(sub) if sub.is_Integer else float(sub)
        return value

    # --- expressions -------------------------------------------------------
    def expr(self, node: ast.AST) -> Any:
        prev = self.tracer.loc
        self.tracer.loc = self.loc(node)
        try:
            method = getattr(self, "expr_" + type(node).__name__, None)
            if method is None:
                raise KernelSyntaxError(
                    f"{describe(node)} is not supported inside a kernel",
                    self.loc(node),
                    hint="kernels use assignments, fd ops, arithmetic, `for` over "
                    "fd.grid/range/fd.pipelined and `if` on constants",
                    code="unsupported_construct",
                )
            return method(node)
        finally:
            self.tracer.loc = prev

    def expr_Constant(self, node: ast.Constant) -> Any:
        return self._fits(node.value, node)

    def _fits(self, value: Any, node: ast.AST) -> Any:
        """``value``, unless it is an integer the generated C++ cannot hold."""
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and (abs(value) >= 2**63)
        ):
            raise KernelSyntaxError(
                f"the integer `{ast.unparse(node)}` does not fit in 64 bits",
                self.loc(node),
                hint="sizes, indices and constants are 64-bit integers",
            )
        return value

    def expr_Name(self, node: ast.Name) -> Any:
        name = node.id
        if name in self.env:
            value = self.env[name]
            if isinstance(value, LoopLocal):
                raise KernelSyntaxError(
                    f"`{name}` is defined inside a loop body and used after the loop",
                    self.loc(node),
                    notes=(f"defined at {value.loc}",),
                    hint=f"initialise `{name}` before the loop so it becomes a "
                    "loop-carried value",
                    code="loop_local_used_after",
                )
            return value
        if name in self.globals:
            return self.globals[name]
        if name in SAFE_BUILTINS:
            return SAFE_BUILTINS[name]
        known = list(self.env) + [k for k in self.globals if not k.startswith("__")]
        close = difflib.get_close_matches(name, known, n=1)
        raise KernelSyntaxError(
            f"undefined name `{name}`",
            self.loc(node),
            hint=(
                f"did you mean `{close[0]}`?"
                if close
                else "define it before use, or declare it as a kernel parameter"
            ),
            code="undefined_name",
        )

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            owner = getattr(base, "__name__", type(base).__name__)
            close = difflib.get_close_matches(node.attr, dir(base), n=1)
            raise KernelSyntaxError(
                f"`{owner}` has no attribute `{node.attr}`",
                self.loc(node),
                hint=f"did you mean `{close[0]}`?" if close else None,
                code="unknown_op",
            ) from None

    def expr_Tuple(self, node: ast.Tuple) -> tuple[Any, ...]:
        return tuple(self.expr(e) for e in node.elts)

    expr_List = expr_Tuple

    def expr_Slice(self, node: ast.Slice) -> slice:
        def part(n: ast.AST | None) -> Any:
            return None if n is None else self.expr(n)

        return slice(part(node.lower), part(node.upper), part(node.step))

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        key = self.expr(node.slice)
        if isinstance(base, (tuple, list)):
            return base[self.concrete(key, node.slice, "a tuple index")]
        return self._apply(lambda: base[key], node)

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        a, b = self.expr(node.left), self.expr(node.right)
        fn = BINOPS.get(type(node.op))
        if fn is None:
            raise KernelSyntaxError(
                f"operator {describe(node.op)} is not supported", self.loc(node)
            )
        return self._operands_named(
            lambda: self._apply(lambda: fn(a, b), node), (node.left, a), (node.right, b)
        )

    def _operands_named(self, thunk: Any, *operands: tuple[ast.AST, Any]) -> Any:
        """Run ``thunk``; a type error gets notes naming each operand as the user wrote it."""
        try:
            return thunk()
        except (DTypeError, ShapeError) as err:
            notes = tuple(f"`{ast.unparse(n)}` is {type_text(v)}" for n, v in operands)
            raise type(err)(
                err.message, err.loc, err.hint, notes + err.notes, code=err.code
            ) from None

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        x = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return not self.concrete(x, node, "the operand of `not`")
        op = {ast.USub: lambda v: -v, ast.UAdd: lambda v: +v, ast.Invert: lambda v: ~v}
        return self._apply(lambda: op[type(node.op)](x), node)

    def expr_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise KernelSyntaxError(
                "chained comparisons are not supported",
                self.loc(node),
                hint="write (a < b) & (b < c) for masks",
            )
        a, b = self.expr(node.left), self.expr(node.comparators[0])
        fn = CMPOPS.get(type(node.ops[0]))
        if fn is None:
            raise KernelSyntaxError(
                f"{describe(node.ops[0])} is not supported", self.loc(node)
            )
        return self._operands_named(
            lambda: self._apply(lambda: fn(a, b), node),
            (node.left, a),
            (node.comparators[0], b),
        )

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        values = [self.expr(v) for v in node.values]
        if any(isinstance(v, ops.Tile) for v in values):
            raise KernelSyntaxError(
                "`and`/`or` need Python truth values; these operands are tiles",
                self.loc(node),
                hint="combine masks with & and |, e.g. (a < b) & c",
            )
        flags = [self.concrete(v, node, "a boolean operand") for v in values]
        return all(flags) if isinstance(node.op, ast.And) else any(flags)

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        test = self.concrete(self.expr(node.test), node.test, "the condition")
        return self.expr(node.body if test else node.orelse)

    def expr_Call(self, node: ast.Call) -> Any:
        fn = self.expr(node.func)
        args = [self.expr(a) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise KernelSyntaxError("**kwargs are not supported", self.loc(kw))
            kwargs[kw.arg] = self.expr(kw.value)
        if fn in (ops_grid(), ops_pipelined()) or fn is range:
            raise KernelSyntaxError(
                f"{getattr(fn, '__name__', fn)}(...) is only valid as the iterable "
                "of a `for` statement",
                self.loc(node),
            )
        return self._call(fn, args, kwargs, node)

    def _call(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], node: ast.AST
    ) -> Any:
        if not callable(fn):
            raise KernelSyntaxError(
                f"{describe_value(fn)} is not callable", self.loc(node)
            )
        if is_fadsl_op(fn) and not binds_arguments(fn, args, kwargs):
            raise bad_arguments(fn, args, kwargs, self.loc(node))
        if is_fadsl_op(fn) or fn in SAFE_BUILTINS.values():
            return self._apply(lambda: fn(*args, **kwargs), node)
        if inspect.isfunction(fn):
            return self._call_user(fn, args, kwargs, node)
        name = qualified_name(fn)
        same = getattr(tile_ops, name.rsplit(".", 1)[-1], None)
        raise KernelSyntaxError(
            f"calling `{name}` is not supported inside a kernel",
            self.loc(node),
            hint=(f"use fd.{same.__name__}: " if callable(same) else "")
            + "tiles exist only on the device, so kernels call fd ops and plain Python "
            "helper functions, not libraries such as math or numpy",
            code="python_library_call",
        )

    @boundary
    def _call_user(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], node: ast.AST
    ) -> Any:
        try:
            return fn(*args, **kwargs)
        except FadslError:
            raise
        except Exception as exc:  # the helper's own Python failed on tile proxies
            raise helper_error(fn, exc, self.loc(node)) from None

    def _apply(self, thunk: Any, node: ast.AST) -> Any:
        """Run an op; turn Python errors from bad operand kinds into kernel errors."""
        try:
            return self._fits(thunk(), node)
        except FadslError:
            raise
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
            raise KernelSyntaxError(f"{exc}", self.loc(node)) from None


@boundary
def build_kernel(kdef: KernelDef, consts: Mapping[str, Any], dtype: DType) -> ir.Kernel:
    """Read ``kdef`` with constants ``consts`` and element dtype ``dtype``."""
    return Walker(kdef, consts, dtype).run()


__all__ = ["build_kernel", "Walker", "LoopLocal", "ShapeError"]
