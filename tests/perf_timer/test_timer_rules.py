"""The timer's rules on small hand-written records (the contract's rows, as
``perf/timer/instr.py`` reads them): pipes in order, barriers drain, flags pair,
cross-core sets release waits after their latency, the cores share the HBM, the L2
serves re-reads, blocks start one dispatch apart; the trace keeps the trace-event
format."""

from __future__ import annotations

import json

import pytest

from fadsl import target as targets
from fadsl.perf.costs import CONSTANTS, cost_table
from fadsl.perf.timer import summary, trace
from fadsl.perf.timer.charge import charge
from fadsl.perf.timer.engine import time_record
from fadsl.perf.timer.instr import Instr, from_row

T = cost_table(targets.get("ascend910b2"))


def _v(seq: int, api: str = "Add", elems: int = 4096, core: str = "AIV0") -> Instr:
    return Instr(core, seq, "V", api, elems=elems, dtype="f32")


def _by_seq(tm, core: str = "AIV0"):  # type: ignore[no-untyped-def]
    return {p.instr.seq: p for p in tm.placed[core]}


def test_every_constant_has_a_source_and_a_unit() -> None:
    for c in CONSTANTS:
        assert c.source and c.unit, c.name
        assert c.uncertain or "assumption" not in c.source, c.name


def test_vector_calls_pipeline_and_a_barrier_drains_them() -> None:
    plain = _by_seq(time_record([_v(0), _v(1)], T))
    fenced = _by_seq(
        time_record([_v(0), Instr("AIV0", 1, "V", "PipeBarrier"), _v(2)], T)
    )
    assert plain[1].start == pytest.approx(plain[0].end)  # back to back
    lat = T["vector_latency_cycles"]
    assert fenced[1].start == pytest.approx(fenced[0].end + lat)  # the drain
    assert fenced[1].why == "drain"
    assert fenced[2].start == pytest.approx(
        fenced[0].end + lat + T["pipe_barrier_cycles"]
    )


def test_repeats_from_elements_and_transcendentals_cost_more() -> None:
    add = charge(_v(0, "Add", 4096), T).busy
    exp = charge(_v(0, "Exp", 4096), T).busy
    start = T["vector_startup_cycles"]
    assert add - start == pytest.approx(4096 * 4 / 256)  # 64 repeats of 256 B
    assert exp - start == pytest.approx((add - start) * T["vector_transcendental_cost"])


def test_a_wait_flag_holds_its_pipe_until_the_paired_set() -> None:
    rows = [
        Instr("AIV0", 0, "MTE2", "DataCopy", nbytes=65536, src="GM", dst="UB", gm="q", offset=0),
        Instr("AIV0", 1, "MTE2", "SetFlag", event="MTE2_V", event_id=0),
        Instr("AIV0", 2, "V", "WaitFlag", event="MTE2_V", event_id=0, deps=("1",)),
        _v(3),
    ]  # fmt: skip
    p = _by_seq(time_record(rows, T))
    copy_done = p[0].done
    assert p[1].start == pytest.approx(copy_done)  # the set waits for the copy's data
    assert p[2].start == pytest.approx(copy_done + T["flag_cycles"])
    assert p[2].why == "flag MTE2_V"
    assert p[3].start >= p[2].start


def test_a_cross_core_wait_waits_for_the_other_core() -> None:
    rows = [
        Instr("AIC0", 0, "M", "Mmad", m=128, k=128, n=128, dtype="f16"),
        Instr("AIC0", 1, "M", "CrossCoreSetFlag", event_id=3),
        Instr("AIV0", 0, "S", "CrossCoreWaitFlag", event_id=3, deps=("AIC0:1",)),
        _v(1),
    ]
    tm = time_record(rows, T)
    cube = _by_seq(tm, "AIC0")
    vec = _by_seq(tm)
    assert cube[0].end - cube[0].start == pytest.approx(
        T["mmad_startup_cycles"] + 8 * 8 * 8 * 8192 / T["cube_flops_per_cycle"]
    )
    assert vec[0].start == pytest.approx(cube[1].start + T["flag_handover_cycles"])
    assert vec[1].start >= vec[0].start


def test_sync_all_waits_for_every_core() -> None:
    # SyncAll<true>: every core sets flag 14, then waits on everyone's (runtime steps)
    rows = [
        _v(0, elems=1 << 16),
        Instr("AIV0", 1, "ALL", "SyncAll"),
        Instr("AIV0", 2, "ALL", "SyncAll", deps=("AIV0:1", "AIV1:0")),
        Instr("AIV1", 0, "ALL", "SyncAll"),
        Instr("AIV1", 1, "ALL", "SyncAll", deps=("AIV0:1", "AIV1:0")),
        Instr("AIV1", 2, "V", "Add", elems=64),
    ]
    tm = time_record(rows, T)
    slow = _by_seq(tm)
    fast = _by_seq(tm, "AIV1")
    released = slow[0].done + T["flag_handover_cycles"]
    assert slow[1].start == pytest.approx(slow[0].done)  # the set waits for the drain
    assert fast[1].start == pytest.approx(released) == slow[2].start
    assert fast[1].why == "SyncAll" and fast[2].start >= released


def _reads(cores: int, same: bool) -> list[Instr]:
    return [
        Instr(
            f"AIC{c}", s, "MTE2", "DataCopy", nbytes=1 << 20, src="GM", dst="L1",
            gm="k", offset=(0 if same else c << 24) + (s << 20),
        )
        for c in range(cores)
        for s in range(4)
    ]  # fmt: skip


def test_the_cores_share_the_hbm_and_the_l2_serves_re_reads() -> None:
    # 910B2's HBM is exactly 24 cores x 32 B/cycle: at half of it, 24 cores' misses
    # take about twice as long as one core's
    half = T.scaled({"hbm_bytes_per_s": 0.5})
    one = time_record(_reads(1, False), half).span
    many = time_record(_reads(24, False), half).span
    assert many > 1.8 * one
    assert time_record(_reads(24, False), T).span == pytest.approx(one, rel=0.01)
    shared = time_record(_reads(24, True), half)
    assert shared.hbm_bytes == 4 << 20  # one core's reads miss, the rest hit
    assert shared.span < many


def test_blocks_start_one_dispatch_apart_and_the_launch_is_added() -> None:
    rows = [
        Instr("AIV0", 0, "V", "Add", block=0, elems=64),
        Instr("AIV2", 0, "V", "Add", block=1, elems=64),
    ]
    tm = time_record(rows, T)
    gap = tm.placed["AIV2"][0].start - tm.placed["AIV0"][0].start
    assert gap == pytest.approx(T["block_dispatch_cycles"])
    assert tm.total_cycles == pytest.approx(T["launch_overhead_cycles"] + tm.span)


def test_a_mix_blocks_vector_cores_start_with_its_cube_core() -> None:
    """In a mix launch the record's block of a vector core is its GetBlockIdx (the
    AIV's own index: AIV2 and AIV3 are block 1's), so AIV3 starts one dispatch after
    AIV0, with AIC1, not three (the timer used to start AIV30 of fa2's block 15 16 us
    after its cube core)."""
    rows = [Instr(f"AIC{b}", 0, "M", "Mmad", block=b, m=16, k=16, n=16) for b in (0, 1)]
    rows += [Instr(f"AIV{v}", 0, "V", "Add", block=v, elems=64) for v in range(4)]
    tm = time_record(rows, T)
    first = {c: p[0].start for c, p in tm.placed.items()}
    d = T["block_dispatch_cycles"]
    assert first["AIV1"] == pytest.approx(first["AIC0"])
    assert first["AIV3"] - first["AIV0"] == pytest.approx(d)
    assert first["AIV3"] == pytest.approx(first["AIC1"])


def test_rows_as_the_parser_gives_them() -> None:
    row = {"core": "AIV3", "seq": "7", "pipe": "V", "api": "WaitFlag",
           "event": "MTE2_V", "id": "1", "from": "5", "bytes": "-", "block": "1"}  # fmt: skip
    i = from_row(row)
    assert (i.core, i.seq, i.deps, i.event_id, i.nbytes, i.block) == (
        "AIV3", 7, ("AIV3:5",), 1, None, 1,
    )  # fmt: skip


def validate_trace(doc: dict) -> None:  # type: ignore[type-arg]
    """The Trace Event Format's rules that Perfetto and chrome://tracing rely on."""
    events = doc["traceEvents"]
    assert isinstance(events, list) and events
    named: set[tuple[int, int]] = set()
    procs: set[int] = set()
    for e in events:
        assert e["ph"] in ("X", "B", "E", "M"), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        assert isinstance(e["name"], str) and e["name"], e
        if e["ph"] == "M":
            assert e["name"] in (
                "process_name", "thread_name", "process_sort_index", "thread_sort_index",
            ), e  # fmt: skip
            assert "name" in e["args"] or "sort_index" in e["args"], e
            if e["name"] == "thread_name":
                named.add((e["pid"], e["tid"]))
            if e["name"] == "process_name":
                procs.add(e["pid"])
        else:
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
    for e in events:
        if e["ph"] != "M":
            assert (e["pid"], e["tid"]) in named, f"unnamed track: {e}"
            assert e["pid"] in procs, e


def test_the_trace_keeps_the_trace_event_format(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows = [
        Instr("AIV0", 0, "MTE2", "DataCopy", nbytes=4096, src="GM", dst="UB", gm="q", offset=0),
        Instr("AIV0", 1, "MTE2", "SetFlag", event="MTE2_V", event_id=0),
        Instr("AIV0", 2, "V", "WaitFlag", event="MTE2_V", event_id=0, deps=("1",)),
        _v(3),
        Instr("AIC0", 0, "M", "Mmad", m=16, k=16, n=16),
    ]  # fmt: skip
    tm = time_record(rows, T)
    path = tmp_path / "trace.json"
    trace.write(str(path), tm, "test")
    doc = json.loads(path.read_text())
    validate_trace(doc)
    names = {
        e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"
    }
    assert {"PIPE_MTE2", "PIPE_V", "PIPE_M"} <= names
    waits = [e for e in doc["traceEvents"] if e.get("cat") == "wait"]
    assert waits and waits[0]["name"] == "wait: flag MTE2_V"
    lines = summary.text(tm)
    assert any("AIV PIPE_V" in line for line in lines)
