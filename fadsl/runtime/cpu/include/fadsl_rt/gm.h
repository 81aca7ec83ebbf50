// fadsl CPU runtime: global memory (GmAlloc registry) and the cross-core GM visibility checker.
//
// Model (documented in README "Race and hazard detection"): every core carries a vector clock.
// CrossCoreSetFlag advances the setter's own slot and attaches a snapshot of its clock to the
// flag increment; the CrossCoreWaitFlag that consumes that increment merges the snapshot into the
// waiter's clock. Each GM byte written during a launch remembers (writer core, writer epoch),
// where the epoch is the setter slot value the write will be published under. A core may read
// (or overwrite) bytes last written by another core W only if its clock has W's slot >= epoch,
// i.e. it waited on a flag that W set after the write (directly or transitively).
#pragma once
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <new>

#include "core.h"

namespace fadsl_rt {

struct GmRegion {
    uintptr_t base;
    size_t size;
    int id;
};
struct GmSeg {
    uintptr_t end;
    int core;
    uint32_t epoch;
    const char* api;
};
struct GmState {
    std::mutex mu;
    std::map<uintptr_t, GmRegion> regions;  // key: base
    int nextId = 1;
    std::map<uintptr_t, GmSeg> segs;  // last writer of each byte range during the current launch
};
inline GmState& Gm() {
    static GmState s;
    return s;
}

// Requires Gm().mu. Region that contains [lo, lo+n), or nullptr.
inline const GmRegion* FindRegionLocked(uintptr_t lo, size_t n) {
    auto& rs = Gm().regions;
    auto it = rs.upper_bound(lo);
    if (it == rs.begin()) return nullptr;
    --it;
    const GmRegion& r = it->second;
    if (lo >= r.base && lo + n <= r.base + r.size && lo <= r.base + r.size) return &r;
    return nullptr;
}
inline std::string DescribeGm(uintptr_t lo, size_t n) {
    const GmRegion* r = FindRegionLocked(lo, 0);
    if (!r) return Str("GM bytes [", reinterpret_cast<void*>(lo), ", +", n, ")");
    return Str("GM bytes [+", lo - r->base, ", +", lo - r->base + n, ") of GmAlloc #", r->id, " (", r->size, " B)");
}
inline void CheckGmRangeLocked(const char* api, uintptr_t lo, size_t n) {
    if (!FindRegionLocked(lo, n)) {
        const GmRegion* r = FindRegionLocked(lo, 0);
        if (r)
            Fail(api, Str("GM access [+", lo - r->base, ", +", lo - r->base + n, ") runs past the end of GmAlloc #",
                          r->id, " (", r->size, " B)"));
        Fail(api, Str("GM address ", reinterpret_cast<void*>(lo), " (", n,
                      " B) is not inside any buffer from AscendC::GmAlloc"));
    }
}

inline void* GmAllocImpl(size_t size) {
    const size_t n = size == 0 ? 1 : size;
    void* p = ::operator new(n, std::align_val_t(4096));
    std::memset(p, 0xFF, n);  // poison: reads of never-written GM show up as NaN / -1
    std::lock_guard<std::mutex> g(Gm().mu);
    Gm().regions[reinterpret_cast<uintptr_t>(p)] = GmRegion{reinterpret_cast<uintptr_t>(p), n, Gm().nextId++};
    return p;
}
inline void GmFreeImpl(void* p) {
    {
        std::lock_guard<std::mutex> g(Gm().mu);
        auto it = Gm().regions.find(reinterpret_cast<uintptr_t>(p));
        if (it == Gm().regions.end())
            FailRaw(Str("GmFree on host: ", p, " was not returned by AscendC::GmAlloc (or was already freed)"));
        const uintptr_t lo = it->second.base, hi = lo + it->second.size;
        for (auto s = Gm().segs.lower_bound(lo); s != Gm().segs.end() && s->first < hi;) s = Gm().segs.erase(s);
        Gm().regions.erase(it);
    }
    ::operator delete(p, std::align_val_t(4096));
}

inline const char* Role(int kind) { return kind == AscendC::AIC ? "cube" : "vector"; }

// Requires Gm().mu. Checks that the current core may see the last writers of [lo, hi).
inline void CheckVisibleLocked(const char* api, uintptr_t lo, uintptr_t hi, bool isWrite) {
    CoreCtx& c = *t_core;
    auto& segs = Gm().segs;
    auto it = segs.upper_bound(lo);
    if (it != segs.begin()) --it;
    for (; it != segs.end() && it->first < hi; ++it) {
        const GmSeg& s = it->second;
        if (s.end <= lo || s.core == c.gid) continue;
        if (c.vc[s.core] >= s.epoch) continue;
        LaunchState* L = Launch();
        const CoreCtx& w = *L->cores[s.core];
        const uintptr_t a = std::max(lo, it->first), b = std::min(hi, s.end);
        std::string what;
        if (!isWrite && w.kind == AscendC::AIC && c.kind == AscendC::AIV)
            what = "read of a cube result before waiting: ";
        else if (!isWrite)
            what = Str("read of ", Role(w.kind), "-core output before waiting: ");
        else
            what = "overwrite of another core's output before waiting: ";
        what += Str(DescribeGm(a, b - a), " were written by ", s.api, " on ", w.name,
                    ", and this core has not waited (CrossCoreWaitFlag) on a flag that ", w.name,
                    " set after that write");
        Fail(api, what);
    }
}
// Requires Gm().mu. Records the current core as last writer of [lo, hi).
inline void AssignWriterLocked(uintptr_t lo, uintptr_t hi, const char* api) {
    CoreCtx& c = *t_core;
    auto& segs = Gm().segs;
    const GmSeg mine{hi, c.gid, c.vc[c.gid] + 1, api};
    auto it = segs.lower_bound(lo);
    if (it != segs.begin()) {
        auto p = std::prev(it);
        if (p->second.end > lo) {
            GmSeg tail = p->second;
            p->second.end = lo;
            if (tail.end > hi) segs[hi] = tail;
        }
    }
    it = segs.lower_bound(lo);
    while (it != segs.end() && it->first < hi) {
        if (it->second.end > hi) {
            GmSeg t = it->second;
            segs.erase(it);
            segs[hi] = t;
            break;
        }
        it = segs.erase(it);
    }
    auto ins = segs.emplace(lo, mine).first;
    if (ins != segs.begin()) {  // merge with an identical left neighbour
        auto p = std::prev(ins);
        if (p->second.end == lo && p->second.core == mine.core && p->second.epoch == mine.epoch &&
            p->second.api == mine.api) {
            p->second.end = hi;
            segs.erase(ins);
        }
    }
}

// A GM access by the current core: range check, visibility check, then `body` runs under the GM
// lock so that concurrent copies are not torn.
inline void GmAccess(const char* api, const void* p, size_t n, bool isWrite, const std::function<void()>& body) {
    if (n == 0) return;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> g(Gm().mu);
    CheckGmRangeLocked(api, lo, n);
    CheckVisibleLocked(api, lo, lo + n, isWrite);
    if (isWrite) AssignWriterLocked(lo, lo + n, api);
    body();
}
inline void GmResetShadow() {
    std::lock_guard<std::mutex> g(Gm().mu);
    Gm().segs.clear();
}

}  // namespace fadsl_rt
