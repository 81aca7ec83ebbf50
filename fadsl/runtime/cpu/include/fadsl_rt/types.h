// fadsl CPU runtime: `half` (IEEE binary16) and `bfloat16_t` storage types plus exact,
// mode-aware float/int rounding helpers used by Cast, Fixpipe quantisation and the types' own
// conversions.
//
// Both types hold their raw bits (`val`); conversion from any arithmetic type rounds to nearest,
// ties to even (CAST_RINT), conversion to float is exact. There is deliberately no half/bf16
// arithmetic operator: `a + b` computes in float (implicit conversion) and rounds once when the
// result is stored back, which equals correctly rounded fp16 arithmetic for + - * of two values.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace fadsl_rt {

// Rounding of a non-negative magnitude; the signed modes are mapped onto these by MagMode().
enum class Rnd : uint8_t { kNearestEven, kNearestAway, kUp, kDown, kOdd };
// Signed rounding modes in the order of AscendC::RoundMode (CAST_RINT .. CAST_ODD).
enum class SignedRnd : uint8_t { kRint, kFloor, kCeil, kRound, kTrunc, kOdd };

inline Rnd MagMode(SignedRnd m, bool negative) {
    switch (m) {
        case SignedRnd::kRint: return Rnd::kNearestEven;
        case SignedRnd::kRound: return Rnd::kNearestAway;
        case SignedRnd::kTrunc: return Rnd::kDown;
        case SignedRnd::kOdd: return Rnd::kOdd;
        case SignedRnd::kFloor: return negative ? Rnd::kUp : Rnd::kDown;
        case SignedRnd::kCeil: return negative ? Rnd::kDown : Rnd::kUp;
    }
    return Rnd::kNearestEven;
}

// Rounds a non-negative double to an integral double in the given magnitude mode.
inline double RoundMag(double q, Rnd mode) {
    switch (mode) {
        case Rnd::kNearestEven: {
            double f = std::floor(q);
            double d = q - f;
            if (d > 0.5) return f + 1.0;
            if (d < 0.5) return f;
            return std::fmod(f, 2.0) == 0.0 ? f : f + 1.0;
        }
        case Rnd::kNearestAway: return std::floor(q + 0.5);
        case Rnd::kUp: return std::ceil(q);
        case Rnd::kDown: return std::floor(q);
        case Rnd::kOdd: {
            double t = std::floor(q);
            if (t == q) return t;
            return std::fmod(t, 2.0) == 0.0 ? t + 1.0 : t;
        }
    }
    return q;
}

// Encodes x into a binary floating format with `mbits` fraction bits and `ebits` exponent bits.
// Exact for every double input (all scalings are by powers of two). Overflow follows IEEE 754:
// nearest modes give inf, rounding towards zero (and round-to-odd) give the largest finite value.
// UNVERIFIED: round-to-odd overflow saturating to max finite is the IEEE-style reading; the
// hardware behaviour for CAST_ODD overflow is not documented.
inline uint32_t EncodeFloat(double x, int mbits, int ebits, SignedRnd smode) {
    const int bias = (1 << (ebits - 1)) - 1;
    const int emin = 1 - bias;
    const int emax = bias;
    const uint32_t signBit = std::signbit(x) ? (1u << (mbits + ebits)) : 0u;
    const uint32_t expMask = ((1u << ebits) - 1u) << mbits;
    if (std::isnan(x)) return signBit | expMask | (1u << (mbits - 1));
    if (std::isinf(x)) return signBit | expMask;
    double a = std::fabs(x);
    if (a == 0.0) return signBit;
    const Rnd mode = MagMode(smode, signBit != 0);
    int e = 0;
    (void)std::frexp(a, &e);
    int E = e - 1;  // a = 1.f * 2^E
    const double one = std::ldexp(1.0, mbits);
    if (E < emin) {  // subnormal range: unit is 2^(emin - mbits)
        double q = RoundMag(std::ldexp(a, mbits - emin), mode);
        return signBit | static_cast<uint32_t>(q);  // q == 2^mbits encodes the smallest normal
    }
    double q = RoundMag(std::ldexp(a, mbits - E), mode);
    if (q >= 2.0 * one) {
        q = one;
        ++E;
    }
    if (E > emax) {
        if (mode == Rnd::kNearestEven || mode == Rnd::kNearestAway || mode == Rnd::kUp) return signBit | expMask;
        return signBit | (expMask - (1u << mbits)) | ((1u << mbits) - 1u);
    }
    return signBit | (static_cast<uint32_t>(E + bias) << mbits) | static_cast<uint32_t>(q - one);
}

inline double DecodeFloat(uint32_t bits, int mbits, int ebits) {
    const int bias = (1 << (ebits - 1)) - 1;
    const bool neg = (bits >> (mbits + ebits)) & 1u;
    const uint32_t ex = (bits >> mbits) & ((1u << ebits) - 1u);
    const uint32_t fr = bits & ((1u << mbits) - 1u);
    double v;
    if (ex == 0) {
        v = std::ldexp(static_cast<double>(fr), 1 - bias - mbits);
    } else if (ex == (1u << ebits) - 1u) {
        v = fr ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    } else {
        v = std::ldexp(static_cast<double>(fr) + std::ldexp(1.0, mbits), static_cast<int>(ex) - bias - mbits);
    }
    return neg ? -v : v;
}

// EncodeFloat(x, MB, EB, kRint) for formats of at most 16 bits, on the bits of x: the same result
// (ties to even, overflow to inf, NaN -> the sign with the quiet NaN pattern) without the
// frexp/ldexp calls, which dominated every half/bf16 conversion.
template <int MB, int EB>
inline uint32_t EncodeRintBits(double x) {
    constexpr int bias = (1 << (EB - 1)) - 1;
    constexpr uint32_t expMask = ((1u << EB) - 1u) << MB;
    uint64_t u;
    std::memcpy(&u, &x, sizeof u);
    const uint32_t sign = static_cast<uint32_t>(u >> 63) << (MB + EB);
    const uint64_t a = u & 0x7FFFFFFFFFFFFFFFull;
    if (a >= 0x7FF0000000000000ull) return sign | expMask | (a > 0x7FF0000000000000ull ? 1u << (MB - 1) : 0u);
    const int dexp = static_cast<int>(a >> 52);
    if (dexp == 0) return sign;  // zero or a double subnormal: far below the format's smallest subnormal
    const uint64_t mant = (a & 0xFFFFFFFFFFFFFull) | (1ull << 52);  // value = mant * 2^(dexp - 1075)
    int e = dexp - 1023;
    // Normal results keep MB fraction bits; subnormal ones are counted in units of 2^(1 - bias - MB).
    const int shift = e >= 1 - bias ? 52 - MB : 52 - MB + (1 - bias - e);
    if (shift > 54) return sign;  // below half the smallest subnormal: rounds to zero
    uint64_t q = mant >> shift;
    const uint64_t rem = mant & ((1ull << shift) - 1ull), halfway = 1ull << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
    if (e < 1 - bias) return sign | static_cast<uint32_t>(q);  // q == 2^MB encodes the smallest normal
    if (q == (2ull << MB)) {
        q >>= 1;
        ++e;
    }
    if (e > bias) return sign | expMask;
    return sign | (static_cast<uint32_t>(e + bias) << MB) | static_cast<uint32_t>(q - (1ull << MB));
}
inline uint16_t ToHalfBits(double x, SignedRnd m = SignedRnd::kRint) {
    if (m == SignedRnd::kRint) return static_cast<uint16_t>(EncodeRintBits<10, 5>(x));
    return static_cast<uint16_t>(EncodeFloat(x, 10, 5, m));
}
inline uint16_t ToBf16Bits(double x, SignedRnd m = SignedRnd::kRint) {
    if (m == SignedRnd::kRint) return static_cast<uint16_t>(EncodeRintBits<7, 8>(x));
    return static_cast<uint16_t>(EncodeFloat(x, 7, 8, m));
}
// DecodeFloat(b, 10, 5) as float, on the bits (every half is exact in float; NaN keeps only its
// sign, as the double path did).
inline float HalfBitsToFloat(uint16_t b) {
    const uint32_t ex = (b >> 10) & 0x1Fu, fr = b & 0x3FFu;
    float v;
    if (ex == 0) {
        v = static_cast<float>(fr) * 0x1p-24f;  // zero or subnormal: fr * 2^-24, exact
    } else if (ex == 0x1Fu) {
        v = fr ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    } else {
        const uint32_t u = ((ex + 112u) << 23) | (fr << 13);  // rebias 15 -> 127
        std::memcpy(&v, &u, sizeof v);
    }
    return (b & 0x8000u) ? -v : v;
}
inline float Bf16BitsToFloat(uint16_t b) {
    uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
// float -> float with a rounding mode is the identity for every finite float (Cast float->float).
inline float RoundFloatToFloat(float x, SignedRnd) { return x; }

// Float -> int32 with the given rounding mode. UNVERIFIED: out-of-range values saturate and NaN
// gives 0 (the Cast doc does not state the hardware's choice).
inline int32_t ToInt32(double x, SignedRnd m) {
    if (std::isnan(x)) return 0;
    double a = RoundMag(std::fabs(x), MagMode(m, std::signbit(x)));
    double v = std::signbit(x) ? -a : a;
    if (v >= 2147483647.0) return std::numeric_limits<int32_t>::max();
    if (v <= -2147483648.0) return std::numeric_limits<int32_t>::min();
    return static_cast<int32_t>(v);
}

}  // namespace fadsl_rt

// IEEE 754 binary16 (the CANN CPU-debug `half`, global namespace as in kernel code).
struct half {
    uint16_t val;  // raw bits; trivial default constructor like a built-in scalar
    half() = default;
    template <typename U, typename std::enable_if<std::is_arithmetic<U>::value, int>::type = 0>
    half(U v) : val(fadsl_rt::ToHalfBits(static_cast<double>(v))) {}  // NOLINT: implicit on purpose
    operator float() const { return fadsl_rt::HalfBitsToFloat(val); }  // NOLINT
    static half FromBits(uint16_t b) { half h; h.val = b; return h; }
    half& operator+=(float o) { *this = half(static_cast<float>(*this) + o); return *this; }
    half& operator-=(float o) { *this = half(static_cast<float>(*this) - o); return *this; }
    half& operator*=(float o) { *this = half(static_cast<float>(*this) * o); return *this; }
    half& operator/=(float o) { *this = half(static_cast<float>(*this) / o); return *this; }
};

// bfloat16 (8 exponent bits, 7 fraction bits), global namespace as in kernel code.
struct bfloat16_t {
    uint16_t val;
    bfloat16_t() = default;
    template <typename U, typename std::enable_if<std::is_arithmetic<U>::value, int>::type = 0>
    bfloat16_t(U v) : val(fadsl_rt::ToBf16Bits(static_cast<double>(v))) {}  // NOLINT
    operator float() const { return fadsl_rt::Bf16BitsToFloat(val); }  // NOLINT
    static bfloat16_t FromBits(uint16_t b) { bfloat16_t h; h.val = b; return h; }
    bfloat16_t& operator+=(float o) { *this = bfloat16_t(static_cast<float>(*this) + o); return *this; }
    bfloat16_t& operator-=(float o) { *this = bfloat16_t(static_cast<float>(*this) - o); return *this; }
    bfloat16_t& operator*=(float o) { *this = bfloat16_t(static_cast<float>(*this) * o); return *this; }
    bfloat16_t& operator/=(float o) { *this = bfloat16_t(static_cast<float>(*this) / o); return *this; }
};
static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "half/bfloat16_t must be 2 bytes");
static_assert(std::is_trivial<half>::value && std::is_trivial<bfloat16_t>::value, "half/bfloat16_t must be trivial");

namespace fadsl_rt {
template <typename T> struct TypeName { static const char* Get() { return "?"; } };
#define FADSL_RT_TYPENAME(T) template <> struct TypeName<T> { static const char* Get() { return #T; } };
FADSL_RT_TYPENAME(half)
FADSL_RT_TYPENAME(bfloat16_t)
FADSL_RT_TYPENAME(float)
FADSL_RT_TYPENAME(double)
FADSL_RT_TYPENAME(int8_t)
FADSL_RT_TYPENAME(uint8_t)
FADSL_RT_TYPENAME(int16_t)
FADSL_RT_TYPENAME(uint16_t)
FADSL_RT_TYPENAME(int32_t)
FADSL_RT_TYPENAME(uint32_t)
FADSL_RT_TYPENAME(int64_t)
FADSL_RT_TYPENAME(uint64_t)
#undef FADSL_RT_TYPENAME
template <typename T> struct IsFloatLike {
    static constexpr bool value = std::is_same<T, float>::value || std::is_same<T, half>::value ||
                                  std::is_same<T, bfloat16_t>::value;
};
// Arithmetic value of an element as double (exact for every supported type).
template <typename T> inline double ToD(T v) { return static_cast<double>(static_cast<float>(v)); }
template <> inline double ToD<double>(double v) { return v; }
template <> inline double ToD<int32_t>(int32_t v) { return static_cast<double>(v); }
template <> inline double ToD<uint32_t>(uint32_t v) { return static_cast<double>(v); }
template <> inline double ToD<int64_t>(int64_t v) { return static_cast<double>(v); }
template <> inline double ToD<uint64_t>(uint64_t v) { return static_cast<double>(v); }
}  // namespace fadsl_rt
