"""Row chunks (plan/memory/row_chunk.py): wide KV blocks whose S and P do not fit a vector
core's UB whole run their row-wise vector work over chunks of rows. The planner
chunks only when the whole rows do not fit, and takes the largest chunk that fits;
the .fir shows and forces the chunk; `fadsl check` counts chunk-sized tiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fadsl as fd
from fadsl import cli
from fadsl.driver.source import load_source

ROOT = Path(__file__).resolve().parents[3]
FA2 = ROOT / "examples" / "fa2.py"
SHAPE = {"B": 1, "N": 8, "Sq": 4096, "Skv": 4096, "D": 128}
HEAD = "pipelined(stages = 2, ring = 3, defer_update = true"


@pytest.fixture(scope="module")
def fa2():  # type: ignore[no-untyped-def]
    return load_source(str(FA2)).defs[0]


def _check(kernel, target: str, **consts):  # type: ignore[no-untyped-def]
    return fd.check(kernel, target=target, shape=SHAPE, consts=consts)


def _ub(report) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    m = next(m for m in report.memories if m.space == "UB")
    return m.used, m.capacity


@pytest.mark.parametrize("target", ["ascend310p3", "ascend910a"])
def test_fa2_at_block_kv_256_fits_the_ub_of_coupled_chips(fa2, target: str) -> None:  # type: ignore[no-untyped-def]
    report = _check(fa2, target, block_kv=256)
    assert report.fits, report.explanation
    assert "over 64 of the 128 rows of each tile at a time, 2 chunks" in report.table


def test_check_json_lists_the_chunks(capsys: pytest.CaptureFixture) -> None:
    argv = ["check", str(FA2), "--target", "ascend310p3", "--set", "block_kv=256"]
    assert cli.main(argv + ["--json"]) == 0
    chunks = json.loads(capsys.readouterr().out)["row_chunks"]
    assert chunks == [
        {"loop": "j", "source": "fa2.py:73", "rows": 64, "rows_per_vector_core": 128}
    ]


def test_fa2_at_block_kv_512_fits_the_910b2_ub(fa2) -> None:  # type: ignore[no-untyped-def]
    report = _check(fa2, "ascend910b2", block_kv=512)
    used, capacity = _ub(report)
    assert used <= capacity  # (L0 and L1 at 512 are the cube's sub-dots)
    # 64 rows per vector core do not fit: 2 chunks of 32, S staged 32 rows at a time
    assert "over 32 of the 64 rows of each tile at a time, 2 chunks" in report.table
    staging = next(line for line in report.table.splitlines() if "inQue" in line)
    assert f"{32 * 512 * 4:,}" in staging


def test_fa2_whose_rows_fit_is_not_chunked(fa2) -> None:  # type: ignore[no-untyped-def]
    for consts in ({"block_kv": 128}, {"block_kv": 256}):
        report = _check(fa2, "ascend910b2", **consts)
        assert report.fits and "row chunks" not in report.table


def test_the_fir_shows_and_forces_the_chunk(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "c"
    short = ["--set", "block_kv=128"]  # fa2's default (512) is chunked: 128 fits whole
    assert cli.main(["compile", str(FA2), *short, "-o", str(out)]) == 0
    text = (out / "fa2.fir").read_text()
    assert "row_chunk" not in text
    fir = tmp_path / "k.fir"
    fir.write_text(text.replace(HEAD, HEAD + ", row_chunk = 16"))
    shape = ",".join(f"{k}={v}" for k, v in SHAPE.items())
    capsys.readouterr()
    assert (
        cli.main(["check", str(fir), "--target", "ascend910b2", "--shape", shape]) == 0
    )
    shown = capsys.readouterr().out
    assert "over 16 of the 64 rows of each tile at a time, 4 chunks" in shown
    assert (
        cli.main(["compile", str(fir), "--shape", shape, "-o", str(tmp_path / "f")])
        == 0
    )
    assert "row_chunk = 16" in (tmp_path / "f" / "fa2.fir").read_text()
    cxx = (tmp_path / "f" / "fa2_kernel.cpp").read_text()
    assert "for (int64_t rc = 0; rc < ROWS / 16; ++rc)" in cxx


def test_the_model_issues_the_chunked_ops_once_per_chunk() -> None:
    """perf/ reads the planner's chunks: the softmax's ops (and their PipeBarriers)
    are issued once per chunk, so the chunked iteration costs more vector time."""
    import argparse
    import dataclasses

    from fadsl.commands import common
    from fadsl.perf.kernel import KernelModel
    from fadsl.perf.step_calls import total
    from fadsl.target import get

    args = argparse.Namespace(
        file=str(FA2),
        kernel=None,
        sets=["block_kv=512"],
        dtype=None,
        shape="B=1,N=1,Sq=4096,Skv=4096,D=128",
    )
    binding = common.build(args)
    env, target = binding.env(), get("ascend910b2")
    chunked = KernelModel(binding.kernel, target).at(env)
    assert chunked.kv_schedule.row_chunks == 2
    assert "vector rows in 2 chunks" in chunked.kv_schedule.describe()
    whole = KernelModel(
        binding.kernel,
        target,
        dataclasses.replace(chunked.kv_schedule, row_chunks=1),
    )
    a = chunked.estimate(env).engine_iteration_s["VECTOR"]
    b = whole.estimate(env).engine_iteration_s["VECTOR"]
    # the region's calls and PipeBarriers (perf/step_calls.py, as the backend emits
    # them), once more for the second chunk; the element work is the same
    timer, once = chunked.timer(env), whole.timer(env)
    region = [s for s in chunked.body if id(s) in timer.chunked[1]]
    assert region, "the softmax region is chunked"
    # (a row reduction's BlockReduce calls go by 255 repeats of the chunk, so a chunk
    # of half the rows is not always half the calls: compare with one such chunk)
    twice = [timer.vector_calls(s) for s in region]
    single = [once.vector_calls(s) for s in region]
    split = timer.engines.vector_units
    half = [total(s.calls, timer.env, 2 * split, 1) for s in region]
    assert [c.vector for c in twice] == [2 * c.vector for c in half]
    assert [c.barriers for c in twice] == [2 * c.barriers for c in half]
    e = timer.engines
    extra = sum(
        (t.vector - c.vector) * e.call_s + (t.barriers - c.barriers) * e.drain_s
        for t, c in zip(twice, single)
    )
    assert extra > 0
    assert abs((a - b) - extra) < 1e-12
