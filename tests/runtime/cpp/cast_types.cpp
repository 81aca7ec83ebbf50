// half / bfloat16_t conversions and Cast with every allowed RoundMode (A2 table of Cast.md).
// argv: case [in.bin out.bin]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tikicpulib.h"

using namespace AscendC;
constexpr uint32_t N = 256;

// Output layout (uint32 words per element, N elements per slot):
//  0..6  float->half  NONE RINT FLOOR CEIL ROUND TRUNC ODD      (half bits)
//  7..11 float->bf16  RINT FLOOR CEIL ROUND TRUNC               (bf16 bits)
// 12..16 float->int32 RINT FLOOR CEIL ROUND TRUNC
// 17     half(RINT of x)->float NONE ; 18 bf16(RINT of x)->float NONE ; 19 int32(trunc)->float RINT
template <typename D, typename S>
__aicore__ inline void CastSlot(const LocalTensor<S>& src, GlobalTensor<uint32_t>& og, uint32_t slot, RoundMode m,
                                TBuf<TPosition::VECCALC>& db, TBuf<TPosition::VECCALC>& wide) {
    auto d = db.Get<D>();
    Cast(d, src, m, N);
    PipeBarrier<PIPE_ALL>();
    auto w = wide.Get<uint32_t>();
    for (uint32_t i = 0; i < N; ++i) {
        D v = d.GetValue(i);
        uint32_t bits = 0;
        std::memcpy(&bits, &v, sizeof(D));
        w.SetValue(i, bits);
    }
    PipeBarrier<PIPE_ALL>();
    DataCopy(og[slot * N], w, N);
    PipeBarrier<PIPE_ALL>();
}
extern "C" __global__ __aicore__ void cast_all(GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg;
    GlobalTensor<uint32_t> og;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    og.SetGlobalBuffer((__gm__ uint32_t*)out, N * 20);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bd, bw, bh, bb, bi;
    pipe.InitBuffer(bx, N * 4);
    pipe.InitBuffer(bd, N * 4);
    pipe.InitBuffer(bw, N * 4);
    pipe.InitBuffer(bh, N * 2);
    pipe.InitBuffer(bb, N * 2);
    pipe.InitBuffer(bi, N * 4);
    auto xl = bx.Get<float>();
    DataCopy(xl, xg, N);
    PipeBarrier<PIPE_ALL>();
    const RoundMode h[] = {RoundMode::CAST_NONE, RoundMode::CAST_RINT, RoundMode::CAST_FLOOR, RoundMode::CAST_CEIL,
                           RoundMode::CAST_ROUND, RoundMode::CAST_TRUNC, RoundMode::CAST_ODD};
    for (uint32_t k = 0; k < 7; ++k) CastSlot<half>(xl, og, k, h[k], bd, bw);
    for (uint32_t k = 0; k < 5; ++k) CastSlot<bfloat16_t>(xl, og, 7 + k, h[k + 1], bd, bw);
    for (uint32_t k = 0; k < 5; ++k) CastSlot<int32_t>(xl, og, 12 + k, h[k + 1], bd, bw);
    auto hl = bh.Get<half>();
    auto bl = bb.Get<bfloat16_t>();
    auto il = bi.Get<int32_t>();
    Cast(hl, xl, RoundMode::CAST_RINT, N);
    Cast(bl, xl, RoundMode::CAST_RINT, N);
    Cast(il, xl, RoundMode::CAST_TRUNC, N);
    CastSlot<float>(hl, og, 17, RoundMode::CAST_NONE, bd, bw);
    CastSlot<float>(bl, og, 18, RoundMode::CAST_NONE, bd, bw);
    CastSlot<float>(il, og, 19, RoundMode::CAST_RINT, bd, bw);
}
extern "C" __global__ __aicore__ void bad_bf16_none(GM_ADDR x, GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(b, 128);
    auto f = a.Get<float>();
    auto bf = b.Get<bfloat16_t>();
    Duplicate(f, 1.0f, 64);
    Cast(bf, f, RoundMode::CAST_NONE, 64);
    (void)x;
}
extern "C" __global__ __aicore__ void bad_half_float_rint(GM_ADDR x, GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 128);
    pipe.InitBuffer(b, 256);
    auto hh = a.Get<half>();
    auto f = b.Get<float>();
    Duplicate(hh, half(1.0f), 64);
    Cast(f, hh, RoundMode::CAST_RINT, 64);
    (void)x;
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    if (c == "types") {  // host-side scalar conversions, printed as bits
        const double vals[] = {1.0 + 1.0 / 2048, 1.0 + 3.0 / 2048, 65519.0, 65520.0, -65520.0, 1.0 / (1 << 25),
                               3.0 / (1 << 25) / 1.0, 0.1, -2.5, 1e-8, 1.00390625, 1.01171875, 3.0e38, -0.0};
        for (double v : vals) {
            half h = v;
            bfloat16_t b = static_cast<float>(v);
            std::printf("%04x %04x %.9g %.9g\n", h.val, b.val, static_cast<double>(static_cast<float>(h)),
                        static_cast<double>(static_cast<float>(b)));
        }
        half a = 1.5f, bb = 2.25f;
        half s = a + bb;  // float arithmetic, one rounding
        std::printf("%g %d\n", static_cast<double>(static_cast<float>(s)), a < bb);
        return 0;
    }
    float* x = (float*)AscendC::GmAlloc(N * 4);
    uint8_t* o = (uint8_t*)AscendC::GmAlloc(N * 4 * 20);
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    if (c == "cast") {
        FILE* f = std::fopen(argv[2], "rb");
        if (std::fread(x, 4, N, f) != N) return 2;
        std::fclose(f);
        ICPU_RUN_KF(cast_all, 1, (uint8_t*)x, o);
        f = std::fopen(argv[3], "wb");
        std::fwrite(o, 1, N * 4 * 20, f);
        std::fclose(f);
    } else if (c == "bad_bf16_none") {
        ICPU_RUN_KF(bad_bf16_none, 1, (uint8_t*)x, o);
    } else if (c == "bad_half_float_rint") {
        ICPU_RUN_KF(bad_half_float_rint, 1, (uint8_t*)x, o);
    } else {
        return 2;
    }
    return 0;
}
