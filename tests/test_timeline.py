"""The modelled schedule keeps its rules: nothing starts before its inputs are ready,
a lane does one thing at a time, and double buffering (stages=2) overlaps the load of
KV block j+1 with the compute of block j while one stage does not; the command prints
the log and writes the picture."""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.cli import main
from fadsl.ir import nodes as ir
from fadsl.driver.source import load_source, select
from fadsl.perf.costs import cost_table
from fadsl.perf.timeline import Event, Timeline, build

SHAPE = dict(B=1, N=2, Sq=1024, Skv=1024, D=128)


@lru_cache(maxsize=None)
def _timeline(
    stages: int, causal: bool = False, tname: str = "ascend910b1"
) -> Timeline:
    kdef = select(load_source("examples/fa2.py"), "fa2")
    kernel = kdef.build({"stages": stages, "causal": causal})
    env = {**SHAPE, "block_q": 128, "block_kv": 128, "stages": stages, "scale": 0.088}
    return build(kernel, targets.get(tname), env)


CASES = [
    (2, False, "ascend910b1"),
    (1, False, "ascend910b1"),
    (2, True, "ascend910b1"),
    (2, False, "ascend910a"),
    (1, False, "ascend310p3"),
]


@pytest.mark.parametrize("stages, causal, tname", CASES)
def test_nothing_starts_before_its_inputs_are_ready(
    stages: int, causal: bool, tname: str
) -> None:
    tl = _timeline(stages, causal, tname)
    assert tl.events and tl.iterations == SHAPE["Skv"] // 128
    for e in tl.events:
        assert e.end >= e.start >= 0
        for d in e.deps:
            assert e.start >= tl.events[d].end, (e.name, tl.events[d].name)


@pytest.mark.parametrize("stages, causal, tname", CASES)
def test_a_lane_does_one_thing_at_a_time(stages: int, causal: bool, tname: str) -> None:
    tl = _timeline(stages, causal, tname)
    for lane in {e.lane for e in tl.events}:
        spans = sorted((e.start, e.end) for e in tl.events if e.lane == lane)
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert start >= end


def _compute_span(tl: Timeline, j: int) -> tuple[float, float]:
    """From the first cube or vector event of iteration j to the end of its last."""
    work = [e for e in tl.of(j) if e.kind in ("dot", "vector")]
    return min(e.start for e in work), max(e.end for e in work)


def _overlaps(e: Event, span: tuple[float, float]) -> bool:
    return e.start < span[1] and span[0] < e.end


@pytest.mark.smoke
def test_double_buffering_overlaps_the_next_load_with_this_compute() -> None:
    tl = _timeline(2)
    for j in range(tl.iterations - 1):
        loads = tl.of(j + 1, "load")
        span = _compute_span(tl, j)
        assert loads and all(ld.start < span[1] for ld in loads), j
        if j > 0:  # from then on the slot frees during iteration j - 1's compute
            assert any(
                _overlaps(ld, _compute_span(tl, j - 1)) or _overlaps(ld, span)
                for ld in loads
            ), j


def test_one_stage_loads_the_next_block_only_after_this_one() -> None:
    """Except the K block: the cube runs one iteration ahead (plan/schedule/ring.py), so its
    stage A, the K load with S = Q K^T, comes before the rest of iteration j."""
    tl = _timeline(1)
    cube = ("AIC MTE2", "MTE1", "CUBE", "FIXPIPE")
    for j in range(tl.iterations - 1):
        # the cube's work on block j (the vector cores' update of j is deferred)
        done = max(e.end for e in tl.of(j) if e.lane in cube)
        loads = tl.of(j + 1, "load")
        assert any(ld.name == "load kt (k)" for ld in loads)
        late = [ld for ld in loads if ld.name != "load kt (k)"]
        assert late and all(ld.start >= done for ld in late), j


def test_the_cube_computes_the_next_scores_during_this_softmax() -> None:
    """Ring of two slots: S_{j+1} = Q K_{j+1}^T goes to the cube before P_j @ V, without
    waiting for the softmax of S_j (before the ring, it waited for P_j and P_j @ V);
    whether it also overlaps that softmax in time depends on the cost table's values
    (with a cube <-> vector hand-over of 1000 cycles it starts right after it here)."""
    tl = _timeline(2)
    for j in range(1, tl.iterations - 1):
        softmax = next(e for e in tl.of(j, "vector") if "softmax" in e.name)
        nxt = next(e for e in tl.of(j + 1, "dot") if e.name.startswith("cube dot ="))
        pv = next(e for e in tl.of(j, "dot") if e.name.startswith("cube dot_1 ="))
        assert nxt.start < pv.start, j
        assert nxt.waited_for != "inputs" or nxt.start < softmax.end, j


def _slow_loads(tname: str = "ascend910b1") -> targets.Target:
    """A target whose MTE2 is 20x slower, so that loads matter."""
    t = targets.get(tname)
    rates = dict(t.rates)
    for k in ("mte2_bytes_per_cycle", "ddr_bytes_per_cycle"):
        rates[k] = dataclasses.replace(rates[k], value=rates[k].value / 20)
    return dataclasses.replace(t, rates=rates)


def _ring_off(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with every loop at ring = 1: the cube waits for P_j before S_{j+1}."""

    def body(ops: tuple[ir.Op, ...]) -> tuple[ir.Op, ...]:
        out = []
        for op in ops:
            if isinstance(op, ir.For):
                op = dataclasses.replace(op, ring=1, body=body(op.body))
            elif isinstance(op, ir.Grid):
                op = dataclasses.replace(op, body=body(op.body))
            out.append(op)
        return tuple(out)

    return dataclasses.replace(kernel, body=body(kernel.body))


def test_double_buffering_is_faster_and_the_closed_form_bounds_it() -> None:
    """With the ring off. (With the cube one iteration ahead, loads 20x slower make a
    second stage slower: the cube's in-order MTE2 then copies P behind two prefetches.)
    """
    kdef = select(load_source("examples/fa2.py"), "fa2")
    slow = _slow_loads()
    tls = {}
    for stages in (1, 2):
        kernel = _ring_off(kdef.build({"stages": stages, "causal": False}))
        env = {**SHAPE, "block_q": 128, "block_kv": 128, "stages": stages}
        tls[stages] = build(kernel, slow, env)
    two, one = tls[2], tls[1]
    assert two.makespan < one.makespan
    assert two.kernel.time_s < one.kernel.time_s
    assert _timeline(2).makespan <= _timeline(1).makespan
    # the closed form's perfect overlap is a lower bound of the schedule's period
    assert two.overlapped_iteration_s <= two.period()


def test_the_ring_shortens_the_schedule() -> None:
    kdef = select(load_source("examples/fa2.py"), "fa2")
    env = {**SHAPE, "block_q": 128, "block_kv": 128, "stages": 2}
    t = targets.get("ascend910b1")
    for target in (t, _slow_loads()):
        kernel = kdef.build({"stages": 2, "causal": False})
        ring, off = build(kernel, target, env), build(_ring_off(kernel), target, env)
        assert ring.lead == 2 and off.lead == 0  # 3 slots (ring.DEFAULT_DEPTH)
        assert ring.makespan < off.makespan, target.name


def test_split_chips_pass_values_through_the_workspace() -> None:
    split, coupled = _timeline(2), _timeline(2, tname="ascend910a")
    crossing = [e for e in split.of(0) if e.kind in ("ws_write", "ws_read")]
    assert [(e.lane, e.name) for e in crossing] == [
        ("FIXPIPE", "ws dot write (cube -> vector)"),
        ("AIV MTE2", "ws dot read (cube -> vector)"),
        ("AIV MTE3", "ws p_1 write (vector -> cube)"),
        ("AIC MTE2", "ws p_1 read (vector -> cube)"),
        ("FIXPIPE", "ws dot_1 write (cube -> vector)"),
        ("AIV MTE2", "ws dot_1 read (cube -> vector)"),
    ]
    assert not [e for e in coupled.events if e.kind.startswith("ws")]


def test_every_transfer_is_charged_to_the_engine_that_does_it() -> None:
    tl = _timeline(2)
    lanes = {(e.kind, e.name.split(" (")[0]): e.lane for e in tl.of(0)}
    # K and V feed the cube: the cube core's MTE2 reads them into L1
    assert lanes[("load", "load kt")] == lanes[("load", "load vt")] == "AIC MTE2"
    assert lanes[("mte1", "L1->L0 qt @ kt^T")] == "MTE1"
    assert lanes[("dot", "cube dot = qt @ kt^T")] == "CUBE"
    finish = tl.of(None, "store")
    assert [e.lane for e in finish] == ["AIV MTE3"]
    coupled = _timeline(2, tname="ascend910a")
    assert {e.lane for e in coupled.events} <= {
        "MTE2",
        "MTE1",
        "CUBE",
        "VECTOR",
        "MTE3",
        "SCALAR",
    }
    # a flag hand-over separates each workspace write from its read
    flag = tl.kernel.bounds.phases.overhead * 0 + _flag_s()
    reads = {e.name.split(" read")[0]: e for e in tl.of(0, "ws_read")}
    for w in tl.of(0, "ws_write"):
        r = reads[w.name.split(" write")[0]]
        assert r.start >= w.end + flag * 0.999
        # the deferred update reads P @ V after the next softmax: it no longer waits
        assert r.waited_for == "flag" or r.name.startswith("ws dot_1 read")


def _flag_s() -> float:
    t = cost_table(targets.get("ascend910b1"))
    return t.seconds("flag_handover_cycles")


@pytest.mark.parametrize("causal", [False, True])
def test_the_headline_is_what_the_schedule_sums_to(causal: bool) -> None:
    """launch + the busiest core's tasks, each its task overhead + its schedule."""
    tl = _timeline(2, causal)
    kt = tl.kernel
    t = cost_table(targets.get("ascend910b1"))
    tasks = SHAPE["B"] * SHAPE["N"] * (SHAPE["Sq"] // 128)
    # the launch, then the blocks dispatched one after another (perf/costs.py)
    dispatch = t["block_dispatch_cycles"] * (min(tasks, 24) - 1)
    launch = (t["launch_overhead_cycles"] + dispatch) / t.clock
    task = t.seconds("task_overhead_cycles")
    assert (kt.tasks, kt.block_dim) == (tasks, min(tasks, 24))
    if not causal:  # every task is the scheduled one
        per_core = -(-tasks // kt.block_dim)
        assert kt.time_s == pytest.approx(launch + per_core * (task + tl.makespan))
    else:  # one task per core: the last Q block (the scheduled task) is the longest
        assert kt.block_dim == tasks
        # dealt longest first, it runs on an early block: the headline is the core
        # whose start (c dispatches) plus its task ends last, at most the last block's
        # start plus the longest task
        first = t["launch_overhead_cycles"] / t.clock
        assert first + task + tl.makespan <= kt.time_s * (1 + 1e-12)
        assert kt.time_s <= (launch + task + tl.makespan) * (1 + 1e-12)
        assert kt.time_s < launch + task + tl.makespan
    assert kt.tflops == pytest.approx(kt.cube_flops / kt.time_s / 1e12)
    assert kt.time_s >= tl.estimate.time_overlap_s * 0.999  # the bound holds


def test_long_loops_extend_a_periodic_schedule_exactly() -> None:
    from fadsl.perf.kernel import KernelModel

    kdef = select(load_source("examples/fa2.py"), "fa2")
    model = KernelModel(kdef.build({"stages": 2}), targets.get("ascend910b2"))
    env = {**SHAPE, "Skv": 8192, "block_q": 128, "block_kv": 128, "stages": 2}
    timer = model.timer(env)
    full = max(e.end for e in model.schedule(timer, 64).events)
    assert model.task_seconds(timer, 64) == pytest.approx(full, rel=1e-9)


def test_the_command_prints_events_and_writes_an_svg(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    picture = tmp_path / "t.svg"
    status = main(
        [
            "timeline",
            "examples/fa2.py",
            "--shape",
            "B=1,N=2,Sq=512,Skv=512,D=64",
            "--iterations",
            "2",
            "-o",
            str(picture),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    assert "MODELLED" in out and "load kt (k)" in out and "cube dot = qt @ kt^T" in out
    assert "vector softmax" in out and "waited for" in out
    text = picture.read_text()
    assert text.startswith("<svg") and "MODELLED" in text and ">CUBE<" in text


def test_the_command_refuses_other_picture_kinds(tmp_path: Path) -> None:
    assert (
        main(
            [
                "timeline",
                "examples/fa2.py",
                "--shape",
                "B=1,N=1,Sq=128,Skv=128,D=64",
                "-o",
                str(tmp_path / "t.pdf"),
            ]
        )
        == 1
    )
