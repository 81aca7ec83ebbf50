"""The schedule decisions the model reads from the IR (fadsl/perf/schedule.py): each
one moves the modelled figures by what the engines' own durations say it should, and
the causal native reference follows CANN's load balance (fadsl/perf/native.py)."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fadsl import target as targets
from fadsl.driver.source import load_source, select
from fadsl.perf import native
from fadsl.perf.kernel import KernelModel
from fadsl.perf.costs import cost_table
from fadsl.perf.timeline_schedule import LOAD_DATA_BYTES
from fadsl.perf.schedule import Schedule, schedule_of

ROOT = Path(__file__).parent.parent
B2 = targets.get("ascend910b2")
ENV = dict(B=1, N=1, Sq=256, Skv=4096, D=128, block_q=128, block_kv=128, stages=2)
UPDATE = "            acc = acc * alpha[:, None] + fd.dot(fd.cast(p, v.dtype), vt)\n"
LATE = "            acc = fd.dot(fd.cast(p, v.dtype), vt) + acc * alpha[:, None]\n"


def _model(
    plan: Schedule, path: Path = ROOT / "examples/fa2.py", **rates: float
) -> KernelModel:
    kdef = select(load_source(str(path)), "fa2")
    t = B2
    if rates:
        new = {k: dataclasses.replace(t.rates[k], value=v) for k, v in rates.items()}
        t = dataclasses.replace(t, rates={**t.rates, **new})
    return KernelModel(kdef.build({"stages": 2}), t, plan)


def _period(model: KernelModel) -> float:
    timer = model.timer(model.scaled(ENV))
    return model.task_seconds(timer, 10) - model.task_seconds(timer, 9)


def _seconds(model: KernelModel, *names: str) -> float:
    timer = model.timer(model.scaled(ENV))
    return sum(timer.seconds(s) for s in model.body if s.name.startswith(names))


def _early(tmp_path: Path) -> Path:
    """fa2.py written to multiply acc by alpha before P is handed over."""
    src = (ROOT / "examples/fa2.py").read_text()
    assert LATE in src  # fa2.py multiplies acc after P is handed over
    early = tmp_path / "fa2_early.py"
    early.write_text(src.replace(LATE, UPDATE))
    return early


def test_ring_takes_the_qk_chain_off_the_critical_path(tmp_path: Path) -> None:
    # with acc * alpha before P leaves, every vector step is on the ring-1 chain
    early = _early(tmp_path)
    one = _model(Schedule(stages=2), early)
    flag = one.timer(ENV).engines.flag_s
    # ring 1: an iteration is one chain of every non-load step and three flags
    chain = _seconds(one, "scalar", "L1", "cube", "ws", "vector")
    assert _period(one) == pytest.approx(chain + 3 * flag, rel=1e-12)
    # ring 3: the cube computes S = Q K^T ahead; its MTE1, CUBE, Fixpipe and flag leave
    three = _model(Schedule(stages=2, ring=3), early)
    qk = _seconds(one, "L1->L0 qt", "cube dot = qt", "ws dot write") + flag
    assert _period(three) == pytest.approx(chain + 3 * flag - qk, rel=1e-12)


def test_a_deferred_update_leaves_the_vector_core_as_the_bound(tmp_path: Path) -> None:
    early = _early(tmp_path)
    model = _model(Schedule(stages=2, ring=3, defer_update=True))
    assert [s.name.split(" (")[0] for s in model.order.deferred] == [
        "vector update -> t_14",
        "ws dot_1 read",
        "vector update -> acc_2",
    ]
    # the vector core's own program is all that is left on the path: its reads of
    # S and of P V share the one staging slot (rule 8), so the read of P V joins it
    # (the loop control of the next iteration overlaps part of it)
    own = _seconds(model, "scalar", "ws dot read", "vector")
    staged = _seconds(model, "ws dot_1 read")
    assert own < _period(model) <= own + staged * (1 + 1e-12)
    # written to multiply acc before P leaves: no deferral, a longer period
    kept = _model(Schedule(stages=2, ring=3, defer_update=True), early)
    assert kept.order.deferred == [] and _period(kept) > _period(model) * 1.3
    # and without defer_update (the emitter's order) nothing is deferred either
    assert _model(Schedule(stages=2, ring=3)).order.deferred == []


def test_a_resident_q_moves_only_k_to_l0() -> None:
    moved = _model(Schedule(stages=2)).estimate(ENV).engine_iteration_s["MTE1"]
    kept = _model(Schedule(stages=2, resident_l0=True)).estimate(ENV)
    q_bytes = 128 * 128 * 2
    rate = B2.rate("l1_to_l0a_bytes_per_cycle") * B2.rate("clock_hz")
    # its bytes at the L1 -> L0A rate and its LoadData start-ups (one per 4 KB)
    loads = (
        q_bytes // LOAD_DATA_BYTES * cost_table(B2).seconds("load_data_startup_cycles")
    )
    assert moved - kept.engine_iteration_s["MTE1"] == pytest.approx(
        q_bytes / rate + loads, rel=1e-9
    )


def test_l0_depth_one_makes_mte1_wait_for_the_cube() -> None:
    slow = dict(l1_to_l0a_bytes_per_cycle=2.0, l1_to_l0b_bytes_per_cycle=1.0)
    one = _model(Schedule(stages=2, ring=3), **slow)
    sched = one.schedule(one.timer(ENV), 8)
    mte1 = [e for e in sched.events if e.lane == "MTE1"]
    cube = [e for e in sched.events if e.lane == "CUBE"]
    for fill, previous in zip(mte1[1:], cube):
        assert fill.start >= previous.end - 1e-15
    two = _model(Schedule(stages=2, ring=3, l0_buffers=2), **slow)
    assert _period(two) < _period(one)


def test_a_round_of_eight_blocks_pays_loop_control_once() -> None:
    env = {**ENV, "N": 8, "Sq": 4096}
    one = _model(Schedule(stages=2)).estimate(env)
    eight = _model(Schedule(stages=2, round_blocks=8)).estimate(env)
    assert one.iterations == 8 * eight.iterations == 32 * 32 * 8
    assert one.cube_flops == eight.cube_flops  # the same work
    overhead = B2.rate("iteration_overhead_cycles") / B2.rate("clock_hz")
    assert eight.engine_iteration_s["SCALAR"] == one.engine_iteration_s["SCALAR"]
    assert one.engine_iteration_s["SCALAR"] == pytest.approx(overhead)


def test_two_q_blocks_sharing_a_load_halve_the_kv_reads() -> None:
    env = {**ENV, "N": 8, "Sq": 4096}
    one = _model(Schedule(stages=2)).estimate(env)
    two = _model(Schedule(stages=2, shared_q_blocks=2)).estimate(env)
    assert 2 * two.tasks == one.tasks == 8 * 32
    kv = 2 * 4096 * 128 * 2  # K and V of one head
    assert (
        one.hbm_bytes + one.l2_bytes - (two.hbm_bytes + two.l2_bytes)
        == 32 * 8 * kv // 2
    )


def test_the_schedule_is_read_from_the_kv_loop() -> None:
    assert schedule_of(SimpleNamespace(stages=2)) == Schedule(stages=2)
    loop = SimpleNamespace(stages=3, ring=3, round_blocks=8, resident_l0=True)
    assert schedule_of(loop) == Schedule(3, 3, 8, True, 1, 1)
    assert schedule_of(SimpleNamespace(stages=2, ring=0)).lead == 0  # planner's choice


def _best_max_load(loads: list[int], parts: int) -> int:
    """The smallest largest sum of ``parts`` contiguous ranges (dynamic programming)."""
    n = len(loads)
    prefix = [0, *itertools.accumulate(loads)]
    best = [[float("inf")] * (n + 1) for _ in range(parts + 1)]
    best[0][0] = 0
    for k in range(1, parts + 1):
        for i in range(n + 1):
            best[k][i] = min(
                max(best[k - 1][j], prefix[i] - prefix[j]) for j in range(i + 1)
            )
    return int(best[parts][n])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 9), min_size=1, max_size=6),
    st.integers(1, 4),
    st.integers(1, 6),
)
def test_the_causal_split_finds_the_smallest_max_load(
    head: list[int], heads: int, cores: int
) -> None:
    loads = head * heads
    starts = native._balanced_starts(head, len(loads), cores)
    bounds = [*starts, len(loads)]
    got = max(sum(loads[a:b]) for a, b in zip(bounds, bounds[1:]))
    assert got == _best_max_load(loads, min(cores, len(loads)))


def test_the_native_causal_rounds_follow_the_diagonal() -> None:
    shape = native.Shape(1, 1, 1, 4096, causal=True)
    # 32 Q blocks of 128 rows on 48 vector cores: one block each, pairs per AI core
    assert native.core_shares(shape, 128, 48) == [(2 * c, 2 * c + 2) for c in range(16)]
    # the pair (0, 1) reaches key 256: one short, masked round
    assert native.core_rounds(shape, 128, 0, 2) == ((256, True),)
    # the pair (30, 31) reaches the end: four full rounds, the last one masked
    assert native.core_rounds(shape, 128, 30, 32) == (
        (1024, False),
        (1024, False),
        (1024, False),
        (1024, True),
    )
    causal = native.estimate(shape, B2)
    full = native.estimate(dataclasses.replace(shape, causal=False), B2)
    assert causal.flops == full.flops * 4097 / 8192
    assert causal.time_s > full.time_s  # the last core does all the rounds, and masks
