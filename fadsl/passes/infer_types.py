"""Re-run every op's type rule over a kernel; collect all errors, then raise once.

Input: a kernel from the frontend, the textual-IR parser, or a rewriting pass; its
value types may be stale (an op was rewritten) or placeholders (``ErrorType``).
Output: the same kernel with every result type recomputed by the op's own ``infer``
(the rule the frontend's Builder runs), every use of a value updated to the new type,
loop iter_args/results typed from their inits, and each op's ``check`` run.

Errors accumulate (Exo ``typecheck.py``): a failing op's result is poisoned with
``ErrorType``; ops reading a poisoned value are skipped, so one mistake is reported
once; all errors are raised together at the end as one FadslError.

Memory spaces are kept: rules compute unplaced tiles, so a result already placed
(``@UB``) keeps its space when the rule agrees on shape and dtype.

Non-goals: structural checks (``ir/verify.py``), resources, any rewriting.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from fadsl.errors import DTypeError, ErrorGroup, FadslError, ShapeError
from fadsl.ir.nodes import For, Grid, Kernel, Op, Value, ValueOp, is_poisoned
from fadsl.ir.types import ErrorType, MemSpace, TileType, ValueType
from fadsl.ir.visitor import IRTransformer, replace_uses, uses

if TYPE_CHECKING:
    from fadsl.target import Target

NAME = "infer_types"


def run(kernel: Kernel, target: Target | None = None) -> Kernel:
    """``kernel`` with recomputed types; raises every type error found, as one error."""
    inferrer = _Inferrer(kernel)
    out = inferrer.transform(kernel)
    inferrer.errors.raise_if_any()
    return out


class _Inferrer(IRTransformer):
    def __init__(self, kernel: Kernel) -> None:
        self.ctx = kernel
        self.errors = ErrorGroup()
        self.types: dict[str, ValueType] = {}

    def retyped(self, v: Value) -> Value:
        new = self.types.get(v.name)
        return v if new is None or new == v.type else Value(v.name, new)

    def generic_visit(self, op: Op) -> Op:
        op = replace_uses(op, self.retyped)
        if isinstance(op, ValueOp):
            return self._infer(op)
        if not is_poisoned(*uses(op)):
            self._check(op)
        return op

    def _infer(self, op: ValueOp) -> ValueOp:
        new_type: ValueType = ErrorType()
        if not is_poisoned(*uses(op)):
            try:
                new_type = _keep_space(op.infer(self.ctx), op.result.type)
            except FadslError as err:
                self.errors.add(err)
        self.types[op.result.name] = new_type
        if new_type == op.result.type:
            return op
        return replace(op, result=Value(op.result.name, new_type))

    def _check(self, op: Op) -> None:
        check = getattr(op, "check", None)
        if check is None:
            return
        try:
            check(self.ctx)
        except FadslError as err:
            self.errors.add(err)

    def visit_Grid(self, op: Grid) -> Op | tuple[Op, ...]:
        return IRTransformer.generic_visit(self, op)

    def visit_For(self, op: For) -> Op:
        inits = tuple(self.retyped(v) for v in op.inits)
        iter_args = tuple(Value(a.name, i.type) for a, i in zip(op.iter_args, inits))
        self.types.update((a.name, a.type) for a in iter_args)
        body = self.visit_block(op.body)
        yields = tuple(self.retyped(v) for v in op.yields)
        for arg, out in zip(iter_args, yields):
            self._check_carried(op, arg, out)
        results = tuple(
            Value(r.name, a.type) for r, a in zip(op.loop_results, iter_args)
        )
        self.types.update((r.name, r.type) for r in results)
        new = replace(
            op,
            inits=inits,
            iter_args=iter_args,
            body=body,
            yields=yields,
            loop_results=results,
        )
        return op if new == op and body is op.body else new

    def _check_carried(self, op: For, arg: Value, out: Value) -> None:
        a, b = arg.type, out.type
        if is_poisoned(arg, out) or a == b:
            return
        shape_differs = getattr(a, "shape", None) != getattr(b, "shape", None)
        cls = ShapeError if shape_differs else DTypeError
        self.errors.add(
            cls(
                f"loop-carried `%{arg.name}` changes type inside the loop: {a} before, "
                f"{b} at the end of the body (`%{out.name}`)",
                op.loc,
                hint="a loop-carried value keeps its shape and dtype; cast it back",
            )
        )


def _keep_space(inferred: ValueType, old: ValueType) -> ValueType:
    """The inferred type, placed where the old result was if the rule does not say."""
    if not (isinstance(inferred, TileType) and isinstance(old, TileType)):
        return inferred
    if inferred.space is not MemSpace.TILE or old.space is MemSpace.TILE:
        return inferred
    return TileType(inferred.shape, inferred.dtype, old.space)
