// Vector op checks: every op's UB result is copied to its own GM slot; the Python side compares
// with numpy. argv: case dtype count x.bin y.bin out.bin
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tikicpulib.h"

using namespace AscendC;

constexpr int kSlots = 20;

template <typename T>
__aicore__ inline void VecLevel2(GM_ADDR x, GM_ADDR y, GM_ADDR out, GM_ADDR tiling) {
    GlobalTensor<int32_t> tg;
    tg.SetGlobalBuffer((__gm__ int32_t*)tiling, 8);
    const int32_t n = tg.GetValue(0);
    const uint32_t np = (n + 31) / 32 * 32;  // padded slot length (elements)
    GlobalTensor<T> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ T*)x, np);
    yg.SetGlobalBuffer((__gm__ T*)y, np);
    og.SetGlobalBuffer((__gm__ T*)out, np * kSlots);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    TBuf<TPosition::VECCALC> work;
    pipe.InitBuffer(inQ, 2, np * sizeof(T));
    pipe.InitBuffer(outQ, 1, np * sizeof(T));
    pipe.InitBuffer(work, 4096);
    auto xl = inQ.AllocTensor<T>();
    auto yl = inQ.AllocTensor<T>();
    DataCopy(xl, xg, np);
    DataCopy(yl, yg, np);
    inQ.EnQue(xl);
    xl = inQ.DeQue<T>();
    inQ.EnQue(yl);
    yl = inQ.DeQue<T>();
    int slot = 0;
    auto emit = [&](auto fn) {
        auto o = outQ.AllocTensor<T>();
        Duplicate(o, T(0), np);
        fn(o);
        outQ.EnQue(o);
        auto r = outQ.DeQue<T>();
        DataCopy(og[slot * np], r, np);
        outQ.FreeTensor(r);
        ++slot;
    };
    emit([&](LocalTensor<T>& o) { Add(o, xl, yl, n); });
    emit([&](LocalTensor<T>& o) { Sub(o, xl, yl, n); });
    emit([&](LocalTensor<T>& o) { Mul(o, xl, yl, n); });
    emit([&](LocalTensor<T>& o) { Div(o, xl, yl, n); });
    emit([&](LocalTensor<T>& o) { Max(o, xl, yl, n); });
    emit([&](LocalTensor<T>& o) { Min(o, xl, yl, n); });
    emit([&](LocalTensor<T>& o) { Exp(o, xl, n); });
    emit([&](LocalTensor<T>& o) { Ln(o, yl, n); });
    emit([&](LocalTensor<T>& o) { Abs(o, xl, n); });
    emit([&](LocalTensor<T>& o) { Sqrt(o, yl, n); });
    emit([&](LocalTensor<T>& o) { Reciprocal(o, yl, n); });
    emit([&](LocalTensor<T>& o) { Adds(o, xl, T(1.5f), n); });
    emit([&](LocalTensor<T>& o) { Muls(o, xl, T(-0.75f), n); });
    emit([&](LocalTensor<T>& o) { Maxs(o, xl, T(0.25f), n); });
    emit([&](LocalTensor<T>& o) { Mins(o, xl, T(0.25f), n); });
    emit([&](LocalTensor<T>& o) { Duplicate(o, T(3.25f), n); });
    emit([&](LocalTensor<T>& o) { CreateVecIndex(o, T(-2.0f), n); });
    auto w = work.Get<T>();
    emit([&](LocalTensor<T>& o) { ReduceMax(o, xl, w, n, true); });
    emit([&](LocalTensor<T>& o) { ReduceSum(o, xl, w, n); });
    emit([&](LocalTensor<T>& o) { ReduceMax(o, xl, w, n, false); });
    inQ.FreeTensor(xl);
    inQ.FreeTensor(yl);
}

// Level-0 forms, Brcb and the whole/block reductions on one 8-repeat tile of float or half.
template <typename T>
__aicore__ inline void VecLevel0(GM_ADDR x, GM_ADDR y, GM_ADDR out, GM_ADDR) {
    constexpr uint32_t E = 256 / sizeof(T);  // lanes per repeat
    constexpr uint32_t n = 8 * E;
    GlobalTensor<T> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ T*)x, n);
    yg.SetGlobalBuffer((__gm__ T*)y, n);
    og.SetGlobalBuffer((__gm__ T*)out, n * 11);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo;
    pipe.InitBuffer(bx, n * sizeof(T));
    pipe.InitBuffer(by, n * sizeof(T));
    pipe.InitBuffer(bo, n * sizeof(T));
    auto xl = bx.Get<T>(), yl = by.Get<T>(), o = bo.Get<T>();
    DataCopy(xl, xg, n);
    DataCopy(yl, yg, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    uint32_t slot = 0;
    auto flush = [&]() {
        SetFlag<HardEvent::V_MTE3>(EVENT_ID1);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID1);
        DataCopy(og[slot * n], o, n);
        ++slot;
        SetFlag<HardEvent::MTE3_V>(EVENT_ID2);
        WaitFlag<HardEvent::MTE3_V>(EVENT_ID2);
        Duplicate(o, T(0), n);
    };
    Duplicate(o, T(0), n);
    // 0: Add, bitwise mask (every 3rd lane), 2 repeats; src0 reads every other block, dst contiguous
    uint64_t bits[2] = {0x9249249249249249ull, sizeof(T) == 2 ? 0x4924924924924924ull : 0ull};
    Add(o, xl, yl, bits, 2, BinaryRepeatParams(1, 2, 1, 8, 16, 8));
    flush();
    // 1: Mul, continuous mask of E-5 lanes, 3 repeats, src1 repeat stride 0 (re-reads repeat 0)
    Mul(o, xl, yl, E - 5, 3, BinaryRepeatParams(1, 1, 1, 8, 8, 0));
    flush();
    // 2: Exp, continuous mask, 4 repeats; 3: Adds; 4: Duplicate level-0 with dst block stride 2
    Exp(o, xl, E, 4, UnaryRepeatParams(1, 1, 8, 8));
    flush();
    Adds(o, xl, T(2.0f), E / 2, 4, UnaryRepeatParams(1, 1, 8, 8));
    flush();
    Duplicate(o, T(7.0f), E, 2, 2, 16);
    flush();
    // 5: WholeReduceMax (value, index) for 8 repeats; 6: WholeReduceSum; 7: BlockReduceSum + Brcb
    WholeReduceMax(o, xl, E, 8, 1, 1, 8);
    flush();
    WholeReduceSum(o, xl, E, 8, 1, 1, 8);
    flush();
    BlockReduceMax(o, xl, 8, E, 1, 1, 8);      // 64 block maxima at o[0..63]
    Brcb(o[n / 2], xl, 2, BrcbRepeatParams(1, 8));  // 16 values broadcast into 16 blocks
    flush();
    // 8, 9, 10: ReduceRepeat (CANN >= 9.1.0's name) MAX (value, index), SUM, MIN (value, index)
    ReduceRepeat<ReduceType::MAX, T, T>(o, xl, E, 8, 1, 1, 8);
    flush();
    ReduceRepeat<ReduceType::SUM, T, T>(o, xl, E, 8, 1, 1, 8);
    flush();
    ReduceRepeat<ReduceType::MIN, T, T>(o, xl, E, 8, 1, 1, 8);
    flush();
}

// Compare / Compares / Select on 256 elements.
template <typename T>
__aicore__ inline void VecCmpSel(GM_ADDR x, GM_ADDR y, GM_ADDR out, GM_ADDR) {
    constexpr uint32_t n = 256;
    GlobalTensor<T> xg, yg, og;
    GlobalTensor<uint8_t> ogBytes;
    xg.SetGlobalBuffer((__gm__ T*)x, n);
    yg.SetGlobalBuffer((__gm__ T*)y, n);
    og.SetGlobalBuffer((__gm__ T*)out, n * 8);
    ogBytes.SetGlobalBuffer((__gm__ uint8_t*)out, n * 8 * sizeof(T));
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo, bm;
    pipe.InitBuffer(bx, n * sizeof(T));
    pipe.InitBuffer(by, n * sizeof(T));
    pipe.InitBuffer(bo, n * sizeof(T));
    pipe.InitBuffer(bm, n);
    auto xl = bx.Get<T>(), yl = by.Get<T>(), o = bo.Get<T>();
    auto m = bm.Get<uint8_t>();
    DataCopy(xl, xg, n);
    DataCopy(yl, yg, n);
    PipeBarrier<PIPE_ALL>();
    uint32_t slot = 0;
    auto flushMask = [&]() {  // the n/8 mask bytes land in the first bytes of a slot
        PipeBarrier<PIPE_ALL>();
        DataCopy(ogBytes[slot * n * sizeof(T)], m, 32);
        ++slot;
        PipeBarrier<PIPE_ALL>();
    };
    auto flush = [&]() {
        PipeBarrier<PIPE_ALL>();
        DataCopy(og[slot * n], o, n);
        ++slot;
        PipeBarrier<PIPE_ALL>();
    };
    Compare(m, xl, yl, CMPMODE::LT, n);
    flushMask();
    Compare(m, xl, yl, CMPMODE::EQ, n);
    flushMask();
    Compares(m, xl, T(0.0f), CMPMODE::GE, n);
    flushMask();
    Compare(m, xl, yl, CMPMODE::LT, n);
    Select(o, m, xl, yl, SELMODE::VSEL_TENSOR_TENSOR_MODE, n);  // elementwise min
    flush();
    Select(o, m, xl, T(-9.0f), SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
    flush();
    Select(o, m, xl, yl, SELMODE::VSEL_CMPMASK_SPR, n);  // reuses the first 256/sizeof(T) bits
    flush();
}

// int16 logic ops on 128 elements.
__aicore__ inline void VecLogic(GM_ADDR x, GM_ADDR y, GM_ADDR out) {
    constexpr uint32_t n = 128;
    GlobalTensor<int16_t> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ int16_t*)x, n);
    yg.SetGlobalBuffer((__gm__ int16_t*)y, n);
    og.SetGlobalBuffer((__gm__ int16_t*)out, 3 * n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo;
    pipe.InitBuffer(bx, n * 2);
    pipe.InitBuffer(by, n * 2);
    pipe.InitBuffer(bo, 3 * n * 2);
    auto xl = bx.Get<int16_t>(), yl = by.Get<int16_t>(), o = bo.Get<int16_t>();
    DataCopy(xl, xg, n);
    DataCopy(yl, yg, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID3);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID3);
    And(o, xl, yl, n);
    Or(o[n], xl, yl, n);
    Not(o[2 * n], xl, n);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID3);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID3);
    DataCopy(og, o, 3 * n);
}

extern "C" __global__ __aicore__ void l2_float(GM_ADDR x, GM_ADDR y, GM_ADDR o, GM_ADDR t) { VecLevel2<float>(x, y, o, t); }
extern "C" __global__ __aicore__ void l2_half(GM_ADDR x, GM_ADDR y, GM_ADDR o, GM_ADDR t) { VecLevel2<half>(x, y, o, t); }
extern "C" __global__ __aicore__ void l0_float(GM_ADDR x, GM_ADDR y, GM_ADDR o, GM_ADDR t) { VecLevel0<float>(x, y, o, t); }
extern "C" __global__ __aicore__ void l0_half(GM_ADDR x, GM_ADDR y, GM_ADDR o, GM_ADDR t) { VecLevel0<half>(x, y, o, t); }
extern "C" __global__ __aicore__ void cs_float(GM_ADDR x, GM_ADDR y, GM_ADDR o, GM_ADDR t) { VecCmpSel<float>(x, y, o, t); }
extern "C" __global__ __aicore__ void cs_half(GM_ADDR x, GM_ADDR y, GM_ADDR o, GM_ADDR t) { VecCmpSel<half>(x, y, o, t); }
extern "C" __global__ __aicore__ void logic_i16(GM_ADDR x, GM_ADDR y, GM_ADDR o, GM_ADDR) { VecLogic(x, y, o); }

static uint8_t* Load(const char* p, size_t pad) {
    FILE* f = std::fopen(p, "rb");
    if (!f) { std::perror(p); std::exit(2); }
    std::fseek(f, 0, SEEK_END);
    const size_t n = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    uint8_t* g = (uint8_t*)AscendC::GmAlloc(n + pad);
    if (std::fread(g, 1, n, f) != n) std::exit(2);
    std::fclose(f);
    return g;
}
int main(int argc, char** argv) {
    if (argc != 7) return 2;
    const std::string c = std::string(argv[1]) + "_" + argv[2];
    const int32_t count = std::atoi(argv[3]);
    uint8_t* x = Load(argv[4], 0);
    uint8_t* y = Load(argv[5], 0);
    const size_t outBytes = 4u * 2048 * kSlots;
    uint8_t* o = (uint8_t*)AscendC::GmAlloc(outBytes);
    int32_t* t = (int32_t*)AscendC::GmAlloc(32);
    t[0] = count;
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    if (c == "l2_float") ICPU_RUN_KF(l2_float, 1, x, y, o, (uint8_t*)t);
    else if (c == "l2_half") ICPU_RUN_KF(l2_half, 1, x, y, o, (uint8_t*)t);
    else if (c == "l0_float") ICPU_RUN_KF(l0_float, 1, x, y, o, (uint8_t*)t);
    else if (c == "l0_half") ICPU_RUN_KF(l0_half, 1, x, y, o, (uint8_t*)t);
    else if (c == "cs_float") ICPU_RUN_KF(cs_float, 1, x, y, o, (uint8_t*)t);
    else if (c == "cs_half") ICPU_RUN_KF(cs_half, 1, x, y, o, (uint8_t*)t);
    else if (c == "logic_int16") ICPU_RUN_KF(logic_i16, 1, x, y, o, (uint8_t*)t);
    else return 2;
    FILE* f = std::fopen(argv[6], "wb");
    std::fwrite(o, 1, outBytes, f);
    std::fclose(f);
    return 0;
}
