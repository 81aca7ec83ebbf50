// fadsl CPU runtime: call sites and the executed-instruction record's row (README "Executed-
// instruction record").
//
// Every Ascend C call a kernel can make takes one extra trailing parameter that the real headers
// do not have: `fadsl_rt::Site site = <the caller's __builtin_FILE() / __builtin_LINE()>`
// (FADSL_RT_SITE below). Why a default argument, and why it is not observable by a kernel that
// compiles against the real headers:
// * a call written with the documented arguments picks the same overload with the same
//   conversions: a defaulted trailing parameter takes no part in overload ranking, and every
//   overload of a name gets the same one, so none becomes viable or better because of it;
// * a call with one argument too many still fails to compile unless that argument is a
//   fadsl_rt::Site, which only code naming this runtime's own namespace can build (the
//   constructor needs a fadsl_rt::SiteTag);
// * what does change is the function's type: `&AscendC::Add<float>` has one parameter more. A
//   kernel that takes the address of an API function and stores it in a pointer of the
//   documented type would not compile. fadsl's generated code never takes an API function's
//   address (tests/runtime/test_rt_record.py checks the generated snapshots for it).
// The alternatives were worse: a macro per API name would rewrite every `Add` / `Max` in the
// kernel (fadsl::Max included), and return addresses need debug information and a stack walk
// per call (inlined runtime functions at -O1 hide the caller).
//
// Only the outermost call records its site: an API that calls another one internally (SyncAll
// calls PipeBarrier<PIPE_ALL>) reports the kernel's line for both.
#pragma once
#include <cstdint>
#include <string>

namespace fadsl_rt {

struct SiteTag {};
struct Site {
    const char* file = nullptr;  // __builtin_FILE() of the call, nullptr: issued by the runtime itself
    uint32_t line = 0;
    // explicit: a stray `{}` argument from a kernel does not convert to a Site
    explicit constexpr Site() = default;
    constexpr Site(SiteTag, const char* f, uint32_t l) : file(f), line(l) {}
};

// Memories of the record's src/dst columns: the local memories (Mem, core.h) and GM.
constexpr int8_t kRecGm = 5;

// One executed call (README "Executed-instruction record" for the columns). -1 / nullptr: "-".
struct Row {
    uint64_t seq = 0;
    const char* api = nullptr;
    Site site;
    int8_t pipe = -1;  // pipe_t
    int8_t src = -1, dst = -1;  // Mem value or kRecGm
    const char* dtype = nullptr;
    int64_t elems = -1, repeats = -1, bytes = -1;
    int64_t readElems = 0, writeElems = 0, localBytes = 0, gmBytes = 0;  // accumulated, turned into elems/bytes
    int32_t m = -1, k = -1, n = -1;
    int64_t blocks = -1, blocklen = -1;
    int32_t gm = -1;
    int64_t gmoff = -1;
    int64_t gmend = -1;  // end offset (exclusive) of the furthest access into buffer `gm`
    int16_t event = -1;  // HardEvent value
    int8_t id = -1, mode = -1, flag = -1;
    const char* queue = nullptr;  // label of the TQue buffer whose operation issued this Set/Wait
    std::string from;             // WaitFlag: seq of the SetFlag; cross-core waits: core:seq list
};

}  // namespace fadsl_rt

// The trailing parameter every API function takes (see above). Runtime-internal spelling only.
#define FADSL_RT_SITE \
    ::fadsl_rt::Site fadslSite_ = ::fadsl_rt::Site(::fadsl_rt::SiteTag{}, __builtin_FILE(), __builtin_LINE())
