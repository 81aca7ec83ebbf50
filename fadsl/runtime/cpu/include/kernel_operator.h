// fadsl CPU runtime: umbrella header, the CPU counterpart of asc-devkit include/kernel_operator.h.
// Implements on the CPU exactly the Ascend C subset that fadsl's code generator emits; see
// fadsl/runtime/cpu/README.md for the list, the chosen semantics, their sources and what is
// UNVERIFIED. Build: g++ -std=c++17 -O2 -pthread -I fadsl/runtime/cpu/include kernel.cpp main.cpp
#ifndef FADSL_RUNTIME_CPU_KERNEL_OPERATOR_H
#define FADSL_RUNTIME_CPU_KERNEL_OPERATOR_H

#if __cplusplus < 201703L
#error "fadsl-cpu-runtime: kernel_operator.h needs C++17 (-std=c++17)"
#endif

#include "fadsl_rt/config.h"
#include "fadsl_rt/types.h"
#include "fadsl_rt/enums.h"
#include "fadsl_rt/core.h"
#include "fadsl_rt/fields.h"
#include "fadsl_rt/progress.h"
#include "fadsl_rt/gm.h"
#include "fadsl_rt/memory.h"
#include "fadsl_rt/tpipe.h"
#include "fadsl_rt/sync.h"
#include "fadsl_rt/sync_all.h"
#include "fadsl_rt/copy.h"
#include "fadsl_rt/cube.h"
#include "fadsl_rt/init_const.h"
#include "fadsl_rt/mmad.h"
#include "fadsl_rt/vector.h"
#include "fadsl_rt/gather.h"
#include "fadsl_rt/cmpsel.h"
#include "fadsl_rt/vector_l0.h"
#include "fadsl_rt/reduce.h"
#include "fadsl_rt/debug.h"
#include "fadsl_rt/tiling_key.h"

#endif  // FADSL_RUNTIME_CPU_KERNEL_OPERATOR_H
