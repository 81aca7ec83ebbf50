"""Finished-task count for ``fadsl sim``'s progress line (issue 20): ``fadsl::TaskDone()``
(fadsl_tile.h), called at the end of each task of the vector class's grid loop, counts each
task once (sub-block 0 only) and the runtime writes the count to $FADSL_PROGRESS_FILE; with
the variable unset nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtutil import ROOT, assert_ok, compile_cpp, run

pytestmark = pytest.mark.cpu_runtime

TILE_H = ROOT / "fadsl" / "backends" / "ascendc" / "include"

# The generated kernels' vector-side grid loop, 11 tasks over 3 blocks of 2 AIVs each.
PROGRAM = r"""
#include "tikicpulib.h"
#include "fadsl_tile.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void grid(GM_ADDR) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    if ASCEND_IS_AIV {
        const int64_t tasks = 11;
        for (int64_t task = GetBlockIdx() / GetSubBlockNum(); task < tasks; task += GetBlockNum()) {
            fadsl::TaskDone();
        }
    }
}

int main() {
    uint8_t* x = (uint8_t*)AscendC::GmAlloc(64);
    ICPU_RUN_KF(grid, 3, x);
    AscendC::GmFree(x);
    std::printf("counted %lld\n", static_cast<long long>(fadsl_rt::TasksDone()));
    return 0;
}
"""


def _exe(tmp_path: Path) -> Path:
    exe, _ = compile_cpp(PROGRAM, tmp_path, extra=("-Werror", f"-I{TILE_H}"))
    return exe


def test_each_task_is_counted_once_and_written_to_the_progress_file(
    tmp_path: Path,
) -> None:
    counter = tmp_path / "progress"
    out = assert_ok(run(_exe(tmp_path), env={"FADSL_PROGRESS_FILE": str(counter)}))
    assert "counted 11" in out
    text = counter.read_text()
    assert text.strip() == "11" and text.endswith("\n") and len(text) == 21


def test_nothing_is_written_without_the_variable(tmp_path: Path) -> None:
    exe = _exe(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    out = assert_ok(run(exe, env={"FADSL_PROGRESS_FILE": ""}))
    assert "counted 11" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == before
