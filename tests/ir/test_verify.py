"""ir.verify: each structural invariant, on FA2 IR broken one way at a time."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
from irutil import build_fa2

import fadsl.passes as passes
from fadsl.errors import InternalError, IRParseError
from fadsl.ir.expr import isym
from fadsl.ir.nodes import Arange, For, Grid, Kernel, Op, QueueAlloc, Store, Value
from fadsl.ir.types import DType, TileType
from fadsl.ir.verify import find_problems, verify


def grid_of(k: Kernel) -> Grid:
    grid = k.body[0]
    assert isinstance(grid, Grid)
    return grid


def with_grid_body(k: Kernel, body: tuple[Op, ...]) -> Kernel:
    return replace(k, body=(replace(grid_of(k), body=body),))


def loop_of(k: Kernel) -> For:
    return next(op for op in grid_of(k).body if isinstance(op, For))


def messages(k: Kernel) -> list[str]:
    return [p.message for p in find_problems(k)]


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
def test_fa2_is_valid(causal: bool, dtype: str) -> None:
    verify(build_fa2(causal, dtype))


def test_use_before_definition() -> None:
    k = build_fa2()
    body = grid_of(k).body
    name = body[-2].results()[0].name
    swapped = with_grid_body(k, body[:-2] + (body[-1], body[-2]))
    assert messages(swapped) == [f"`%{name}` is used but not defined before in scope"]


def test_value_defined_twice() -> None:
    k = build_fa2()
    body = grid_of(k).body
    assert messages(with_grid_body(k, body + (body[1],))) == [
        "`%q_idx` is defined more than once"
    ]


def test_loop_body_value_is_not_visible_after_the_loop() -> None:
    k = build_fa2()
    inner = loop_of(k).body[0].results()[0]
    store = grid_of(k).body[-1]
    broken = with_grid_body(k, grid_of(k).body[:-1] + (replace(store, value=inner),))
    found = messages(broken)
    assert "`%kt` is used but not defined inside a closed loop body in scope" in found


def test_use_with_a_stale_type() -> None:
    k = build_fa2()
    store = grid_of(k).body[-1]
    assert isinstance(store, Store)
    shape = store.value.type.shape  # type: ignore[union-attr]
    stale = Value(store.value.name, TileType(shape, DType.F32))
    broken = with_grid_body(k, grid_of(k).body[:-1] + (replace(store, value=stale),))
    assert messages(broken) == [
        f"`%{stale.name}` is used as f32[block_q, D] but defined as f16[block_q, D]"
    ]


def test_undefined_and_out_of_scope_symbols() -> None:
    k = build_fa2()
    body = list(grid_of(k).body)
    arange = body[1]
    assert isinstance(arange, Arange)
    body[1] = replace(arange, start=isym("nope") + isym("j"))
    found = messages(with_grid_body(k, tuple(body)))
    assert [m.split(" in ")[0] for m in found] == [
        "undefined symbol `j`",
        "undefined symbol `nope`",
    ]


def test_yield_type_must_match_iter_arg() -> None:
    k = build_fa2()
    loop = loop_of(k)
    wrong = (loop.yields[1],) + loop.yields[1:]
    body = tuple(
        replace(op, yields=wrong) if op is loop else op for op in grid_of(k).body
    )
    found = messages(with_grid_body(k, body))
    assert any("loop-carried `%l_1` changes type" in m for m in found)


def test_one_top_level_grid_and_at_most_a_post_phase_without_dots() -> None:
    k = build_fa2()
    grid = grid_of(k)
    assert "has 3 grid loops" in messages(replace(k, body=(grid, grid, grid)))[0]
    found = messages(replace(k, body=(grid, grid)))
    assert "a dot in the post-phase grid" in found[0]
    nested = replace(grid, body=grid.body + (replace(grid, body=()),))
    assert "a grid loop inside another loop" in messages(replace(k, body=(nested,)))


def test_queue_needs_a_buffer() -> None:
    k = build_fa2()
    tile = TileType((isym("block_kv"), isym("D")), DType.F16)
    queue = QueueAlloc(
        tile=tile, buffers=0, position="VECIN", result=Value("kq", tile), loc=k.loc
    )
    found = messages(replace(k, body=(queue,) + k.body))
    assert found == ["queue_alloc with 0 buffers"]


def test_fadsl_ir_gets_internal_error_with_the_ir() -> None:
    k = build_fa2()
    body = grid_of(k).body
    broken = with_grid_body(k, body + (body[1],))
    with pytest.raises(InternalError) as info:
        verify(broken)
    assert "fadsl bug" in info.value.render()
    assert any(n.startswith("IR:\nkernel fa2(") for n in info.value.notes)


def test_parsed_ir_gets_parse_errors() -> None:
    k = build_fa2()
    body = grid_of(k).body
    with pytest.raises(IRParseError, match="defined more than once"):
        verify(with_grid_body(k, body + (body[1],)), parsed=True)


def test_pipeline_verifies_between_passes(monkeypatch) -> None:
    k = build_fa2()
    body = grid_of(k).body
    broken = with_grid_body(k, body + (body[1],))
    breaker = SimpleNamespace(NAME="breaker", run=lambda kernel, target=None: broken)
    monkeypatch.setattr(passes, "PIPELINE", passes.PIPELINE + (breaker,))
    with pytest.raises(InternalError, match="after pass `breaker`"):
        passes.run_pipeline(k, verify=True)
    assert passes.run_pipeline(k, until=passes.PIPELINE[0].NAME, verify=True) == k
