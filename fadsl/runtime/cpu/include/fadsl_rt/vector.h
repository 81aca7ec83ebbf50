// fadsl CPU runtime: level-2 ("count") vector operations on UB tensors, pipe V.
// Signatures: kernel_operator_vec_{binary,unary,binary_scalar,duplicate,createvecindex,cmpsel}_intf.h.
// Every result is computed exactly (double) and rounded once to the element type with
// round-to-nearest-even. UNVERIFIED: the hardware's Exp/Ln/Sqrt/Reciprocal are approximations that
// may differ by a few ulp; integer Add/Sub/Mul wrap modulo 2^n; Max/Min propagate NaN.
#pragma once
#include <cmath>

#include "mmad.h"

namespace AscendC {
// include/basic_api/kernel_struct_{binary,unary,brcb}.h
struct BinaryRepeatParams {
    __aicore__ BinaryRepeatParams() {}
    __aicore__ BinaryRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t src0BlkStrideIn,
                                  const uint8_t src1BlkStrideIn, const uint8_t dstRepStrideIn,
                                  const uint8_t src0RepStrideIn, const uint8_t src1RepStrideIn)
        : dstBlkStride(dstBlkStrideIn), src0BlkStride(src0BlkStrideIn), src1BlkStride(src1BlkStrideIn),
          dstRepStride(dstRepStrideIn), src0RepStride(src0RepStrideIn), src1RepStride(src1RepStrideIn) {}
    uint32_t blockNumber = 8;
    uint8_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};
struct UnaryRepeatParams {
    __aicore__ UnaryRepeatParams() {}
    __aicore__ UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn,
                                 const uint8_t dstRepStrideIn, const uint8_t srcRepStrideIn)
        : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn) {}
    __aicore__ UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn,
                                 const uint8_t dstRepStrideIn, const uint8_t srcRepStrideIn, const bool halfBlockIn)
        : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn), halfBlock(halfBlockIn) {}
    uint32_t blockNumber = 8;
    uint16_t dstBlkStride = 1;
    uint16_t srcBlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t srcRepStride = 8;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
    bool halfBlock = false;
};
struct BrcbRepeatParams {
    __aicore__ BrcbRepeatParams() {}
    __aicore__ BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
    uint32_t blockNumber = 8;
    uint16_t dstRepStride = 8;
    uint16_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};
}  // namespace AscendC

namespace fadsl_rt {
template <typename T, typename... A> constexpr bool OneOf() { return (std::is_same<T, A>::value || ...); }
template <typename T> constexpr bool kArith = OneOf<T, half, float, int16_t, int32_t>();
template <typename T> constexpr bool kFloatVec = OneOf<T, half, float>();

template <typename T>
inline T FromD(double v) {
    if constexpr (std::is_integral<T>::value) {
        return static_cast<T>(static_cast<int64_t>(v));  // wraps modulo 2^n (two's complement)
    } else {
        return static_cast<T>(v);
    }
}
inline double NanMax(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? NAN : (a > b ? a : b); }
inline double NanMin(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? NAN : (a < b ? a : b); }

// Validates a UB vector operand of `count` elements (alignment 32 B, inside its buffer).
template <typename T>
void VecOperand(const char* api, const AscendC::LocalTensor<T>& t, uint64_t count, const char* role) {
    RequireMem(api, t, {Mem::kUB}, role);
    RequireAligned(api, t, 32, role);
    t.Span(api, 0, count);
}
inline bool CountOk(const char* api, int64_t count) {
    if (count < 0) Fail(api, Str("count ", count, " is negative"));
    return count > 0;  // count == 0 is a documented NOP on A2/A3
}
template <typename T, typename F>
void Binary2(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a,
             const AscendC::LocalTensor<T>& b, int32_t count, F f) {
    if (!CountOk(api, count)) return;
    VecOperand(api, dst, count, "dst");
    VecOperand(api, a, count, "src0");
    VecOperand(api, b, count, "src1");
    ReadBytes(api, a, 0, count * sizeof(T), PIPE_V);
    ReadBytes(api, b, 0, count * sizeof(T), PIPE_V);
    std::vector<T> out(count);
    for (int32_t i = 0; i < count; ++i) out[i] = FromD<T>(f(ToD(*a.Ptr(i)), ToD(*b.Ptr(i))));
    WriteBytes(api, dst, 0, count * sizeof(T), PIPE_V);
    std::memcpy(dst.Ptr(0), out.data(), count * sizeof(T));
}
template <typename T, typename F>
void Unary2(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a, int32_t count, F f) {
    if (!CountOk(api, count)) return;
    VecOperand(api, dst, count, "dst");
    VecOperand(api, a, count, "src");
    ReadBytes(api, a, 0, count * sizeof(T), PIPE_V);
    std::vector<T> out(count);
    for (int32_t i = 0; i < count; ++i) out[i] = FromD<T>(f(ToD(*a.Ptr(i))));
    WriteBytes(api, dst, 0, count * sizeof(T), PIPE_V);
    std::memcpy(dst.Ptr(0), out.data(), count * sizeof(T));
}
template <typename T>
uint16_t Bits16(T v) {
    uint16_t b;
    std::memcpy(&b, &v, 2);
    return b;
}
}  // namespace fadsl_rt

namespace AscendC {

#define FADSL_RT_BINARY2(NAME, TYPES, MSG, EXPR)                                                                   \
    template <typename T>                                                                                          \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, \
                                const int32_t& count, FADSL_RT_SITE) {                                             \
        ::fadsl_rt::Api fadslCall_(#NAME, fadslSite_);                                                             \
        static_assert(TYPES, "fadsl-cpu-runtime: " #NAME " supports " MSG " on A2/A3");                            \
        fadsl_rt::Binary2(#NAME, dst, src0, src1, count, [](double a, double b) { return EXPR; });                 \
    }
FADSL_RT_BINARY2(Add, fadsl_rt::kArith<T>, "half, float, int16_t, int32_t", a + b)
FADSL_RT_BINARY2(Sub, fadsl_rt::kArith<T>, "half, float, int16_t, int32_t", a - b)
FADSL_RT_BINARY2(Mul, fadsl_rt::kArith<T>, "half, float, int16_t, int32_t", a * b)
FADSL_RT_BINARY2(Div, fadsl_rt::kFloatVec<T>, "half, float", a / b)
FADSL_RT_BINARY2(Max, fadsl_rt::kArith<T>, "half, float, int16_t, int32_t", fadsl_rt::NanMax(a, b))
FADSL_RT_BINARY2(Min, fadsl_rt::kArith<T>, "half, float, int16_t, int32_t", fadsl_rt::NanMin(a, b))
#undef FADSL_RT_BINARY2

#define FADSL_RT_UNARY2(NAME, EXPR)                                                                                          \
    template <typename T>                                                                                                    \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, FADSL_RT_SITE) { \
        ::fadsl_rt::Api fadslCall_(#NAME, fadslSite_);                                                                       \
        static_assert(fadsl_rt::kFloatVec<T>, "fadsl-cpu-runtime: " #NAME " supports half and float on A2/A3");              \
        fadsl_rt::Unary2(#NAME, dst, src, count, [](double a) { return EXPR; });                                             \
    }
FADSL_RT_UNARY2(Exp, std::exp(a))
FADSL_RT_UNARY2(Ln, std::log(a))
FADSL_RT_UNARY2(Abs, std::fabs(a))
FADSL_RT_UNARY2(Sqrt, std::sqrt(a))
FADSL_RT_UNARY2(Reciprocal, 1.0 / a)
#undef FADSL_RT_UNARY2

#define FADSL_RT_SCALAR2(NAME, EXPR)                                                                               \
    template <typename T, bool isSetMask = true>                                                                   \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,        \
                                const int32_t& count, FADSL_RT_SITE) {                                             \
        ::fadsl_rt::Api fadslCall_(#NAME, fadslSite_);                                                             \
        static_assert(fadsl_rt::kArith<T>, "fadsl-cpu-runtime: " #NAME " supports half, float, int16_t, int32_t"); \
        static_assert(isSetMask, "fadsl-cpu-runtime: isSetMask=false (SetVectorMask) is not supported");           \
        const double s = fadsl_rt::ToD(scalarValue);                                                               \
        fadsl_rt::Unary2(#NAME, dst, src, count, [s](double a) { return EXPR; });                                  \
    }
FADSL_RT_SCALAR2(Adds, a + s)
FADSL_RT_SCALAR2(Muls, a * s)
FADSL_RT_SCALAR2(Maxs, fadsl_rt::NanMax(a, s))
FADSL_RT_SCALAR2(Mins, fadsl_rt::NanMin(a, s))
#undef FADSL_RT_SCALAR2

template <typename T>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Duplicate", fadslSite_);
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "fadsl-cpu-runtime: Duplicate supports 16-bit and 32-bit types");
    const char* api = "Duplicate";
    if (!fadsl_rt::CountOk(api, count)) return;
    fadsl_rt::VecOperand(api, dst, count, "dst");
    fadsl_rt::WriteBytes(api, dst, 0, count * sizeof(T), PIPE_V);
    for (int32_t i = 0; i < count; ++i) std::memcpy(dst.Ptr(i), &scalarValue, sizeof(T));
}

// dst[i] = firstValue + i (CreateVecIndex level-2; dst passed by value as in the header).
template <typename T>
__aicore__ inline void CreateVecIndex(LocalTensor<T> dst, const T& firstValue, uint32_t count, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("CreateVecIndex", fadslSite_);
    static_assert(fadsl_rt::kArith<T>, "fadsl-cpu-runtime: CreateVecIndex supports half, float, int16_t, int32_t");
    const char* api = "CreateVecIndex";
    if (count == 0) return;
    fadsl_rt::VecOperand(api, dst, count, "dst");
    fadsl_rt::WriteBytes(api, dst, 0, count * sizeof(T), PIPE_V);
    const double f = fadsl_rt::ToD(firstValue);
    for (uint32_t i = 0; i < count; ++i) *dst.Ptr(i) = fadsl_rt::FromD<T>(f + i);
}

#define FADSL_RT_LOGIC2(NAME, OP)                                                                                         \
    template <typename T>                                                                                                 \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,        \
                                const int32_t& count, FADSL_RT_SITE) {                                                    \
        ::fadsl_rt::Api fadslCall_(#NAME, fadslSite_);                                                                    \
        static_assert(fadsl_rt::OneOf<T, int16_t, uint16_t>(), "fadsl-cpu-runtime: " #NAME " supports int16_t/uint16_t"); \
        const char* api = #NAME;                                                                                          \
        if (!fadsl_rt::CountOk(api, count)) return;                                                                       \
        fadsl_rt::VecOperand(api, dst, count, "dst");                                                                     \
        fadsl_rt::VecOperand(api, src0, count, "src0");                                                                   \
        fadsl_rt::VecOperand(api, src1, count, "src1");                                                                   \
        fadsl_rt::ReadBytes(api, src0, 0, count * sizeof(T), PIPE_V);                                                     \
        fadsl_rt::ReadBytes(api, src1, 0, count * sizeof(T), PIPE_V);                                                     \
        fadsl_rt::WriteBytes(api, dst, 0, count * sizeof(T), PIPE_V);                                                     \
        for (int32_t i = 0; i < count; ++i) *dst.Ptr(i) = static_cast<T>(*src0.Ptr(i) OP * src1.Ptr(i));                  \
    }
FADSL_RT_LOGIC2(And, &)
FADSL_RT_LOGIC2(Or, |)
#undef FADSL_RT_LOGIC2

template <typename T>
__aicore__ inline void Not(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Not", fadslSite_);
    static_assert(fadsl_rt::OneOf<T, int16_t, uint16_t>(), "fadsl-cpu-runtime: Not supports int16_t/uint16_t");
    const char* api = "Not";
    if (!fadsl_rt::CountOk(api, count)) return;
    fadsl_rt::VecOperand(api, dst, count, "dst");
    fadsl_rt::VecOperand(api, src, count, "src");
    fadsl_rt::ReadBytes(api, src, 0, count * sizeof(T), PIPE_V);
    fadsl_rt::WriteBytes(api, dst, 0, count * sizeof(T), PIPE_V);
    for (int32_t i = 0; i < count; ++i) *dst.Ptr(i) = static_cast<T>(~*src.Ptr(i));
}

}  // namespace AscendC
