// DataCopy / DataCopyPad unit semantics. Each case writes raw bytes to GM `out` which the host dumps.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tikicpulib.h"

using namespace AscendC;

#define SYNC(EV)                      \
    SetFlag<HardEvent::EV>(EVENT_ID0); \
    WaitFlag<HardEvent::EV>(EVENT_ID0)

// DataCopy(count) with count*sizeof(T) not a multiple of 32 B: rounded down, warned once.
extern "C" __global__ __aicore__ void round_down(GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    og.SetGlobalBuffer((__gm__ float*)out, 64);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 64 * 4);
    auto t = b.Get<float>();
    DataCopy(t, xg, 13);  // 52 B -> 32 B
    DataCopy(t, xg, 13);  // same call site values: no second warning
    SYNC(MTE2_MTE3);
    DataCopy(og, t, 16);
}
// DataCopyParams: 4 blocks of 2 x 32 B, GM gap 1 block, UB gap 1 block; back out compactly.
extern "C" __global__ __aicore__ void params(GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 96);
    og.SetGlobalBuffer((__gm__ float*)out, 96);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 96 * 4);
    auto t = b.Get<float>();
    DataCopyParams in{4, 2, 1, 1};
    DataCopy(t, xg, in);
    SYNC(MTE2_MTE3);
    DataCopyParams o;
    o.blockCount = 4;
    o.blockLen = 2;
    o.srcGap = 1;  // 2026 name of srcStride
    o.dstStride = 0;
    DataCopy(og, t, o);
}
// DataCopyPad GM->UB: 3 rows of 10 halves (20 B), GM row pitch 16 halves (srcStride 12 B),
// UB dstStride 1 block; then the whole UB area is copied out verbatim.
template <int kCase>
__aicore__ inline void PadIn(GM_ADDR x, GM_ADDR out) {
    GlobalTensor<half> xg, og;
    xg.SetGlobalBuffer((__gm__ half*)x, 48);
    og.SetGlobalBuffer((__gm__ half*)out, 96);
    TPipe pipe;
    TBuf<TPosition::VECIN> b;
    pipe.InitBuffer(b, 96 * 2);
    auto t = b.Get<half>();
    if (kCase == 0) {
        DataCopyPad(t, xg, DataCopyExtParams{3, 20, 12, 1, 0}, DataCopyPadExtParams<half>{true, 2, 3, half(7.0f)});
    } else if (kCase == 1) {
        DataCopyPad(t, xg, DataCopyExtParams{3, 20, 12, 1, 0}, DataCopyPadExtParams<half>{false, 0, 0, half(0.0f)});
    } else {
        DataCopyPad(t, xg, DataCopyParams{3, 20, 12, 1}, DataCopyPadParams{false, 1, 0, 0});
    }
    SYNC(MTE2_MTE3);
    DataCopy(og, t, 96);
}
extern "C" __global__ __aicore__ void pad_in_values(GM_ADDR x, GM_ADDR o) { PadIn<0>(x, o); }
extern "C" __global__ __aicore__ void pad_in_dummy(GM_ADDR x, GM_ADDR o) { PadIn<1>(x, o); }
extern "C" __global__ __aicore__ void pad_in_nopad(GM_ADDR x, GM_ADDR o) { PadIn<2>(x, o); }
// DataCopyPad UB->GM: UB rows every 2 blocks (32 B data slot + srcStride 1 block), 10 halves each,
// GM gap 4 B between rows -> GM pitch 12 halves; bytes in the gaps stay untouched.
template <int kCase>
__aicore__ inline void PadOut(GM_ADDR x, GM_ADDR out) {
    GlobalTensor<half> xg, og;
    xg.SetGlobalBuffer((__gm__ half*)x, 96);
    og.SetGlobalBuffer((__gm__ half*)out, 96);
    TPipe pipe;
    TBuf<TPosition::VECOUT> b;
    pipe.InitBuffer(b, 96 * 2);
    auto t = b.Get<half>();
    DataCopy(t, xg, 96);
    SYNC(MTE2_MTE3);
    if (kCase == 0) DataCopyPad(og, t, DataCopyExtParams{3, 20, 1, 4, 0});
    else DataCopyPad(og, t, DataCopyParams{3, 20, 1, 4});
}
extern "C" __global__ __aicore__ void pad_out_ext(GM_ADDR x, GM_ADDR o) { PadOut<0>(x, o); }
extern "C" __global__ __aicore__ void pad_out_params(GM_ADDR x, GM_ADDR o) { PadOut<1>(x, o); }

// UB -> UB with count and with DataCopyParams (gaps in 32 B blocks).
extern "C" __global__ __aicore__ void ub_to_ub(GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    og.SetGlobalBuffer((__gm__ float*)out, 64);
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 64 * 4);
    pipe.InitBuffer(b, 64 * 4);
    auto ta = a.Get<float>(), tb = b.Get<float>();
    DataCopy(ta, xg, 64);
    SYNC(MTE2_V);
    Duplicate(tb, 0.0f, 64);
    DataCopy(tb, ta, 16);                          // floats 0..15
    DataCopy(tb[32], ta[16], DataCopyParams{2, 1, 1, 0});  // blocks 2 and 4 of ta[16:] -> tb[32:48]
    SYNC(V_MTE3);
    DataCopy(og, tb, 64);
}

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    const std::string c = argv[1];
    uint8_t* x = (uint8_t*)AscendC::GmAlloc(1024);
    uint8_t* o = (uint8_t*)AscendC::GmAlloc(1024);
    for (int i = 0; i < 96; ++i) ((float*)x)[i] = static_cast<float>(i + 1);
    if (c.rfind("pad", 0) == 0)
        for (int i = 0; i < 96; ++i) ((half*)x)[i] = half(static_cast<float>(i + 1));
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    if (c == "round_down") ICPU_RUN_KF(round_down, 1, x, o);
    else if (c == "params") ICPU_RUN_KF(params, 1, x, o);
    else if (c == "ub_to_ub") ICPU_RUN_KF(ub_to_ub, 1, x, o);
    else if (c == "pad_in_values") ICPU_RUN_KF(pad_in_values, 1, x, o);
    else if (c == "pad_in_dummy") ICPU_RUN_KF(pad_in_dummy, 1, x, o);
    else if (c == "pad_in_nopad") ICPU_RUN_KF(pad_in_nopad, 1, x, o);
    else if (c == "pad_out_ext") ICPU_RUN_KF(pad_out_ext, 1, x, o);
    else if (c == "pad_out_params") ICPU_RUN_KF(pad_out_params, 1, x, o);
    else return 2;
    FILE* f = std::fopen(argv[2], "wb");
    std::fwrite(o, 1, 1024, f);
    std::fclose(f);
    return 0;
}
