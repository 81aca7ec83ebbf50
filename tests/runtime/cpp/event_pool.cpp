// TPipe event-ID pool and the flags TQue operations set/wait (fadsl_rt/flags.h): IDs handed out by
// AllocEventID/FetchEventID, and kernels that misuse event IDs next to TQues. argv: case
#include <cstdio>
#include <string>

#include "tikicpulib.h"

using namespace AscendC;

// The pattern fa1's vector code had before issue 12: two VECIN buffers freed (FreeTensor sets
// V_MTE2 IDs 0 and 1 from the pool), then a fill of a third buffer synchronised with a hard-coded
// SetFlag<V_MTE2>(EVENT_ID1): the same event and ID set twice without a wait. kFetched: the same
// fill with an ID fetched from the pool, which is accepted.
template <bool kFetched>
__aicore__ inline void FillAfterTwoFrees() {
    TPipe pipe;
    TQue<TPosition::VECIN, 2> q;
    TQue<TPosition::VECIN, 1> r;
    pipe.InitBuffer(q, 2, 256);
    pipe.InitBuffer(r, 1, 256);
    auto a = q.AllocTensor<float>();
    auto b = q.AllocTensor<float>();
    q.FreeTensor(a);
    q.FreeTensor(b);
    auto t = r.AllocTensor<float>();
    Duplicate(t, 0.0f, 64);
    const int32_t id = kFetched ? GetTPipePtr()->FetchEventID(HardEvent::V_MTE2) : int32_t{EVENT_ID1};
    SetFlag<HardEvent::V_MTE2>(id);
    WaitFlag<HardEvent::V_MTE2>(id);
    r.FreeTensor(t);
    std::printf("used %d\n", static_cast<int>(id));
}
extern "C" __global__ __aicore__ void fixed_id_after_free(GM_ADDR) { FillAfterTwoFrees<false>(); }
extern "C" __global__ __aicore__ void fetched_id_after_free(GM_ADDR) { FillAfterTwoFrees<true>(); }
// A kernel WaitFlag consumes the flag FreeTensor set; the next AllocTensor of that buffer then
// waits on a flag nobody set.
extern "C" __global__ __aicore__ void steal_free_flag(GM_ADDR) {
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    auto a = q.AllocTensor<float>();
    q.FreeTensor(a);
    WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
    auto b = q.AllocTensor<float>();
    q.FreeTensor(b);
}
// A kernel SetFlag on the ID EnQue took: set twice.
extern "C" __global__ __aicore__ void set_on_enque_id(GM_ADDR) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    auto a = q.AllocTensor<float>();
    q.EnQue(a);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
}
// On an AIC the TPipe holds M_MTE1 IDs 0..2 (set) from construction to Destroy.
extern "C" __global__ __aicore__ void aic_m_mte1_reserved(GM_ADDR) {
    TPipe pipe;
    SetFlag<HardEvent::M_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::M_MTE1>(EVENT_ID0);
}
extern "C" __global__ __aicore__ void pool_exhausted(GM_ADDR) {
    TPipe pipe;
    for (int i = 0; i < 9; ++i) (void)pipe.AllocEventID<HardEvent::V_S>();
}
extern "C" __global__ __aicore__ void release_unallocated(GM_ADDR) {
    TPipe pipe;
    pipe.ReleaseEventID<HardEvent::V_S>(3);
}
extern "C" __global__ __aicore__ void no_pipe(GM_ADDR) { (void)GetTPipePtr()->FetchEventID(HardEvent::V_S); }
// IDs: lowest free; FetchEventID does not occupy; the queue IDs come from the same pool.
extern "C" __global__ __aicore__ void ids(GM_ADDR) {
    TPipe pipe;
    TQue<TPosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 256);
    auto a = q.AllocTensor<float>();
    q.FreeTensor(a);  // V_MTE2 ID 0 occupied until a's buffer is allocated again
    const int f1 = GetTPipePtr()->FetchEventID<HardEvent::V_MTE2>();
    const int a1 = GetTPipePtr()->AllocEventID<HardEvent::V_MTE2>();
    const int f2 = GetTPipePtr()->FetchEventID(HardEvent::V_MTE2);
    GetTPipePtr()->ReleaseEventID<HardEvent::V_MTE2>(static_cast<TEventID>(a1));
    auto b = q.AllocTensor<float>();  // the other buffer: ID 0 stays set
    auto c = q.AllocTensor<float>();  // a's buffer again: waits for and releases ID 0
    const int f3 = GetTPipePtr()->FetchEventID(HardEvent::V_MTE2);
    q.EnQue(b);
    const int e1 = GetTPipePtr()->FetchEventID(HardEvent::MTE2_V);
    b = q.DeQue<float>();
    q.FreeTensor(b);
    q.FreeTensor(c);
    std::printf("ids %d %d %d %d %d\n", f1, a1, f2, f3, e1);
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    uint8_t* x = (uint8_t*)AscendC::GmAlloc(1024);
    const bool cube = c == "aic_m_mte1_reserved";
    AscendC::SetKernelMode(cube ? KernelMode::AIC_MODE : KernelMode::AIV_MODE);
    if (c == "fixed_id_after_free") ICPU_RUN_KF(fixed_id_after_free, 1, x);
    else if (c == "fetched_id_after_free") ICPU_RUN_KF(fetched_id_after_free, 1, x);
    else if (c == "steal_free_flag") ICPU_RUN_KF(steal_free_flag, 1, x);
    else if (c == "set_on_enque_id") ICPU_RUN_KF(set_on_enque_id, 1, x);
    else if (c == "aic_m_mte1_reserved") ICPU_RUN_KF(aic_m_mte1_reserved, 1, x);
    else if (c == "pool_exhausted") ICPU_RUN_KF(pool_exhausted, 1, x);
    else if (c == "release_unallocated") ICPU_RUN_KF(release_unallocated, 1, x);
    else if (c == "no_pipe") ICPU_RUN_KF(no_pipe, 1, x);
    else if (c == "ids") ICPU_RUN_KF(ids, 1, x);
    else return 2;
    std::printf("done\n");
    return 0;
}
