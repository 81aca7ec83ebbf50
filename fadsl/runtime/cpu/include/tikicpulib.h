// fadsl CPU runtime: host-side CPU-debug API (the CANN tikicpulib.h counterpart), used by a host
// main.cpp under #ifdef ASCENDC_CPU_DEBUG:
//   AscendC::GmAlloc(size_t) / AscendC::GmFree(void*)      (GmAlloc.md, GmFree.md)
//   AscendC::SetKernelMode(KernelMode::AIV_MODE)            (SetKernelMode.md, default MIX_MODE)
//   ICPU_RUN_KF(kernel, numBlocks, args...)                 (ICPU_RUN_KF.md)
#ifndef FADSL_RUNTIME_CPU_TIKICPULIB_H
#define FADSL_RUNTIME_CPU_TIKICPULIB_H

#include "kernel_operator.h"
#include "fadsl_rt/launch.h"

#endif  // FADSL_RUNTIME_CPU_TIKICPULIB_H
