"""The modelled schedule keeps its rules: nothing starts before its inputs are ready,
a lane does one thing at a time, and double buffering (stages=2) overlaps the load of
KV block j+1 with the compute of block j while one stage does not; the command prints
the log and writes the picture."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.cli import main
from fadsl.commands import common
from fadsl.timeline import Event, Timeline, build

SHAPE = dict(B=1, N=2, Sq=1024, Skv=1024, D=128)


@lru_cache(maxsize=None)
def _timeline(
    stages: int, causal: bool = False, tname: str = "ascend910b1"
) -> Timeline:
    kdef = common.select(common.load_source("examples/fa2.py"), "fa2")
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


def test_double_buffering_overlaps_the_next_load_with_this_compute() -> None:
    tl = _timeline(2)
    for j in range(tl.iterations - 1):
        loads = tl.of(j + 1, "load")
        assert loads and any(_overlaps(ld, _compute_span(tl, j)) for ld in loads), j


def test_one_stage_loads_the_next_block_only_after_this_one() -> None:
    tl = _timeline(1)
    for j in range(tl.iterations - 1):
        done = max(e.end for e in tl.of(j))
        assert all(ld.start >= done for ld in tl.of(j + 1, "load")), j


def test_double_buffering_is_faster_and_the_closed_form_bounds_it() -> None:
    two, one = _timeline(2), _timeline(1)
    assert two.makespan < one.makespan
    assert two.overlapped_iteration_s <= two.period() <= one.serial_iteration_s * 1.001
    assert one.period() == pytest.approx(one.serial_iteration_s, rel=0.25)


def test_split_chips_pass_values_through_the_workspace() -> None:
    split, coupled = _timeline(2), _timeline(2, tname="ascend910a")
    assert {e.name for e in split.of(0, "ws")} == {
        "ws dot cube -> vector",
        "ws p_1 vector -> cube",
        "ws dot_1 cube -> vector",
    }
    assert not coupled.of(0, "ws")


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
