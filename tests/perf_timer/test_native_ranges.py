"""The native reference as CANN codes it (perf/native_round.py), the ranges
(perf/ranges.py) and the count classes (perf/counts.py)."""

from __future__ import annotations

import pytest

from fadsl import target as targets
from fadsl.perf import calibration, counts, native_round, ranges
from fadsl.perf.costs import CONSTANTS, cost_table, uncertain_entries
from fadsl.perf.timer.instr import Instr

T = cost_table(targets.get("ascend910b2"))


def test_a_softmax_chunk_issues_softmaxflashv2s_calls() -> None:
    calls, barriers = native_round.softmax_chunk(1024, False)
    # Muls, 2 x (4-step reduce tree), Copy/Max/Sub/Exp, Brcb + 16 Subs, Exp, Mul, Add,
    # Cast (asc-devkit v220 softmax_flashv2_impl.h basic-block update path)
    assert (len(calls), barriers) == (34, 19)
    masked, more = native_round.softmax_chunk(1024, True)
    assert (len(masked), more) == (35, 20)
    # one pass over the 8 x 1024 chunk each: Muls, Exp, Cast (and the 16 Subs together)
    full = [r for name, r in calls if r == 128]
    assert len(full) == 3 and sum(r for n, r in calls if n == "Sub") == 128 + 1


def test_the_ping_pong_hides_the_reads_and_writes_behind_the_chunk_work() -> None:
    v = native_round.vec1_cycles(128, 1024, False, T)
    chunks = 128 // native_round.CHUNK_ROWS
    assert v["total"] < v["AIV MTE2"] + v["VECTOR"] + v["AIV MTE3"]
    assert v["total"] >= v["VECTOR"] + chunks * 2 * T["flag_cycles"]


def test_the_fitted_constants_sit_in_the_target_files() -> None:
    values = calibration.fit()
    b2 = targets.get("ascend910b2")
    for k, v in values.items():
        assert b2.rate(k) == pytest.approx(v, rel=1e-3)
        assert b2.rates[k].source.startswith("fitted by bench/kernel_model.py")


def test_every_uncertain_entry_moves_but_the_fitted_and_the_timer_only_ones() -> None:
    labels = [label for label, _ in ranges.moves()]
    assert labels[0] == "central"
    moved = {label.rsplit(" x", 1)[0] for label in labels[1:]}
    skipped = set(calibration.FITTED) | ranges.TIMER_ONLY
    assert moved == set(uncertain_entries()) - skipped
    assert all(c.name in moved or c.name in skipped for c in CONSTANTS if c.uncertain)


def test_a_range_is_its_lowest_and_highest_move() -> None:
    r = ranges.from_results(
        {"central": [1.0, 2.0], "a x0.5": [0.8, 2.0], "a x2": [1.1, 3.0]}
    )
    assert (r[0].low, r[0].high, r[0].low_by) == (0.8, 1.1, "a x0.5")
    assert r[1].text() == "2.00 [2.00, 3.00]"
    assert ranges.sensitivity(r)[0] == ("a", pytest.approx(-0.2), pytest.approx(0.5))


def test_a_moved_table_reaches_the_models_through_its_target() -> None:
    moved = T.scaled({"vector_startup_cycles": 2.0, "hbm_bytes_per_s": 0.5})
    again = cost_table(moved.target)
    assert again["vector_startup_cycles"] == 2 * T["vector_startup_cycles"]
    assert again["hbm_bytes_per_s"] == 0.5 * T["hbm_bytes_per_s"]


def test_executed_calls_are_counted_per_iteration_of_one_ai_core() -> None:
    rows = [
        Instr("AIC0", 0, "M", "Mmad", m=128, k=128, n=128),
        Instr("AIC0", 1, "FIX", "CrossCoreSetFlag"),
        Instr("AIV0", 0, "V", "Exp", elems=64),
        Instr("AIV1", 0, "V", "Exp", elems=64),
        Instr("AIV0", 1, "V", "PipeBarrier"),
        Instr("AIV1", 1, "V", "PipeBarrier"),
        Instr("AIV0", 2, "V", "SetFlag"),
        Instr("AIV0", 3, "MTE2", "DataCopy", src="GM", dst="UB"),
        Instr("AIV1", 2, "MTE2", "DataCopy", src="GM", dst="UB"),
    ]
    n = counts.executed(rows, iterations=1)
    assert n == {"vector": 1, "PipeBarrier": 1, "LoadData": 0, "Mmad": 1,
                 "Fixpipe": 0, "GM copy": 1, "cross-core flag": 1}  # fmt: skip
