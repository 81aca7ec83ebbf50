"""Build-level properties: target facts come from compile definitions (defaults warn), and API
misuse the real toolchain would reject (or that a target lacks) fails at compile time.
"""

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
    defines = {
        k: None
        for k in (
            "FADSL_SOC_VERSION",
            "FADSL_UB_BYTES",
            "FADSL_AIC_CORES",
            "FADSL_HAS_DATACOPYPAD",
        )
    }
    _, res = compile_cpp(
        TRIVIAL, build_dir, defines=defines, extra=(), syntax_only=True
    )
    assert res.returncode == 0, res.stderr
    for macro in defines:
        assert f"fadsl-cpu-runtime: {macro} not defined" in res.stderr
    assert "defaulting to 196352" in res.stderr


def test_defined_target_compiles_warning_free(build_dir):
    _, res = compile_cpp(TRIVIAL, build_dir, syntax_only=True)
    assert res.returncode == 0 and res.stderr == "", res.stderr


def test_rejected_at_compile_time(build_dir):
    _, res = compile_cpp(
        REJECTED,
        build_dir,
        defines={"FADSL_HAS_DATACOPYPAD": "0"},
        check=False,
        syntax_only=True,
    )
    assert res.returncode != 0
    err = res.stderr
    assert (
        "DataCopyPad is not supported on this target (FADSL_HAS_DATACOPYPAD=0" in err
    )  # (1)
    assert "Mmad supports (fm, filter, dst) = (half, half, float)" in err  # (2)
    assert "CrossCoreSetFlag does not support PIPE_S or PIPE_ALL" in err  # (3)
    assert "this Cast type pair is not supported" in err  # (4)
    assert "Exp supports half and float" in err  # (5)
    assert "no matching function for call to 'Duplicate(" in err.replace(
        "\u2018", "'"
    ).replace(
        "\u2019", "'"
    )  # (6)
    assert "isSetMask=false (SetVectorMask) is not supported" in err  # (7)


TASK_TYPE = """
#include "tikicpulib.h"
extern "C" __global__ __aicore__ void k(GM_ADDR) { KERNEL_TASK_TYPE_DEFAULT(%s); }
int main() { return 0; }
"""


@pytest.mark.parametrize(
    "value, expected",
    [
        ("KERNEL_TYPE_MIX_AIC_1_2", None),
        ("KERNEL_TYPE_AIV_ONLY", None),
        ("KERNEL_TYPE_MIX_AIC_1_3", "'KERNEL_TYPE_MIX_AIC_1_3' was not declared"),
        ("KERNEL_TYPE_MIX_AICORE", "is not a kernel type of A2/A3 (c220)"),
        ("5", "use of deleted function"),
    ],
)
def test_kernel_task_type_default_is_checked_like_the_precompile_step(
    build_dir, value, expected
):
    """Regression (issue 12, defect 13): the macro was a no-op, so any value compiled. CANN's
    precompile pass compiles `auto ... = value` and keeps only the six c220 kernel types.
    """
    _, res = compile_cpp(TASK_TYPE % value, build_dir, check=False, syntax_only=True)
    err = res.stderr.replace("\u2018", "'").replace("\u2019", "'")
    if expected is None:
        assert res.returncode == 0, err
    else:
        assert res.returncode != 0 and expected in err, err


KERNEL_TU = """
#include "kernel_operator.h"
struct AddTiling { uint32_t blockLen; uint32_t tileLen; };
constexpr int32_t BUFFER_NUM = 2;
class KernelAdd {
 public:
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, AddTiling t) {
    tileLen = t.tileLen;
    loops = t.blockLen / t.tileLen;
    xGm.SetGlobalBuffer((__gm__ half*)x + t.blockLen * AscendC::GetBlockIdx(), t.blockLen);
    yGm.SetGlobalBuffer((__gm__ half*)y + t.blockLen * AscendC::GetBlockIdx(), t.blockLen);
    zGm.SetGlobalBuffer((__gm__ half*)z + t.blockLen * AscendC::GetBlockIdx(), t.blockLen);
    pipe.InitBuffer(inX, BUFFER_NUM, tileLen * sizeof(half));
    pipe.InitBuffer(inY, BUFFER_NUM, tileLen * sizeof(half));
    pipe.InitBuffer(outZ, BUFFER_NUM, tileLen * sizeof(half));
  }
  __aicore__ inline void Process() {
    for (uint32_t i = 0; i < loops; ++i) { CopyIn(i); Compute(); CopyOut(i); }
  }
 private:
  __aicore__ inline void CopyIn(uint32_t i) {
    auto x = inX.AllocTensor<half>();
    auto y = inY.AllocTensor<half>();
    AscendC::DataCopy(x, xGm[i * tileLen], tileLen);
    AscendC::DataCopy(y, yGm[i * tileLen], tileLen);
    inX.EnQue(x);
    inY.EnQue(y);
  }
  __aicore__ inline void Compute() {
    auto x = inX.DeQue<half>();
    auto y = inY.DeQue<half>();
    auto z = outZ.AllocTensor<half>();
    AscendC::Add(z, x, y, tileLen);
    outZ.EnQue<half>(z);
    inX.FreeTensor(x);
    inY.FreeTensor(y);
  }
  __aicore__ inline void CopyOut(uint32_t i) {
    auto z = outZ.DeQue<half>();
    AscendC::DataCopy(zGm[i * tileLen], z, tileLen);
    outZ.FreeTensor(z);
  }
  AscendC::TPipe pipe;
  AscendC::TQue<AscendC::QuePosition::VECIN, 1> inX, inY;
  AscendC::TQue<AscendC::QuePosition::VECOUT, 1> outZ;
  AscendC::GlobalTensor<half> xGm, yGm, zGm;
  uint32_t tileLen, loops;
};
extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, AddTiling t) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  KernelAdd op;
  op.Init(x, y, z, t);
  op.Process();
}
"""

MAIN_TU = """
#include <cstdio>
#include "tikicpulib.h"
struct AddTiling { uint32_t blockLen; uint32_t tileLen; };
extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, AddTiling t);
int main() {
  const uint32_t blocks = 8, blockLen = 2048;
  size_t bytes = blocks * blockLen * sizeof(uint16_t);
  uint8_t* x = (uint8_t*)AscendC::GmAlloc(bytes);
  uint8_t* y = (uint8_t*)AscendC::GmAlloc(bytes);
  uint8_t* z = (uint8_t*)AscendC::GmAlloc(bytes);
  uint8_t* tiling = (uint8_t*)AscendC::GmAlloc(sizeof(AddTiling));
  for (uint32_t i = 0; i < blocks * blockLen; ++i) {
    ((half*)x)[i] = half(static_cast<float>(i % 100));
    ((half*)y)[i] = half(0.5f);
  }
  *reinterpret_cast<AddTiling*>(tiling) = AddTiling{blockLen, 256};
  AscendC::SetKernelMode(KernelMode::AIV_MODE);
  ICPU_RUN_KF(add_custom, blocks, x, y, z, *reinterpret_cast<AddTiling*>(tiling));
  int bad = 0;
  for (uint32_t i = 0; i < blocks * blockLen; ++i)
    bad += static_cast<float>(((half*)z)[i]) != static_cast<float>(i % 100) + 0.5f;
  std::printf("mismatches %d\\n", bad);
  AscendC::GmFree(x); AscendC::GmFree(y); AscendC::GmFree(z); AscendC::GmFree(tiling);
  return 0;
}
"""


def test_two_translation_units_like_the_generated_project(tmp_path):
    import shutil
    import subprocess

    from rtutil import INCLUDE, TARGET_DEFINES

    if shutil.which("g++") is None:
        pytest.skip("g++ not available")
    (tmp_path / "kernel.cpp").write_text(KERNEL_TU)
    (tmp_path / "main.cpp").write_text(MAIN_TU)
    defs = [f"-D{k}={v}" for k, v in TARGET_DEFINES.items()]
    cmd = [
        "g++",
        "-std=c++17",
        "-O2",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pthread",
        f"-I{INCLUDE}",
        *defs,
        "kernel.cpp",
        "main.cpp",
        "-o",
        "add",
    ]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    run = subprocess.run(
        [str(tmp_path / "add")], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "mismatches 0"
    assert run.stderr == ""
