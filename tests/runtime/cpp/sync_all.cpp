// SyncAll, the hardware all-core barrier: every AIV publishes a slice of GM, the barrier, then
// every AIV reads every slice. Misuses: a core that never arrives, SyncAll<false>() outside a MIX
// launch, a kernel flag on an ID SyncAll reserves.
// argv: case [out.bin]
#include <cstdio>
#include <string>

#include "tikicpulib.h"

using namespace AscendC;
constexpr int64_t kBlocks = 3;
constexpr int64_t kSlice = 8;  // floats per core: one 32-byte block

// Core `v` of `cores` writes v + 1 into slice v of `ws`, passes the barrier (unless kSkip),
// then copies all `cores` slices into row v of `out`.
template <bool kAivOnly, bool kSkip>
__aicore__ inline void Publish(GM_ADDR ws, GM_ADDR out, int64_t v, int64_t cores) {
    GlobalTensor<float> wg, og;
    wg.SetGlobalBuffer((__gm__ float*)ws, cores * kSlice);
    og.SetGlobalBuffer((__gm__ float*)out + v * cores * kSlice, cores * kSlice);
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, kSlice * sizeof(float));
    pipe.InitBuffer(b, cores * kSlice * sizeof(float));
    auto ta = a.Get<float>(), tb = b.Get<float>();
    Duplicate(ta, static_cast<float>(v + 1), kSlice);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(wg[v * kSlice], ta, kSlice);
    if (!kSkip) SyncAll<kAivOnly>();
    DataCopy(tb, wg, cores * kSlice);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(og, tb, cores * kSlice);
}
// MIX launch: the AIVs publish; the AICs only pass the barrier (SyncAll<false> needs them).
template <bool kSkip>
__aicore__ inline void MixAllGather(GM_ADDR ws, GM_ADDR out) {
    if ASCEND_IS_AIC {
        if (!kSkip) SyncAll<false>();
    }
    if ASCEND_IS_AIV { Publish<false, kSkip>(ws, out, GetBlockIdx(), 2 * GetBlockNum()); }
}
extern "C" __global__ __aicore__ void mix_gather(GM_ADDR ws, GM_ADDR out) { MixAllGather<false>(ws, out); }
extern "C" __global__ __aicore__ void mix_no_barrier(GM_ADDR ws, GM_ADDR out) { MixAllGather<true>(ws, out); }
extern "C" __global__ __aicore__ void aiv_gather(GM_ADDR ws, GM_ADDR out) {
    Publish<true, false>(ws, out, GetBlockIdx(), GetBlockNum());
}
extern "C" __global__ __aicore__ void aiv_false(GM_ADDR, GM_ADDR) { SyncAll<false>(); }
// The second AIV of block 1 returns without reaching the barrier.
extern "C" __global__ __aicore__ void one_core_absent(GM_ADDR, GM_ADDR) {
    if ASCEND_IS_AIV {
        if (GetBlockIdx() == 3) return;
    }
    SyncAll<false>();
}
// The kernel hands a tile over on flag 12 (reserved by SyncAll), then calls SyncAll.
extern "C" __global__ __aicore__ void reserved_flag(GM_ADDR, GM_ADDR) {
    if ASCEND_IS_AIC { CrossCoreWaitFlag(12); }
    if ASCEND_IS_AIV { CrossCoreSetFlag<2, PIPE_MTE3>(12); }
    SyncAll<false>();
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    const int64_t cores = 2 * kBlocks;
    uint8_t* ws = (uint8_t*)AscendC::GmAlloc(cores * kSlice * 4);
    uint8_t* o = (uint8_t*)AscendC::GmAlloc(cores * cores * kSlice * 4);
    if (c == "mix_gather") ICPU_RUN_KF(mix_gather, kBlocks, ws, o);
    else if (c == "mix_no_barrier") ICPU_RUN_KF(mix_no_barrier, kBlocks, ws, o);
    else if (c == "one_core_absent") ICPU_RUN_KF(one_core_absent, kBlocks, ws, o);
    else if (c == "reserved_flag") ICPU_RUN_KF(reserved_flag, kBlocks, ws, o);
    else if (c == "aiv_gather" || c == "aiv_false") {
        AscendC::SetKernelMode(KernelMode::AIV_MODE);
        if (c == "aiv_gather") ICPU_RUN_KF(aiv_gather, cores, ws, o);
        else ICPU_RUN_KF(aiv_false, cores, ws, o);
    } else {
        return 2;
    }
    if (argc > 2) {
        FILE* f = std::fopen(argv[2], "wb");
        std::fwrite(o, 1, cores * cores * kSlice * 4, f);
        std::fclose(f);
    }
    std::printf("done\n");
    return 0;
}
