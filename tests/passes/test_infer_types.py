"""passes/infer_types: recomputed types, poisoning, one error for many, kept spaces."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fadsl.errors import DTypeError, ErrorGroup, FadslError, ShapeError
from fadsl.ir.nodes import (
    Cast,
    Exp,
    For,
    Grid,
    Kernel,
    Op,
    RowMax,
    Store,
    Value,
    ValueOp,
)
from fadsl.ir.text.parser import parse_kernel
from fadsl.ir.types import DType, ErrorType, MemSpace, TileType
from fadsl.ir.visitor import IRTransformer
from fadsl.passes import infer_types

TEXT = """\
kernel k(
    in q: f16[N, D],
    out o: f16[N, D],
) consts(bn = 64) {
  grid (i) in (cdiv(N, bn)) {
    %x = load() {src = q, index = [bn*i +: bn, 0 +: D]} : f16[bn, D] @UB
    %i = arange() {start = 0, size = bn} : i32[bn]
    %e = exp(%x) : f16[bn, D] @UB
    %t = tanh(%x) : f16[bn, D]
    %s = dot(%x, %e) {transpose_b = true} : f32[bn, bn]
    %m = row_max(%s) : f32[bn]
    %a0 = full() {shape = [bn, D], value = 0.0, dtype = f16} : f16[bn, D]
    %a = for j in 0 .. 4 iter(%acc = %a0) {
      %acc_1 = add(%acc, %e) : f16[bn, D]
      yield %acc_1
    }
    store(%a) {dst = o, index = [bn*i +: bn, 0 +: D]}
  }
}
"""


def kernel() -> Kernel:
    return parse_kernel(TEXT, "k.fir")


class _Edit(IRTransformer):
    """Apply ``edits[result name or op class name](op)``."""

    def __init__(self, **edits) -> None:  # type: ignore[no-untyped-def]
        self.edits = edits

    def generic_visit(self, op: Op):  # type: ignore[no-untyped-def]
        key = op.result.name if isinstance(op, ValueOp) else type(op).__name__
        op = super().generic_visit(op)  # type: ignore[assignment]
        return self.edits[key](op) if key in self.edits else op


def ops(k: Kernel) -> list[Op]:
    grid = k.body[0]
    assert isinstance(grid, Grid)
    return list(grid.body)


def test_valid_kernel_is_returned_unchanged() -> None:
    k = kernel()
    assert infer_types.run(k) is k


def test_placeholder_types_are_filled_and_uses_follow() -> None:
    k = _Edit(s=lambda op: replace(op, result=Value("s", ErrorType()))).transform(
        kernel()
    )
    assert k != kernel()
    out = infer_types.run(k)
    assert out == kernel()
    row_max = next(op for op in ops(out) if isinstance(op, RowMax))
    shape = row_max.x.type.shape  # type: ignore[union-attr]
    assert row_max.x.type == TileType(shape, DType.F32)


def test_rule_errors_are_collected_and_poison_is_not_reported() -> None:
    broken = _Edit(
        t=lambda op: replace(op, x=ops(kernel())[1].results()[0]),
        s=lambda op: replace(op, transpose_b=False),
    ).transform(kernel())
    with pytest.raises(FadslError) as info:
        infer_types.run(broken)
    err = info.value
    assert isinstance(err, DTypeError)
    assert err.message.startswith("tanh needs a float tile, got i32[bn]")
    assert "(and 1 more error(s) below)" in err.message
    assert len(err.notes) == 1 and "contraction sizes differ" in err.notes[0]


def test_store_check_runs() -> None:
    broken = _Edit(Store=lambda op: replace(op, dst="q")).transform(kernel())
    with pytest.raises(DTypeError, match="`q` is an input"):
        infer_types.run(broken)


def test_loop_carried_type_change_is_an_error() -> None:
    def widen(op: For) -> For:
        (inner,) = op.body[:1]
        cast = Cast(
            x=inner.results()[0],
            dtype=DType.F32,
            result=Value("acc_2", ErrorType()),
            loc=op.loc,
        )
        return replace(op, body=op.body + (cast,), yields=(cast.result,))

    broken = _Edit(For=widen).transform(kernel())
    with pytest.raises(DTypeError, match="loop-carried `%acc` changes type"):
        infer_types.run(broken)


def test_memory_space_is_kept_when_the_rule_agrees() -> None:
    out = infer_types.run(kernel())
    exp = next(op for op in ops(out) if isinstance(op, Exp))
    assert exp.result.type.space is MemSpace.UB  # type: ignore[union-attr]


def test_errors_accumulate_in_one_group() -> None:
    group = ErrorGroup()
    group.add(ShapeError("a"))
    group.add(DTypeError("b"))
    with pytest.raises(ShapeError, match=r"a \(and 1 more"):
        group.raise_if_any()
