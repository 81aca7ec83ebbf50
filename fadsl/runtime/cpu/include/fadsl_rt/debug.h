// fadsl CPU runtime: the kernel-side debugging calls AscendC::printf and ascendc_assert.
//
// What the documentation says (asc-devkit docs/zh/api/Utils-API/调测接口/printf.md and
// docs/zh/api/SIMD-API/基础API/调试接口/异常检测/ascendc_assert.md):
// * `template <class... Args> void printf(const __gm__ char* fmt, Args&&... args)`, in namespace
//   AscendC when kernel_operator.h is included; Atlas A2/A3 support it from SIMD kernels. The
//   conversions are %d %ld %lld %i %li %lli (signed integers), %f %F (float, half, bfloat16_t),
//   %x %lx %llx (integers, hex), %s, %u %lu %llu (unsigned integers) and %p; no escape other than
//   the newline. One argument per conversion.
// * `ascendc_assert(expr)` / `ascendc_assert(expr, fmt, args...)` is a macro: when expr is false
//   it prints "[ASSERT] <file>:<line>: Assertion `<expr>' <message>" and stops the kernel.
// * Both are on unless the build sets ASCENDC_DUMP=0 (关闭ASCENDC_DUMP说明.md): then they do
//   nothing. This runtime honours -DASCENDC_DUMP=0 the same way.
//
// printf.md's NPU sample shows each line prefixed with its core ("[AIV Block 0/8] ") and the lines
// grouped core by core; this runtime prints the same prefix (GetBlockIdx()/GetBlockNum(); UNVERIFIED
// which numbers the device shows for the AIVs of a MIX kernel) and keeps each core's text until
// every core has finished, then prints it to stdout core by core in launch order (AIC 0.., then
// AIV 0..; UNVERIFIED that the host reads the per-core buffers in that order), each core's lines in
// the order it printed them. A failing assert prints that core's text so far, then the
// [ASSERT] line, and aborts as Trap() does. Other conversions (flags, widths, %%, %c, %e) are
// refused, not passed to the C library: the device's parser does not document them.
// Both calls are scalar-unit work: the record has a row on PIPE_S for each.
#pragma once
#include <cinttypes>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "core.h"
#include "types.h"

namespace fadsl_rt {

// A printf format with the caller's site: printf's first parameter (the site cannot trail a pack).
struct FmtSite {
    const char* fmt;
    Site site;
    FmtSite(const char* f, const char* file = __builtin_FILE(), uint32_t line = __builtin_LINE())  // NOLINT
        : fmt(f), site(SiteTag{}, file, line) {}
};

// One printf argument, classified by its C++ type.
struct PArg {
    char kind;  // 'i' signed, 'u' unsigned, 'f' floating, 's' string, 'p' pointer
    int64_t i = 0;
    uint64_t u = 0;
    double f = 0;
    const void* p = nullptr;
};

template <typename T>
PArg ToPArg(const T& v) {
    using ArgT = std::decay_t<T>;
    PArg a{'?'};
    if constexpr (std::is_same_v<ArgT, bool>) {
        a.kind = 'u', a.u = v ? 1 : 0;
    } else if constexpr (std::is_integral_v<ArgT> && std::is_signed_v<ArgT>) {
        a.kind = 'i', a.i = static_cast<int64_t>(v), a.u = static_cast<uint64_t>(static_cast<std::make_unsigned_t<ArgT>>(v));
    } else if constexpr (std::is_integral_v<ArgT>) {
        a.kind = 'u', a.u = static_cast<uint64_t>(v), a.i = static_cast<int64_t>(v);
    } else if constexpr (std::is_same_v<ArgT, float> || std::is_same_v<ArgT, half> || std::is_same_v<ArgT, bfloat16_t>) {
        a.kind = 'f', a.f = static_cast<double>(static_cast<float>(v));
    } else if constexpr (std::is_same_v<ArgT, const char*> || std::is_same_v<ArgT, char*>) {
        a.kind = 's', a.p = v;
    } else if constexpr (std::is_pointer_v<ArgT>) {
        a.kind = 'p', a.p = static_cast<const void*>(v);
    } else {
        static_assert(std::is_pointer_v<ArgT>, "AscendC::printf: an argument type printf.md does not list");
    }
    return a;
}

// fmt for an error line: a newline shown as \n.
inline std::string Shown(const char* fmt) {
    std::string s;
    for (const char* p = fmt; *p; ++p) s += *p == '\n' ? std::string("\\n") : std::string(1, *p);
    return s;
}

// Formats fmt with args as the documented conversions say; Fail()s on anything else.
inline std::string FormatDebug(const char* api, const char* fmt, const std::vector<PArg>& args) {
    std::string out;
    size_t next = 0;
    char buf[64];
    for (const char* p = fmt; *p; ++p) {
        if (*p != '%') {
            out += *p;
            continue;
        }
        const char* start = p++;
        int longs = 0;
        while (*p == 'l' && longs < 2) ++longs, ++p;
        const char conv = *p;
        const bool intConv = conv == 'd' || conv == 'i' || conv == 'x' || conv == 'u';
        if (!(intConv || ((conv == 'f' || conv == 'F' || conv == 's' || conv == 'p') && longs == 0)))
            Fail(api, Str("\"", std::string(start, conv ? p + 1 : p), "\" in \"", Shown(fmt),
                          "\" is not a documented conversion (%d %i %x %u with l/ll, %f %F %s %p)"));
        if (next >= args.size()) Fail(api, Str("\"", Shown(fmt), "\" has more conversions than the ", args.size(), " argument(s)"));
        const PArg& a = args[next++];
        const bool ok = (conv == 'd' || conv == 'i') ? a.kind == 'i' || a.kind == 'u'
                        : (conv == 'u' || conv == 'x') ? a.kind == 'i' || a.kind == 'u'
                        : (conv == 'f' || conv == 'F') ? a.kind == 'f'
                                                       : a.kind == conv;
        if (!ok) Fail(api, Str("argument ", next, " of \"", Shown(fmt), "\" does not suit %", conv));
        if (conv == 'd' || conv == 'i') std::snprintf(buf, sizeof buf, "%" PRId64, a.i);
        if (conv == 'u') std::snprintf(buf, sizeof buf, "%" PRIu64, a.u);
        if (conv == 'x') std::snprintf(buf, sizeof buf, "%" PRIx64, a.u);
        if (conv == 'f' || conv == 'F') std::snprintf(buf, sizeof buf, conv == 'f' ? "%f" : "%F", a.f);
        if (conv == 'p') std::snprintf(buf, sizeof buf, "%p", a.p);
        out += conv == 's' ? std::string(static_cast<const char*>(a.p)) : std::string(buf);
    }
    if (next != args.size()) Fail(api, Str("\"", Shown(fmt), "\" has ", next, " conversion(s) for ", args.size(), " argument(s)"));
    return out;
}

// Adds text to core c's printf output, each line starting "[AIV Block <GetBlockIdx()>/<GetBlockNum()>] "
// as printf.md's NPU sample prints it ("[AIV Block 0/8] hello world device"; AIC for a cube core).
inline void AppendPrinted(CoreCtx& c, const std::string& text) {
    for (char ch : text) {
        if (c.printed.empty() || c.printed.back() == '\n')
            c.printed += Str("[", c.kind == AscendC::AIC ? "AIC" : "AIV", " Block ", c.blockIdx, "/", c.blockNum, "] ");
        c.printed += ch;
    }
}

// Prints every core's printf text, core by core (launch.h calls it after the join), and forgets it.
template <typename Cores>
inline void FlushPrinted(Cores& cores) {
    std::lock_guard<std::mutex> g(OutMutex());
    for (auto& c : cores) {
        std::fputs(c->printed.c_str(), stdout);
        c->printed.clear();
    }
    std::fflush(stdout);
}

[[noreturn]] inline void AssertFailed(const Site& s, const char* expr, const std::string& msg) {
    CoreCtx& c = Cur("ascendc_assert");
    {
        std::lock_guard<std::mutex> g(OutMutex());
        std::fputs(c.printed.c_str(), stdout);
        std::fprintf(stdout, "[ASSERT] %s:%u: Assertion `%s' %s\n", s.file, s.line, expr, msg.c_str());
        std::fflush(stdout);
    }
    c.site = s;
    Fail("ascendc_assert", Str("Assertion `", expr, "' failed; the kernel stopped as with Trap()"));
}

template <typename... Args>
inline void AssertCheck(bool ok, const char* expr, Site s, const char* fmt = "", const Args&... args) {
    ::fadsl_rt::Api call("ascendc_assert", s, PIPE_S);
    const std::string msg = FormatDebug("ascendc_assert", fmt, {ToPArg(args)...});
    if (!ok) AssertFailed(s, expr, msg);
}

}  // namespace fadsl_rt

namespace AscendC {
#if defined(ASCENDC_DUMP) && ASCENDC_DUMP == 0
template <class... Args>
__aicore__ inline void printf(::fadsl_rt::FmtSite, Args&&...) {}
#else
template <class... Args>
__aicore__ inline void printf(::fadsl_rt::FmtSite fmt, Args&&... args) {
    ::fadsl_rt::Api call("printf", fmt.site, PIPE_S);
    ::fadsl_rt::CoreCtx& c = ::fadsl_rt::Cur("printf");
    ::fadsl_rt::AppendPrinted(c, ::fadsl_rt::FormatDebug("printf", fmt.fmt, {::fadsl_rt::ToPArg(args)...}));
}
#endif
}  // namespace AscendC

#if defined(ASCENDC_DUMP) && ASCENDC_DUMP == 0
#define ascendc_assert(expr, ...) ((void)0)
#else
#define ascendc_assert(expr, ...)                                                                 \
    ::fadsl_rt::AssertCheck(static_cast<bool>(expr), #expr,                                      \
                            ::fadsl_rt::Site(::fadsl_rt::SiteTag{}, __FILE__, __LINE__) __VA_OPT__(, ) __VA_ARGS__)
#endif
