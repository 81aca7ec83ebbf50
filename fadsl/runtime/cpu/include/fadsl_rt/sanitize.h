// fadsl CPU runtime: the sanitizer (FADSL_SANITIZE=1; README "Sanitizer").
//
// The intra-core hazard tracker of memory.h checks read-after-write across pipes always. With
// FADSL_SANITIZE=1 it also checks, per core and per local buffer byte range:
// * write-after-read across pipes: a write by pipe P of bytes that pipe Q (Q != P) read, unless P
//   has waited for Q since that read (SetFlag/WaitFlag<Q_P> after it, PipeBarrier<PIPE_ALL>, or
//   the TQue events that order it: FreeTensor -> AllocTensor, EnQue -> DeQue);
// * write-after-write across pipes, with the same rule against the last writer;
// * reads of local bytes nothing wrote since launch (memcheck; the runtime fills local memory with
//   0xFF, so a written-bytes map tells the two apart);
// and every report names both calls' kernel lines. Races are reported once per (kind, pair of
// lines) and the run goes on; at the end of the launch a sanitizer that reported anything fails
// the run. Same-pipe ordering (V after V needing PipeBarrier<PIPE_V>) is not checked (README).
#pragma once
#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core.h"

namespace fadsl_rt {

inline bool SanitizeRequested() {
    const char* e = std::getenv("FADSL_SANITIZE");
    return e && *e && std::string(e) != "0";
}
// The API name a race record keeps must outlive the call that made it; some are built at run
// time (Cast's "Cast<float, half>(CAST_NONE)", a std::string gone when the call returns, whose
// freed bytes later printed as another call's file:line). Interned for the process's life (a
// handful of names); each thread looks them up without the lock first.
inline const char* InternApi(const char* api) {
    thread_local std::unordered_map<std::string_view, const char*> mine;  // keys: the interned bytes
    const std::string_view key = api ? api : "?";
    auto it = mine.find(key);
    if (it != mine.end()) return it->second;
    static std::mutex m;
    static auto* all = new std::unordered_set<std::string>();  // never freed: outlives every thread
    std::lock_guard<std::mutex> g(m);
    const char* out = all->insert(std::string(key)).first->c_str();
    mine.emplace(std::string_view(out, key.size()), out);
    return out;
}
inline std::string SiteText(const Site& s) {
    if (!s.file) return "the runtime";
    const char* b = s.file;
    for (const char* p = s.file; *p; ++p)
        if (*p == '/' || *p == '\\') b = p + 1;
    return Str(b, ":", s.line);
}
// Sanitizer reports of the running launch (under OutMutex): distinct keys and their count.
struct SanitizeLog {
    std::set<std::string> seen;
    size_t reports = 0;
};
inline SanitizeLog& Sanitized() {
    static SanitizeLog log;
    return log;
}
// One report line: "fadsl-cpu-runtime: sanitize: <kind> on <core> at <file:line>: <what>".
// `key` (kind + both lines) makes it once per pair, whichever core finds it first.
inline void Report(const char* kind, const std::string& key, const std::string& what) {
    std::lock_guard<std::mutex> g(OutMutex());
    SanitizeLog& log = Sanitized();
    if (!log.seen.insert(Str(kind, "|", key)).second) return;
    ++log.reports;
    std::fflush(stdout);
    std::fprintf(stderr, "fadsl-cpu-runtime: sanitize: %s on %s at %s: %s\n", kind, CoreName().c_str(),
                 SiteText(t_core ? t_core->site : Site()).c_str(), what.c_str());
    std::fflush(stderr);
}

inline const char* ShortPipe(pipe_t p) {
    switch (p) {
        case PIPE_S: return "S";
        case PIPE_V: return "V";
        case PIPE_M: return "M";
        case PIPE_MTE1: return "MTE1";
        case PIPE_MTE2: return "MTE2";
        case PIPE_MTE3: return "MTE3";
        case PIPE_FIX: return "FIX";
        default: return "?";
    }
}
constexpr pipe_t kPipes[] = {PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX};

// ---- memcheck: which local bytes were ever written (per core, per physical memory) ----------
inline void MarkWritten(CoreCtx& c, const BufInfo& b, uint32_t lo, uint32_t hi) {
    if (!c.sanitize || hi <= lo) return;
    std::vector<uint8_t>& w = c.written[static_cast<int>(b.mem)];
    std::fill(w.begin() + b.addr + lo, w.begin() + b.addr + hi, uint8_t{1});
}
inline void CheckInit(CoreCtx& c, const BufInfo& b, uint32_t lo, uint32_t hi, const char* api) {
    if (!c.sanitize || hi <= lo) return;
    const std::vector<uint8_t>& w = c.written[static_cast<int>(b.mem)];
    uint32_t first = hi;
    for (uint32_t i = lo; i < hi; ++i)
        if (!w[b.addr + i]) {
            first = i;
            break;
        }
    if (first == hi) return;
    uint32_t last = first;
    while (last < hi && !w[b.addr + last]) ++last;
    Report("uninitialised read", Str(SiteText(c.site), "|", b.label),
           Str(api, " reads ", MemName(b.mem), " bytes [", first, ", ", last, ") of ", b.label,
               " that nothing wrote since the launch (read range [", lo, ", ", hi,
               "); the hardware would read whatever an earlier kernel left there)"));
}

// ---- write-after-read / write-after-write across pipes --------------------------------------
inline std::string HazardText(const char* api, pipe_t pipe, const char* verb, const BufInfo& b, uint32_t lo,
                              uint32_t hi, const char* otherApi, pipe_t other, const Site& otherSite,
                              const char* otherVerb) {
    return Str(api, " (", PipeName(pipe), ") ", verb, " ", MemName(b.mem), " bytes [", lo, ", ", hi, ") of ", b.label,
               " that ", otherApi, " (", PipeName(other), ") ", otherVerb, " at ", SiteText(otherSite),
               ", with no synchronisation in between: expected SetFlag/WaitFlag<HardEvent::", ShortPipe(other), "_",
               ShortPipe(pipe), "> after the ", otherVerb == std::string("read") ? "read" : "first write",
               ", or PipeBarrier<PIPE_ALL>");
}
// A write by `pipe` of [lo, hi) of b: checks it against earlier reads and writes by other pipes.
inline void CheckWriteHazards(CoreCtx& c, const BufInfo& b, uint32_t lo, uint32_t hi, pipe_t pipe, const char* api) {
    for (const PendingRead& r : b.reads) {
        if (r.hi <= lo || r.lo >= hi || r.pipe == pipe || c.syncTo[r.pipe][pipe] >= r.stamp) continue;
        Report("write-after-read", Str(SiteText(c.site), "|", SiteText(r.site)),
               HazardText(api, pipe, "writes", b, std::max(lo, r.lo), std::min(hi, r.hi), r.api, r.pipe, r.site, "read"));
    }
    for (const PendingWrite& w : b.pending) {
        if (w.hi <= lo || w.lo >= hi || w.pipe == pipe || c.syncTo[w.pipe][pipe] >= w.stamp) continue;
        Report("write-after-write", Str(SiteText(c.site), "|", SiteText(w.site)),
               HazardText(api, pipe, "writes", b, std::max(lo, w.lo), std::min(hi, w.hi), w.api, w.pipe, w.site,
                          "wrote"));
    }
}
// Remembers a read by `pipe` (the write-after-read check needs it); drops reads a write covers.
inline void NoteRead(CoreCtx& c, BufInfo& b, uint32_t lo, uint32_t hi, pipe_t pipe, const char* api) {
    const uint64_t st = Tick(c);
    api = InternApi(api);
    for (PendingRead& r : b.reads)
        if (r.lo == lo && r.hi == hi && r.pipe == pipe) {
            r.stamp = st;
            r.api = api;
            r.site = c.site;
            return;
        }
    if (b.reads.size() >= 64) {  // forget reads every other pipe is already ordered after
        auto known = [&](const PendingRead& r) {
            for (pipe_t q : kPipes)
                if (q != r.pipe && c.syncTo[r.pipe][q] < r.stamp) return false;
            return true;
        };
        b.reads.erase(std::remove_if(b.reads.begin(), b.reads.end(), known), b.reads.end());
        if (b.reads.size() >= 512) b.reads.erase(b.reads.begin());  // bounded: may miss, never invents
    }
    b.reads.push_back(PendingRead{lo, hi, pipe, st, api, c.site});
}
inline void DropCoveredReads(BufInfo& b, uint32_t lo, uint32_t hi) {
    auto covered = [&](const PendingRead& r) { return r.lo >= lo && r.hi <= hi; };
    b.reads.erase(std::remove_if(b.reads.begin(), b.reads.end(), covered), b.reads.end());
}

}  // namespace fadsl_rt
