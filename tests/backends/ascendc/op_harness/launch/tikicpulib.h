// fadsl's own stand-in for the CPU-debug launch API main.cpp calls under ASCENDC_CPU_DEBUG,
// for tests only: GmAlloc records every allocation and ICPU_RUN_KF records the launch
// (blockDim and arguments) instead of running the kernel, so the harness can read the
// values main.cpp computed.
#ifndef FADSL_TEST_TIKICPULIB_H
#define FADSL_TEST_TIKICPULIB_H

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <vector>

#include "launch_record.h"

#define __global__
#define __aicore__
#define GM_ADDR uint8_t*
struct half {
    uint16_t bits;
};
struct bfloat16_t {
    uint16_t bits;
};
enum class KernelMode { MIX_MODE = 0, AIC_MODE, AIV_MODE };

namespace AscendC {
inline void* GmAlloc(size_t size)
{
    void* p = std::calloc(size == 0 ? 1 : size, 1);
    fadsl_test::Allocations()[p] = size;
    return p;
}
inline void GmFree(void* p)
{
    (void)p;  // kept until the harness has read it
}
inline void SetKernelMode(KernelMode) {}
}  // namespace AscendC

#define ICPU_RUN_KF(kernel, blockDim, ...) fadsl_test::RecordLaunch(blockDim, {__VA_ARGS__})

#endif
