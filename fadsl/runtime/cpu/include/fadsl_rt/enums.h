// fadsl CPU runtime: qualifiers, kernel-type macros, core-type switches and the enums of the
// Ascend C API subset (names and enumerator order as in asc-devkit; see README for sources).
#pragma once
#include <cstdint>

// ---- qualifiers (impl/utils/sys_macros.h; empty in CPU debug) and GM_ADDR
// (impl/basic_api/utils/kernel_utils_macros.h:24) -------------------------------------------------
#define __global__
#define __aicore__
#define __gm__
#define GM_ADDR __gm__ uint8_t*
// KERNEL_TASK_TYPE_DEFAULT(value): CANN's precompile pass expands it to
// `auto __enable_feature_for_compile_default = value` (kernel_utils_macros.h, with
// __CHECK_FEATURE_AT_PRECOMPILE), so a value that is not an expression fails to compile, and
// extract_host_stub.py (find_kernel_type_by_source) maps the name through the table of its build
// mode; for A2/A3 (c220) that is STR_TO_KERNEL_TYPE_V220 in cmake/asc/legacy_modules/util/
// constants.py: the six types below. Another name only gets "[WARNING] ... do not support in soc
// c220" there and the declared type is dropped (the kernel type is then guessed from the object
// files); this runtime refuses it at compile time instead. Defined after KernelMetaType below.
#define KERNEL_TASK_TYPE_DEFAULT(value)                                                            \
    static_assert(::fadsl_rt::KernelTypeOnC220(value),                                             \
                  "fadsl-cpu-runtime: KERNEL_TASK_TYPE_DEFAULT(" #value ") is not a kernel type of " \
                  "A2/A3 (c220): use KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY, "                  \
                  "KERNEL_TYPE_MIX_AIV_1_0, KERNEL_TYPE_MIX_AIC_1_0, KERNEL_TYPE_MIX_AIC_1_1 or "   \
                  "KERNEL_TYPE_MIX_AIC_1_2")

// impl/basic_api/utils/kernel_utils_macros.h:88 (global namespace, underlying uint8_t).
enum KernelMetaType : uint8_t {
    KERNEL_TYPE_AIV_ONLY,
    KERNEL_TYPE_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2,
    KERNEL_TYPE_AICORE,
    KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE,
    KERNEL_TYPE_MIX_VECTOR_CORE,
    KERNEL_TYPE_MAX,
};
namespace fadsl_rt {
// STR_TO_KERNEL_TYPE_V220 (see KERNEL_TASK_TYPE_DEFAULT above). Only a KernelMetaType converts.
constexpr bool KernelTypeOnC220(KernelMetaType t) {
    return t == KERNEL_TYPE_AIV_ONLY || t == KERNEL_TYPE_AIC_ONLY || t == KERNEL_TYPE_MIX_AIV_1_0 ||
           t == KERNEL_TYPE_MIX_AIC_1_0 || t == KERNEL_TYPE_MIX_AIC_1_1 || t == KERNEL_TYPE_MIX_AIC_1_2;
}
template <typename T>
constexpr bool KernelTypeOnC220(T) = delete;  // a number or another enum is not a kernel type
}  // namespace fadsl_rt

// Compiler built-ins in the real toolchain (not declared in asc-devkit headers).
// UNVERIFIED: numeric values of pipe_t/event_t; only the names are used by kernel code.
enum pipe_t {
    PIPE_S = 0,
    PIPE_V,
    PIPE_M,
    PIPE_MTE1,
    PIPE_MTE2,
    PIPE_MTE3,
    PIPE_ALL,
    PIPE_MTE4,
    PIPE_MTE5,
    PIPE_V2,
    PIPE_FIX,
    PIPE_MAX,
};
enum event_t {
    EVENT_ID0 = 0,
    EVENT_ID1,
    EVENT_ID2,
    EVENT_ID3,
    EVENT_ID4,
    EVENT_ID5,
    EVENT_ID6,
    EVENT_ID7,
};
// Fixpipe quantisation modes (Fixpipe doc, FixpipeParamsV220 table). The doc prints
// `enum QuantMode_t`; UNVERIFIED whether the built-in is scoped. A scoped enum is used so that
// only the portable spelling `QuantMode_t::F322F16` compiles here.
enum class QuantMode_t : uint8_t {
    NoQuant,
    F322F16,
    F322BF16,
    DEQF16,
    VDEQF16,
    QF322B8_PRE,
    VQF322B8_PRE,
    REQ8,
    VREQ8,
};

namespace AscendC {
// impl/utils/sys_macros.h / kernel_utils_macros.h
constexpr int32_t MIX = 0;
constexpr int32_t AIC = 1;
constexpr int32_t AIV = 2;

// impl/basic_api/common_types.h:27
enum class TPosition : uint8_t {
    GM,
    A1,
    A2,
    B1,
    B2,
    C1,
    C2,
    CO1,
    CO2,
    VECIN,
    VECOUT,
    VECCALC,
    LCM = VECCALC,
    SPM,
    SHM = SPM,
    TSCM,
    C2PIPE2GM,
    C2PIPE2LOCAL,
    MAX,
};
using QuePosition = TPosition;  // impl/basic_api/kernel_event.h:36

// impl/basic_api/kernel_event.h:38
enum class HardEvent : uint8_t {
    MTE2_MTE1,
    MTE1_MTE2,
    MTE1_M,
    M_MTE1,
    MTE2_V,
    V_MTE2,
    MTE3_V,
    V_MTE3,
    M_V,
    V_M,
    V_V,
    MTE3_MTE1,
    MTE1_MTE3,
    MTE1_V,
    MTE2_M,
    M_MTE2,
    V_MTE1,
    M_FIX,
    FIX_M,
    MTE3_MTE2,
    MTE2_MTE3,
    S_V,
    V_S,
    S_MTE2,
    MTE2_S,
    S_MTE3,
    MTE3_S,
    MTE2_FIX,
    FIX_MTE2,
    FIX_S,
    M_S,
    FIX_MTE3,
    MTE1_FIX,
    FIX_MTE1,
    FIX_FIX,
    MAX,
};

// impl/basic_api/utils/kernel_utils_mode.h (A2/A3 branch: no CAST_HYBRID/EVEN/ZERO).
enum class RoundMode : uint8_t {
    CAST_NONE = 0,
    CAST_RINT,
    CAST_FLOOR,
    CAST_CEIL,
    CAST_ROUND,
    CAST_TRUNC,
    CAST_ODD,
    UNKNOWN = 0xFF,
};
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };
// ReduceRepeat's reduceType (asc-devkit impl/utils/common_types.h; CANN >= 9.1.0).
enum class ReduceType { NONE = -1, SUM = 0, MAX, MIN };
}  // namespace AscendC

// In CPU debug the core type is a runtime variable (impl/utils/sys_macros.h:61-86); it is
// thread_local here because every simulated core runs on its own thread.
inline thread_local int32_t g_coreType = AscendC::MIX;
#define ASCEND_IS_AIV (g_coreType == AscendC::AIV)
#define ASCEND_IS_AIC (g_coreType == AscendC::AIC)
#define ASCEND_IS_NOT_AIV (g_coreType != AscendC::AIV)
#define ASCEND_IS_NOT_AIC (g_coreType != AscendC::AIC)

namespace fadsl_rt {
struct EventInfo {
    pipe_t src;
    pipe_t dst;
    const char* name;
};
inline EventInfo Describe(AscendC::HardEvent e) {
    static const EventInfo kTable[] = {
        {PIPE_MTE2, PIPE_MTE1, "MTE2_MTE1"}, {PIPE_MTE1, PIPE_MTE2, "MTE1_MTE2"}, {PIPE_MTE1, PIPE_M, "MTE1_M"},
        {PIPE_M, PIPE_MTE1, "M_MTE1"},       {PIPE_MTE2, PIPE_V, "MTE2_V"},       {PIPE_V, PIPE_MTE2, "V_MTE2"},
        {PIPE_MTE3, PIPE_V, "MTE3_V"},       {PIPE_V, PIPE_MTE3, "V_MTE3"},       {PIPE_M, PIPE_V, "M_V"},
        {PIPE_V, PIPE_M, "V_M"},             {PIPE_V, PIPE_V, "V_V"},             {PIPE_MTE3, PIPE_MTE1, "MTE3_MTE1"},
        {PIPE_MTE1, PIPE_MTE3, "MTE1_MTE3"}, {PIPE_MTE1, PIPE_V, "MTE1_V"},       {PIPE_MTE2, PIPE_M, "MTE2_M"},
        {PIPE_M, PIPE_MTE2, "M_MTE2"},       {PIPE_V, PIPE_MTE1, "V_MTE1"},       {PIPE_M, PIPE_FIX, "M_FIX"},
        {PIPE_FIX, PIPE_M, "FIX_M"},         {PIPE_MTE3, PIPE_MTE2, "MTE3_MTE2"}, {PIPE_MTE2, PIPE_MTE3, "MTE2_MTE3"},
        {PIPE_S, PIPE_V, "S_V"},             {PIPE_V, PIPE_S, "V_S"},             {PIPE_S, PIPE_MTE2, "S_MTE2"},
        {PIPE_MTE2, PIPE_S, "MTE2_S"},       {PIPE_S, PIPE_MTE3, "S_MTE3"},       {PIPE_MTE3, PIPE_S, "MTE3_S"},
        {PIPE_MTE2, PIPE_FIX, "MTE2_FIX"},   {PIPE_FIX, PIPE_MTE2, "FIX_MTE2"},   {PIPE_FIX, PIPE_S, "FIX_S"},
        {PIPE_M, PIPE_S, "M_S"},             {PIPE_FIX, PIPE_MTE3, "FIX_MTE3"},   {PIPE_MTE1, PIPE_FIX, "MTE1_FIX"},
        {PIPE_FIX, PIPE_MTE1, "FIX_MTE1"},   {PIPE_FIX, PIPE_FIX, "FIX_FIX"},
    };
    const unsigned i = static_cast<unsigned>(e);
    if (i < sizeof(kTable) / sizeof(kTable[0])) return kTable[i];
    return {PIPE_ALL, PIPE_ALL, "MAX"};
}
inline const char* PipeName(pipe_t p) {
    switch (p) {
        case PIPE_S: return "PIPE_S";
        case PIPE_V: return "PIPE_V";
        case PIPE_M: return "PIPE_M";
        case PIPE_MTE1: return "PIPE_MTE1";
        case PIPE_MTE2: return "PIPE_MTE2";
        case PIPE_MTE3: return "PIPE_MTE3";
        case PIPE_ALL: return "PIPE_ALL";
        case PIPE_FIX: return "PIPE_FIX";
        default: return "PIPE_?";
    }
}
inline const char* PosName(AscendC::TPosition p) {
    static const char* kNames[] = {"GM",  "A1",     "A2",     "B1",      "B2",  "C1",   "C2",        "CO1",
                                   "CO2", "VECIN",  "VECOUT", "VECCALC", "SPM", "TSCM", "C2PIPE2GM", "C2PIPE2LOCAL"};
    const unsigned i = static_cast<unsigned>(p);
    return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "MAX";
}
}  // namespace fadsl_rt
