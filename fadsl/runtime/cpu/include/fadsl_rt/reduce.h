// fadsl CPU runtime: reductions and Brcb.
//  ReduceMax/ReduceSum level-2 (ReduceMax.md, ReduceSum.md): result in dst[0] (ReduceMax with
//    calIndex: dst[1] holds the index's bits). ReduceSum on A2: binary tree inside each 256 B repeat,
//    repeats added in order; ReduceMax needs a sharedTmpBuffer of the documented size.
//  WholeReduceMax/Sum = ReduceRepeat (per repeat), BlockReduceMax/Sum = ReduceDataBlock (per 32 B block).
//  Brcb: 8 elements per repeat, each broadcast to a whole 32 B block.
// Sums are formed pairwise (adjacent lanes, level by level) rounding to T after every add.
// UNVERIFIED: the exact tree of the hardware adder inside a repeat.
#pragma once
#include "vector_l0.h"

namespace fadsl_rt {
template <typename T>
double TreeSum(std::vector<double> v) {
    if (v.empty()) return 0.0;
    while (v.size() > 1) {
        std::vector<double> n((v.size() + 1) / 2);
        for (size_t i = 0; i < n.size(); ++i)
            n[i] = 2 * i + 1 < v.size() ? ToD(FromD<T>(v[2 * i] + v[2 * i + 1])) : v[2 * i];
        v.swap(n);
    }
    return v[0];
}
template <typename T>
void StoreIndex(T* slot, uint32_t idx) {  // index stored in the bits of a T (ReduceRepeat doc)
    if (sizeof(T) == 2) {
        const uint16_t b = static_cast<uint16_t>(idx);
        std::memcpy(slot, &b, 2);
    } else {
        std::memcpy(slot, &idx, 4);
    }
}
inline uint32_t DivCeil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
// Minimum sharedTmpBuffer elements for level-2 ReduceMax (ReduceMax.md "sharedTmpBuffer所需空间").
inline uint32_t ReduceMaxWorkElems(uint32_t count, uint32_t typeSize, bool calIndex) {
    const uint32_t epb = 32 / typeSize, epr = 256 / typeSize;
    const uint32_t first = DivCeil(count, epr);  // UNVERIFIED: a tail repeat counts (doc examples divide exactly)
    const uint32_t it1 = first * 2;
    if (!calIndex) return DivCeil(it1, epb) * epb;
    const uint32_t it2Start = DivCeil(it1, epb) * epb;
    const uint32_t it2Out = DivCeil(it1, epr) * 2;
    const uint32_t it2End = DivCeil(it2Out, epb) * epb;
    if (it2Out <= 2) return it2Start + it2End;
    const uint32_t it3Out = DivCeil(it2Out, epr) * 2;
    return it2Start + it2End + DivCeil(it3Out, epb) * epb;
}
}  // namespace fadsl_rt

namespace AscendC {

template <typename T>
__aicore__ inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const int32_t count, bool calIndex = 0,
                                 FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("ReduceMax", fadslSite_);
    using namespace fadsl_rt;
    static_assert(kFloatVec<T>, "fadsl-cpu-runtime: ReduceMax supports half and float on A2/A3");
    const char* api = "ReduceMax";
    if (!CountOk(api, count)) return;
    NoteElems(static_cast<uint64_t>(count));
    VecOperand(api, src, count, "src");
    RequireMem(api, sharedTmpBuffer, {Mem::kUB}, "sharedTmpBuffer");
    RequireAligned(api, sharedTmpBuffer, 32, "sharedTmpBuffer");
    RequireMem(api, dst, {Mem::kUB}, "dst");
    RequireAligned(api, dst, calIndex ? 2 * sizeof(T) : sizeof(T), "dst");
    const uint32_t need = ReduceMaxWorkElems(count, sizeof(T), calIndex);
    if (sharedTmpBuffer.GetSize() < need)
        Fail(api, Str("sharedTmpBuffer has ", sharedTmpBuffer.GetSize(), " elements but ReduceMax of ", count, " ",
                      TypeName<T>::Get(), " with calIndex=", calIndex, " needs at least ", need,
                      " (ReduceMax.md sharedTmpBuffer formula)"));
    if (calIndex && sizeof(T) == 2 && count > 65536) Fail(api, "half indices are limited to 65535");
    ReadBytes(api, src, 0, uint64_t(count) * sizeof(T), PIPE_V);
    double best = ToD(*src.Ptr(0));
    uint32_t bi = 0;
    for (int32_t i = 1; i < count; ++i) {
        const double v = ToD(*src.Ptr(i));
        if (std::isnan(best)) break;
        if (std::isnan(v) || v > best) best = v, bi = static_cast<uint32_t>(i);
    }
    WriteBytes(api, sharedTmpBuffer, 0, uint64_t(need) * sizeof(T), PIPE_V);
    std::memset(RawBytes(sharedTmpBuffer), 0xFF, uint64_t(need) * sizeof(T));  // clobbered intermediates
    WriteBytes(api, dst, 0, (calIndex ? 2 : 1) * sizeof(T), PIPE_V);
    *dst.Ptr(0) = FromD<T>(best);
    if (calIndex) StoreIndex(dst.Ptr(1), bi);
}

template <typename T, bool isSetMask = true>
__aicore__ inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const int32_t count, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("ReduceSum", fadslSite_);
    using namespace fadsl_rt;
    static_assert(kFloatVec<T>, "fadsl-cpu-runtime: ReduceSum supports half and float on A2/A3");
    static_assert(isSetMask, "fadsl-cpu-runtime: isSetMask=false (SetVectorMask) is not supported");
    const char* api = "ReduceSum";
    if (!CountOk(api, count)) return;
    NoteElems(static_cast<uint64_t>(count));
    VecOperand(api, src, count, "src");
    RequireMem(api, sharedTmpBuffer, {Mem::kUB}, "sharedTmpBuffer");  // unused on A2 (ReduceSum.md, method 1)
    RequireMem(api, dst, {Mem::kUB}, "dst");
    RequireAligned(api, dst, sizeof(T), "dst");
    ReadBytes(api, src, 0, uint64_t(count) * sizeof(T), PIPE_V);
    const uint32_t epr = 256 / sizeof(T);
    double acc = 0;
    for (uint32_t r0 = 0; r0 < static_cast<uint32_t>(count); r0 += epr) {
        std::vector<double> lane;
        for (uint32_t i = r0; i < std::min<uint32_t>(r0 + epr, count); ++i) lane.push_back(ToD(*src.Ptr(i)));
        const double s = TreeSum<T>(lane);
        acc = r0 == 0 ? s : ToD(FromD<T>(acc + s));
    }
    WriteBytes(api, dst, 0, sizeof(T), PIPE_V);
    *dst.Ptr(0) = FromD<T>(acc);
}

}  // namespace AscendC

namespace fadsl_rt {
template <typename T, typename M>
void WholeReduce(const char* api, bool isMax, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                 const M& mask, int32_t repeat, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride,
                 AscendC::ReduceOrder order, bool isMin = false) {
    static_assert(kFloatVec<T>, "fadsl-cpu-runtime: WholeReduceMax/Sum support half and float on A2/A3");
    if (repeat < 0 || repeat > 255) Fail(api, Str("repeatTime ", repeat, " is outside [0, 255]"));
    const LaneMask m = MakeMask(api, mask, 256 / sizeof(T));
    if (repeat == 0) return;
    NoteRepeats(static_cast<uint64_t>(repeat));
    using AscendC::ReduceOrder;
    // dst unit per repeat in elements of T (ReduceRepeat.md table 3)
    uint32_t unit = 1;
    if (isMax && (order == ReduceOrder::ORDER_VALUE_INDEX || order == ReduceOrder::ORDER_INDEX_VALUE)) unit = 2;
    if (isMax && order == ReduceOrder::ORDER_ONLY_INDEX) unit = 4 / sizeof(T);
    RequireMem(api, dst, {Mem::kUB}, "dst");
    RequireAligned(api, dst, unit * sizeof(T), "dst");
    const Geo gs{static_cast<uint32_t>(srcBlkStride), static_cast<uint32_t>(srcRepStride)};
    L0Operand(api, src, "src", false, ExtentBytes<T>(m, repeat, gs));
    CheckInitLanes(api, src, m, static_cast<uint32_t>(repeat), gs);
    WriteBytes(api, dst, 0, (uint64_t(repeat - 1) * dstRepStride + 1) * unit * sizeof(T), PIPE_V);
    for (int32_t r = 0; r < repeat; ++r) {
        std::vector<double> v;
        double best = 0;
        int32_t bi = -1;
        for (uint32_t l = 0; l < m.lanes; ++l) {
            if (!m.on[l]) continue;
            const double x = ToD(*src.Ptr(LaneOff<T>(r, l, gs)));
            v.push_back(x);
            if (bi < 0 || (isMin ? x < best : x > best)) best = x, bi = static_cast<int32_t>(l);
        }
        if (bi < 0) continue;  // no active lane: nothing written (UNVERIFIED)
        T* d = dst.Ptr(uint64_t(r) * dstRepStride * unit);
        if (!isMax) {
            *d = FromD<T>(TreeSum<T>(v));
        } else if (order == ReduceOrder::ORDER_VALUE_INDEX) {
            d[0] = FromD<T>(best);
            StoreIndex(d + 1, bi);
        } else if (order == ReduceOrder::ORDER_INDEX_VALUE) {
            StoreIndex(d, bi);
            d[1] = FromD<T>(best);
        } else if (order == ReduceOrder::ORDER_ONLY_VALUE) {
            d[0] = FromD<T>(best);
        } else {
            const uint32_t idx = static_cast<uint32_t>(bi);
            std::memcpy(d, &idx, 4);
        }
    }
}
template <typename T, typename M>
void BlockReduce(const char* api, bool isMax, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                 int32_t repeat, const M& mask, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride) {
    static_assert(kFloatVec<T>, "fadsl-cpu-runtime: BlockReduceMax/Sum support half and float on A2/A3");
    if (repeat < 0 || repeat > 255) Fail(api, Str("repeatTime ", repeat, " is outside [0, 255]"));
    const LaneMask m = MakeMask(api, mask, 256 / sizeof(T));
    if (repeat == 0) return;
    NoteRepeats(static_cast<uint64_t>(repeat));
    constexpr uint32_t epb = 32 / sizeof(T);
    RequireMem(api, dst, {Mem::kUB}, "dst");
    RequireAligned(api, dst, 8 * sizeof(T), "dst");  // 16 B for half, 32 B for float (ReduceDataBlock.md)
    const Geo gs{static_cast<uint32_t>(srcBlkStride), static_cast<uint32_t>(srcRepStride)};
    L0Operand(api, src, "src", false, ExtentBytes<T>(m, repeat, gs));
    CheckInitLanes(api, src, m, static_cast<uint32_t>(repeat), gs);
    WriteBytes(api, dst, 0, (uint64_t(repeat - 1) * dstRepStride * 8 + 8) * sizeof(T), PIPE_V);
    for (int32_t r = 0; r < repeat; ++r) {
        for (uint32_t b = 0; b < 8; ++b) {
            std::vector<double> v;
            for (uint32_t e = 0; e < epb; ++e)
                if (m.on[b * epb + e]) v.push_back(ToD(*src.Ptr(LaneOff<T>(r, b * epb + e, gs))));
            if (v.empty()) continue;  // A2/A3: a block with no active lane writes nothing
            double res = v[0];
            if (isMax) {
                for (double x : v) res = NanMax(res, x);
            } else {
                res = TreeSum<T>(v);
            }
            *dst.Ptr(uint64_t(r) * dstRepStride * 8 + b) = FromD<T>(res);
        }
    }
}
}  // namespace fadsl_rt

namespace AscendC {
template <typename T, bool isSetMask = true>
__aicore__ inline void WholeReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                                      const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                                      const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                                      FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("WholeReduceMax", fadslSite_);
    fadsl_rt::WholeReduce("WholeReduceMax", true, dst, src, static_cast<uint64_t>(mask), repeatTime, dstRepStride,
                          srcBlkStride, srcRepStride, order);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void WholeReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],
                                      const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                                      const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                                      FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("WholeReduceMax", fadslSite_);
    fadsl_rt::WholeReduce("WholeReduceMax", true, dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                          order);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                                      const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                                      const int32_t srcRepStride, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("WholeReduceSum", fadslSite_);
    fadsl_rt::WholeReduce("WholeReduceSum", false, dst, src, static_cast<uint64_t>(mask), repeatTime, dstRepStride,
                          srcBlkStride, srcRepStride, ReduceOrder::ORDER_ONLY_VALUE);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],
                                      const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                                      const int32_t srcRepStride, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("WholeReduceSum", fadslSite_);
    fadsl_rt::WholeReduce("WholeReduceSum", false, dst, src, mask, repeatTime, dstRepStride, srcBlkStride,
                          srcRepStride, ReduceOrder::ORDER_ONLY_VALUE);
}
// ReduceRepeat (CANN >= 9.1.0; asc-devkit ReduceRepeat.md, kernel_operator_vec_reduce_intf.h): the
// successor of WholeReduceSum/Max/Min, the operation a template argument. A2/A3: T and U the same,
// half or float. SUM ignores `order`; MAX and MIN return value and index as `order` says. fadsl
// emits WholeReduceMax/Sum (docs/backend.md, "API names and CANN versions").
template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
__aicore__ inline void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,
                                    const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                                    const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                                    FADSL_RT_SITE) {
    static_assert(std::is_same<T, U>::value, "fadsl-cpu-runtime: ReduceRepeat needs dst and src of one type on A2/A3");
    static_assert(reduceType != ReduceType::NONE, "fadsl-cpu-runtime: ReduceRepeat takes SUM, MAX or MIN");
    ::fadsl_rt::Api fadslCall_("ReduceRepeat", fadslSite_);
    const bool sum = reduceType == ReduceType::SUM;
    fadsl_rt::WholeReduce("ReduceRepeat", !sum, dst, src, static_cast<uint64_t>(mask), repeatTime, dstRepStride,
                          srcBlkStride, srcRepStride, sum ? ReduceOrder::ORDER_ONLY_VALUE : order,
                          reduceType == ReduceType::MIN);
}
template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
__aicore__ inline void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                                    const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                                    const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                                    FADSL_RT_SITE) {
    static_assert(std::is_same<T, U>::value, "fadsl-cpu-runtime: ReduceRepeat needs dst and src of one type on A2/A3");
    static_assert(reduceType != ReduceType::NONE, "fadsl-cpu-runtime: ReduceRepeat takes SUM, MAX or MIN");
    ::fadsl_rt::Api fadslCall_("ReduceRepeat", fadslSite_);
    const bool sum = reduceType == ReduceType::SUM;
    fadsl_rt::WholeReduce("ReduceRepeat", !sum, dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                          sum ? ReduceOrder::ORDER_ONLY_VALUE : order, reduceType == ReduceType::MIN);
}
#define FADSL_RT_BLOCKRED(NAME, ISMAX)                                                                             \
    template <typename T, bool isSetMask = true>                                                                   \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,    \
                                const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,        \
                                const int32_t srcRepStride, FADSL_RT_SITE) {                                       \
        ::fadsl_rt::Api fadslCall_(#NAME, fadslSite_);                                                             \
        fadsl_rt::BlockReduce(#NAME, ISMAX, dst, src, repeatTime, static_cast<uint64_t>(mask), dstRepStride,       \
                              srcBlkStride, srcRepStride);                                                         \
    }                                                                                                              \
    template <typename T, bool isSetMask = true>                                                                   \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,    \
                                const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,     \
                                const int32_t srcRepStride, FADSL_RT_SITE) {                                       \
        ::fadsl_rt::Api fadslCall_(#NAME, fadslSite_);                                                             \
        fadsl_rt::BlockReduce(#NAME, ISMAX, dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride); \
    }
FADSL_RT_BLOCKRED(BlockReduceMax, true)
FADSL_RT_BLOCKRED(BlockReduceSum, false)
#undef FADSL_RT_BLOCKRED

template <typename T>
__aicore__ inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint8_t repeatTime,
                            const BrcbRepeatParams& repeatParams, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Brcb", fadslSite_);
    using namespace fadsl_rt;
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "fadsl-cpu-runtime: Brcb supports b16 and b32 types");
    const char* api = "Brcb";
    if (repeatTime == 0) return;
    NoteRepeats(repeatTime);
    constexpr uint32_t epb = 32 / sizeof(T);
    VecOperand(api, src, uint64_t(repeatTime) * 8, "src");
    RequireMem(api, dst, {Mem::kUB}, "dst");
    RequireAligned(api, dst, 32, "dst");
    if (repeatParams.dstBlkStride == 0) Fail(api, "dstBlkStride 0 is undefined behaviour");
    const uint64_t hi = (uint64_t(repeatTime - 1) * repeatParams.dstRepStride + 7ull * repeatParams.dstBlkStride + 1) * 32;
    ReadBytes(api, src, 0, uint64_t(repeatTime) * 8 * sizeof(T), PIPE_V);
    std::vector<T> in(src.Ptr(0), src.Ptr(0) + repeatTime * 8);
    WriteBytes(api, dst, 0, hi, PIPE_V);
    for (uint32_t r = 0; r < repeatTime; ++r)
        for (uint32_t j = 0; j < 8; ++j)
            for (uint32_t e = 0; e < epb; ++e)
                *dst.Ptr((uint64_t(r) * repeatParams.dstRepStride + uint64_t(j) * repeatParams.dstBlkStride) * epb + e) =
                    in[r * 8 + j];
}
}  // namespace AscendC
