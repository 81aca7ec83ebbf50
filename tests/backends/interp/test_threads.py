"""A grid split over threads computes the same bits as one batched run (threads.py).

Every example runs through ``fadsl run`` with FADSL_THREADS=1 and with 3 threads (so
chunks are uneven, and varlen's per-batch loop bounds differ between chunks): every
output file and the loop statistics (skipped blocks) must be identical. A failure in
a split grid is reported exactly as the one-thread run reports it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from interp_kit import Kit, point, random, span

from fadsl.backends.interp.threads import split, thread_count
from fadsl.cli import main
from fadsl.errors import ExecutionError, Loc, UsageError
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType

F32 = DType.F32

ROOT = Path(__file__).resolve().parents[3]
SHAPES = {  # the split axis (the longer of B and N) has 6 or 7 points: 3 chunks
    "fa1": "B=1,N=7,Sq=150,Skv=130,D=64",
    "fa2": "B=7,N=1,Sq=150,Skv=130,D=64",
    "fa3": "B=1,N=7,Sq=150,Skv=130,D=64",
    "fa2_bwd": "B=1,N=7,Sq=150,Skv=130,D=64",
    "causal": "B=2,N=7,Sq=200,Skv=150,D=64",
    "sliding_window": "B=1,N=6,Sq=700,Skv=650,D=64",
    "alibi": "B=1,N=6,Nkv=2,Sq=130,Skv=200,D=64",
    "softcap": "B=7,N=2,Sq=100,Skv=170,D=64",
    "gqa": "B=1,N=6,Nkv=3,Sq=90,Skv=200,D=64",
    "document_mask": "B=1,N=7,Sq=650,Skv=650,D=64",
    "varlen": "B=7,N=2,Sq=333,Skv=400,D=64",
    "dropout": "B=1,N=7,Sq=150,Skv=190,D=64",
    "decode_paged": "B=7,N=4,Nkv=2,Sq=3,D=64,Pages=40,MaxPages=6",
}
CAUSAL = {"fa1", "fa2", "fa3", "fa2_bwd"}


def _run(
    name: str,
    out: Path,
    threads: int,
    monkeypatch: pytest.MonkeyPatch,
    shape: str | None = None,
) -> None:
    monkeypatch.setenv("FADSL_THREADS", str(threads))
    argv = ["run", str(ROOT / "examples" / f"{name}.py"), "--shape"]
    argv += [shape or SHAPES[name]]
    argv += ["--no-check", "-o", str(out)]
    if name in CAUSAL:
        argv += ["--set", "causal=True", "--set", "block_q=64", "--set", "block_kv=64"]
    assert main(argv) == 0


def _meta(folder: Path) -> dict[str, object]:
    meta = json.loads((folder / "meta.json").read_text())
    return {k: meta.get(k) for k in ("loop_stats", "kv_blocks")}


def _same_runs(one: Path, three: Path, name: str) -> None:
    bins = sorted(p.name for p in one.glob("*.bin"))
    assert bins == sorted(p.name for p in three.glob("*.bin"))
    for b in bins:
        assert (one / b).read_bytes() == (three / b).read_bytes(), (name, b)
    assert _meta(one) == _meta(three), name


def test_every_example_is_the_same_on_three_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    found = (ROOT / "examples").glob("*.py")
    examples = sorted(p.stem for p in found if not p.name.startswith("test_"))
    assert sorted(SHAPES) == examples, "a new example needs a shape here"
    for name in examples:
        one, three = tmp_path / f"{name}-1", tmp_path / f"{name}-3"
        _run(name, one, 1, monkeypatch)
        _run(name, three, 3, monkeypatch)
        _same_runs(one, three, name)
    capsys.readouterr()


@pytest.mark.parametrize("batch, threads", [(5, 2), (9, 4)])
def test_a_chunk_whose_points_agree_on_loop_bounds_folds_as_the_whole_grid(
    batch: int,
    threads: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Paged decode's KV loop stops at a bound that depends on b (seqlens_kv) and on
    the query row y (causal). Over the whole grid the stops differ, so the loop runs
    flattened and each point's Q tile is its own matmul. A chunk whose sequences all
    have the same page count has one stop everywhere; run as a uniform loop it folded
    its Sq query rows into one matmul and changed last bits (B=7 on 3 threads: 2
    fp16 elements of b=1, s=2, n=1). ``control._bounds`` keeps such a loop flat."""
    shape = f"B={batch},N=4,Nkv=2,Sq=3,D=64,Pages=40,MaxPages=6"
    one, many = tmp_path / "one", tmp_path / "many"
    _run("decode_paged", one, 1, monkeypatch, shape)
    _run("decode_paged", many, threads, monkeypatch, shape)
    _same_runs(one, many, "decode_paged")
    capsys.readouterr()


def test_per_head_block_lists_with_three_heads_on_three_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Chunks of one head each would batch (and fold) Q blocks that the whole grid
    runs as separate matmuls, and change the last bits; so the grid stays whole."""
    shape = "B=1,N=3,Sq=650,Skv=650,D=64"
    one, three = tmp_path / "one", tmp_path / "three"
    _run("document_mask", one, 1, monkeypatch, shape)
    _run("document_mask", three, 3, monkeypatch, shape)
    _same_runs(one, three, "document_mask")
    capsys.readouterr()


@pytest.mark.parametrize("threads", [1, 2])
def test_a_failure_in_a_split_grid_reads_as_on_one_thread(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point b=3 fails at the first load, b=0 only at the second. One batched run stops
    at the first load (b=3); split over b into {0, 1} and {2, 3}, the chunk of b=0
    comes first, failing at the second load. The message must be the one-thread one."""
    monkeypatch.setenv("FADSL_THREADS", str(threads))
    first = Loc("kernel_under_test.py", 7, 4, 20, text="    t = fd.load(x[b + 1])")
    second = Loc("kernel_under_test.py", 8, 4, 20, text="    u = fd.load(x[4 - b])")
    kit = Kit()
    kit.inp("x", (4, 2, 4), F32)
    kit.out("o", (4, 2, 4), F32)

    def body(b: Any, i: Any) -> None:
        t = kit.load("x", point(b + 1), point(i), span(0, 4), loc=first)
        u = kit.load("x", point(4 - b), point(i), span(0, 4), loc=second)
        kit.store("o", kit.op(ir.Add, lhs=t, rhs=u), point(b), point(i), span(0, 4))

    kit.grid([4, 2], body, names=("b", "i"))
    assert split((4, 2), threads) == (
        None if threads == 1 else (0, [range(0, 2), range(2, 4)])
    )
    with pytest.raises(ExecutionError) as info:
        kit.run({}, x=random((4, 2, 4), F32))
    assert info.value.loc == first
    assert info.value.message == (
        "out-of-bounds read of `x`: index 4 in dimension 0 (4) is outside [0, 4) "
        "at b=3, i=0"
    )


def test_split_takes_the_longest_axis_but_the_last() -> None:
    assert split((1, 8, 32), 2) == (1, [range(0, 4), range(4, 8)])
    assert split((5, 4, 32), 2) == (0, [range(0, 2), range(2, 5)])
    assert split((7, 2), 3) == (0, [range(0, 2), range(2, 4), range(4, 7)])
    assert split((1, 1, 32), 2) is None  # the last axis is folded into matmul rows
    assert split((8, 8), 1) is None
    assert split((3, 2, 9), 2) is None  # chunks keep two points of the split axis
    assert split((5, 9), 8) == (0, [range(0, 2), range(2, 5)])


def test_thread_count_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FADSL_THREADS", "3")
    assert thread_count() == 3
    monkeypatch.delenv("FADSL_THREADS")
    assert thread_count() >= 1
    monkeypatch.setenv("FADSL_THREADS", "0")
    with pytest.raises(UsageError) as err:
        thread_count()
    assert err.value.message == "FADSL_THREADS='0' is not a positive integer"
    assert (
        err.value.hint
        == "unset it, or set e.g. FADSL_THREADS=1 (one thread) or FADSL_THREADS=2"
    )
