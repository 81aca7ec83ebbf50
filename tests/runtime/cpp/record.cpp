// The executed-instruction record (FADSL_RECORD): one MIX launch that makes every kind of row.
// test_rt_record.py finds each call's line by its "// @name" marker. argv: case
#include <cstdio>
#include <string>

#include "tikicpulib.h"

using namespace AscendC;
constexpr uint32_t T16 = 16 * 16;

__aicore__ inline void Cube(GM_ADDR q, GM_ADDR ws) {
    GlobalTensor<half> qg;
    GlobalTensor<float> wg;
    qg.SetGlobalBuffer((__gm__ half*)q, T16);
    wg.SetGlobalBuffer((__gm__ float*)ws, T16);
    TPipe pipe;  // @tpipe
    TBuf<TPosition::A1> a1;
    TBuf<TPosition::A2> a2;
    TBuf<TPosition::B2> b2;
    TBuf<TPosition::CO1> c;
    pipe.InitBuffer(a1, T16 * 2);
    pipe.InitBuffer(a2, T16 * 2);
    pipe.InitBuffer(b2, T16 * 2);
    pipe.InitBuffer(c, T16 * 4);
    auto A1 = a1.Get<half>(), A2 = a2.Get<half>(), B2 = b2.Get<half>();
    auto C = c.Get<float>();
    DataCopy(A1, qg, Nd2NzParams{1, 16, 16, 0, 16, 16, 1, 0});  // @nd2nz
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID1);                   // @set
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID1);                  // @wait
    LoadData(A2, A1, LoadData2DParams{0, 1, 1, 0, 0, false, 0});
    LoadData(B2, A1, LoadData2DParams{0, 1, 1, 0, 0, true, 0});  // @loadb
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    Mmad(C, A2, B2, MmadParams{16, 16, 16, 0, false, true});  // @mmad
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(wg, C, FixpipeParamsV220{16, 16, 16, 16, false, QuantMode_t::NoQuant, 0, 1, 0, 0, 0});  // @fixpipe
    CrossCoreSetFlag<2, PIPE_FIX>(1);  // @aic_set
}

__aicore__ inline void Vec(GM_ADDR ws, GM_ADDR out) {
    const int64_t sub = GetSubBlockIdx();
    GlobalTensor<float> wg, og;
    wg.SetGlobalBuffer((__gm__ float*)ws + sub * 128, 128);
    og.SetGlobalBuffer((__gm__ float*)out + sub * 128, 128);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> in;
    TBuf<TPosition::VECCALC> tmp;
    pipe.InitBuffer(in, 1, 128 * 4);
    pipe.InitBuffer(tmp, 128 * 4);
    CrossCoreWaitFlag(1);  // @aiv_wait
    auto t = in.AllocTensor<float>();  // @alloc
    DataCopyPad(t, wg, DataCopyExtParams{2, 256, 0, 0, 0}, DataCopyPadExtParams<float>{false, 0, 0, 0});  // @pad_in
    in.EnQue(t);  // @enque
    auto s = in.DeQue<float>();  // @deque
    auto r = tmp.Get<float>();
    Add(r, s, s, 64, 2, BinaryRepeatParams());  // @add0
    Exp(r, r, 128);
    in.FreeTensor(s);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, r, 128);  // @copy_out
}

extern "C" __global__ __aicore__ void record_mix(GM_ADDR q, GM_ADDR ws, GM_ADDR out) {
    if ASCEND_IS_AIC {
        Cube(q, ws);
    }
    if ASCEND_IS_AIV {
        Vec(ws, out);
    }
    SyncAll<false>();  // @syncall
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    uint8_t* q = (uint8_t*)AscendC::GmAlloc(T16 * 2);
    uint8_t* ws = (uint8_t*)AscendC::GmAlloc(T16 * 4);
    uint8_t* o = (uint8_t*)AscendC::GmAlloc(T16 * 4);
    for (uint32_t i = 0; i < T16; ++i) ((half*)q)[i] = half(static_cast<float>(i % 7) - 3.0f);
    if (c != "mix") return 2;
    ICPU_RUN_KF(record_mix, 1, q, ws, o);
    std::printf("done\n");
    return 0;
}
