// AscendC::printf and ascendc_assert (fadsl_rt/debug.h). argv: case
#include <cstdio>
#include <string>

#include "tikicpulib.h"

using namespace AscendC;

// Each AIV core prints two lines; a UB value is read through the scalar unit after V -> S sync.
extern "C" __global__ __aicore__ void prints(GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 64);
    auto t = b.Get<float>();
    Duplicate(t, 1.5f + static_cast<float>(GetBlockIdx()), 16);
    SetFlag<HardEvent::V_S>(0);
    WaitFlag<HardEvent::V_S>(0);
    AscendC::printf("core %d first %f", static_cast<int32_t>(GetBlockIdx()), t.GetValue(3));
    if (GetBlockIdx() == 1) AscendC::printf(" and %lld on one line", static_cast<int64_t>(16));
    AscendC::printf("\n");
    AscendC::printf("core %u hex %x %s\n", static_cast<uint32_t>(GetBlockIdx()), 255, "end");
}
extern "C" __global__ __aicore__ void bad_conversion(GM_ADDR) { AscendC::printf("%5d\n", 1); }
extern "C" __global__ __aicore__ void too_few(GM_ADDR) { AscendC::printf("%d %d\n", 1); }
extern "C" __global__ __aicore__ void wrong_type(GM_ADDR) { AscendC::printf("%f\n", 1); }
extern "C" __global__ __aicore__ void asserts(GM_ADDR) {
    AscendC::printf("before on %d\n", static_cast<int32_t>(GetBlockIdx()));
    ascendc_assert(GetBlockIdx() == 0);
    ascendc_assert(GetBlockIdx() != 1, "block %d\n", static_cast<int32_t>(GetBlockIdx()));
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    uint8_t* x = (uint8_t*)AscendC::GmAlloc(1024);
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    if (c == "prints") { ICPU_RUN_KF(prints, 3, x); }
    else if (c == "bad_conversion") { ICPU_RUN_KF(bad_conversion, 1, x); }
    else if (c == "too_few") { ICPU_RUN_KF(too_few, 1, x); }
    else if (c == "wrong_type") { ICPU_RUN_KF(wrong_type, 1, x); }
    else if (c == "assert_holds") { ICPU_RUN_KF(asserts, 1, x); }
    else if (c == "assert_fails") { ICPU_RUN_KF(asserts, 2, x); }
    else return 2;
    std::printf("done\n");
    return 0;
}
