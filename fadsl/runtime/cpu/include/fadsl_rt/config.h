// fadsl CPU runtime: target facts (capacities, core counts) and hardware constants.
//
// Single source of truth for the target numbers is fadsl's Python target table; the generated
// CMake passes them as compile definitions. The ascend910b1 values below are only defaults for
// hand-built programs and each one warns at compile time when it is used.
#pragma once
#include <cstdint>

#ifndef FADSL_SOC_VERSION
#warning "fadsl-cpu-runtime: FADSL_SOC_VERSION not defined, defaulting to \"ascend910b1\""
#define FADSL_SOC_VERSION "ascend910b1"
#endif
#ifndef FADSL_UB_BYTES
#warning "fadsl-cpu-runtime: FADSL_UB_BYTES not defined, defaulting to 196352 (ascend910b1: 192 KB - 256 B)"
#define FADSL_UB_BYTES 196352
#endif
#ifndef FADSL_L1_BYTES
#warning "fadsl-cpu-runtime: FADSL_L1_BYTES not defined, defaulting to 524032 (ascend910b1: 512 KB - 256 B)"
#define FADSL_L1_BYTES 524032
#endif
#ifndef FADSL_L0A_BYTES
#warning "fadsl-cpu-runtime: FADSL_L0A_BYTES not defined, defaulting to 65536 (ascend910b1)"
#define FADSL_L0A_BYTES 65536
#endif
#ifndef FADSL_L0B_BYTES
#warning "fadsl-cpu-runtime: FADSL_L0B_BYTES not defined, defaulting to 65536 (ascend910b1)"
#define FADSL_L0B_BYTES 65536
#endif
#ifndef FADSL_L0C_BYTES
#warning "fadsl-cpu-runtime: FADSL_L0C_BYTES not defined, defaulting to 131072 (ascend910b1)"
#define FADSL_L0C_BYTES 131072
#endif
#ifndef FADSL_AIC_CORES
#warning "fadsl-cpu-runtime: FADSL_AIC_CORES not defined, defaulting to 24 (ascend910b1)"
#define FADSL_AIC_CORES 24
#endif
#ifndef FADSL_AIV_CORES
#warning "fadsl-cpu-runtime: FADSL_AIV_CORES not defined, defaulting to 48 (ascend910b1)"
#define FADSL_AIV_CORES 48
#endif
#ifndef FADSL_HAS_DATACOPYPAD
#warning "fadsl-cpu-runtime: FADSL_HAS_DATACOPYPAD not defined, defaulting to 1 (ascend910b1)"
#define FADSL_HAS_DATACOPYPAD 1
#endif

namespace fadsl_rt {
constexpr const char* kSocVersion = FADSL_SOC_VERSION;
constexpr uint32_t kUbBytes = FADSL_UB_BYTES;
constexpr uint32_t kL1Bytes = FADSL_L1_BYTES;
constexpr uint32_t kL0aBytes = FADSL_L0A_BYTES;
constexpr uint32_t kL0bBytes = FADSL_L0B_BYTES;
constexpr uint32_t kL0cBytes = FADSL_L0C_BYTES;
constexpr int32_t kAicCores = FADSL_AIC_CORES;
constexpr int32_t kAivCores = FADSL_AIV_CORES;
constexpr bool kHasDataCopyPad = (FADSL_HAS_DATACOPYPAD) != 0;
static_assert(kUbBytes % 32 == 0 && kL1Bytes % 32 == 0, "fadsl-cpu-runtime: UB/L1 sizes must be multiples of 32 B");
static_assert(kAicCores > 0 && kAivCores > 0, "fadsl-cpu-runtime: core counts must be positive");

// impl/basic_api/utils/kernel_utils_constants.h: ONE_BLK_SIZE, DEFAULT_BLK_NUM, ONE_REPEAT_BYTE_SIZE,
// MAX_REPEAT_TIMES; 512-byte cube fractal (LoadData doc); at most 64 buffers per kernel (InitBuffer doc).
constexpr uint32_t kBlockBytes = 32;
constexpr uint32_t kBlocksPerRepeat = 8;
constexpr uint32_t kRepeatBytes = 256;
constexpr uint32_t kFractalBytes = 512;
constexpr uint32_t kMaxBuffersPerPipe = 64;
}  // namespace fadsl_rt
