"""``fd.atomic_add`` lowered to Ascend C (backends/ascendc/atomic_io.py) and run by
``fadsl sim`` on the CPU runtime against the interpreter: f32 GM sums zeroed by the
vector cores, SyncAll, SetAtomicAdd<float> copies from UB, SyncAll, the cast.

Tolerance: the cores of the CPU runtime add in whatever order their threads reach GM,
the interpreter in grid order, so the f32 sums may differ by the reordering of f32
additions, at most 2 (n - 1) 2^-24 sum|x_i| for n terms x_i each, and the rounding to
the output's dtype once may then differ by one unit in its last place. The tests
bound |sim - interpreter| by exactly that (``_bound``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fadsl as fd
from fadsl.cli import main

pytestmark = [
    pytest.mark.cpu_runtime,
    pytest.mark.skipif(
        shutil.which("g++") is None or shutil.which("cmake") is None,
        reason="needs g++ and cmake",
    ),
]


@fd.kernel
def headsum(
    x: fd.In("B", "N", "S", "D"),
    total: fd.Out("B", "S", "D"),
    block: int = 64,
):
    """Every head of a batch adds its rows into one output: N tasks add to each block."""
    for b, h, i in fd.grid(B, N, fd.cdiv(S, block)):
        rows = fd.ds(i * block, block)
        xt = fd.load(x[b, h, rows, :], pad=0)
        fd.atomic_add(total[b, rows, :], fd.cast(xt, fd.f32) * 0.25)


@fd.kernel
def splitk(
    a: fd.In("M", "K"),
    w: fd.In("K", "D"),
    y: fd.Out("M", "D"),
    block_m: int = 32,
    block_k: int = 64,
):
    """y = a @ w with K split over grid points (a MIX kernel): cdiv(K, block_k) tasks
    add into each row block."""
    for i, kk in fd.grid(fd.cdiv(M, block_m), fd.cdiv(K, block_k)):
        rows = fd.ds(i * block_m, block_m)
        ks = fd.ds(kk * block_k, block_k)
        at = fd.load(a[rows, ks], pad=0)
        wt = fd.load(w[ks, :], pad=0)
        fd.atomic_add(y[rows, :], fd.dot(at, wt))


@fd.kernel
def colsum(
    x: fd.In("S", "D", dtype=fd.f32),
    total: fd.Out("R", "D", dtype=fd.f32),
    block: int = 16,
):
    """Column sums of x folded onto R rows (f32 output: accumulated in place)."""
    for i in fd.grid(fd.cdiv(S, block)):
        xt = fd.load(x[fd.ds(i * block, block), :], pad=0)
        fd.atomic_add(total[fd.ds(0, block), :], xt)


def _bound(terms: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    """Per element: reordering of n f32 additions, plus one ulp of ``dtype``."""
    n = terms.shape[axis]
    magnitude = np.abs(terms.astype(np.float64)).sum(axis)
    reorder = 2 * (n - 1) * 2.0**-24 * magnitude
    ulp = np.spacing(np.abs(terms.astype(np.float64).sum(axis)).astype(dtype))
    return reorder + np.abs(ulp.astype(np.float64))


def _agree(sim: np.ndarray, ref: np.ndarray, bound: np.ndarray) -> None:
    diff = np.abs(sim.astype(np.float64) - ref.astype(np.float64))
    assert np.isfinite(sim.astype(np.float64)).all()
    worst = np.unravel_index(np.argmax(diff - bound), diff.shape)
    assert (
        diff <= bound
    ).all(), (
        f"|sim - interpreter| {diff[worst]:.3e} > bound {bound[worst]:.3e} at {worst}"
    )


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_heads_added_by_many_aiv_cores_agree_with_the_interpreter(dtype: str) -> None:
    """AIV-only launch; S = 100 leaves a tail block of 36 rows."""
    np_dt = np.float16 if dtype == "fp16" else ml_dtypes.bfloat16
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 5, 100, 32)).astype(np_dt)
    shape = dict(B=2, N=5, S=100, D=32)
    got = fd.sim(headsum, shape=shape, dtype=dtype, x=x)["total"]
    ref = fd.interpret(headsum, shape=shape, dtype=dtype, x=x)["total"]
    terms = x.astype(np.float32) * np.float32(0.25)
    _agree(got, ref, _bound(terms, 1, np_dt))
    assert got.dtype == np_dt


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_split_k_matmul_adds_across_cores_with_tails(dtype: str) -> None:
    """MIX launch (dot on the cube, atomic adds on the AIVs); tails in M and K."""
    np_dt = np.float16 if dtype == "fp16" else ml_dtypes.bfloat16
    rng = np.random.default_rng(2)
    a = rng.standard_normal((100, 200)).astype(np_dt)
    w = rng.standard_normal((200, 64)).astype(np_dt)
    shape = dict(M=100, K=200, D=64)
    got = fd.sim(splitk, shape=shape, dtype=dtype, a=a, w=w)["y"]
    ref = fd.interpret(splitk, shape=shape, dtype=dtype, a=a, w=w)["y"]
    # 4 K blocks add into every element; each block's dot sum is exact in f32 to
    # within the same bound, so the bound takes the products themselves as terms
    prod = a.astype(np.float32)[:, :, None] * w.astype(np.float32)[None, :, :]
    _agree(got, ref, _bound(prod, 1, np_dt))
    exact = a.astype(np.float64) @ w.astype(np.float64)
    ulp = np.abs(np.spacing(np.abs(exact).astype(np_dt)).astype(np.float64))
    assert (np.abs(got.astype(np.float64) - exact) <= ulp + 1e-3).all()


def test_an_f32_output_accumulates_in_place(tmp_path: Path) -> None:
    """No workspace, no cast: the output is zeroed and added into; S = 72 has a tail
    block whose padded rows add zeros."""
    x = np.random.default_rng(3).standard_normal((72, 48)).astype(np.float32)
    shape = dict(S=72, D=48, R=16)
    got = fd.sim(colsum, shape=shape, x=x)["total"]
    ref = fd.interpret(colsum, shape=shape, x=x)["total"]
    padded = np.zeros((80, 48), np.float32)
    padded[:72] = x
    _agree(got, ref, _bound(padded.reshape(5, 16, 48), 0, np.float32))


def test_check_reports_the_sums_and_their_buffers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = Path(__file__)
    argv = ["check", str(src), "--kernel", "headsum", "--target", "ascend910b1"]
    assert main(argv + ["--shape", "B=2,N=5,S=100,D=32"]) == 0
    text = capsys.readouterr().out
    assert "totalSum       AIV   GM      [2, 100, 32]  f32" in text
    # 2 * 100 * 32 f32 = 25,600 B, a multiple of 512
    assert "GM atomic sums (`total`): 25,600 B per launch" in text
    assert "atomicSumBuf" in text and "atomicCastBuf" in text
    assert main(argv + ["--shape", "B=2,N=5,S=100,D=32", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["atomic_bytes"] == 25600
    assert report["atomic_sums"] == [
        {"output": "total", "shape": ["B", "S", "D"], "in_place": False, "bytes": 25600}
    ]


@fd.kernel
def scaled(
    x: fd.In("S", "D"),
    y: fd.Out("S", "D", dtype=fd.f32),
    block: int = 64,
):
    for i in fd.grid(fd.cdiv(S, block)):
        rows = fd.ds(i * block, block)
        fd.store(y[rows, :], fd.cast(fd.load(x[rows, :], pad=0), fd.f32) * 0.5)


def test_a_kernel_without_dots_runs_each_task_once_on_aiv_cores() -> None:
    """A kernel without dots is AIV_ONLY: launched in AIV mode with no cube class and no
    row split. It used to declare `row0 = ... * ROWS` without ROWS (no build) and to
    launch MIX, where both AIVs of a block ran every task."""
    x = np.random.default_rng(4).standard_normal((100, 32)).astype(np.float16)
    got = fd.sim(scaled, shape=dict(S=100, D=32), x=x)["y"]
    np.testing.assert_array_equal(got, x.astype(np.float32) * np.float32(0.5))


def _run_edited(
    tmp_path: Path, edit: tuple[str, str], count: int
) -> tuple[int, str, Path]:
    """headsum compiled, one statement of its kernel edited, built with cmake against
    the CPU runtime and run: (exit code, stderr, run folder)."""
    import subprocess

    from fadsl.runtime import include_dir

    project = tmp_path / "p"
    shape = "B=1,N=4,S=200,D=32"
    argv = ["compile", __file__, "--kernel", "headsum", "--shape", shape, "--quiet"]
    assert main(argv + ["-o", str(project)]) == 0
    kernel = project / "headsum_kernel.cpp"
    text = kernel.read_text()
    assert text.count(edit[0]) == count, edit[0]
    kernel.write_text(text.replace(edit[0], edit[1]))
    build = project / "build"
    for cmd in (
        ["cmake", "-S", str(project), "-B", str(build), "-DRUN_MODE=fadsl"]
        + [f"-DFADSL_RUNTIME_DIR={include_dir()}"],
        ["cmake", "--build", str(build), "-j", "2"],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = tmp_path / "run"
    (run / "input").mkdir(parents=True)
    (run / "output").mkdir()
    (run / "input" / "shape.txt").write_text("B 1\nN 4\nS 200\n")
    x = np.random.default_rng(5).standard_normal((1, 4, 200, 32)).astype(np.float16)
    x.tofile(run / "input" / "x.bin")
    code, err = _run_main(build / "headsum_main", run)
    return code, err, run


def _run_main(exe: Path, run: Path, sanitize: str | None = None) -> tuple[int, str]:
    """Runs a built headsum_main on ``run``; ``sanitize`` overrides FADSL_SANITIZE
    (the suite turns the sanitizer on, tests/conftest.py)."""
    import os
    import subprocess

    env = dict(os.environ)
    if sanitize is not None:
        env["FADSL_SANITIZE"] = sanitize
    proc = subprocess.run([str(exe), str(run)], capture_output=True, text=True, env=env)
    return proc.returncode, proc.stderr


def test_the_runtime_catches_adds_racing_the_zeroing(tmp_path: Path) -> None:
    """Without the SyncAll between the zeroing and the grid, a core adds into sums
    another core zeroes: whichever comes first, the CPU runtime's race checker stops
    the run (an add over an unseen zero, or a zero over an unseen add)."""
    code, err, _ = _run_edited(
        tmp_path,
        (
            "AscendC::SyncAll<true>();\n        const int64_t tasks",
            "const int64_t tasks",
        ),
        1,
    )
    assert code != 0
    assert "overwrite of another core's output before waiting" in err, err[-2000:]


def test_sums_that_are_not_zeroed_come_out_as_poison(tmp_path: Path) -> None:
    """GM is not cleared before atomic adds: without the zero phase the sums start
    from GmAlloc's 0xFF poison (NaN), which is why the kernel zeroes them first. The
    sanitizer names the cause: the zero tile copied out was never written."""
    code, err, run = _run_edited(
        tmp_path,
        (
            "AscendC::Duplicate(zeros, 0.0f, 1024);",
            "AscendC::Duplicate(zeros, 0.0f, 0);",
        ),
        1,
    )
    assert code != 0
    assert "sanitize: uninitialised read" in err, err[-2000:]
    assert "DataCopyPad (UB->GM, DataCopyExtParams) reads UB bytes" in err, err[-2000:]
    code, err = _run_main(tmp_path / "p" / "build" / "headsum_main", run, "0")
    assert code == 0, err[-2000:]
    total = np.fromfile(run / "output" / "total.bin", np.float16)
    assert np.isnan(total).all()


def test_sim_marks_atomic_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    argv = ["sim", __file__, "--kernel", "headsum", "--shape", "B=2,N=5,S=100,D=32"]
    assert main(argv + ["-o", str(out)]) == 0
    agree = json.loads((out / "meta.json").read_text())["vs_interpreter"]["total"]
    assert agree["atomic"] is True
    assert "(atomic sums: f32 additions in another order)" in capsys.readouterr().out


@fd.kernel
def three_sums(
    x: fd.In("B", "N", "S", "D", dtype=fd.f32),
    a: fd.Out("B", "S", "D", dtype=fd.f16),
    c: fd.Out("S", "D", dtype=fd.f32),
    z: fd.Out("B", "S", "D", dtype=fd.bf16),
    block: int = 32,
):
    """Three outputs summed at once: two f32 regions side by side in the workspace
    (f16 and bf16 casts) and an f32 output summed in place."""
    for b, h, i in fd.grid(B, N, fd.cdiv(S, block)):
        rows = fd.ds(i * block, block)
        xt = fd.load(x[b, h, rows, :], pad=0)
        fd.atomic_add(a[b, rows, :], xt)
        fd.atomic_add(c[rows, :], xt * 0.5)
        fd.atomic_add(z[b, rows, :], xt * 2.0)


def test_several_sums_have_their_own_regions() -> None:
    x = np.random.default_rng(7).standard_normal((2, 3, 70, 16)).astype(np.float32)
    shape = dict(B=2, N=3, S=70, D=16)
    got = fd.sim(three_sums, shape=shape, x=x)
    ref = fd.interpret(three_sums, shape=shape, x=x)
    _agree(got["a"], ref["a"], _bound(x, 1, np.float16))
    _agree(got["c"], ref["c"], _bound(x.reshape(6, 70, 16) * 0.5, 0, np.float32))
    _agree(got["z"], ref["z"], _bound(x * 2, 1, ml_dtypes.bfloat16))
