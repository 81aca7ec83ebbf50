// Misuse that the runtime must refuse: capacities, queue protocol, bounds, alignment, GM pointers,
// launch sizes, SetFlag/WaitFlag pairing. argv: case
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tikicpulib.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void ub_overflow(GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> calc;
    TQue<TPosition::VECIN, 1> in;
    pipe.InitBuffer(calc, 135168);
    pipe.InitBuffer(in, 2, 32768);
}
extern "C" __global__ __aicore__ void l0c_overflow(GM_ADDR) {
    TPipe pipe;
    TQue<TPosition::CO1, 1> c;
    pipe.InitBuffer(c, 2, 128 * 128 * 4);  // 2 x 64 KB fits exactly
    TBuf<TPosition::CO1> more;
    pipe.InitBuffer(more, 1);  // rounded up to 32 B -> overflow
}
extern "C" __global__ __aicore__ void ub_on_aic(GM_ADDR) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 1024);
}
extern "C" __global__ __aicore__ void alloc_no_free(GM_ADDR) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    auto a = q.AllocTensor<float>();
    auto b = q.AllocTensor<float>();
    (void)a;
    (void)b;
}
extern "C" __global__ __aicore__ void deque_empty(GM_ADDR) {
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 2, 256);
    auto t = q.DeQue<float>();
    (void)t;
}
extern "C" __global__ __aicore__ void enque_beyond_depth(GM_ADDR) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 256);
    auto a = q.AllocTensor<float>();
    auto b = q.AllocTensor<float>();
    q.EnQue(a);
    q.EnQue(b);
}
extern "C" __global__ __aicore__ void free_foreign(GM_ADDR) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q1;
    TQue<TPosition::VECOUT, 1> q2;
    pipe.InitBuffer(q1, 1, 256);
    pipe.InitBuffer(q2, 1, 256);
    auto a = q1.AllocTensor<float>();
    q2.FreeTensor(a);
}
extern "C" __global__ __aicore__ void double_free(GM_ADDR) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 256);
    auto a = q.AllocTensor<float>();
    auto keep = a;
    q.FreeTensor(a);
    q.FreeTensor(keep);
}
extern "C" __global__ __aicore__ void use_after_free(GM_ADDR) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    auto a = q.AllocTensor<float>();
    q.FreeTensor(a);
    Adds(a, a, 1.0f, 64);
}
extern "C" __global__ __aicore__ void oob_local(GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    auto t = b.Get<float>();
    Duplicate(t, 0.0f, 64);
    Add(t, t, t, 128);
}
extern "C" __global__ __aicore__ void oob_getvalue(GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 64);
    auto t = b.Get<float>();
    t.SetValue(16, 1.0f);
}
extern "C" __global__ __aicore__ void misaligned(GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    auto t = b.Get<float>();
    Duplicate(t[3], 1.0f, 16);
}
extern "C" __global__ __aicore__ void gm_oob(GM_ADDR x) {
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)x, 32);
    TPipe pipe;
    TBuf<TPosition::VECIN> b;
    pipe.InitBuffer(b, 1024);
    auto t = b.Get<float>();
    DataCopy(t, g[16], 32);
}
extern "C" __global__ __aicore__ void noop(GM_ADDR) {}
extern "C" __global__ __aicore__ void reduce_small_work(GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> s, w, d;
    pipe.InitBuffer(s, 8320 * 2);
    pipe.InitBuffer(w, 352 - 32);  // ReduceMax.md example: 8320 halves with index need 176 halves = 352 B
    pipe.InitBuffer(d, 32);
    auto src = s.Get<half>();
    Duplicate(src, half(1.0f), 8320);
    ReduceMax(d.Get<half>(), src, w.Get<half>(), 8320, true);
}
extern "C" __global__ __aicore__ void vec_on_l1(GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::A1> b;
    pipe.InitBuffer(b, 256);
    auto t = b.Get<float>();
    Adds(t, t, 1.0f, 64);
}
// Fill (CANN >= 9.0.0's name for InitConstValue): an L0A destination takes 512 B blocks and must be
// 512 B aligned (Fill.md); an L1 one 32 B blocks. Filling L1 at 256 B is fine, L0A at 256 B is not.
extern "C" __global__ __aicore__ void fill_l0a_misaligned(GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::A1> l1;
    TBuf<TPosition::A2> l0a;
    pipe.InitBuffer(l1, 1024);
    pipe.InitBuffer(l0a, 2048);
    Fill(l1.Get<half>()[128], InitConstValueParams<half>(1, 2, 0, half(0.0f)));
    std::printf("l1 fill ok\n");
    Fill(l0a.Get<half>()[128], InitConstValueParams<half>(1, 1, 0, half(0.0f)));
}
extern "C" __global__ __aicore__ void tbuf_get_too_long(GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 100);  // rounded to 128 B
    auto ok = b.Get<float>(32);
    std::printf("size %u\n", ok.GetSize());
    auto bad = b.Get<float>(33);
    (void)bad;
}
extern "C" __global__ __aicore__ void views(GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    auto f = b.Get<float>();
    f.SetValue(1, 1.0f);
    auto h = f.ReinterpretCast<half>();
    auto v = f[8];
    PipeBarrier<PIPE_ALL>();
    std::printf("views %u %u %04x %u %d\n", f.GetSize(), h.GetSize(), h.GetValue(3).val, v.GetSize(),
                static_cast<int>(v.GetPosition()));
}
extern "C" __global__ __aicore__ void set_twice(GM_ADDR) {
    SetFlag<HardEvent::MTE2_V>(EVENT_ID1);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID1);
}
extern "C" __global__ __aicore__ void wait_without_set(GM_ADDR) {
    SetFlag<HardEvent::MTE2_V>(EVENT_ID1);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID1);
}
extern "C" __global__ __aicore__ void set_never_waited(GM_ADDR) { SetFlag<HardEvent::V_MTE3>(EVENT_ID2); }
extern "C" __global__ __aicore__ void bad_event_id(GM_ADDR) { SetFlag<HardEvent::V_MTE3>(8); }
extern "C" __global__ __aicore__ void core_ids(GM_ADDR) {
    std::printf("core %s blk=%ld num=%ld sub=%ld subnum=%ld ratio=%ld\n", g_coreType == AscendC::AIC ? "AIC" : "AIV",
                static_cast<long>(GetBlockIdx()), static_cast<long>(GetBlockNum()), static_cast<long>(GetSubBlockIdx()),
                static_cast<long>(GetSubBlockNum()), static_cast<long>(GetTaskRatio()));
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    uint8_t* x = (uint8_t*)AscendC::GmAlloc(1024);
    auto aiv = [] { AscendC::SetKernelMode(KernelMode::AIV_MODE); };
    auto aic = [] { AscendC::SetKernelMode(KernelMode::AIC_MODE); };
    if (c == "ub_overflow") { aiv(); ICPU_RUN_KF(ub_overflow, 1, x); }
    else if (c == "l0c_overflow") { aic(); ICPU_RUN_KF(l0c_overflow, 1, x); }
    else if (c == "ub_on_aic") { ICPU_RUN_KF(ub_on_aic, 1, x); }
    else if (c == "alloc_no_free") { aiv(); ICPU_RUN_KF(alloc_no_free, 1, x); }
    else if (c == "deque_empty") { aiv(); ICPU_RUN_KF(deque_empty, 1, x); }
    else if (c == "enque_beyond_depth") { aiv(); ICPU_RUN_KF(enque_beyond_depth, 1, x); }
    else if (c == "free_foreign") { aiv(); ICPU_RUN_KF(free_foreign, 1, x); }
    else if (c == "double_free") { aiv(); ICPU_RUN_KF(double_free, 1, x); }
    else if (c == "use_after_free") { aiv(); ICPU_RUN_KF(use_after_free, 1, x); }
    else if (c == "oob_local") { aiv(); ICPU_RUN_KF(oob_local, 1, x); }
    else if (c == "oob_getvalue") { aiv(); ICPU_RUN_KF(oob_getvalue, 1, x); }
    else if (c == "misaligned") { aiv(); ICPU_RUN_KF(misaligned, 1, x); }
    else if (c == "gm_oob") { aiv(); ICPU_RUN_KF(gm_oob, 1, x); }
    else if (c == "not_gmalloc") { aiv(); static uint8_t buf[64]; ICPU_RUN_KF(noop, 1, buf); }
    else if (c == "mix_too_many") { ICPU_RUN_KF(noop, 25, x); }
    else if (c == "aiv_too_many") { aiv(); ICPU_RUN_KF(noop, 49, x); }
    else if (c == "aiv_max") { aiv(); ICPU_RUN_KF(noop, 48, x); }
    else if (c == "set_twice") { aiv(); ICPU_RUN_KF(set_twice, 1, x); }
    else if (c == "wait_without_set") { aiv(); ICPU_RUN_KF(wait_without_set, 1, x); }
    else if (c == "set_never_waited") { aiv(); ICPU_RUN_KF(set_never_waited, 2, x); }
    else if (c == "bad_event_id") { aiv(); ICPU_RUN_KF(bad_event_id, 1, x); }
    else if (c == "ids_mix") { ICPU_RUN_KF(core_ids, 3, x); }
    else if (c == "ids_aiv") { aiv(); ICPU_RUN_KF(core_ids, 3, x); }
    else if (c == "reduce_small_work") { aiv(); ICPU_RUN_KF(reduce_small_work, 1, x); }
    else if (c == "fill_l0a_misaligned") { aic(); ICPU_RUN_KF(fill_l0a_misaligned, 1, x); }
    else if (c == "vec_on_l1") { aic(); ICPU_RUN_KF(vec_on_l1, 1, x); }
    else if (c == "tbuf_get_too_long") { aiv(); ICPU_RUN_KF(tbuf_get_too_long, 1, x); }
    else if (c == "views") { aiv(); ICPU_RUN_KF(views, 1, x); }
    else if (c == "double_gmfree") { AscendC::GmFree(x); AscendC::GmFree(x); }
    else return 2;
    std::printf("done\n");
    return 0;
}
