"""IRVisitor dispatch and IRTransformer's identity-preserving rebuild."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from irutil import build_fa2

from fadsl.ir.nodes import Exp, For, Grid, Op, RowMax, Store, Value
from fadsl.ir.visitor import IRTransformer, IRVisitor, replace_uses, uses


class _Counter(IRVisitor):
    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.exps = 0

    def visit_Exp(self, op: Exp) -> None:
        self.exps += 1
        self.generic_visit(op)

    def generic_visit(self, op: Op) -> None:
        self.seen[type(op).__name__] += 1
        super().generic_visit(op)


def test_visitor_dispatches_and_descends() -> None:
    counter = _Counter()
    counter.visit_kernel(build_fa2())
    assert counter.exps == 2
    assert counter.seen["Grid"] == counter.seen["For"] == counter.seen["Store"] == 1
    assert counter.seen["Dot"] == 2


def test_identity_transformer_returns_the_same_objects() -> None:
    k = build_fa2()
    assert IRTransformer().transform(k) is k


class _DropRowMax(IRTransformer):
    def visit_RowMax(self, op: RowMax) -> tuple[Op, ...]:
        return ()


def test_rebuilds_only_the_changed_path() -> None:
    k = build_fa2()
    out = _DropRowMax().transform(k)
    assert out is not k
    grid, new_grid = k.body[0], out.body[0]
    assert isinstance(grid, Grid) and isinstance(new_grid, Grid)
    for old, new in zip(grid.body, new_grid.body):
        if isinstance(old, For):
            assert new is not old and len(new.body) == len(old.body) - 1
        else:
            assert new is old


class _SplitStore(IRTransformer):
    def visit_Store(self, op: Store) -> tuple[Op, ...]:
        return (op, op)


def test_a_tuple_expands_into_several_ops() -> None:
    k = build_fa2()
    grid = _SplitStore().transform(k).body[0]
    assert isinstance(grid, Grid) and isinstance(grid.body[-1], Store)
    assert grid.body[-1] is grid.body[-2]


def test_replace_uses_is_identity_preserving() -> None:
    k = build_fa2()
    grid = k.body[0]
    assert isinstance(grid, Grid)
    loop = next(op for op in grid.body if isinstance(op, For))
    assert replace_uses(loop, lambda v: v) is loop
    renamed = replace_uses(loop, lambda v: replace(v, name=v.name + "_x"))
    assert [v.name for v in uses(renamed)] == [v.name + "_x" for v in uses(loop)]
    assert isinstance(renamed, For) and all(
        isinstance(v, Value) for v in renamed.yields
    )
