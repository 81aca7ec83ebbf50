// fadsl CPU runtime: Compare / Compares (CompareScalar) / Select level-2 and Cast level-2.
// Sources: Compare.md, Select.md, Cast.md (A2 table), kernel_operator_vec_{cmpsel,vconv}_intf.h.
#pragma once
#include "vector.h"

namespace fadsl_rt {
inline bool Cmp(AscendC::CMPMODE m, double a, double b) {
    using AscendC::CMPMODE;
    switch (m) {
        case CMPMODE::LT: return a < b;
        case CMPMODE::GT: return a > b;
        case CMPMODE::EQ: return a == b;
        case CMPMODE::LE: return a <= b;
        case CMPMODE::GE: return a >= b;
        case CMPMODE::NE: return a != b;
    }
    return false;
}
// Compare/Compares: only the 256 B-aligned part of count is computed (Compare.md constraint;
// UNVERIFIED that Compares/CompareScalar share it).
template <typename T, typename U, typename GetB>
void CompareImpl(const char* api, const AscendC::LocalTensor<U>& dst, const AscendC::LocalTensor<T>& src0,
                 AscendC::CMPMODE mode, uint32_t count, GetB getB, const AscendC::LocalTensor<T>* src1) {
    static_assert(OneOf<T, half, float, int32_t>(), "fadsl-cpu-runtime: Compare supports half, float, int32_t");
    static_assert(OneOf<U, uint8_t, int8_t>(), "fadsl-cpu-runtime: Compare dst must be uint8_t or int8_t");
    if (std::is_same<T, int32_t>::value && mode != AscendC::CMPMODE::EQ)
        Fail(api, "int32_t operands support only CMPMODE::EQ on A2/A3");
    if (count == 0) return;
    const uint32_t per = 256 / sizeof(T);
    const uint32_t n = count / per * per;
    if (n != count)
        WarnOnce(Str(api, count, sizeof(T)),
                 Str(api, ": count ", count, " x ", sizeof(T), " B is not a multiple of 256 B; only the first ", n,
                     " elements are compared (the rest is not computed)"));
    if (n == 0) return;
    VecOperand(api, src0, n, "src0");
    if (src1) VecOperand(api, *src1, n, "src1");
    VecOperand(api, dst, n / 8, "dst");
    NoteElems(n);
    ReadBytes(api, src0, 0, n * sizeof(T), PIPE_V);
    if (src1) ReadBytes(api, *src1, 0, n * sizeof(T), PIPE_V);
    std::vector<uint8_t> bits(n / 8, 0);
    for (uint32_t i = 0; i < n; ++i)
        if (Cmp(mode, ToD(*src0.Ptr(i)), getB(i))) bits[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
    WriteBytes(api, dst, 0, n / 8, PIPE_V);
    std::memcpy(RawBytes(dst), bits.data(), bits.size());
}
template <typename T, typename U, typename GetB>
void SelectImpl(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& selMask,
                const AscendC::LocalTensor<T>& src0, uint32_t count, AscendC::SELMODE mode, GetB getB,
                const AscendC::LocalTensor<T>* src1) {
    static_assert(OneOf<T, half, float>(), "fadsl-cpu-runtime: Select supports half and float on A2/A3");
    static_assert(OneOf<U, uint8_t, uint16_t, uint32_t, uint64_t>(),
                  "fadsl-cpu-runtime: Select selMask must be uint8_t/uint16_t/uint32_t/uint64_t");
    if (count == 0) return;
    const uint32_t per = 256 / sizeof(T);
    const bool spr = mode == AscendC::SELMODE::VSEL_CMPMASK_SPR;  // mode 0 reuses the first 256/sizeof(T) bits
    const uint32_t maskBits = spr ? std::min(count, per) : count;
    VecOperand(api, dst, count, "dst");
    VecOperand(api, src0, count, "src0");
    if (src1) VecOperand(api, *src1, count, "src1");
    RequireMem(api, selMask, {Mem::kUB}, "selMask");
    RequireAligned(api, selMask, 32, "selMask");
    const uint32_t maskBytes = (maskBits + 7) / 8;
    ReadBytes(api, selMask, 0, maskBytes, PIPE_V);
    ReadBytes(api, src0, 0, count * sizeof(T), PIPE_V);
    if (src1) ReadBytes(api, *src1, 0, count * sizeof(T), PIPE_V);
    const uint8_t* m = RawBytes(selMask);
    std::vector<T> out(count);
    for (uint32_t i = 0; i < count; ++i) {
        const uint32_t bit = spr ? i % per : i;
        out[i] = ((m[bit / 8] >> (bit % 8)) & 1u) ? *src0.Ptr(i) : getB(i);
    }
    WriteBytes(api, dst, 0, count * sizeof(T), PIPE_V);
    std::memcpy(dst.Ptr(0), out.data(), count * sizeof(T));
}
inline SignedRnd ToSigned(AscendC::RoundMode m) {
    using AscendC::RoundMode;
    switch (m) {
        case RoundMode::CAST_FLOOR: return SignedRnd::kFloor;
        case RoundMode::CAST_CEIL: return SignedRnd::kCeil;
        case RoundMode::CAST_ROUND: return SignedRnd::kRound;
        case RoundMode::CAST_TRUNC: return SignedRnd::kTrunc;
        case RoundMode::CAST_ODD: return SignedRnd::kOdd;
        default: return SignedRnd::kRint;  // CAST_RINT, and CAST_NONE on lossy conversions (Cast.md)
    }
}
inline const char* RoundName(AscendC::RoundMode m) {
    static const char* k[] = {"CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
    const unsigned i = static_cast<unsigned>(m);
    return i < 7 ? k[i] : "UNKNOWN";
}
// Allowed round modes per (dst, src) on Atlas A2/A3 (Cast.md tables); bit i = RoundMode value i.
template <typename T, typename U>
constexpr unsigned CastModes() {
    constexpr unsigned NONE = 1u << 0, R5 = 0x3Eu /* RINT FLOOR CEIL ROUND TRUNC */, ODD = 1u << 6;
    if (std::is_same<U, half>::value && std::is_same<T, float>::value) return NONE;
    if (std::is_same<U, bfloat16_t>::value && std::is_same<T, float>::value) return NONE;
    if (std::is_same<U, float>::value && std::is_same<T, half>::value) return R5 | ODD | NONE;
    if (std::is_same<U, float>::value && std::is_same<T, bfloat16_t>::value) return R5;
    if (std::is_same<U, float>::value && std::is_same<T, int32_t>::value) return R5;
    if (std::is_same<U, float>::value && std::is_same<T, float>::value) return R5;
    if (std::is_same<U, int32_t>::value && std::is_same<T, float>::value) return R5 | NONE;
    if (std::is_same<U, half>::value && std::is_same<T, int32_t>::value) return R5;
    if (std::is_same<U, bfloat16_t>::value && std::is_same<T, int32_t>::value) return R5;
    if (std::is_same<U, int16_t>::value && std::is_same<T, float>::value) return NONE;
    if (std::is_same<U, int8_t>::value && std::is_same<T, half>::value) return NONE;
    return 0;
}
template <typename T>
T CastOne(double v, SignedRnd r) {
    if constexpr (std::is_same<T, half>::value) {
        return half::FromBits(ToHalfBits(v, r));
    } else if constexpr (std::is_same<T, bfloat16_t>::value) {
        return bfloat16_t::FromBits(ToBf16Bits(v, r));
    } else if constexpr (std::is_same<T, int32_t>::value) {
        return ToInt32(v, r);
    } else {
        static_assert(std::is_same<T, float>::value, "unreachable");
        return 0.0f;
    }
}
}  // namespace fadsl_rt

namespace AscendC {

template <typename T, typename U>
__aicore__ inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                               CMPMODE cmpMode, uint32_t count, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Compare", fadslSite_);
    fadsl_rt::CompareImpl("Compare", dst, src0, cmpMode, count,
                          [&](uint32_t i) { return fadsl_rt::ToD(*src1.Ptr(i)); }, &src1);
}
template <typename T, typename U>
__aicore__ inline void Compares(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar,
                                CMPMODE cmpMode, uint32_t count, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Compares", fadslSite_);
    const double s = fadsl_rt::ToD(src1Scalar);
    fadsl_rt::CompareImpl<T, U>("Compares", dst, src0, cmpMode, count, [s](uint32_t) { return s; }, nullptr);
}
// CompareScalar has been updated, please use Compares instead (kept by the 2026 header).
template <typename T, typename U>
__aicore__ inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar,
                                     CMPMODE cmpMode, uint32_t count, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("CompareScalar", fadslSite_);
    const double s = fadsl_rt::ToD(src1Scalar);
    fadsl_rt::CompareImpl<T, U>("CompareScalar", dst, src0, cmpMode, count, [s](uint32_t) { return s; }, nullptr);
}
// Select modes 0 and 2: bit 1 takes src0, bit 0 takes src1.
template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                              const LocalTensor<T>& src1, SELMODE selMode, uint32_t count, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Select", fadslSite_);
    if (selMode == SELMODE::VSEL_TENSOR_SCALAR_MODE)
        fadsl_rt::Fail("Select", "VSEL_TENSOR_SCALAR_MODE takes a scalar src1; this overload is for modes 0 and 2");
    fadsl_rt::SelectImpl("Select", dst, selMask, src0, count, selMode, [&](uint32_t i) { return *src1.Ptr(i); }, &src1);
}
// Select mode 1: bit 1 takes src0, bit 0 takes the scalar src1.
template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                              T src1, SELMODE selMode, uint32_t count, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Select", fadslSite_);
    if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
        fadsl_rt::Fail("Select", "the scalar-src1 overload requires SELMODE::VSEL_TENSOR_SCALAR_MODE");
    fadsl_rt::SelectImpl<T, U>("Select", dst, selMask, src0, count, selMode, [src1](uint32_t) { return src1; }, nullptr);
}

template <typename T, typename U>
__aicore__ inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                            const uint32_t count, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Cast", fadslSite_);
    using namespace fadsl_rt;
    constexpr unsigned modes = CastModes<T, U>();
    static_assert(modes != 0, "fadsl-cpu-runtime: this Cast type pair is not supported (supported: half->float, "
                              "bfloat16_t->float, float->half, float->bfloat16_t, float->int32_t, float->float, "
                              "int32_t->float, half->int32_t, bfloat16_t->int32_t, int16_t->float, int8_t->half)");
    const std::string api = Str("Cast<", TypeName<T>::Get(), ", ", TypeName<U>::Get(), ">(", RoundName(roundMode), ")");
    const unsigned mi = static_cast<unsigned>(roundMode);
    if (mi > 6 || !(modes & (1u << mi))) {
        std::string allowed;
        for (unsigned b = 0; b < 7; ++b)
            if (modes & (1u << b)) allowed += (allowed.empty() ? "" : "/") + std::string(RoundName(static_cast<RoundMode>(b)));
        Fail(api, Str("round mode ", RoundName(roundMode), " is not allowed for ", TypeName<U>::Get(), " -> ",
                      TypeName<T>::Get(), " on A2/A3 (allowed: ", allowed, ")"));
    }
    if (count == 0) return;
    VecOperand(api.c_str(), dst, count, "dst");
    VecOperand(api.c_str(), src, count, "src");
    ReadBytes(api.c_str(), src, 0, uint64_t(count) * sizeof(U), PIPE_V);
    const SignedRnd r = ToSigned(roundMode);
    std::vector<T> out(count);
    for (uint32_t i = 0; i < count; ++i) {
        const double v = ToD(*src.Ptr(i));
        if constexpr (std::is_same<T, float>::value) {
            if constexpr (std::is_same<U, float>::value) {  // UNVERIFIED: float->float rounds to an integral value
                out[i] = std::isfinite(v) ? static_cast<float>(std::copysign(RoundMag(std::fabs(v), MagMode(r, v < 0)), v))
                                          : static_cast<float>(v);
            } else {
                uint32_t b = EncodeFloat(v, 23, 8, r);  // exact for half/bf16/int16 sources, rounds int32
                std::memcpy(&out[i], &b, 4);
            }
        } else {
            out[i] = CastOne<T>(v, r);
        }
    }
    WriteBytes(api.c_str(), dst, 0, uint64_t(count) * sizeof(T), PIPE_V);
    std::memcpy(dst.Ptr(0), out.data(), uint64_t(count) * sizeof(T));
}

}  // namespace AscendC
