"""fd.debug_print and fd.device_assert: run by the interpreter, left out when compiled.

A line per task and loop iteration, labelled with the user's names of the grid and
loop variables, in grid order whatever the threads' split; a failing device_assert
is an execution error naming the task; compiled builds (a target) strip both ops.
"""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import numpy as np
import pytest

import fadsl as fd
from fadsl.errors import ExecutionError

KERNEL = """
import fadsl as fd


@fd.kernel(default_shape=dict(M=64, K=32))
def copy(x: fd.In("M", "K"), y: fd.Out("M", "K"), bm: int = 16, bk: int = 16):
    M, K = x.shape
    for (i,) in fd.grid(fd.cdiv(M, bm)):
        rows = fd.ds(i * bm, bm)
        total = fd.zeros((bm,), fd.f32)
        for j in fd.serial(fd.cdiv(K, bk)):
            t = fd.load(x[rows, fd.ds(j * bk, bk)])
            total = total + fd.row_sum(fd.cast(t, fd.f32))
            fd.debug_print("first {} of block {}", fd.row_max(t), j)
            fd.store(y[rows, fd.ds(j * bk, bk)], t)
        fd.device_assert(total > LIMIT, "row sums above LIMIT")
        fd.debug_print("total {}", total)
"""


def _kernel(tmp_path: Path, limit: float = -1e9):  # type: ignore[no-untyped-def]
    text = KERNEL.replace("LIMIT", repr(limit))
    path = tmp_path / "copy.py"
    path.write_text(text, encoding="utf-8")
    return runpy.run_path(str(path))["copy"]


def _printed(kernel, x: np.ndarray) -> list[str]:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fd.interpret(kernel, x=x)
    return out.getvalue().splitlines()


def test_a_line_per_task_and_iteration_in_grid_order(tmp_path: Path) -> None:
    kernel = _kernel(tmp_path)
    x = np.arange(64 * 32, dtype=np.float16).reshape(64, 32) / 1024
    lines = _printed(kernel, x)
    assert len(lines) == 4 * (2 + 1)  # 4 tasks: 2 iterations and one line after
    assert lines[0].startswith("copy.py:14 [i=0 j=0] first [")
    assert lines[0].endswith("] of block 0")
    want = np.array2string(x[0:16, 0:16].max(axis=1), max_line_width=10**6)
    assert lines[0] == f"copy.py:14 [i=0 j=0] first {want} of block 0"
    assert lines[1].startswith("copy.py:14 [i=0 j=1] first ")
    total = x[0:16].astype(np.float32).sum(axis=1)
    printed = lines[2].split("total ", 1)[1].strip("[]").split()
    assert lines[2].startswith("copy.py:17 [i=0] total [")
    np.testing.assert_allclose([float(v) for v in printed], total, rtol=1e-6)
    assert [ln.split("]")[0] for ln in lines[3:6]] == [
        "copy.py:14 [i=1 j=0",
        "copy.py:14 [i=1 j=1",
        "copy.py:17 [i=1",
    ]


def test_the_lines_do_not_depend_on_the_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = _kernel(tmp_path)
    x = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float16)
    monkeypatch.setenv("FADSL_THREADS", "1")
    one = _printed(kernel, x)
    monkeypatch.setenv("FADSL_THREADS", "2")
    assert _printed(kernel, x) == one


def test_a_failing_assert_names_the_task(tmp_path: Path) -> None:
    kernel = _kernel(tmp_path, limit=0.0)
    x = np.ones((64, 32), np.float16)
    x[40, 3] = -100.0  # row 40: task i=2
    with (
        pytest.raises(ExecutionError) as caught,
        contextlib.redirect_stdout(io.StringIO()),
    ):
        fd.interpret(kernel, x=x)
    err = caught.value
    assert err.code == "device_assert_failed"
    assert "row sums above 0.0" in err.message
    assert err.notes == ("in the task and iteration [i=2]",)
    assert err.loc is not None and err.loc.line == 16


def test_compiled_builds_leave_them_out(tmp_path: Path) -> None:
    from fadsl.driver.binding import bind
    from fadsl.driver.lower import run_passes
    from fadsl.passes.strip_debug import debug_ops
    from fadsl.target import get

    kernel = _kernel(tmp_path)
    binding = bind(kernel, lambda k, d: dict(d), {}, None, None)
    assert len(debug_ops(run_passes(binding))) == 3
    compiled = bind(kernel, lambda k, d: dict(d), {}, None, get("ascend910b1"))
    assert debug_ops(run_passes(compiled)) == []
