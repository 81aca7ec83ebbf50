"""Binding a kernel's parameters: tensors, runtime scalars and compile-time constants."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import sympy

from fadsl.errors import KernelSyntaxError, Loc
from fadsl.frontend import ops
from fadsl.frontend.kernel import ParamSpec
from fadsl.ir import nodes as ir
from fadsl.ir.expr import as_expr, fsym, isym
from fadsl.ir.types import DType, ScalarType, TensorType

if TYPE_CHECKING:
    from fadsl.frontend.parser import Walker


class ParamBinder:
    """Mixin of Walker: puts every parameter of the kernel into its environment."""

    def _bind_params(self: Walker, fdef: ast.FunctionDef) -> None:
        arg_nodes = {a.arg: a for a in fdef.args.args + fdef.args.kwonlyargs}
        for spec in self.kdef.specs:
            node = arg_nodes.get(spec.name)
            loc = self.loc(node) if node is not None else self.kdef.loc
            self._bind_param(spec, loc)

    def _bind_param(self: Walker, spec: ParamSpec, loc: Loc) -> None:
        if spec.kind == "const":
            value = self.consts.get(spec.name, spec.default)
            if isinstance(value, int) and not isinstance(value, bool):
                sym = isym(spec.name)
                self.const_syms[sym] = value
                self.env[spec.name] = sym
            else:
                self.env[spec.name] = value
            return
        if spec.kind == "scalar":
            default = None if spec.default is None else self._scalar_default(spec, loc)
            p = ir.Param(
                name=spec.name,
                kind=ir.ParamKind.SCALAR,
                type=ScalarType(spec.dtype or DType.F32),
                default=default,
                loc=loc,
            )
            self.params.append(p)
            self.env[spec.name] = fsym(spec.name)
            return
        shape = tuple(self._dim(d) for d in spec.dims)
        p = ir.Param(
            name=spec.name,
            kind=ir.ParamKind(spec.kind),
            type=TensorType(shape, spec.dtype or self.dtype),
            loc=loc,
            alias=spec.alias,
        )
        self.params.append(p)
        self.env[spec.name] = ops.TensorRef(p)

    def _dim(self: Walker, d: str | int) -> sympy.Expr:
        if isinstance(d, int):
            return as_expr(d)
        if not d.isidentifier() or d in self.kdef.const_defaults:
            return self._dim_expr(d)  # an expression, or a tile constant
        if d not in self.shape_syms:
            self.shape_syms.append(d)
            self.env.setdefault(d, isym(d))
        return isym(d)

    def _dim_expr(self: Walker, text: str) -> sympy.Expr:
        """A dimension written as an expression ("N * D"): its names that are not tile
        constants are shape symbols."""
        from fadsl.ir.expr_parse import ExprSyntaxError, parse_expr_text

        try:
            e = parse_expr_text(text)
        except ExprSyntaxError as exc:
            raise KernelSyntaxError(
                f"tensor dimension {text!r}: {exc}",
                self.kdef.loc,
                hint='e.g. fd.In("B", "Sq", "N * D")',
            ) from None
        consts = self.kdef.const_defaults
        for s in sorted(e.free_symbols, key=lambda x: x.name):
            if s.name not in consts:
                self._dim(s.name)
        return e

    def _scalar_default(self: Walker, spec: ParamSpec, loc: Loc) -> sympy.Expr:
        if isinstance(spec.default, (int, float)):
            return as_expr(float(spec.default))
        if isinstance(spec.default, str):
            from fadsl.ir.expr_parse import ExprSyntaxError, parse_expr_text

            try:
                return parse_expr_text(spec.default)
            except ExprSyntaxError as exc:
                raise KernelSyntaxError(
                    f"default of scalar `{spec.name}`: {exc}",
                    loc,
                    hint='e.g. "D ** -0.5"',
                ) from None
        raise KernelSyntaxError(
            f"default of scalar `{spec.name}` must be a number or an expression string "
            f'such as "D ** -0.5", got {spec.default!r}',
            loc,
        )

    # --- compile-time evaluation -------------------------------------------
