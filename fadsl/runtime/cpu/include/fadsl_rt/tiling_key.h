// fadsl CPU runtime: tiling keys. asc-devkit impl/basic_api/utils/kernel_utils_macros.h defines
// TILING_KEY_IS(k) as a comparison of the launch's key (g_tilingKey) with k, for the kernel to
// branch on; CPU debug sets the key with ICPU_SET_TILING_KEY(key) before ICPU_RUN_KF
// (docs .../CPU孪生调试/ICPU_SET_TILING_KEY.md: a uint64_t; until set, the branch of key 0 runs).
#pragma once
#include <cstdint>

namespace fadsl_rt {
inline uint64_t& TilingKey() {
    static uint64_t key = 0;
    return key;
}
}  // namespace fadsl_rt

#define TILING_KEY_IS(k) (::fadsl_rt::TilingKey() == static_cast<uint64_t>(k))
