// SetAtomicAdd / SetAtomicNone / DisableDmaAtomic: copies into GM add under the atomic mode.
// argv: case [out.bin out2.bin]. AIV_MODE, NB blocks; x holds 64 floats (or 32 halves) per block.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tikicpulib.h"

using namespace AscendC;
constexpr int64_t NB = 8;
constexpr uint32_t N = 64;
enum { ADDS_DONE = 1 };

#define SYNC(EV)                      \
    SetFlag<HardEvent::EV>(EVENT_ID0); \
    WaitFlag<HardEvent::EV>(EVENT_ID0)

// One block's row of x (LEN elements of T) loaded into UB, and the GM tile `out` all blocks share.
template <typename T, uint32_t LEN>
struct Row {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    GlobalTensor<T> xg, og;
    LocalTensor<T> t;
    __aicore__ inline Row(GM_ADDR x, GM_ADDR out) {
        xg.SetGlobalBuffer((__gm__ T*)x + GetBlockIdx() * LEN, LEN);
        og.SetGlobalBuffer((__gm__ T*)out, LEN);
        pipe.InitBuffer(buf, LEN * sizeof(T));
        t = buf.Get<T>();
        DataCopy(t, xg, LEN);
        SYNC(MTE2_MTE3);
    }
};

// Every block adds its row of x into `out` twice (the mode persists across copies), then after a
// barrier over all AIVs (mode 0) block 0 reads the sum back and copies it to `out2`.
extern "C" __global__ __aicore__ void sum_f32(GM_ADDR x, GM_ADDR out, GM_ADDR out2) {
    Row<float, N> r(x, out);
    SetAtomicAdd<float>();
    DataCopy(r.og, r.t, N);
    DataCopy(r.og, r.t, N);
    SetAtomicNone();
    CrossCoreSetFlag<0, PIPE_MTE3>(ADDS_DONE);
    CrossCoreWaitFlag(ADDS_DONE);
    if (GetBlockIdx() == 0) {
        GlobalTensor<float> o2;
        o2.SetGlobalBuffer((__gm__ float*)out2, N);
        SYNC(MTE3_MTE2);
        DataCopy(r.t, r.og, N);
        SYNC(MTE2_MTE3);
        DataCopy(o2, r.t, N);
    }
}
// DataCopyPad UB->GM of 20 halves (40 B) under SetAtomicAdd<half>: only those 20 are added.
extern "C" __global__ __aicore__ void pad_half(GM_ADDR x, GM_ADDR out, GM_ADDR) {
    Row<half, 32> r(x, out);
    SetAtomicAdd<half>();
    DataCopyPad(r.og, r.t, DataCopyExtParams{1, 40, 0, 0, 0});
    DisableDmaAtomic();
}
// Even blocks add into `out`, then turn the mode off (SetAtomicNone or DisableDmaAtomic) and copy
// into their own row of `out2`, which must be overwritten; odd blocks never set the mode.
extern "C" __global__ __aicore__ void reset(GM_ADDR x, GM_ADDR out, GM_ADDR out2) {
    const int64_t b = GetBlockIdx();
    Row<float, N> r(x, out);
    GlobalTensor<float> o2;
    o2.SetGlobalBuffer((__gm__ float*)out2 + b * N, N);
    if (b % 2 == 0) {
        SetAtomicAdd<float>();
        DataCopy(r.og, r.t, N);
        if (b % 4 == 0) SetAtomicNone();
        else DisableDmaAtomic();
    }
    DataCopy(o2, r.t, N);
}
// SetAtomicAdd<float> and then a copy of half elements: refused.
extern "C" __global__ __aicore__ void mismatch(GM_ADDR x, GM_ADDR out, GM_ADDR) {
    Row<half, 32> r(x, out);
    SetAtomicAdd<float>();
    DataCopy(r.og, r.t, 32);
}
// Two blocks add into `out`; block 0 then polls it without waiting on any flag: once block 1's add
// has landed, the read must be refused (an atomic add is a write the reader has to wait for).
extern "C" __global__ __aicore__ void unwaited_read(GM_ADDR x, GM_ADDR out, GM_ADDR) {
    Row<float, N> r(x, out);
    SetAtomicAdd<float>();
    DataCopy(r.og, r.t, N);
    SetAtomicNone();
    if (GetBlockIdx() == 0) {
        for (long i = 0; i < 2000000000L; ++i) {
            if (r.og.GetValue(0) != r.xg.GetValue(0)) break;
        }
    }
}
// Cube cores: each AIC computes q_b @ I (16x16 half -> float) and adds it into one GM tile with
// Fixpipe under SetAtomicAdd<float> (the L0C -> GM data path).
extern "C" __global__ __aicore__ void fixpipe_add(GM_ADDR x, GM_ADDR out, GM_ADDR eye) {
    const int64_t b = GetBlockIdx();
    GlobalTensor<half> qg, kg;
    GlobalTensor<float> og;
    qg.SetGlobalBuffer((__gm__ half*)x + b * 256, 256);
    kg.SetGlobalBuffer((__gm__ half*)eye, 256);
    og.SetGlobalBuffer((__gm__ float*)out, 256);
    TPipe pipe;
    TBuf<TPosition::A1> a1;
    TBuf<TPosition::B1> b1;
    TBuf<TPosition::A2> a2;
    TBuf<TPosition::B2> b2;
    TBuf<TPosition::CO1> c;
    pipe.InitBuffer(a1, 512);
    pipe.InitBuffer(b1, 512);
    pipe.InitBuffer(a2, 512);
    pipe.InitBuffer(b2, 512);
    pipe.InitBuffer(c, 1024);
    auto A1 = a1.Get<half>(), B1 = b1.Get<half>(), A2 = a2.Get<half>(), B2 = b2.Get<half>();
    auto C = c.Get<float>();
    DataCopy(A1, qg, Nd2NzParams{1, 16, 16, 0, 16, 16, 1, 0});
    DataCopy(B1, kg, Nd2NzParams{1, 16, 16, 0, 16, 16, 1, 0});
    SYNC(MTE2_MTE1);
    LoadData(A2, A1, LoadData2DParams{0, 1, 1, 0, 0, false, 0});
    LoadData(B2, B1, LoadData2DParams{0, 1, 1, 0, 0, true, 0});
    SYNC(MTE1_M);
    Mmad(C, A2, B2, MmadParams{16, 16, 16, 0, false, true});
    SYNC(M_FIX);
    SetAtomicAdd<float>();
    Fixpipe(og, C, FixpipeParamsV220{16, 16, 16, 16, false, QuantMode_t::NoQuant, 0, 1, 0, 0, 0});
    SetAtomicNone();
    PipeBarrier<PIPE_ALL>();
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    float* x = (float*)AscendC::GmAlloc(NB * N * 4);
    float* out = (float*)AscendC::GmAlloc(N * 4);
    float* out2 = (float*)AscendC::GmAlloc(NB * N * 4);
    for (int64_t i = 0; i < NB * N; ++i) x[i] = static_cast<float>((i * 37) % 101) - 50.0f;
    for (uint32_t i = 0; i < N; ++i) out[i] = 0.0f;  // GM is not cleared for atomic adds: the host zeroes it
    for (int64_t i = 0; i < NB * N; ++i) out2[i] = 100.0f;
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    if (c == "sum_f32") ICPU_RUN_KF(sum_f32, NB, (GM_ADDR)x, (GM_ADDR)out, (GM_ADDR)out2);
    else if (c == "reset") ICPU_RUN_KF(reset, NB, (GM_ADDR)x, (GM_ADDR)out, (GM_ADDR)out2);
    else if (c == "unwaited_read") ICPU_RUN_KF(unwaited_read, 2, (GM_ADDR)x, (GM_ADDR)out, (GM_ADDR)out2);
    else if (c == "fixpipe_add") {
        half* xh = (half*)x;
        half* eye = (half*)out2;
        for (int64_t i = 0; i < 3 * 256; ++i) xh[i] = half(static_cast<float>((i * 7) % 11) - 5.0f);
        for (uint32_t i = 0; i < 256; ++i) eye[i] = half(i / 16 == i % 16 ? 1.0f : 0.0f);
        float* acc = (float*)AscendC::GmAlloc(256 * 4);
        for (uint32_t i = 0; i < 256; ++i) acc[i] = 0.0f;
        AscendC::SetKernelMode(KernelMode::AIC_MODE);
        ICPU_RUN_KF(fixpipe_add, 3, (GM_ADDR)x, (GM_ADDR)acc, (GM_ADDR)out2);
        if (argc > 2) {
            FILE* f = std::fopen(argv[2], "wb");
            std::fwrite(acc, 1, 256 * 4, f);
            std::fclose(f);
        }
        std::printf("done\n");
        return 0;
    } else if (c == "mismatch" || c == "pad_half") {
        half* xh = (half*)x;
        half* oh = (half*)out;
        for (int64_t i = 0; i < NB * 32; ++i) xh[i] = half(static_cast<float>((i * 13) % 17) - 8.0f);
        for (uint32_t i = 0; i < 32; ++i) oh[i] = half(i < 20 ? 0.0f : 7.0f);
        if (c == "mismatch") ICPU_RUN_KF(mismatch, 1, (GM_ADDR)x, (GM_ADDR)out, (GM_ADDR)out2);
        else ICPU_RUN_KF(pad_half, NB, (GM_ADDR)x, (GM_ADDR)out, (GM_ADDR)out2);
    } else {
        return 2;
    }
    if (argc > 3) {
        FILE* f = std::fopen(argv[2], "wb");
        std::fwrite(out, 1, N * 4, f);
        std::fclose(f);
        f = std::fopen(argv[3], "wb");
        std::fwrite(out2, 1, NB * N * 4, f);
        std::fclose(f);
    }
    std::printf("done\n");
    return 0;
}
