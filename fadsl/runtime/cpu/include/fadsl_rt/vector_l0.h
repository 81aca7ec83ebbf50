// fadsl CPU runtime: level-0 ("mask + repeat") vector operations (高维切分.md, 掩码 docs).
// One repeat processes 8 blocks of 32 B = 256/sizeof(T) lanes. Lane l of a repeat r of an operand
// with element size s lives at element r*repStride*(32/s) + (l/(32/s))*blkStride*(32/s) + l%(32/s).
// mask (uint64_t): the first `mask` lanes are active (mask <= lanes per repeat);
// mask[2]: bit l of mask[0] (l < 64) / mask[1] (l >= 64) activates lane l. Inactive lanes keep dst.
#pragma once
#include "cmpsel.h"

namespace fadsl_rt {
struct LaneMask {
    bool on[128] = {};
    uint32_t lanes = 0;
};
inline LaneMask MakeMask(const char* api, uint64_t mask, uint32_t lanes) {
    if (mask > lanes) Fail(api, Str("mask ", mask, " exceeds the ", lanes, " lanes of one repeat"));
    LaneMask m;
    m.lanes = lanes;
    for (uint32_t l = 0; l < mask; ++l) m.on[l] = true;
    return m;
}
inline LaneMask MakeMask(const char* api, const uint64_t mask[], uint32_t lanes) {
    // UNVERIFIED: with 64 lanes the hardware may ignore mask[1]; non-zero bits there are treated as a bug.
    if (lanes <= 64 && mask[1] != 0)
        Fail(api, Str("mask[1] = ", mask[1], " must be 0 for 32-bit operands (only ", lanes, " lanes per repeat)"));
    LaneMask m;
    m.lanes = lanes;
    for (uint32_t l = 0; l < lanes; ++l) m.on[l] = (mask[l / 64] >> (l % 64)) & 1u;
    return m;
}
struct Geo {
    uint32_t blk, rep;  // strides in 32 B blocks
};
template <typename T>
inline uint64_t LaneOff(uint32_t r, uint32_t l, Geo g) {
    constexpr uint32_t epb = 32 / sizeof(T);
    return uint64_t(r) * g.rep * epb + uint64_t(l / epb) * g.blk * epb + l % epb;
}
template <typename T>
uint64_t ExtentBytes(const LaneMask& m, uint32_t repeat, Geo g) {
    uint64_t hi = 0;
    for (uint32_t r = 0; r < repeat; ++r)
        for (uint32_t l = 0; l < m.lanes; ++l)
            if (m.on[l]) hi = std::max(hi, (LaneOff<T>(r, l, g) + 1) * sizeof(T));
    return hi;
}
template <typename T>
void L0Operand(const char* api, const AscendC::LocalTensor<T>& t, const char* role, bool isDst, uint64_t bytes) {
    RequireMem(api, t, {Mem::kUB}, role);
    RequireAligned(api, t, 32, role);
    if (isDst) WriteBytes(api, t, 0, bytes, PIPE_V);
    else ReadBytes(api, t, 0, bytes, PIPE_V, false);  // memcheck per active lane: CheckInitLanes
}
// Sanitizer memcheck of the lanes a level-0 source operand really reads (not the gaps between).
template <typename T>
void CheckInitLanes(const char* api, const AscendC::LocalTensor<T>& t, const LaneMask& m, uint32_t repeat, Geo g) {
    if (!t.core_->sanitize) return;
    uint64_t runLo = 0, runHi = 0;
    auto flush = [&] {
        if (runHi > runLo) CheckInit(*t.core_, *t.buf_, static_cast<uint32_t>(runLo), static_cast<uint32_t>(runHi), api);
    };
    for (uint32_t r = 0; r < repeat; ++r)
        for (uint32_t l = 0; l < m.lanes; ++l) {
            if (!m.on[l]) continue;
            const uint64_t lo = t.byteOff_ + LaneOff<T>(r, l, g) * sizeof(T);
            if (lo != runHi) {
                flush();
                runLo = lo;
            }
            runHi = lo + sizeof(T);
        }
    flush();
}
// dst = f(src0, src1) on active lanes, repeat by repeat.
template <typename T, typename F>
void L0Binary(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>* a,
              const AscendC::LocalTensor<T>* b, const LaneMask& m, uint8_t repeat, Geo gd, Geo ga, Geo gb, F f) {
    if (repeat == 0) return;
    if (gd.blk == 0) Fail(api, "dstBlkStride 0 is undefined behaviour");
    if (a) L0Operand(api, *a, "src0", false, ExtentBytes<T>(m, repeat, ga));
    if (b) L0Operand(api, *b, "src1", false, ExtentBytes<T>(m, repeat, gb));
    if (a) CheckInitLanes(api, *a, m, repeat, ga);
    if (b) CheckInitLanes(api, *b, m, repeat, gb);
    L0Operand(api, dst, "dst", true, ExtentBytes<T>(m, repeat, gd));
    NoteRepeats(repeat);
    NoteElems(uint64_t(std::count(m.on, m.on + m.lanes, true)) * repeat);
    std::vector<double> out(m.lanes);
    for (uint32_t r = 0; r < repeat; ++r) {
        for (uint32_t l = 0; l < m.lanes; ++l)
            if (m.on[l])
                out[l] = f(a ? ToD(*a->Ptr(LaneOff<T>(r, l, ga))) : 0.0, b ? ToD(*b->Ptr(LaneOff<T>(r, l, gb))) : 0.0);
        for (uint32_t l = 0; l < m.lanes; ++l)
            if (m.on[l]) *dst.Ptr(LaneOff<T>(r, l, gd)) = FromD<T>(out[l]);
    }
}
inline Geo GD(const AscendC::BinaryRepeatParams& p) { return {p.dstBlkStride, p.dstRepStride}; }
inline Geo G0(const AscendC::BinaryRepeatParams& p) { return {p.src0BlkStride, p.src0RepStride}; }
inline Geo G1(const AscendC::BinaryRepeatParams& p) { return {p.src1BlkStride, p.src1RepStride}; }
inline Geo GD(const AscendC::UnaryRepeatParams& p) { return {p.dstBlkStride, p.dstRepStride}; }
inline Geo GS(const AscendC::UnaryRepeatParams& p) { return {p.srcBlkStride, p.srcRepStride}; }
template <typename T, typename M>
void Dup0(const AscendC::LocalTensor<T>& dst, const T& v, const M& mask, uint8_t repeat, uint16_t blk, uint8_t rep) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "fadsl-cpu-runtime: Duplicate supports 16-bit and 32-bit types");
    const LaneMask m = MakeMask("Duplicate", mask, 256 / sizeof(T));
    const double d = ToD(v);
    L0Binary("Duplicate", dst, static_cast<const AscendC::LocalTensor<T>*>(nullptr),
             static_cast<const AscendC::LocalTensor<T>*>(nullptr), m, repeat, Geo{blk, rep}, Geo{0, 0}, Geo{0, 0},
             [d](double, double) { return d; });
}
}  // namespace fadsl_rt

namespace AscendC {

#define FADSL_RT_BIN0(NAME, TYPES, EXPR)                                                                                            \
    template <typename T, bool isSetMask = true>                                                                                    \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,                  \
                                uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams& repeatParams, FADSL_RT_SITE) {   \
        ::fadsl_rt::Api fadslCall_(#NAME, fadslSite_);                                                                              \
        static_assert(TYPES, "fadsl-cpu-runtime: unsupported element type for " #NAME);                                             \
        static_assert(isSetMask, "fadsl-cpu-runtime: isSetMask=false (SetVectorMask) is not supported");                            \
        const fadsl_rt::LaneMask m = fadsl_rt::MakeMask(#NAME, mask, 256 / sizeof(T));                                              \
        fadsl_rt::L0Binary(#NAME, dst, &src0, &src1, m, repeatTime, fadsl_rt::GD(repeatParams),                                     \
                           fadsl_rt::G0(repeatParams), fadsl_rt::G1(repeatParams),                                                  \
                           [](double a, double b) { return EXPR; });                                                                \
    }                                                                                                                               \
    template <typename T, bool isSetMask = true>                                                                                    \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,                  \
                                uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& repeatParams, FADSL_RT_SITE) { \
        ::fadsl_rt::Api fadslCall_(#NAME, fadslSite_);                                                                              \
        static_assert(TYPES, "fadsl-cpu-runtime: unsupported element type for " #NAME);                                             \
        static_assert(isSetMask, "fadsl-cpu-runtime: isSetMask=false (SetVectorMask) is not supported");                            \
        const fadsl_rt::LaneMask m = fadsl_rt::MakeMask(#NAME, mask, 256 / sizeof(T));                                              \
        fadsl_rt::L0Binary(#NAME, dst, &src0, &src1, m, repeatTime, fadsl_rt::GD(repeatParams),                                     \
                           fadsl_rt::G0(repeatParams), fadsl_rt::G1(repeatParams),                                                  \
                           [](double a, double b) { return EXPR; });                                                                \
    }
FADSL_RT_BIN0(Add, fadsl_rt::kArith<T>, a + b)
FADSL_RT_BIN0(Sub, fadsl_rt::kArith<T>, a - b)
FADSL_RT_BIN0(Mul, fadsl_rt::kArith<T>, a * b)
FADSL_RT_BIN0(Div, fadsl_rt::kFloatVec<T>, a / b)
FADSL_RT_BIN0(Max, fadsl_rt::kArith<T>, fadsl_rt::NanMax(a, b))
FADSL_RT_BIN0(Min, fadsl_rt::kArith<T>, fadsl_rt::NanMin(a, b))
#undef FADSL_RT_BIN0

#define FADSL_RT_UN0(NAME, TYPES, EXPR)                                                                           \
    template <typename T, bool isSetMask = true>                                                                  \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask,              \
                                const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, FADSL_RT_SITE) { \
        ::fadsl_rt::Api fadslCall_(#NAME, fadslSite_);                                                            \
        static_assert(TYPES, "fadsl-cpu-runtime: unsupported element type for " #NAME);                           \
        static_assert(isSetMask, "fadsl-cpu-runtime: isSetMask=false (SetVectorMask) is not supported");          \
        const fadsl_rt::LaneMask m = fadsl_rt::MakeMask(#NAME, mask, 256 / sizeof(T));                            \
        fadsl_rt::L0Binary(#NAME, dst, &src, static_cast<const LocalTensor<T>*>(nullptr), m, repeatTime,          \
                           fadsl_rt::GD(repeatParams), fadsl_rt::GS(repeatParams), fadsl_rt::Geo{1, 8},           \
                           [](double a, double) { return EXPR; });                                                \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask[],            \
                                const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, FADSL_RT_SITE) { \
        ::fadsl_rt::Api fadslCall_(#NAME, fadslSite_);                                                            \
        static_assert(TYPES, "fadsl-cpu-runtime: unsupported element type for " #NAME);                           \
        static_assert(isSetMask, "fadsl-cpu-runtime: isSetMask=false (SetVectorMask) is not supported");          \
        const fadsl_rt::LaneMask m = fadsl_rt::MakeMask(#NAME, mask, 256 / sizeof(T));                            \
        fadsl_rt::L0Binary(#NAME, dst, &src, static_cast<const LocalTensor<T>*>(nullptr), m, repeatTime,          \
                           fadsl_rt::GD(repeatParams), fadsl_rt::GS(repeatParams), fadsl_rt::Geo{1, 8},           \
                           [](double a, double) { return EXPR; });                                                \
    }
FADSL_RT_UN0(Exp, fadsl_rt::kFloatVec<T>, std::exp(a))
FADSL_RT_UN0(Ln, fadsl_rt::kFloatVec<T>, std::log(a))
FADSL_RT_UN0(Abs, fadsl_rt::kFloatVec<T>, std::fabs(a))
FADSL_RT_UN0(Sqrt, fadsl_rt::kFloatVec<T>, std::sqrt(a))
FADSL_RT_UN0(Reciprocal, fadsl_rt::kFloatVec<T>, 1.0 / a)
#undef FADSL_RT_UN0

#define FADSL_RT_SC0(NAME, EXPR)                                                                                                   \
    template <typename T, bool isSetMask = true>                                                                                   \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,                        \
                                uint64_t mask, const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, FADSL_RT_SITE) {   \
        ::fadsl_rt::Api fadslCall_(#NAME, fadslSite_);                                                                             \
        static_assert(fadsl_rt::kArith<T>, "fadsl-cpu-runtime: unsupported element type for " #NAME);                              \
        static_assert(isSetMask, "fadsl-cpu-runtime: isSetMask=false (SetVectorMask) is not supported");                           \
        const double s = fadsl_rt::ToD(scalarValue);                                                                               \
        const fadsl_rt::LaneMask m = fadsl_rt::MakeMask(#NAME, mask, 256 / sizeof(T));                                             \
        fadsl_rt::L0Binary(#NAME, dst, &src, static_cast<const LocalTensor<T>*>(nullptr), m, repeatTime,                           \
                           fadsl_rt::GD(repeatParams), fadsl_rt::GS(repeatParams), fadsl_rt::Geo{1, 8},                            \
                           [s](double a, double) { return EXPR; });                                                                \
    }                                                                                                                              \
    template <typename T, bool isSetMask = true>                                                                                   \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,                        \
                                uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, FADSL_RT_SITE) { \
        ::fadsl_rt::Api fadslCall_(#NAME, fadslSite_);                                                                             \
        static_assert(fadsl_rt::kArith<T>, "fadsl-cpu-runtime: unsupported element type for " #NAME);                              \
        static_assert(isSetMask, "fadsl-cpu-runtime: isSetMask=false (SetVectorMask) is not supported");                           \
        const double s = fadsl_rt::ToD(scalarValue);                                                                               \
        const fadsl_rt::LaneMask m = fadsl_rt::MakeMask(#NAME, mask, 256 / sizeof(T));                                             \
        fadsl_rt::L0Binary(#NAME, dst, &src, static_cast<const LocalTensor<T>*>(nullptr), m, repeatTime,                           \
                           fadsl_rt::GD(repeatParams), fadsl_rt::GS(repeatParams), fadsl_rt::Geo{1, 8},                            \
                           [s](double a, double) { return EXPR; });                                                                \
    }
FADSL_RT_SC0(Adds, a + s)
FADSL_RT_SC0(Muls, a * s)
FADSL_RT_SC0(Maxs, fadsl_rt::NanMax(a, s))
FADSL_RT_SC0(Mins, fadsl_rt::NanMin(a, s))
#undef FADSL_RT_SC0

template <typename T, bool isSetMask = true>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask,
                                 const uint8_t repeatTime, const uint16_t dstBlockStride, const uint8_t dstRepeatStride,
                                 FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Duplicate", fadslSite_);
    static_assert(isSetMask, "fadsl-cpu-runtime: isSetMask=false (SetVectorMask) is not supported");
    fadsl_rt::Dup0(dst, scalarValue, mask, repeatTime, dstBlockStride, dstRepeatStride);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask[],
                                 const uint8_t repeatTime, const uint16_t dstBlockStride, const uint8_t dstRepeatStride,
                                 FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Duplicate", fadslSite_);
    static_assert(isSetMask, "fadsl-cpu-runtime: isSetMask=false (SetVectorMask) is not supported");
    fadsl_rt::Dup0(dst, scalarValue, mask, repeatTime, dstBlockStride, dstRepeatStride);
}

}  // namespace AscendC
