"""The native backward reference as CANN codes FlashAttentionScoreGrad
(perf/native_bwd.py): its core split, its ring and that it charges the cost table."""

from __future__ import annotations

import dataclasses

import pytest

from fadsl import target as targets
from fadsl.perf import native_bwd as nb
from fadsl.perf.costs import cost_table

B2 = targets.get("ascend910b2")


def test_the_blocks_are_512_square_and_causal_skips_those_above_the_diagonal() -> None:
    full = nb.valid_blocks(nb.Shape(1, 8, 4096))
    assert len(full) == 8 * 8 * 8 and not any(full)
    causal = nb.valid_blocks(nb.Shape(1, 8, 4096, causal=True))
    # per head and KV block s2o: Q blocks s2o..7 (CalcValidBlock's s1oIdxUp)
    assert len(causal) == 8 * 36 and sum(causal) == 8 * 8
    assert causal[:9] == [True] + [False] * 7 + [True]


def test_blocks_are_dealt_one_per_cube_core_per_wave() -> None:
    r = nb.estimate(nb.Shape(1, 8, 4096), B2)
    assert (r.blocks, r.cores, r.tasks_per_core) == (512, 24, 22)  # ceil(512 / 24)
    small = nb.estimate(nb.Shape(1, 1, 2048), B2)
    assert (small.blocks, small.cores, small.tasks_per_core) == (16, 16, 1)


def test_the_ring_hides_the_vector_work_behind_the_cube_when_the_cube_is_slower() -> (
    None
):
    e = nb.Engines.of(B2, 24)
    mm1, dqkv = 10e-6, 12e-6
    n = 20
    fast = nb._ring([5e-6] * n, mm1, dqkv, e)
    per = fast - nb._ring([5e-6] * (n - 1), mm1, dqkv, e)
    assert per == pytest.approx(mm1 + dqkv + e.round_s)
    slow = nb._ring([40e-6] * n, mm1, dqkv, e)
    per_slow = slow - nb._ring([40e-6] * (n - 1), mm1, dqkv, e)
    assert per_slow == pytest.approx(40e-6)  # vector-bound: back to back vector blocks


def test_the_native_backward_charges_the_one_cost_table() -> None:
    shape = nb.Shape(1, 8, 4096)
    base = nb.estimate(shape, B2).time_s
    for name in ("cube_flops_per_cycle", "fixpipe_bytes_per_cycle"):
        rates = dict(B2.rates)
        rates[name] = dataclasses.replace(rates[name], value=rates[name].value * 2)
        faster = dataclasses.replace(B2, rates=rates)
        assert nb.estimate(shape, faster).time_s < base, name
    tb = cost_table(B2)
    slow = tb.scaled({"vector_startup_cycles": 2.0})
    assert nb.vec_cycles(False, slow) > nb.vec_cycles(False, tb)


def test_a_diagonal_block_costs_its_vector_cores_the_mask() -> None:
    tb = cost_table(B2)
    assert nb.vec_cycles(True, tb) > nb.vec_cycles(False, tb)
    a, a_bar, b, b_bar = nb.chunk_calls(True)
    assert ("Select", 128.0) in a and len(a) == len(nb.chunk_calls(False)[0]) + 1
