"""Ascend C parameter fields in the CPU runtime: documented ranges are enforced, and
``fadsl::Field<T>`` (fadsl_tile.h) stops a run on a value its field type cannot hold
instead of wrapping it (issue 12 defect 5: a uint16_t srcDValue of 66,560 became 1,024).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rtutil import ROOT, assert_aborted, assert_ok, compile_cpp, run

pytestmark = pytest.mark.cpu_runtime

TILE_H = ROOT / "fadsl" / "backends" / "ascendc" / "include"

PROGRAM = r"""
#include <string>
#include "tikicpulib.h"
#include "fadsl_tile.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void nd2nz(GM_ADDR g) {
    TPipe pipe;
    TQue<TPosition::A1, 1> l1;
    pipe.InitBuffer(l1, 1, 16 * 32);
    GlobalTensor<half> src;
    src.SetGlobalBuffer((__gm__ half*)g, 16 * 16);
    LocalTensor<half> t = l1.AllocTensor<half>();
    DataCopy(t, src, Nd2NzParams{1, NVALUE, 16, 0, 16, C0STRIDE, 1, 0});
    l1.FreeTensor(t);
}
extern "C" __global__ __aicore__ void mmad(GM_ADDR) {
    TPipe pipe;
    TQue<TPosition::A2, 1> a;
    TQue<TPosition::B2, 1> b;
    TQue<TPosition::CO1, 1> c;
    pipe.InitBuffer(a, 1, 512);
    pipe.InitBuffer(b, 1, 512);
    pipe.InitBuffer(c, 1, 1024);
    LocalTensor<half> at = a.AllocTensor<half>();
    LocalTensor<half> bt = b.AllocTensor<half>();
    LocalTensor<float> ct = c.AllocTensor<float>();
    Mmad(ct, at, bt, MmadParams{MSIZE, 0, 16, 0, false, true});  // n = 0: a NOP once m is valid
    a.FreeTensor(at);
    b.FreeTensor(bt);
    c.FreeTensor(ct);
}
extern "C" __global__ __aicore__ void field(GM_ADDR) {
    const uint16_t v = fadsl::Field<uint16_t>(FIELD_VALUE, "Nd2NzParams.srcDValue");
    std::printf("field %u\n", static_cast<unsigned>(v));
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    uint8_t* x = (uint8_t*)AscendC::GmAlloc(4096);
    if (c == "nd2nz") { AscendC::SetKernelMode(KernelMode::AIC_MODE); ICPU_RUN_KF(nd2nz, 1, x); }
    else if (c == "mmad") { AscendC::SetKernelMode(KernelMode::AIC_MODE); ICPU_RUN_KF(mmad, 1, x); }
    else { AscendC::SetKernelMode(KernelMode::AIC_MODE); ICPU_RUN_KF(field, 1, x); }
    AscendC::GmFree(x);
    return 0;
}
"""


def _exe(tmp_path: Path, **values: int) -> Path:
    defines = {k: str(v) for k, v in values.items()}
    exe, _ = compile_cpp(
        PROGRAM, tmp_path, defines=defines, extra=("-Werror", f"-I{TILE_H}")
    )
    return exe


BASE = {"NVALUE": 16, "C0STRIDE": 16, "MSIZE": 16, "FIELD_VALUE": 65535}


@pytest.mark.parametrize(
    "case, name, value, top",
    [
        ("nd2nz", "NVALUE", 16384, 16384),
        ("nd2nz", "C0STRIDE", 16384, 16384),
        ("mmad", "MSIZE", 4095, 4095),
    ],
)
def test_documented_range_just_fits_and_one_more_aborts(
    tmp_path: Path, case: str, name: str, value: int, top: int
) -> None:
    field = {"NVALUE": "nValue", "C0STRIDE": "dstNzC0Stride", "MSIZE": "m"}[name]
    over = run(_exe(tmp_path, **{**BASE, name: value + 1}), case)
    assert_aborted(
        over, f"{field} = {value + 1} is outside its documented range [0, {top}]"
    )
    if case == "mmad":  # an in-range value passes the check (n = 0 makes it a NOP)
        assert_ok(run(_exe(tmp_path, **{**BASE, name: value}), case))


def test_field_that_its_type_cannot_hold_stops_the_run(tmp_path: Path) -> None:
    res = run(_exe(tmp_path, **{**BASE, "FIELD_VALUE": 66560}), "field")
    assert_aborted(
        res,
        "fadsl::Field on AIC 0",
        "Nd2NzParams.srcDValue = 66560 does not fit its uint16_t field",
        "wrap it to 1024",
    )


def test_field_in_range_passes_unchanged(tmp_path: Path) -> None:
    out = assert_ok(run(_exe(tmp_path, **BASE), "field"))
    assert "field 65535" in out
