// fadsl CPU runtime: global memory (GmAlloc registry) and the cross-core GM visibility checker.
//
// Model (documented in README "Race and hazard detection"): every core carries a vector clock.
// CrossCoreSetFlag advances the setter's own slot and attaches a snapshot of its clock to the
// flag increment; the CrossCoreWaitFlag that consumes that increment merges the snapshot into the
// waiter's clock. Each GM byte written during a launch remembers (writer core, writer epoch),
// where the epoch is the setter slot value the write will be published under. A core may read
// (or overwrite) bytes last written by another core W only if its clock has W's slot >= epoch,
// i.e. it waited on a flag that W set after the write (directly or transitively).
// Reads are remembered too: a read by core R of bytes another core wrote records (R, R's epoch),
// and a later write of those bytes by any core C other than R requires C's clock to cover that
// epoch, i.e. C waited on a flag R set after its read (R released the bytes). This is what
// catches a GM workspace ring slot reused before its consumer released it; a slot overwritten
// before the consumer even read it shows at that read (the consumer waited for the earlier
// write of the same writer, `prev`).
#pragma once
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "core.h"

namespace fadsl_rt {

struct GmRegion {
    uintptr_t base;
    size_t size;
    int id;
};
struct GmReader {
    int core;
    uint32_t epoch;  // the reader's clock entry + 1 at the read: its next flag publishes it
};
struct GmSeg {
    uintptr_t end;
    int core;
    uint32_t epoch;
    const char* api;
    uint32_t prev = 0;  // epoch of the first of the same writer's earlier writes of these bytes (0: none)
    std::vector<GmReader> readers{};  // other cores that read these bytes since the write
    bool atomic = false;              // written by SetAtomicAdd copies (atomic.h)
    std::vector<GmReader> adders{};   // atomic: the earlier adders (core, epoch) besides `core`
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

// Requires Gm().mu. Fails unless the current core has seen the write of [a, b) in `s` that core
// `wc` published under `epoch`.
inline void CheckWriterSeenLocked(const char* api, const GmSeg& s, int wc, uint32_t epoch, uintptr_t a, uintptr_t b,
                                  bool isWrite) {
    CoreCtx& c = *t_core;
    if (wc == c.gid || c.vc[wc] >= epoch) return;
    const CoreCtx& w = *Launch()->cores[wc];
    const bool slot = !isWrite && !s.atomic && s.prev != 0 && c.vc[wc] >= s.prev;
    std::string what;
    if (slot)
        what = "a workspace slot overwritten before its consumer released it: ";
    else if (!isWrite && w.kind == AscendC::AIC && c.kind == AscendC::AIV)
        what = "read of a cube result before waiting: ";
    else if (!isWrite)
        what = Str("read of ", Role(w.kind), "-core output before waiting: ");
    else
        what = "overwrite of another core's output before waiting: ";
    what += Str(DescribeGm(a, b - a), " were written by ", s.api, s.atomic ? " (atomic add)" : "", " on ", w.name,
                ", and this core has not waited (CrossCoreWaitFlag, or a SyncAll) on a flag that ", w.name,
                " set after that write");
    if (slot)
        what += Str(" (it waited for the earlier write of these bytes, which ", w.name,
                    " overwrote before this core read it)");
    Fail(api, what);
}
// Requires Gm().mu. Checks that the current core may see the last writers of [lo, hi) (for an
// atomic segment: every core that added into it). An atomic add (`atomic`) need not see earlier
// atomic adds of the same bytes: adds commute, which is what SetAtomicAdd is for.
inline void CheckVisibleLocked(const char* api, uintptr_t lo, uintptr_t hi, bool isWrite, bool atomic = false) {
    auto& segs = Gm().segs;
    auto it = segs.upper_bound(lo);
    if (it != segs.begin()) --it;
    for (; it != segs.end() && it->first < hi; ++it) {
        const GmSeg& s = it->second;
        if (s.end <= lo || (atomic && s.atomic)) continue;
        const uintptr_t a = std::max(lo, it->first), b = std::min(hi, s.end);
        CheckWriterSeenLocked(api, s, s.core, s.epoch, a, b, isWrite);
        for (const GmReader& w : s.adders) CheckWriterSeenLocked(api, s, w.core, w.epoch, a, b, isWrite);
    }
}
// Requires Gm().mu. Splits the segment that strictly contains x at x.
inline void SplitAtLocked(uintptr_t x) {
    auto& segs = Gm().segs;
    auto it = segs.upper_bound(x);
    if (it == segs.begin()) return;
    --it;
    if (it->first < x && it->second.end > x) {
        GmSeg right = it->second;
        it->second.end = x;
        segs.emplace(x, right);
    }
}
// Requires Gm().mu. A write by the current core of [lo, hi): every other core that read those
// bytes since they were written must have released them (this core waited on a flag it set
// after the read).
inline void CheckReleasedLocked(const char* api, uintptr_t lo, uintptr_t hi) {
    CoreCtx& c = *t_core;
    auto& segs = Gm().segs;
    auto it = segs.upper_bound(lo);
    if (it != segs.begin()) --it;
    for (; it != segs.end() && it->first < hi; ++it) {
        if (it->second.end <= lo) continue;
        for (const GmReader& r : it->second.readers) {
            if (r.core == c.gid || c.vc[r.core] >= r.epoch) continue;
            LaunchState* L = Launch();
            const uintptr_t a = std::max(lo, it->first), b = std::min(hi, it->second.end);
            Fail(api, Str("a workspace slot overwritten before its consumer released it: ", DescribeGm(a, b - a),
                          " were read by ", L->cores[r.core]->name, " (after ", it->second.api, " on ",
                          L->cores[it->second.core]->name, " wrote them), and this core has not waited "
                          "(CrossCoreWaitFlag) on a flag that ", L->cores[r.core]->name, " set after that read"));
        }
    }
}
// Requires Gm().mu. Remembers the current core as a reader of [lo, hi) where another core wrote.
inline void RecordReadLocked(uintptr_t lo, uintptr_t hi) {
    CoreCtx& c = *t_core;
    SplitAtLocked(lo);
    SplitAtLocked(hi);
    auto& segs = Gm().segs;
    const uint32_t epoch = c.vc[c.gid] + 1;
    for (auto it = segs.lower_bound(lo); it != segs.end() && it->first < hi; ++it) {
        if (it->second.core == c.gid && it->second.adders.empty()) continue;
        auto& rs = it->second.readers;
        auto r = std::find_if(rs.begin(), rs.end(), [&](const GmReader& x) { return x.core == c.gid; });
        if (r == rs.end())
            rs.push_back(GmReader{c.gid, epoch});
        else
            r->epoch = std::max(r->epoch, epoch);
    }
}
// Requires Gm().mu. Records the current core as last writer of [lo, hi).
inline void AssignWriterLocked(uintptr_t lo, uintptr_t hi, const char* api) {
    CoreCtx& c = *t_core;
    auto& segs = Gm().segs;
    GmSeg mine{hi, c.gid, c.vc[c.gid] + 1, api};
    {
        auto o = segs.upper_bound(lo);
        if (o != segs.begin()) --o;
        for (; o != segs.end() && o->first < hi; ++o) {
            if (o->second.end <= lo || o->second.core != c.gid || o->second.epoch >= mine.epoch) continue;
            const uint32_t first = o->second.prev != 0 ? o->second.prev : o->second.epoch;
            mine.prev = mine.prev == 0 ? first : std::min(mine.prev, first);
        }
    }
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
            p->second.api == mine.api && p->second.prev == mine.prev && p->second.readers.empty() &&
            !p->second.atomic) {
            p->second.end = hi;
            segs.erase(ins);
        }
    }
}

// Requires Gm().mu. Records an atomic add of the current core into [lo, hi): bytes that earlier
// atomic adds wrote keep those adders (and their readers); other bytes start a new atomic segment.
inline void AddWriterLocked(uintptr_t lo, uintptr_t hi, const char* api) {
    CoreCtx& c = *t_core;
    SplitAtLocked(lo);
    SplitAtLocked(hi);
    auto& segs = Gm().segs;
    const uint32_t epoch = c.vc[c.gid] + 1;
    const GmSeg fresh{hi, c.gid, epoch, api, 0, {}, true, {}};
    uintptr_t cur = lo;
    auto it = segs.lower_bound(lo);
    while (cur < hi) {
        if (it == segs.end() || it->first > cur) {  // a gap no write of this launch covers
            const uintptr_t end = (it == segs.end()) ? hi : std::min(hi, it->first);
            GmSeg g = fresh;
            g.end = end;
            it = std::next(segs.emplace(cur, g).first);
            cur = end;
            continue;
        }
        GmSeg& s = it->second;
        if (!s.atomic) {
            const uintptr_t end = s.end;
            s = fresh;
            s.end = end;
        } else if (s.core != c.gid || s.epoch != epoch) {
            auto keep = [&](int core, uint32_t e) {
                if (core == c.gid) return;
                auto r = std::find_if(s.adders.begin(), s.adders.end(), [&](const GmReader& x) { return x.core == core; });
                if (r == s.adders.end())
                    s.adders.push_back(GmReader{core, e});
                else
                    r->epoch = std::max(r->epoch, e);
            };
            keep(s.core, s.epoch);
            s.core = c.gid;
            s.epoch = epoch;
            s.api = api;
        }
        cur = s.end;
        ++it;
    }
}
// Record hook of a GM access (site.h): GmAlloc id, byte offset of the first access, end of the
// furthest access into that buffer, GM bytes.
inline void NoteGmLocked(uintptr_t lo, size_t n, bool isWrite) {
    Row* r = t_core ? OpenRow(*t_core) : nullptr;
    if (!r) return;
    if (isWrite) r->dst = kRecGm;
    else r->src = kRecGm;
    r->gmBytes += static_cast<int64_t>(n);
    const GmRegion* g = FindRegionLocked(lo, 0);
    if (!g) return;
    if (r->gm < 0) {
        r->gm = g->id;
        r->gmoff = static_cast<int64_t>(lo - g->base);
    }
    // The span of a strided copy (bursts at a stride): the timer's L2 reads it from gmoff..gmend.
    if (g->id == r->gm) r->gmend = std::max(r->gmend, static_cast<int64_t>(lo + n - g->base));
}
// An atomic add by the current core into [p, p+n): like a write, except that earlier atomic adds
// of other cores need not be visible; `body` runs under the GM lock, so each add is atomic.
inline void GmAtomicAccess(const char* api, void* p, size_t n, const std::function<void()>& body) {
    if (n == 0) return;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> g(Gm().mu);
    CheckGmRangeLocked(api, lo, n);
    CheckVisibleLocked(api, lo, lo + n, true, true);
    CheckReleasedLocked(api, lo, lo + n);
    AddWriterLocked(lo, lo + n, api);
    NoteGmLocked(lo, n, true);
    body();
}
// A GM access by the current core: range check, visibility check, then `body` runs under the GM
// lock so that concurrent copies are not torn.
inline void GmAccess(const char* api, const void* p, size_t n, bool isWrite, const std::function<void()>& body) {
    if (n == 0) return;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> g(Gm().mu);
    CheckGmRangeLocked(api, lo, n);
    CheckVisibleLocked(api, lo, lo + n, isWrite);
    if (isWrite) {
        CheckReleasedLocked(api, lo, lo + n);
        AssignWriterLocked(lo, lo + n, api);
    } else {
        RecordReadLocked(lo, lo + n);
    }
    NoteGmLocked(lo, n, isWrite);
    body();
}
inline void GmResetShadow() {
    std::lock_guard<std::mutex> g(Gm().mu);
    Gm().segs.clear();
}

}  // namespace fadsl_rt
