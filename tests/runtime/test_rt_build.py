"""Build-level properties: target facts come from compile definitions (defaults warn), and API
misuse the real toolchain would reject (or that a target lacks) fails at compile time."""

import pytest

from rtutil import compile_cpp

pytestmark = pytest.mark.cpu_runtime

TRIVIAL = """
#include "tikicpulib.h"
extern "C" __global__ __aicore__ void k(GM_ADDR) {}
int main() { return 0; }
"""

REJECTED = """
#include "tikicpulib.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void k(GM_ADDR x) {
    GlobalTensor<half> g;
    g.SetGlobalBuffer((__gm__ half*)x);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    TBuf<TPosition::CO1> c;
    TBuf<TPosition::A2> a2;
    TBuf<TPosition::B2> b2;
    auto t = b.Get<half>();
    auto f = b.Get<float>();
    auto i = b.Get<int32_t>();
    auto i8 = b.Get<int8_t>();
    DataCopyPad(t, g, DataCopyExtParams{1, 32, 0, 0, 0}, DataCopyPadExtParams<half>{false, 0, 0, half(0)});  // (1)
    Mmad(c.Get<float>(), a2.Get<float>(), b2.Get<half>(), MmadParams{16, 16, 16, 0, false, true});           // (2)
    CrossCoreSetFlag<2, PIPE_S>(1);                                                                          // (3)
    Cast(i8, t, RoundMode::CAST_RINT, 64);                                                                   // (4)
    Exp(i, i, 64);                                                                                           // (5)
    Duplicate(f, 1.0, 64);                                                                                   // (6)
    Adds<float, false>(f, f, 1.0f, 64);                                                                      // (7)
}
int main() { return 0; }
"""


def test_missing_target_defines_warn_and_default_to_910b1(build_dir):
    defines = {k: None for k in ("FADSL_SOC_VERSION", "FADSL_UB_BYTES", "FADSL_AIC_CORES", "FADSL_HAS_DATACOPYPAD")}
    _, res = compile_cpp(TRIVIAL, build_dir, defines=defines, extra=(), syntax_only=True)
    assert res.returncode == 0, res.stderr
    for macro in defines:
        assert f"fadsl-cpu-runtime: {macro} not defined" in res.stderr
    assert "defaulting to 196352" in res.stderr


def test_defined_target_compiles_warning_free(build_dir):
    _, res = compile_cpp(TRIVIAL, build_dir, syntax_only=True)
    assert res.returncode == 0 and res.stderr == "", res.stderr


def test_rejected_at_compile_time(build_dir):
    _, res = compile_cpp(REJECTED, build_dir, defines={"FADSL_HAS_DATACOPYPAD": "0"}, check=False, syntax_only=True)
    assert res.returncode != 0
    err = res.stderr
    assert "DataCopyPad is not supported on this target (FADSL_HAS_DATACOPYPAD=0" in err  # (1)
    assert "Mmad supports (fm, filter, dst) = (half, half, float)" in err  # (2)
    assert "CrossCoreSetFlag does not support PIPE_S or PIPE_ALL" in err  # (3)
    assert "this Cast type pair is not supported" in err  # (4)
    assert "Exp supports half and float" in err  # (5)
    assert "no matching function for call to 'Duplicate(" in err.replace("\u2018", "'").replace("\u2019", "'")  # (6)
    assert "isSetMask=false (SetVectorMask) is not supported" in err  # (7)
