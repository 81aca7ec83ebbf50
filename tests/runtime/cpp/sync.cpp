// Cross-core handshakes (AIC <-> 2 AIVs, mode 2), GM visibility races, deadlock, UB pipe hazards.
// argv: case [out.bin]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "tikicpulib.h"

using namespace AscendC;
constexpr uint32_t T16 = 16 * 16;
constexpr uint32_t ITERS = 4;
enum { QK_READY = 1, SOFTMAX_DONE = 2 };

// AIC: S = q @ k (16x16 half -> 16x16 float) into GM `ws`.
struct CubeTile {
    TPipe pipe;
    TBuf<TPosition::A1> a1;
    TBuf<TPosition::B1> b1;
    TBuf<TPosition::A2> a2;
    TBuf<TPosition::B2> b2;
    TBuf<TPosition::CO1> c;
    __aicore__ inline CubeTile() {
        pipe.InitBuffer(a1, T16 * 2);
        pipe.InitBuffer(b1, T16 * 2);
        pipe.InitBuffer(a2, T16 * 2);
        pipe.InitBuffer(b2, T16 * 2);
        pipe.InitBuffer(c, T16 * 4);
    }
    __aicore__ inline void Run(const GlobalTensor<half>& q, const GlobalTensor<half>& k, const GlobalTensor<float>& ws) {
        auto A1 = a1.Get<half>(), B1 = b1.Get<half>(), A2 = a2.Get<half>(), B2 = b2.Get<half>();
        auto C = c.Get<float>();
        DataCopy(A1, q, Nd2NzParams{1, 16, 16, 0, 16, 16, 1, 0});
        DataCopy(B1, k, Nd2NzParams{1, 16, 16, 0, 16, 16, 1, 0});
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        LoadData(A2, A1, LoadData2DParams{0, 1, 1, 0, 0, false, 0});
        LoadData(B2, B1, LoadData2DParams{0, 1, 1, 0, 0, true, 0});
        SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
        WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
        Mmad(C, A2, B2, MmadParams{16, 16, 16, 0, false, true});
        SetFlag<HardEvent::M_FIX>(EVENT_ID0);
        WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
        Fixpipe(ws, C, FixpipeParamsV220{16, 16, 16, 16, false, QuantMode_t::NoQuant, 0, 1, 0, 0, 0});
        PipeBarrier<PIPE_ALL>();
    }
};

// AIV: out = 2 * S + i for its 8 rows of S (128 floats), then SOFTMAX_DONE to the AIC.
struct VecTile {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> in;
    TQue<TPosition::VECOUT, 1> o;
    __aicore__ inline VecTile() {
        pipe.InitBuffer(in, 1, 128 * 4);
        pipe.InitBuffer(o, 1, 128 * 4);
    }
    __aicore__ inline void Run(const GlobalTensor<float>& wg, const GlobalTensor<float>& og, uint32_t i) {
        auto t = in.AllocTensor<float>();
        DataCopy(t, wg, 128);
        in.EnQue(t);
        auto s = in.DeQue<float>();
        auto r = o.AllocTensor<float>();
        Muls(r, s, 2.0f, 128);
        Adds(r, r, static_cast<float>(i), 128);
        in.FreeTensor(s);
        o.EnQue(r);
        auto r2 = o.DeQue<float>();
        DataCopy(og, r2, 128);
        o.FreeTensor(r2);
        CrossCoreSetFlag<2, PIPE_MTE3>(SOFTMAX_DONE);
    }
};

// FA-shaped handshake: per iteration the AIC publishes S_i, each AIV takes 8 rows, computes
// 2*S_i + i into `out` and hands the workspace back. skipWait: AIV spins on GM instead of waiting.
template <bool skipWait>
__aicore__ inline void Handshake(GM_ADDR q, GM_ADDR k, GM_ADDR ws, GM_ADDR out) {
    if ASCEND_IS_AIC {
        const int64_t b = GetBlockIdx();
        GlobalTensor<half> qg, kg;
        GlobalTensor<float> wg;
        qg.SetGlobalBuffer((__gm__ half*)q + b * T16, T16);
        wg.SetGlobalBuffer((__gm__ float*)ws + b * T16, T16);
        CubeTile cube;
        for (uint32_t i = 0; i < ITERS; ++i) {
            if (i > 0) CrossCoreWaitFlag(SOFTMAX_DONE);
            kg.SetGlobalBuffer((__gm__ half*)k + i * T16, T16);
            cube.Run(qg, kg, wg);
            CrossCoreSetFlag<2, PIPE_FIX>(QK_READY);
        }
        CrossCoreWaitFlag(SOFTMAX_DONE);
    }
    if ASCEND_IS_AIV {
        const int64_t b = GetBlockIdx() / GetSubBlockNum(), sub = GetSubBlockIdx();
        GlobalTensor<float> wg, og;
        wg.SetGlobalBuffer((__gm__ float*)ws + b * T16 + sub * 128, 128);
        VecTile vec;
        for (uint32_t i = 0; i < ITERS; ++i) {
            if (skipWait) {
                while (wg.GetValue(0) != wg.GetValue(0)) {  // spin while the poison NaN is there
                }
            } else {
                CrossCoreWaitFlag(QK_READY);
            }
            og.SetGlobalBuffer((__gm__ float*)out + (b * ITERS + i) * T16 + sub * 128, 128);
            vec.Run(wg, og, i);
        }
    }
}
extern "C" __global__ __aicore__ void handshake(GM_ADDR q, GM_ADDR k, GM_ADDR ws, GM_ADDR o) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    SetSyncBaseAddr(0);
    Handshake<false>(q, k, ws, o);
}
extern "C" __global__ __aicore__ void read_before_wait(GM_ADDR q, GM_ADDR k, GM_ADDR ws, GM_ADDR o) {
    Handshake<true>(q, k, ws, o);
}
// AIC reads (GetValue) what an AIV wrote with DataCopy without waiting for its flag.
extern "C" __global__ __aicore__ void aic_reads_early(GM_ADDR, GM_ADDR, GM_ADDR ws, GM_ADDR) {
    GlobalTensor<float> wg;
    wg.SetGlobalBuffer((__gm__ float*)ws, 64);
    if ASCEND_IS_AIV {
        if (GetSubBlockIdx() == 0) {
            TPipe pipe;
            TBuf<TPosition::VECOUT> b;
            pipe.InitBuffer(b, 256);
            auto t = b.Get<float>();
            Duplicate(t, 1.0f, 64);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            DataCopy(wg, t, 64);
        }
        CrossCoreSetFlag<2, PIPE_MTE3>(3);
    }
    if ASCEND_IS_AIC {
        while (wg.GetValue(0) != wg.GetValue(0)) {
        }
        CrossCoreWaitFlag(3);
    }
}
// A ring of `slots` workspace slots (one flag per slot, QK_READY + slot): the AIC computes
// S_i into slot i % slots, running ahead of the AIVs; before reusing a slot it waits for the
// SOFTMAX_DONE of the iteration that last used it when `release` is set. With slots = 2 and the
// release wait the ring is correct; with slots = 1 (too shallow for the lead of one iteration) a
// slot is overwritten before the AIVs released it.
// `pause`: the AIC sleeps (host code, test only) before each reuse so the AIVs have read the
// slot by then: the overwrite is then caught on the AIC, as a write-after-read.
template <uint32_t slots, bool release, bool pause = false>
__aicore__ inline void Ring(GM_ADDR q, GM_ADDR k, GM_ADDR ws, GM_ADDR out) {
    if ASCEND_IS_AIC {
        GlobalTensor<half> qg, kg;
        GlobalTensor<float> wg;
        qg.SetGlobalBuffer((__gm__ half*)q, T16);
        CubeTile cube;
        uint32_t waited = 0;
        for (uint32_t i = 0; i < ITERS; ++i) {
            if (release && i >= slots) {
                CrossCoreWaitFlag(SOFTMAX_DONE);
                ++waited;
            }
            if (pause && i >= slots) std::this_thread::sleep_for(std::chrono::milliseconds(500));
            kg.SetGlobalBuffer((__gm__ half*)k + i * T16, T16);
            wg.SetGlobalBuffer((__gm__ float*)ws + (i % slots) * T16, T16);
            cube.Run(qg, kg, wg);
            CrossCoreSetFlag<2, PIPE_FIX>(QK_READY + 4 + i % slots);
        }
        for (; waited < ITERS; ++waited) CrossCoreWaitFlag(SOFTMAX_DONE);
    }
    if ASCEND_IS_AIV {
        const int64_t sub = GetSubBlockIdx();
        GlobalTensor<float> wg, og;
        VecTile vec;
        for (uint32_t i = 0; i < ITERS; ++i) {
            CrossCoreWaitFlag(QK_READY + 4 + i % slots);
            wg.SetGlobalBuffer((__gm__ float*)ws + (i % slots) * T16 + sub * 128, 128);
            og.SetGlobalBuffer((__gm__ float*)out + i * T16 + sub * 128, 128);
            vec.Run(wg, og, i);
        }
    }
}
extern "C" __global__ __aicore__ void ring_ok(GM_ADDR q, GM_ADDR k, GM_ADDR ws, GM_ADDR o) { Ring<2, true>(q, k, ws, o); }
extern "C" __global__ __aicore__ void ring_too_shallow(GM_ADDR q, GM_ADDR k, GM_ADDR ws, GM_ADDR o) {
    Ring<1, false>(q, k, ws, o);
}
extern "C" __global__ __aicore__ void ring_war(GM_ADDR q, GM_ADDR k, GM_ADDR ws, GM_ADDR o) {
    Ring<1, false, true>(q, k, ws, o);
}
extern "C" __global__ __aicore__ void deadlock(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR) {
    if ASCEND_IS_AIC { CrossCoreWaitFlag(5); }
    if ASCEND_IS_AIV { CrossCoreWaitFlag(6); }
}
extern "C" __global__ __aicore__ void deadlock_after_exit(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR) {
    if ASCEND_IS_AIV {
        if (GetSubBlockIdx() == 1) CrossCoreWaitFlag(7);
    }
}
extern "C" __global__ __aicore__ void unconsumed(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR) {
    if ASCEND_IS_AIC { CrossCoreSetFlag<2, PIPE_FIX>(4); }
}
extern "C" __global__ __aicore__ void partial_group(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR) {
    if ASCEND_IS_AIV {
        if (GetSubBlockIdx() == 0) CrossCoreSetFlag<2, PIPE_MTE3>(4);
    }
}
extern "C" __global__ __aicore__ void flag_too_big(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR) {
    if ASCEND_IS_AIC { CrossCoreSetFlag<2, PIPE_FIX>(16); }
}
extern "C" __global__ __aicore__ void too_many_sets(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR) {
    if ASCEND_IS_AIC {  // 16 Sets before any AIV waits: the 16th overflows the 0..15 counter
        for (int i = 0; i < 16; ++i) CrossCoreSetFlag<2, PIPE_FIX>(1);
        CrossCoreSetFlag<2, PIPE_FIX>(2);
    }
    if ASCEND_IS_AIV {
        CrossCoreWaitFlag(2);
        for (int i = 0; i < 16; ++i) CrossCoreWaitFlag(1);
    }
}
extern "C" __global__ __aicore__ void mode1_and_mode0(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR) {
    if ASCEND_IS_AIV {
        CrossCoreSetFlag<1, PIPE_MTE3>(8);  // the two AIVs of one AI Core
        CrossCoreWaitFlag(8);
        CrossCoreSetFlag<0, PIPE_MTE3>(9);  // all AIVs
        CrossCoreWaitFlag(9);
    }
    if ASCEND_IS_AIC {
        CrossCoreSetFlag<0, PIPE_FIX>(9);  // all AICs
        CrossCoreWaitFlag(9);
    }
}
extern "C" __global__ __aicore__ void mode2_in_aiv_only(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR) {
    CrossCoreSetFlag<2, PIPE_MTE3>(1);
}

// ---- UB pipe hazards (AIV_MODE, 1 core) ----
template <int kSync>
__aicore__ inline void Hazard(GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    og.SetGlobalBuffer((__gm__ float*)out, 64);
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(b, 256);
    auto ta = a.Get<float>(), tb = b.Get<float>();
    if (kSync == 4) SetFlag<HardEvent::MTE2_V>(EVENT_ID0);  // set before the copy: does not cover it
    DataCopy(ta, xg, 64);
    if (kSync == 1 || kSync == 6) { SetFlag<HardEvent::MTE2_V>(EVENT_ID0); WaitFlag<HardEvent::MTE2_V>(EVENT_ID0); }
    if (kSync == 2) PipeBarrier<PIPE_ALL>();
    if (kSync == 3) { SetFlag<HardEvent::MTE3_V>(EVENT_ID0); WaitFlag<HardEvent::MTE3_V>(EVENT_ID0); }
    if (kSync == 4) WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    if (kSync == 5) PipeBarrier<PIPE_V>();
    Muls(tb, ta, 3.0f, 64);
    if (kSync != 6) { SetFlag<HardEvent::V_MTE3>(EVENT_ID1); WaitFlag<HardEvent::V_MTE3>(EVENT_ID1); }
    DataCopy(og, tb, 64);
}
extern "C" __global__ __aicore__ void hz_none(GM_ADDR x, GM_ADDR o) { Hazard<0>(x, o); }
extern "C" __global__ __aicore__ void hz_flag(GM_ADDR x, GM_ADDR o) { Hazard<1>(x, o); }
extern "C" __global__ __aicore__ void hz_barrier_all(GM_ADDR x, GM_ADDR o) { Hazard<2>(x, o); }
extern "C" __global__ __aicore__ void hz_wrong_event(GM_ADDR x, GM_ADDR o) { Hazard<3>(x, o); }
extern "C" __global__ __aicore__ void hz_set_too_early(GM_ADDR x, GM_ADDR o) { Hazard<4>(x, o); }
extern "C" __global__ __aicore__ void hz_barrier_v(GM_ADDR x, GM_ADDR o) { Hazard<5>(x, o); }
extern "C" __global__ __aicore__ void hz_v_mte3(GM_ADDR x, GM_ADDR o) { Hazard<6>(x, o); }
// cube: LoadData straight after the Nd2Nz copy, no MTE2_MTE1
extern "C" __global__ __aicore__ void hz_cube(GM_ADDR x, GM_ADDR) {
    GlobalTensor<half> g;
    g.SetGlobalBuffer((__gm__ half*)x, T16);
    TPipe pipe;
    TBuf<TPosition::A1> a1;
    TBuf<TPosition::A2> a2;
    pipe.InitBuffer(a1, T16 * 2);
    pipe.InitBuffer(a2, T16 * 2);
    auto A1 = a1.Get<half>(), A2 = a2.Get<half>();
    DataCopy(A1, g, Nd2NzParams{1, 16, 16, 0, 16, 16, 1, 0});
    LoadData(A2, A1, LoadData2DParams{0, 1, 1, 0, 0, false, 0});
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    const int64_t blocks = 3;
    uint8_t* q = (uint8_t*)AscendC::GmAlloc(blocks * T16 * 2);
    uint8_t* k = (uint8_t*)AscendC::GmAlloc(ITERS * T16 * 2);
    uint8_t* ws = (uint8_t*)AscendC::GmAlloc(blocks * T16 * 4);
    uint8_t* o = (uint8_t*)AscendC::GmAlloc(blocks * ITERS * T16 * 4);
    for (int64_t i = 0; i < blocks * T16; ++i) ((half*)q)[i] = half(static_cast<float>((i * 7) % 11) - 5.0f);
    for (uint32_t it = 0; it < ITERS; ++it)  // k_i = (i+1) * identity
        for (uint32_t r = 0; r < 16; ++r)
            for (uint32_t cc = 0; cc < 16; ++cc) ((half*)k)[it * T16 + r * 16 + cc] = half(r == cc ? it + 1.0f : 0.0f);
    if (c == "handshake") ICPU_RUN_KF(handshake, blocks, q, k, ws, o);
    else if (c == "read_before_wait") ICPU_RUN_KF(read_before_wait, blocks, q, k, ws, o);
    else if (c == "aic_reads_early") ICPU_RUN_KF(aic_reads_early, 1, q, k, ws, o);
    else if (c == "ring_ok") ICPU_RUN_KF(ring_ok, 1, q, k, ws, o);
    else if (c == "ring_too_shallow") ICPU_RUN_KF(ring_too_shallow, 1, q, k, ws, o);
    else if (c == "ring_war") ICPU_RUN_KF(ring_war, 1, q, k, ws, o);
    else if (c == "deadlock") ICPU_RUN_KF(deadlock, 2, q, k, ws, o);
    else if (c == "deadlock_after_exit") ICPU_RUN_KF(deadlock_after_exit, 1, q, k, ws, o);
    else if (c == "unconsumed") ICPU_RUN_KF(unconsumed, 1, q, k, ws, o);
    else if (c == "partial_group") ICPU_RUN_KF(partial_group, 1, q, k, ws, o);
    else if (c == "flag_too_big") ICPU_RUN_KF(flag_too_big, 1, q, k, ws, o);
    else if (c == "too_many_sets") ICPU_RUN_KF(too_many_sets, 1, q, k, ws, o);
    else if (c == "mode1_and_mode0") ICPU_RUN_KF(mode1_and_mode0, blocks, q, k, ws, o);
    else if (c == "mode2_in_aiv_only") { AscendC::SetKernelMode(KernelMode::AIV_MODE); ICPU_RUN_KF(mode2_in_aiv_only, 2, q, k, ws, o); }
    else if (c.rfind("hz_", 0) == 0) {
        AscendC::SetKernelMode(c == "hz_cube" ? KernelMode::AIC_MODE : KernelMode::AIV_MODE);
        if (c == "hz_none") ICPU_RUN_KF(hz_none, 1, ws, o);
        else if (c == "hz_flag") ICPU_RUN_KF(hz_flag, 1, ws, o);
        else if (c == "hz_barrier_all") ICPU_RUN_KF(hz_barrier_all, 1, ws, o);
        else if (c == "hz_wrong_event") ICPU_RUN_KF(hz_wrong_event, 1, ws, o);
        else if (c == "hz_set_too_early") ICPU_RUN_KF(hz_set_too_early, 1, ws, o);
        else if (c == "hz_barrier_v") ICPU_RUN_KF(hz_barrier_v, 1, ws, o);
        else if (c == "hz_v_mte3") ICPU_RUN_KF(hz_v_mte3, 1, ws, o);
        else if (c == "hz_cube") ICPU_RUN_KF(hz_cube, 1, q, o);
        else return 2;
    } else {
        return 2;
    }
    if (argc > 2) {
        FILE* f = std::fopen(argv[2], "wb");
        std::fwrite(o, 1, blocks * ITERS * T16 * 4, f);
        std::fclose(f);
    }
    std::printf("done\n");
    return 0;
}
