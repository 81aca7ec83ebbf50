"""The cube/vector ring (plan/schedule/ring.py): which loops run the cube ahead, how deep their
workspace rings are, what the plan, the checker and the textual IR say about it."""

from __future__ import annotations

import os

import pytest

from fadsl import target as targets
from fadsl.driver.source import load_source, select
from fadsl.errors import ScheduleError
from fadsl.ir.text.parser import parse_kernel
from fadsl.ir.text.printer import print_kernel
from fadsl.passes import run_pipeline
from fadsl.plan.schedule import ring
from fadsl.plan.memory.plan_buffers import Lowering, kernel_env, lower

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SHAPE = dict(B=1, N=2, Sq=512, Skv=512, D=128)


def _kernel(example: str, **consts: object):  # type: ignore[no-untyped-def]
    kdef = select(load_source(os.path.join(ROOT, "examples", f"{example}.py")), None)
    return kdef.build(consts)


def _lower(kernel, tname: str = "ascend910b1") -> Lowering:  # type: ignore[no-untyped-def]
    t = targets.get(tname)
    env = {**kernel_env(kernel), **SHAPE, "Nkv": 2}
    return lower(run_pipeline(kernel, t), t, env)


def _slots(low: Lowering) -> dict[str, int]:
    return {w.name: w.slots for w in low.plan.workspaces}


def test_fa2_runs_the_cube_two_iterations_ahead_through_a_three_slot_ring() -> None:
    """ring.DEFAULT_DEPTH is 3 since issue 27 (2 before)."""
    low = _lower(_kernel("fa2"))
    (r,) = low.rings.values()
    assert (r.depth, r.lead, r.loop.var) == (3, 2, "j")
    assert r.stages.ring_values == ("dot",)
    # the deferred update (plan/schedule/defer.py) gives the exchanges of stage B three slots too
    assert r.slot_values == ("dot", "dot_1", "p_1")
    assert _slots(low) == {"dotWs": 3, "dot1Ws": 3, "p1Ws": 3}
    ws = {w.name: w for w in low.plan.workspaces}
    assert str(ws["dotWs"].bytes()) == "12*block_kv*block_q"
    assert "ring of 3" in ws["dotWs"].role
    assert ring.flag_count(low.sides, low.rings) == 9


def test_a_default_ring_whose_flags_do_not_fit_falls_back_to_two_slots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ring, "MAX_FLAGS", 8)  # 9 flags at 3 slots, 6 at 2
    low = _lower(_kernel("fa2"))
    (r,) = low.rings.values()
    assert (r.depth, r.lead) == (2, 1) and r.deferral is not None
    assert _slots(low) == {"dotWs": 2, "dot1Ws": 2, "p1Ws": 2}


def test_coupled_chips_have_no_ring() -> None:
    low = _lower(_kernel("fa2"), "ascend910a")
    assert low.rings == {} and low.plan.workspaces == ()


def _fa2_text(attrs: str) -> str:
    low = _lower(_kernel("fa2"))
    text = print_kernel(ring.annotate(_kernel("fa2"), low.rings))
    assert "pipelined(stages = 2, ring = 3, defer_update = true)" in text
    return text.replace("ring = 3, defer_update = true", attrs)


@pytest.mark.parametrize("attrs, depth", [("ring = 1", None), ("ring = 2", 2)])
def test_the_textual_ir_sets_the_ring(attrs: str, depth: int | None) -> None:
    low = _lower(parse_kernel(_fa2_text(attrs)))
    if depth is None:
        assert low.rings == {} and set(_slots(low).values()) == {1}
        assert low.free == {}  # P orders the rewrites of S and of P @ V: no flag
    else:
        (r,) = low.rings.values()
        assert (r.depth, r.lead) == (depth, depth - 1)
        assert _slots(low) == {"dotWs": depth, "dot1Ws": depth, "p1Ws": depth}


def test_a_ring_the_loop_cannot_have_is_refused_at_its_line() -> None:
    """fa3 reads its second score block only after it sent the first P block."""
    low = _lower(_kernel("fa3"))
    assert low.rings == {}
    text = print_kernel(_kernel("fa3"))
    assert "2) pipelined iter(" in text
    text = text.replace("2) pipelined iter(", "2) pipelined(ring = 2) iter(", 1)
    with pytest.raises(ScheduleError) as exc:
        _lower(parse_kernel(text))
    assert "ring = 2 cannot be honoured" in exc.value.message
    assert "first read after the vector cores send their operand" in exc.value.message


def test_without_enough_flag_ids_the_ring_is_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ring, "MAX_FLAGS", 3)
    low = _lower(_kernel("fa2"))
    assert low.rings == {} and set(_slots(low).values()) == {1}
    assert low.free == {}  # P orders the rewrites of S and of P @ V: no slot-free flag


def test_the_generated_project_shows_the_ring(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from fadsl.cli import main

    out = tmp_path / "fa2"
    assert (
        main(
            [
                "compile",
                os.path.join(ROOT, "examples", "fa2.py"),
                *("--set", "block_kv=128"),  # at 512 L1 holds one K/V slot: stages = 1
                "-o",
                str(out),
            ]
        )
        == 0
    )
    fir = (out / "fa2.fir").read_text()
    assert "pipelined(stages = 2, ring = 3, defer_update = true)" in fir
    cpp = (out / "fa2_kernel.cpp").read_text()
    assert "static_cast<uint16_t>(FLAG_DOT + (jAhead) % 3)" in cpp
    assert "dotWsGm[(j) % 3 * BLOCK_KV * BLOCK_Q + row0 * BLOCK_KV]" in cpp
    assert "constexpr uint16_t FLAG_DOT1 = 3;" in " ".join(cpp.split())


def test_q_stays_in_l0a_and_l0b_l0c_are_double_buffered_where_they_fit() -> None:
    low = _lower(_kernel("fa2", block_kv=128))
    l0 = {b.name: b for b in low.plan.buffers if b.space.startswith("L0")}
    assert low.resident == {"qt": "qtL0"}
    assert {n: (b.space, b.buffers) for n, b in l0.items()} == {
        "qtL0": ("L0A", 1),
        "aL0": ("L0A", 1),  # P: Q (32 KiB) + two P slots would not fit 64 KiB
        "bL0": ("L0B", 2),
        "cL0": ("L0C", 2),
    }
    assert l0["aL0"].values == ("dot_1",)  # only P @ V still loads L0A per iteration


def test_dots_that_do_not_fit_l0_whole_run_as_double_buffered_sub_dots() -> None:
    """block_q = block_kv = 256: Q (64 KiB) fills L0A alone, so it is not resident;
    S (256 KiB f32) and P (128 KiB) do not fit whole, so both dots run as sub-dots
    whose two slots fit each L0 memory (plan/memory/l0_split.py). Before sub-dots nothing was
    double-buffered there, and L0A and L0C overflowed."""
    low = _lower(_kernel("fa2", block_q=256, block_kv=256))
    l0 = {b.name: b.buffers for b in low.plan.buffers if b.space.startswith("L0")}
    assert low.resident == {} and l0 == {"aL0": 2, "bL0": 2, "cL0": 2}
    assert set(low.sub_dots) == {"dot", "dot_1"}


def test_the_model_follows_the_l0_plan() -> None:
    from fadsl.perf.kernel import KernelModel

    k = _kernel("fa2")
    env = {**kernel_env(k), **SHAPE, "scale": 0.088}
    s = KernelModel(k, targets.get("ascend910b1")).at(env).kv_schedule
    assert (s.ring, s.resident_l0, s.l0_buffers) == (3, True, 2)
