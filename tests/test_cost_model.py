"""The analytic cost model: work counted from the IR, times from the target's rates."""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import pytest

from fadsl import target as targets
from fadsl.driver.source import load_source, select
from fadsl.perf.cost_model import CostModel, Estimate
from fadsl.target import Rate

SHAPE = dict(B=1, N=8, Sq=4096, Skv=4096, D=128)


@lru_cache(maxsize=None)
def _kernel(causal: bool = False, stages: int = 2):  # type: ignore[no-untyped-def]
    kdef = select(load_source("examples/fa2.py"), "fa2")
    return kdef.build({"causal": causal, "stages": stages})


def _estimate(
    tname: str, bq: int, bkv: int, causal: bool = False, stages: int = 2, **shape: int
) -> Estimate:
    env = {**SHAPE, **shape, "block_q": bq, "block_kv": bkv, "stages": stages}
    return CostModel(_kernel(causal, stages), targets.get(tname)).estimate(env)


@pytest.mark.parametrize("bq, bkv, d", [(128, 128, 128), (64, 256, 64), (192, 80, 96)])
def test_per_iteration_work_matches_hand_count(bq: int, bkv: int, d: int) -> None:
    w = _estimate("ascend910b1", bq, bkv, D=d).per_iteration
    assert w["mte2_bytes"] == 2 * bkv * d * 2  # K and V tiles, f16
    assert w["mte3_bytes"] == 0
    assert w["cube_flops"] == 2 * (2 * bq * bkv * d)  # q @ k^T and p @ v
    assert w["l0a_bytes"] == bq * d * 2 + bq * bkv * 2
    assert w["l0b_bytes"] == 2 * bkv * d * 2
    # [bq, bkv]: scale, where, row_max, s - m, row_sum, cast; [bkv]: arange, < Skv;
    # [bq]: maximum, ==, where, m - m_safe, l * alpha, + ; [bq, D]: acc * alpha, +
    assert w["vector_ops"] == 6 * bq * bkv + 2 * bkv + 6 * bq + 2 * bq * d
    assert w["vector_transcendental"] == bq * bkv + bq  # exp(s - m), exp(m - m_safe)
    # split chip: S (f32) and P @ V (f32) to the vector cores, P (f16) to the cube
    assert w["ws_bytes"] == bq * bkv * 4 + bq * bkv * 2 + bq * d * 4


def test_coupled_chip_has_no_workspace_traffic() -> None:
    e = _estimate("ascend910a", 128, 128)
    assert e.per_iteration["ws_bytes"] == 0 and e.workspace_bytes == 0
    assert e.block_dim == 30


@pytest.mark.smoke
def test_iterations_tasks_and_lower_bound() -> None:
    e = _estimate("ascend910b1", 128, 256)
    assert e.tasks == 8 * 32 and e.block_dim == 24
    assert e.iterations == e.tasks * 16
    assert e.hbm_lower_bound == 4 * 8 * 4096 * 128 * 2
    q_and_o = 2 * 8 * 4096 * 128 * 2
    assert e.hbm_bytes == q_and_o + e.iterations * 2 * 256 * 128 * 2
    assert e.cube_flops == e.iterations * 4 * 128 * 256 * 128


def test_causal_skips_blocks_above_the_diagonal() -> None:
    full = _estimate("ascend910b1", 128, 128)
    causal = _estimate("ascend910b1", 128, 128, causal=True)
    assert causal.iterations == 8 * sum(i + 1 for i in range(32))
    assert causal.predicted_s < full.predicted_s


def test_overlap_never_slower_and_stages_choose_it() -> None:
    two = _estimate("ascend910b1", 128, 128, stages=2)
    one = _estimate("ascend910b1", 128, 128, stages=1)
    assert two.time_overlap_s < two.time_serial_s
    assert two.predicted_s == two.time_overlap_s
    assert one.predicted_s == one.time_serial_s
    assert two.tflops == pytest.approx(two.cube_flops / two.predicted_s / 1e12)


def test_round_robin_makespan_of_uneven_tasks() -> None:
    e = _estimate("ascend910b1", 128, 128, causal=True, N=1)
    # 32 tasks (Q block i runs i + 1 KV blocks) dealt to 24 blocks: block 7 runs
    # tasks 7 and 31, 8 + 32 = 40 iterations; the average would be only 22
    assert 40 * e.phases.overlapped < e.time_overlap_s < 42 * e.phases.serial
    assert 40 * e.phases.serial < e.time_serial_s < 42 * e.phases.serial


def test_faster_memory_is_never_slower() -> None:
    t = targets.get("ascend910b1")
    rates = dict(t.rates)
    for key in ("hbm_bytes_per_s", "ddr_bytes_per_cycle", "mte2_bytes_per_cycle"):
        r = rates[key]
        rates[key] = Rate(r.name, r.value * 4, r.unit, "assumption: test")
    fast = dataclasses.replace(t, rates=rates)
    env = {**SHAPE, "block_q": 128, "block_kv": 128, "stages": 2}
    slow_e = CostModel(_kernel(), t).estimate(env)
    fast_e = CostModel(_kernel(), fast).estimate(env)
    assert fast_e.phases.mte2 < slow_e.phases.mte2
    assert fast_e.predicted_s <= slow_e.predicted_s


def test_estimate_reports_itself_as_modelled() -> None:
    d = _estimate("ascend310p3", 64, 64).as_dict()
    assert d["modelled"] is True and d["bound"] in ("mte2", "cube", "vector", "mte3")
    assert d["hbm_ratio"] >= 1.0
