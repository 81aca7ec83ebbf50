// fadsl CPU runtime: SetAtomicAdd / SetAtomicNone / DisableDmaAtomic, and the GM store that every
// copy into GM (DataCopy and DataCopyPad UB->GM, Fixpipe L0C->GM) goes through.
//
// Sources (asc-devkit): include/basic_api/kernel_operator_set_atomic_intf.h declares
// `template <typename T> void SetAtomicAdd()`, `void DisableDmaAtomic()` and `void SetAtomicNone()`
// (kept as the older name of DisableDmaAtomic). impl/basic_api/dav_c220/kernel_operator_set_atomic_impl.h
// (A2/A3) turns on the add mode and sets the element type; it accepts half, float, int16_t, int32_t,
// int8_t and bfloat16_t only. docs/zh/api/SIMD-API/基础API/原子操作/SetAtomicAdd.md: later copies whose
// destination is GM add what they carry to what GM holds and write the sum; the data paths are
// UB / L0C / L1 -> GM on A2 and A3, UB -> GM on 310P AI Core and on the Atlas training series;
// the type lists per product are int16_t/half/float for 310P and float for the training series;
// GM is not cleared first (the host or an earlier pass must zero it).
#pragma once
#include <cstring>
#include <type_traits>

#include "gm.h"

namespace fadsl_rt {

constexpr bool SocStartsWith(const char* s, const char* prefix) {
    return *prefix == '\0' || (*s == *prefix && SocStartsWith(s + 1, prefix + 1));
}
// The element types SetAtomicAdd<T> accepts on the configured SoC (SetAtomicAdd.md, 数据类型).
template <typename T>
constexpr bool AtomicAddTypeOk() {
    constexpr bool f32 = std::is_same<T, float>::value;
    constexpr bool f16 = std::is_same<T, half>::value, s16 = std::is_same<T, int16_t>::value;
    if (SocStartsWith(kSocVersion, "ascend910a")) return f32;
    if (SocStartsWith(kSocVersion, "ascend310p")) return f32 || f16 || s16;
    return f32 || f16 || s16 || std::is_same<T, int32_t>::value || std::is_same<T, int8_t>::value ||
           std::is_same<T, bfloat16_t>::value;
}

// One element of an atomic add: the exact sum rounded once to T (RNE) for the float types.
// UNVERIFIED: integer sums wrap in two's complement (the docs do not say whether they saturate).
template <typename T>
inline T AtomicSum(T a, T b) {
    if constexpr (std::is_integral<T>::value) {
        using U = typename std::make_unsigned<T>::type;
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else if constexpr (std::is_same<T, float>::value) {
        return a + b;
    } else {
        return T(ToD(a) + ToD(b));
    }
}

// A copy of `n` elements into GM at `d` by the current core: a plain write, or under
// SetAtomicAdd<U> an element-wise add, which needs the copy's element type to be U.
template <typename T>
void GmStore(const char* api, T* d, const T* s, size_t n) {
    const char* mode = t_core ? t_core->atomicAdd : nullptr;
    if (mode == nullptr) {
        GmAccess(api, d, n * sizeof(T), true, [&] { std::memcpy(d, s, n * sizeof(T)); });
        return;
    }
    if (std::strcmp(mode, TypeName<T>::Get()) != 0)
        Fail(api, Str("SetAtomicAdd<", mode, "> is in effect, but this copy into GM moves ", TypeName<T>::Get(),
                      " elements: the atomic unit would add them as ", mode,
                      " (set SetAtomicAdd<", TypeName<T>::Get(), ">, or SetAtomicNone before a plain copy)"));
    GmAtomicAccess(api, d, n * sizeof(T), [&] {
        for (size_t i = 0; i < n; ++i) {
            T a, b;
            std::memcpy(&a, d + i, sizeof(T));
            std::memcpy(&b, s + i, sizeof(T));
            const T r = AtomicSum(a, b);
            std::memcpy(d + i, &r, sizeof(T));
        }
    });
}

}  // namespace fadsl_rt

namespace AscendC {
// From here until SetAtomicNone / DisableDmaAtomic, this core's copies into GM add into it.
template <typename T>
__aicore__ inline void SetAtomicAdd(FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("SetAtomicAdd", fadslSite_, PIPE_S);
    static_assert(fadsl_rt::AtomicAddTypeOk<T>(),
                  "fadsl-cpu-runtime: SetAtomicAdd<T>: T is not an atomic-add type of this SoC "
                  "(A2/A3: half, float, int16_t, int32_t, int8_t, bfloat16_t; 310P: half, float, int16_t; "
                  "Atlas training series: float)");
    fadsl_rt::Cur("SetAtomicAdd").atomicAdd = fadsl_rt::TypeName<T>::Get();
}
__aicore__ inline void DisableDmaAtomic(FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("DisableDmaAtomic", fadslSite_, PIPE_S);
    fadsl_rt::Cur("DisableDmaAtomic").atomicAdd = nullptr;
}
__aicore__ inline void SetAtomicNone(FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("SetAtomicNone", fadslSite_, PIPE_S);
    fadsl_rt::Cur("SetAtomicNone").atomicAdd = nullptr;
}
}  // namespace AscendC
