// fadsl CPU runtime: InitConstValue (fill L1 / L0A / L0B with a constant), used to zero the
// padding rows of a cube operand whose contraction dimension has a tail, as the catlass
// (InitZeroInL1B) and tilelang-ascend (copy_gm_to_l1) kernels do.
// Signature and InitConstValueParams<T>{repeatTimes, blockNum, dstGap, initValue} as in the
// asc-devkit header (kernel_struct_mm.h): `repeatTimes` runs of `blockNum` 32-byte blocks,
// `dstGap` blocks skipped between runs.
// UNVERIFIED: the pipe it issues on; modelled as MTE2 (the L1 fill path), so EnQue/DeQue
// of the tile orders it before the MTE1 loads, like the GM->L1 copy it completes.
#pragma once
#include "fields.h"
#include "memory.h"
#include "vector.h"

namespace AscendC {

template <typename T>
struct InitConstValueParams {
    __aicore__ InitConstValueParams() {}
    __aicore__ InitConstValueParams(const uint16_t repeatTimesIn, const uint16_t blockNumIn, const uint16_t dstGapIn,
                                    const T initValueIn)
        : repeatTimes(repeatTimesIn), blockNum(blockNumIn), dstGap(dstGapIn), initValue(initValueIn) {}
    __aicore__ InitConstValueParams(const uint16_t repeatTimesIn, const T initValueIn)
        : repeatTimes(repeatTimesIn), initValue(initValueIn) {}
    uint16_t repeatTimes = 0;
    uint16_t blockNum = 0;
    uint16_t dstGap = 0;
    T initValue = 0;
};

template <typename T>
__aicore__ inline void InitConstValue(const LocalTensor<T>& dst, const InitConstValueParams<T>& p, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("InitConstValue", fadslSite_);
    using namespace fadsl_rt;
    const char* api = "InitConstValue";
    RequireMem(api, dst, {Mem::kL1, Mem::kL0A, Mem::kL0B}, "dst");
    RequireAligned(api, dst, 32, "dst");
    CheckField(api, "repeatTimes", p.repeatTimes, 0, 32767);
    CheckField(api, "blockNum", p.blockNum, 0, 32767);
    CheckField(api, "dstGap", p.dstGap, 0, 32767);
    constexpr uint64_t perBlock = 32 / sizeof(T);
    NoteRepeats(p.repeatTimes);
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        const uint64_t first = r * (uint64_t(p.blockNum) + p.dstGap) * perBlock;
        const uint64_t count = uint64_t(p.blockNum) * perBlock;
        WriteBytes(api, dst, first * sizeof(T), (first + count) * sizeof(T), PIPE_MTE2);
        for (uint64_t i = 0; i < count; ++i) *dst.Ptr(first + i) = p.initValue;
    }
}

// Fill (CANN >= 9.0.0; asc-devkit 矩阵搬入辅助配置接口/Fill.md): the successor of InitConstValue. Its
// page gives the units: in L1 a block is 32 B and the fill issues on MTE2 (dst 32 B aligned); in L0A /
// L0B a block (and dstGap) is 512 B and it issues on MTE1 (dst 512 B aligned); repeatTimes or
// blockNum 0 is a no-op. U must be T's element type. fadsl emits InitConstValue, into L1 only.
template <typename T, typename U = T, typename std::enable_if<std::is_same<T, U>::value, bool>::type = true>
__aicore__ inline void Fill(const LocalTensor<T>& dst, const InitConstValueParams<U>& p, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Fill", fadslSite_);
    using namespace fadsl_rt;
    static_assert(OneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>(),
                  "fadsl-cpu-runtime: Fill supports int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float on A2/A3");
    const char* api = "Fill";
    RequireMem(api, dst, {Mem::kL1, Mem::kL0A, Mem::kL0B}, "dst");
    const bool l1 = dst.buf_->mem == Mem::kL1;
    const uint64_t block = l1 ? 32 : 512;
    RequireAligned(api, dst, block, "dst");
    CheckField(api, "repeatTimes", p.repeatTimes, 0, 32767);
    CheckField(api, "blockNum", p.blockNum, 0, 32767);
    CheckField(api, "dstGap", p.dstGap, 0, 32767);
    const uint64_t perBlock = block / sizeof(T);
    NoteRepeats(p.repeatTimes);
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        const uint64_t first = r * (uint64_t(p.blockNum) + p.dstGap) * perBlock;
        const uint64_t count = uint64_t(p.blockNum) * perBlock;
        WriteBytes(api, dst, first * sizeof(T), (first + count) * sizeof(T), l1 ? PIPE_MTE2 : PIPE_MTE1);
        for (uint64_t i = 0; i < count; ++i) *dst.Ptr(first + i) = p.initValue;
    }
}

}  // namespace AscendC
