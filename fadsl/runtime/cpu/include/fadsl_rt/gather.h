// fadsl CPU runtime: Gather (level 2), pipe V.
// Signature: include/basic_api/kernel_operator_vec_gather_intf.h (asc-devkit), docs
// docs/api/context/Gather.md: dst[i] = the element of src at byte offset
// srcBaseAddr + srcOffset[i] from src's start; offsets in bytes, aligned to the element
// width, inside UB. A2/A3 types: int16_t/uint16_t/int32_t/uint32_t/float/half/bfloat16_t.
// Stricter than the chip: an offset past the end of src's own view fails (the chip
// reads whatever UB holds there).
#pragma once
#include "vector.h"

namespace AscendC {
template <typename T>
__aicore__ inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                              const uint32_t srcBaseAddr, const uint32_t count, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Gather", fadslSite_);
    static_assert(fadsl_rt::OneOf<T, int16_t, uint16_t, int32_t, uint32_t, float, half, bfloat16_t>(),
                  "fadsl-cpu-runtime: Gather supports int16_t/uint16_t/int32_t/uint32_t/float/half/bfloat16_t");
    const char* api = "Gather";
    if (count == 0) return;
    fadsl_rt::VecOperand(api, dst, count, "dst");
    fadsl_rt::VecOperand(api, srcOffset, count, "srcOffset");
    fadsl_rt::VecOperand(api, src, 1, "src");
    fadsl_rt::ReadBytes(api, srcOffset, 0, uint64_t(count) * 4, PIPE_V);
    std::vector<T> out(count);
    for (uint32_t i = 0; i < count; ++i) {
        const uint64_t at = uint64_t(srcBaseAddr) + *srcOffset.Ptr(i);
        if (at % sizeof(T) != 0)
            fadsl_rt::Fail(api, fadsl_rt::Str("srcOffset[", i, "] = ", at, " bytes is not a multiple of the element width ",
                                              sizeof(T)));
        const uint64_t k = at / sizeof(T);
        if (k >= src.GetSize())
            fadsl_rt::Fail(api, fadsl_rt::Str("srcOffset[", i, "] = ", at, " bytes is past the end of src (",
                                              src.GetSize(), " elements)"));
        fadsl_rt::ReadBytes(api, src, k * sizeof(T), (k + 1) * sizeof(T), PIPE_V);
        out[i] = *src.Ptr(static_cast<uint32_t>(k));
    }
    fadsl_rt::WriteBytes(api, dst, 0, uint64_t(count) * sizeof(T), PIPE_V);
    std::memcpy(dst.Ptr(0), out.data(), uint64_t(count) * sizeof(T));
}
}  // namespace AscendC
