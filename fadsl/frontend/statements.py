"""Kernel statements: assignments, stores, loops with loop-carried values, compile-time if."""

from __future__ import annotations

import ast
import copy
from typing import TYPE_CHECKING, Any

import sympy

from fadsl.errors import DTypeError, KernelSyntaxError, Loc, ScheduleError, ShapeError
from fadsl.frontend import loops, ops
from fadsl.frontend.post_phase import after_grid_ok, check_grid_place, refuse_post_dots
from fadsl.ir import nodes as ir
from fadsl.ir.expr import as_expr, isym
from fadsl.ir.types import TileType

if TYPE_CHECKING:
    from fadsl.frontend.parser import Walker


class StatementWalker:
    """Mixin of Walker: one ``stmt_<Node>`` method per supported statement."""

    def block(self: Walker, body: list[ast.stmt], top: bool = False) -> None:
        for i, node in enumerate(body):
            if top and i == 0 and _is_docstring(node):
                continue
            if top and self.grid_seen and not after_grid_ok(node):
                raise KernelSyntaxError(
                    "statements after the fd.grid loop are not supported (only a "
                    "second fd.grid loop: the post phase)",
                    self.loc(node),
                    hint="put all work inside the grid loop; each grid point is a task",
                )
            method = getattr(self, "stmt_" + type(node).__name__, None)
            if method is None:
                from fadsl.frontend.python_ops import describe

                raise KernelSyntaxError(
                    f"{describe(node)} is not supported inside a kernel",
                    self.loc(node),
                    hint="kernels use assignments, fd ops, `for` over "
                    "fd.grid/range/fd.pipelined and `if` on constants",
                )
            method(node)

    def stmt_Pass(self: Walker, node: ast.Pass) -> None:
        return None

    def stmt_Expr(self: Walker, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None
        self.expr(node.value)

    def stmt_Assert(self: Walker, node: ast.Assert) -> None:
        ok = self.concrete(self.expr(node.test), node.test, "an assert condition")
        if not ok:
            msg = self.expr(node.msg) if node.msg is not None else "assertion failed"
            raise KernelSyntaxError(str(msg), self.loc(node))

    def stmt_Return(self: Walker, node: ast.Return) -> None:
        if node.value is not None:
            raise KernelSyntaxError(
                "kernels do not return values",
                self.loc(node),
                hint="write results with fd.store(out[...], tile)",
            )

    def stmt_Assign(self: Walker, node: ast.Assign) -> None:
        value = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value, node)

    def stmt_AnnAssign(self: Walker, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise KernelSyntaxError("a declaration without a value", self.loc(node))
        self.assign(node.target, self.expr(node.value), node)

    def stmt_AugAssign(self: Walker, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise KernelSyntaxError(
                "augmented assignment needs a plain name", self.loc(node)
            )
        binop = ast.BinOp(
            left=ast.Name(node.target.id, ast.Load()), op=node.op, right=node.value
        )
        ast.copy_location(binop, node)
        ast.fix_missing_locations(binop)
        binop.left.lineno, binop.left.col_offset = (
            node.target.lineno,
            node.target.col_offset,
        )
        binop.left.end_lineno = node.target.end_lineno
        binop.left.end_col_offset = node.target.end_col_offset
        self.assign(node.target, self.expr(binop), node)

    def assign(self: Walker, target: ast.AST, value: Any, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = _named(self, value, target.id)
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            items = _unpack(self, value, len(target.elts), node)
            for t, v in zip(target.elts, items):
                self.assign(t, v, node)
            return
        if isinstance(target, ast.Subscript):
            block = self.expr(target)
            prev = self.tracer.loc
            self.tracer.loc = self.loc(node)
            try:
                ops.store(block, value)
            finally:
                self.tracer.loc = prev
            return
        raise KernelSyntaxError(
            "this assignment target is not supported", self.loc(node)
        )

    def stmt_If(self: Walker, node: ast.If) -> None:
        test = self.concrete(self.expr(node.test), node.test, "an `if` condition")
        self.block(node.body if test else node.orelse)

    def stmt_For(self: Walker, node: ast.For) -> None:
        if node.orelse:
            raise KernelSyntaxError("for/else is not supported", self.loc(node))
        if not isinstance(node.iter, ast.Call):
            raise KernelSyntaxError(
                "a kernel `for` iterates over fd.grid(...), range(...) or "
                "fd.pipelined(...)",
                self.loc(node.iter),
            )
        fn = self.expr(node.iter.func)
        if fn is loops.grid:
            self.grid_loop(node)
        elif fn in (range, loops.pipelined, loops.serial):
            self.seq_loop(node, fn)
        else:
            raise KernelSyntaxError(
                "a kernel `for` iterates over fd.grid(...), range(...) or "
                "fd.pipelined(...)",
                self.loc(node.iter),
            )

    def grid_loop(self: Walker, node: ast.For) -> None:
        loc = self.loc(node)
        check_grid_place(self.grids_seen, self.loop_depth, loc)
        call = node.iter
        assert isinstance(call, ast.Call)
        extents = tuple(_scalar_arg(self, a, "a grid extent") for a in call.args)
        names = _target_names(self, node.target, len(extents))
        self.grid_seen = True
        self.grids_seen += 1
        syms = [isym(self.builder.fresh(n)) for n in names]
        for n, s in zip(names, syms):
            self.env[n] = s
        self.loop_depth += 1
        tracer = ops.current()
        tracer.scope.extend(zip(names, syms))
        tracer.grid_vars = len(names)
        with self.builder.block() as body:
            self.block(node.body)
        del tracer.scope[:]
        tracer.grid_vars = 0
        self.loop_depth -= 1
        if self.grids_seen == 2:
            refuse_post_dots(tuple(body))
        self.builder.append(
            ir.Grid(
                vars=tuple(s.name for s in syms),
                extents=extents,
                body=tuple(body),
                loc=loc,
            )
        )

    def seq_loop(self: Walker, node: ast.For, fn: Any) -> None:
        loc = self.loc(node)
        call = node.iter
        assert isinstance(call, ast.Call)
        start, stop, stages = _loop_bounds(self, call, fn)
        kind = ir.LoopKind.PIPELINED if fn is loops.pipelined else ir.LoopKind.SERIAL
        if not isinstance(node.target, ast.Name):
            raise KernelSyntaxError(
                "a sequential loop has one loop variable", self.loc(node.target)
            )
        carried = _carried_names(self, node)
        before = dict(self.env)
        inits = tuple(self.env[n].value for n in carried)
        iter_args = tuple(
            ir.Value(self.builder.fresh(n), v.type) for n, v in zip(carried, inits)
        )
        var = isym(self.builder.fresh(node.target.id))
        for n, a in zip(carried, iter_args):
            self.env[n] = ops.Tile(a)
        self.env[node.target.id] = var
        self.loop_depth += 1
        scope = ops.current().scope
        scope.append((node.target.id, var))
        with self.builder.block() as body:
            self.block(node.body)
        scope.pop()
        self.loop_depth -= 1
        yields = tuple(_yielded(self, n, a, node) for n, a in zip(carried, iter_args))
        results = tuple(
            ir.Value(self.builder.fresh(n), a.type) for n, a in zip(carried, iter_args)
        )
        _restore_scope(self, before, node, carried, node.target.id)
        for n, r in zip(carried, results):
            self.env[n] = ops.Tile(r)
        self.builder.append(
            ir.For(
                var=var.name,
                start=start,
                stop=stop,
                kind=kind,
                stages=stages,
                inits=inits,
                iter_args=iter_args,
                body=tuple(body),
                yields=yields,
                loop_results=results,
                loc=loc,
            )
        )


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _named(w: Walker, value: Any, name: str) -> Any:
    """Name the tile after the user's variable when this statement just created it
    (not when the statement is ``y = x`` for an ``x`` the last statement made: ``x``
    keeps its value, which renaming would leave undefined)."""
    if isinstance(value, ops.Tile) and not _bound(w, value.value):
        renamed = w.builder.rename_last(value.value, name)
        if renamed is not None:
            tile = copy.copy(value)  # keeps a subclass (position tiles of mods)
            tile.value = renamed
            return tile
    return value


def _bound(w: Walker, value: ir.Value) -> bool:
    return any(isinstance(x, ops.Tile) and x.value == value for x in w.env.values())


def _unpack(w: Walker, value: Any, n: int, node: ast.AST) -> tuple[Any, ...]:
    if isinstance(value, (tuple, list)) and len(value) == n:
        return tuple(value)
    raise KernelSyntaxError(
        f"cannot unpack {type(value).__name__} into {n} names",
        w.loc(node),
        hint="unpack shapes like `B, N, Sq, D = q.shape`",
    )


def _target_names(w: Walker, target: ast.AST, n: int) -> list[str]:
    elts = target.elts if isinstance(target, ast.Tuple) else [target]
    if len(elts) != n or not all(isinstance(e, ast.Name) for e in elts):
        raise KernelSyntaxError(
            f"fd.grid has {n} extent(s); bind one loop variable per extent",
            w.loc(target),
        )
    return [e.id for e in elts]  # type: ignore[attr-defined]


def _scalar_arg(w: Walker, node: ast.expr, what: str) -> Any:
    """A grid extent or loop bound: a scalar expression, never a tile."""
    value = w.expr(node)
    if isinstance(value, ops.Tile):
        raise KernelSyntaxError(
            f"{what} must be a scalar, but this is the tile %{value.value.name} "
            f"({value.type})",
            w.loc(node),
            hint="bounds are sizes: shape symbols, constants, loop variables, "
            "fd.cdiv(...), or fd.load_scalar(...) of an integer tensor",
        )
    try:
        return as_expr(value)
    except TypeError:
        raise KernelSyntaxError(
            f"{what} must be a scalar expression, got {type(value).__name__}",
            w.loc(node),
        ) from None


def _loop_bounds(w: Walker, call: ast.Call, fn: Any) -> tuple[Any, Any, int]:
    args = [_scalar_arg(w, a, "a loop bound") for a in call.args]
    kw = {k.arg: k.value for k in call.keywords}
    stages = 1
    if fn is loops.pipelined:
        stages_node = kw.pop("stages", None)
        stages = (
            2
            if stages_node is None
            else w.concrete(w.expr(stages_node), stages_node, "stages")
        )
        if not isinstance(stages, int) or stages < 1:
            raise ScheduleError(
                f"stages must be a positive integer, got {stages!r}",
                w.loc(call),
                hint="stages=2 double-buffers the loads",
            )
    if kw:
        raise KernelSyntaxError(f"unexpected keyword(s): {', '.join(kw)}", w.loc(call))
    if len(args) == 1:
        return as_expr(0), args[0], stages
    if len(args) == 2:
        return args[0], args[1], stages
    raise KernelSyntaxError(
        "loops take (stop) or (start, stop); steps are not supported", w.loc(call)
    )


def _assigned_names(body: list[ast.stmt]) -> list[str]:
    names: list[str] = []
    for stmt in body:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                if sub.id not in names:
                    names.append(sub.id)
            elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
                if sub.target.id not in names:
                    names.append(sub.target.id)
    return names


def _carried_names(w: Walker, node: ast.For) -> list[str]:
    carried = []
    for name in _assigned_names(node.body):
        if name not in w.env:
            continue
        value = w.env[name]
        if isinstance(value, ops.Tile):
            carried.append(name)
        elif isinstance(value, sympy.Basic):
            raise KernelSyntaxError(
                f"the scalar `{name}` is reassigned inside the loop",
                w.loc(node),
                hint="loop-carried values must be tiles; compute scalars from the "
                "loop variable instead",
            )
    return carried


def _yielded(w: Walker, name: str, arg: ir.Value, node: ast.For) -> ir.Value:
    value = w.env.get(name)
    if not isinstance(value, ops.Tile):
        raise KernelSyntaxError(
            f"loop-carried `{name}` is rebound to a non-tile inside the loop",
            w.loc(node),
        )
    old, new = arg.type, value.value.type
    if old != new:
        assert isinstance(old, TileType) and isinstance(new, TileType)
        if old.dtype == new.dtype:
            raise ShapeError(
                f"loop-carried value `{name}` changes shape inside the loop: {old} "
                f"before, {new} at the end of the body",
                _last_assign_loc(w, node, name),
                notes=(f"`{name}` enters the loop as {old}",),
                hint="a loop-carried value keeps its shape: reduce (fd.row_sum, "
                "fd.row_max) or broadcast (x[:, None]) to it, or use a new name",
                code="loop_carried_shape",
            )
        raise DTypeError(
            f"loop-carried value `{name}` changes type inside the loop: {old} before, "
            f"{new} at the end of the body",
            _last_assign_loc(w, node, name),
            notes=(f"`{name}` enters the loop as {old}",),
            hint="a loop-carried value keeps its shape and dtype; cast it back with "
            f"fd.cast(..., fd.{old.dtype.value}) or use a new name",
            code="loop_carried_dtype",
        )
    return value.value


def _last_assign_loc(w: Walker, node: ast.For, name: str) -> Loc:
    last: ast.AST = node
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in sub.targets):
                last = sub
        elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
            if sub.target.id == name:
                last = sub
    return w.loc(last)


def _restore_scope(
    w: Walker, before: dict[str, Any], node: ast.For, carried: list[str], var: str
) -> None:
    """Names first bound in the loop body are not visible after it (loop-local)."""
    from fadsl.frontend.parser import LoopLocal

    for name in list(w.env):
        if name in before or name in carried:
            continue
        w.env[name] = LoopLocal(name, w.loc(node))
    if var in before:
        w.env[var] = before[var]
    else:
        w.env[var] = LoopLocal(var, w.loc(node))
