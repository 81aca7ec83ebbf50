// fadsl CPU runtime: intra-core sync (PipeBarrier, SetFlag/WaitFlag) and inter-core sync
// (CrossCoreSetFlag/CrossCoreWaitFlag, SetSyncBaseAddr) from include/basic_api/
// kernel_operator_block_sync_intf.h, semantics per the CrossCoreSetFlag(ISASI) doc and its
// "关键特性说明" page (counter per flagId, modes 0/1/2 on A2/A3).
#pragma once
#include <thread>
#ifdef __linux__
#include <sched.h>
#endif

#include "flags.h"

namespace fadsl_rt {
constexpr int kFlagIds = 16;
constexpr size_t kMaxFlagCount = 15;

inline void MergeVc(std::vector<uint32_t>& into, const std::vector<uint32_t>& from) {
    for (size_t i = 0; i < into.size(); ++i) into[i] = std::max(into[i], from[i]);
}
// Requires L.mu. Adds one increment (carrying `snap`) to core gid's counter for flagId.
inline void BumpCounterLocked(LaunchState& L, const char* api, int gid, int flagId, const Incr& snap) {
    auto& q = L.flagQueue[gid * kFlagIds + flagId];
    if (q.size() >= kMaxFlagCount)
        Fail(api, Str("flagId ", flagId, " counter of ", L.cores[gid]->name, " would exceed ", kMaxFlagCount,
                      " outstanding CrossCoreSetFlag (hardware raises an error)"));
    q.push_back(snap);
    L.cores[gid]->wake.notify_one();  // only the core whose counter grew wakes up
}
// Requires L.mu. Registers a Set by `member` of a group; when every member has an outstanding Set
// for this flagId, one Set of each is consumed and every target gets one increment.
inline void ArriveLocked(LaunchState& L, const char* api, uint64_t key, size_t member, size_t members,
                         const std::vector<int>& targets, int flagId, const Incr& snap) {
    auto& slots = L.arrivals[key];
    if (slots.empty()) slots.resize(members);
    slots[member].push_back(snap);
    if (slots[member].size() > kMaxFlagCount)
        Fail(api, Str("more than ", kMaxFlagCount, " CrossCoreSetFlag on flagId ", flagId,
                      " are waiting for the other cores of the group to set it too"));
    for (auto& s : slots)
        if (s.empty()) return;
    Incr merged{std::vector<uint32_t>(L.cores.size(), 0), std::string(), snap.site};
    for (auto& s : slots) {
        MergeVc(merged.vc, s.front().vc);
        if (!s.front().from.empty()) merged.from += (merged.from.empty() ? "" : ",") + s.front().from;
        s.pop_front();
    }
    for (int t : targets) BumpCounterLocked(L, api, t, flagId, merged);
}
// Requires L.mu. When every running core is blocked, starts the deadlock clock and wakes the
// waiters so that they wait with a timeout (otherwise they sleep until their counter grows).
inline void NoteAllBlockedLocked(LaunchState& L) {
    if (L.live > 0 && L.blocked == L.live) {
        L.allBlockedSince = std::chrono::steady_clock::now();
        for (auto& c : L.cores) c->wake.notify_all();
    }
}
// The number of CPUs this process may run on (at least 1).
inline int CpuCount() {
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? static_cast<int>(n) : 1;
}
// Requires L.mu (held by lk). Takes a run slot. If none is released for 50 ms the holders are
// computing without ever waiting on a flag (e.g. polling GM), so the core runs without a slot
// rather than risk waiting on them forever: the slots bound runnable threads, never correctness.
inline void AcquireSlotLocked(LaunchState& L, CoreCtx& c, std::unique_lock<std::mutex>& lk) {
    while (L.freeSlots == 0) {
        const uint64_t seen = L.slotReleases;
        if (L.slotFreed.wait_for(lk, std::chrono::milliseconds(50)) == std::cv_status::timeout &&
            L.slotReleases == seen && L.freeSlots == 0)
            return;
    }
    --L.freeSlots;
    c.hasSlot = true;
}
inline void ReleaseSlotLocked(LaunchState& L, CoreCtx& c) {
    if (!c.hasSlot) return;
    c.hasSlot = false;
    ++L.freeSlots;
    ++L.slotReleases;
    L.slotFreed.notify_one();
}
[[noreturn]] inline void ReportDeadlockLocked(LaunchState& L) {
    std::string s = Str("deadlock: all ", L.live, " running cores have been blocked for ", L.deadlockSeconds,
                        " s (FADSL_DEADLOCK_SECONDS):");
    for (auto& c : L.cores) {
        if (!c->waitingOn.empty()) s += Str(" [", c->name, " waits in ", c->waitingOn, "]");
    }
    std::string done;
    for (auto& c : L.cores)
        if (c->finished) done += (done.empty() ? "" : ", ") + c->name;
    if (!done.empty()) s += " finished cores: " + done;
    FailRaw(s);
}
// Flag IDs that asc-devkit's SyncAllImpl for A2/A3 (impl/basic_api/dav_c220/
// kernel_operator_sync_impl.h) sets and waits on: SYNC_AIC_FLAG 11, SYNC_AIV_FLAG 12,
// SYNC_AIC_AIV_FLAG 13, SYNC_AIV_ONLY_ALL 14. A kernel's own flag on one of them shares its counter.
constexpr uint16_t kSyncFirstFlag = 11, kSyncLastFlag = 14;
inline std::string ReservedFlagClash(const std::string& kernelCall, const std::string& syncCall) {
    return Str("the kernel both calls ", syncCall, " and uses cross-core flag IDs 11-14 (", kernelCall,
               "); SyncAll sets and waits on flags 11-14 itself, so the counters would mix. Take the "
               "kernel's own flag IDs from 0-10 and 15");
}
// Records a kernel Set/Wait on a flag ID SyncAll reserves; fails if SyncAll was called too.
inline void NoteUserFlag(CoreCtx& c, uint16_t flagId, const std::string& api) {
    if (flagId < kSyncFirstFlag || flagId > kSyncLastFlag) return;
    LaunchState& L = *Launch();
    std::lock_guard<std::mutex> g(L.mu);
    const std::string call = Str(api, " on ", c.name);
    if (!L.syncAllCall.empty()) Fail(api, ReservedFlagClash(call, L.syncAllCall));
    if (L.reservedFlagCall.empty()) L.reservedFlagCall = call;
}

// The record row of a cross-core Set or Wait (`rec`: "CrossCoreSetFlag", "SyncAll", ...).
inline Row* NoteCross(CoreCtx& c, const char* rec, pipe_t pipe, int mode, uint16_t flagId) {
    Row* r = AppendRow(c, rec, pipe);
    if (r) {
        r->mode = static_cast<int8_t>(mode);
        r->flag = static_cast<int8_t>(flagId);
    }
    return r;
}

// The body of CrossCoreSetFlag<modeId, pipe>(flagId); `api` names the call in messages (SyncAll
// is built from these Sets and Waits on the flag IDs it reserves, as asc-devkit's SyncAllImpl is).
inline void CrossSet(CoreCtx& c, uint8_t modeId, uint16_t flagId, const std::string& api,
                     const char* rec = "CrossCoreSetFlag", pipe_t pipe = PIPE_ALL) {
    using AscendC::AIC;
    using AscendC::AIV;
    if (flagId >= kFlagIds) Fail(api, "flagId must be in [0, 15] (hardware keeps only the low 4 bits)");
    LaunchState& L = *Launch();
    std::lock_guard<std::mutex> g(L.mu);
    ++c.vc[c.gid];  // publish everything this core wrote so far
    const Row* row = NoteCross(c, rec, pipe, modeId, flagId);
    const Incr snap{c.vc, row ? Str(RecCore(c), ":", row->seq) : std::string(), c.site};
    const bool mix = L.mode == 0;
    const uint64_t base = (static_cast<uint64_t>(modeId) << 56) | (static_cast<uint64_t>(flagId) << 48);
    if (modeId == 0) {  // all AICs, or all AIVs, of the launch
        const std::vector<int>& grp = c.kind == AIC ? L.allAic : L.allAiv;
        const size_t member = static_cast<size_t>(std::find(grp.begin(), grp.end(), c.gid) - grp.begin());
        ArriveLocked(L, api.c_str(), base | (c.kind == AIC ? 1u : 2u), member, grp.size(), grp, flagId, snap);
    } else if (modeId == 1) {  // the two AIVs of one AI Core
        if (!mix || c.kind != AIV) Fail(api, "mode 1 synchronises the two AIVs of an AI Core; it needs a MIX (1:2) "
                                             "launch and must be called on an AIV");
        const int64_t core = c.blockIdx / 2;  // AIV block index = 2 * AI Core + sub-block
        const std::vector<int> grp{L.aivOfBlock[2 * core], L.aivOfBlock[2 * core + 1]};
        ArriveLocked(L, api.c_str(), base | static_cast<uint64_t>(core), static_cast<size_t>(c.subBlockIdx), 2, grp,
                     flagId, snap);
    } else {  // mode 2: AIC <-> both AIVs of its AI Core
        if (!mix) Fail(api, "mode 2 synchronises an AIC with its AIVs; it needs a MIX launch (KernelMode::MIX_MODE)");
        if (c.kind == AIC) {
            for (int k = 0; k < 2; ++k) BumpCounterLocked(L, api.c_str(), L.aivOfBlock[2 * c.blockIdx + k], flagId, snap);
        } else {
            const int64_t blk = c.blockIdx / 2;
            const std::vector<int> tgt{L.aicOfBlock[blk]};
            ArriveLocked(L, api.c_str(), base | static_cast<uint64_t>(blk), static_cast<size_t>(c.subBlockIdx), 2, tgt,
                         flagId, snap);
        }
    }
    L.allBlockedSince = std::chrono::steady_clock::now();
}

// Requires L.mu. Takes the oldest increment of q: its clock, and its Sets as the row's `from`.
inline void Consume(CoreCtx& c, std::deque<Incr>& q, Row* row) {
    MergeVc(c.vc, q.front().vc);
    if (row) row->from = q.front().from;
    q.pop_front();
}

// The body of CrossCoreWaitFlag(flagId); `waitingOn` is what a deadlock report says it waits in.
inline void CrossWait(CoreCtx& c, uint16_t flagId, const std::string& api, const std::string& waitingOn,
                      const char* rec = "CrossCoreWaitFlag", pipe_t pipe = PIPE_ALL) {
    if (flagId >= kFlagIds) Fail(api, "flagId must be in [0, 15] (hardware keeps only the low 4 bits)");
    const size_t rowIdx = c.rows.size();
    const bool noted = NoteCross(c, rec, pipe, -1, flagId) != nullptr;
    LaunchState& L = *Launch();
    std::unique_lock<std::mutex> lk(L.mu);
    auto& q = L.flagQueue[c.gid * kFlagIds + flagId];
    if (q.empty()) {
        c.waitingOn = waitingOn;
        ++L.blocked;
        ReleaseSlotLocked(L, c);
        NoteAllBlockedLocked(L);
        while (q.empty()) {
            if (L.blocked < L.live) {  // someone is still running: sleep until notified, no polling
                c.wake.wait(lk);
                continue;
            }
            c.wake.wait_for(lk, std::chrono::milliseconds(50));
            if (!q.empty()) break;
            if (L.blocked == L.live) {
                const double waited =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - L.allBlockedSince).count();
                if (waited >= L.deadlockSeconds) ReportDeadlockLocked(L);
            }
        }
        --L.blocked;
        c.waitingOn.clear();
        Consume(c, q, noted ? &c.rows[rowIdx] : nullptr);
        AcquireSlotLocked(L, c, lk);
        return;
    }
    Consume(c, q, noted ? &c.rows[rowIdx] : nullptr);
}
}  // namespace fadsl_rt

namespace AscendC {

template <pipe_t pipe>
__aicore__ inline void PipeBarrier(FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("PipeBarrier", fadslSite_, pipe);
    fadsl_rt::CoreCtx& c = fadsl_rt::Cur("PipeBarrier");
    const uint64_t now = fadsl_rt::Tick(c);
    if (pipe == PIPE_ALL) {  // every pipe waits for every earlier instruction
        for (auto& row : c.syncTo)
            for (auto& v : row) v = now;
        for (auto& b : c.bufs) {
            b.pending.clear();
            b.reads.clear();
        }
    }
    // PipeBarrier<P> for a single pipe only orders P after P; it does not order other pipes.
}

template <HardEvent event>
__aicore__ inline void SetFlag(int32_t eventID, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_(nullptr, fadslSite_);
    static_assert(event != HardEvent::MAX, "fadsl-cpu-runtime: HardEvent::MAX is not an event");
    fadsl_rt::FlagSet(fadsl_rt::Cur("SetFlag"), event, eventID, "a SetFlag of the kernel", nullptr);
}

template <HardEvent event>
__aicore__ inline void WaitFlag(int32_t eventID, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_(nullptr, fadslSite_);
    static_assert(event != HardEvent::MAX, "fadsl-cpu-runtime: HardEvent::MAX is not an event");
    fadsl_rt::FlagWait(fadsl_rt::Cur("WaitFlag"), event, eventID, "a WaitFlag of the kernel", nullptr);
}

// Accepted and ignored. UNVERIFIED whether A2/A3 need it for CrossCore flags
// (catlass examples/23_flash_attention_infer/fai_kernel.cpp and tilelang-ascend call it).
__aicore__ inline void SetSyncBaseAddr(uint64_t config) {
    (void)fadsl_rt::Cur("SetSyncBaseAddr");
    (void)config;
}

template <uint8_t modeId, pipe_t pipe>
__aicore__ inline void CrossCoreSetFlag(uint16_t flagId, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_(nullptr, fadslSite_);
    static_assert(modeId == 0 || modeId == 1 || modeId == 2,
                  "fadsl-cpu-runtime: CrossCoreSetFlag modeId must be 0, 1 or 2 on A2/A3");
    static_assert(pipe != PIPE_S && pipe != PIPE_ALL,
                  "fadsl-cpu-runtime: CrossCoreSetFlag does not support PIPE_S or PIPE_ALL for modes 0/1/2");
    using namespace fadsl_rt;
    CoreCtx& c = Cur("CrossCoreSetFlag");
    const std::string api = Str("CrossCoreSetFlag<", unsigned(modeId), ", ", PipeName(pipe), ">(", flagId, ")");
    NoteUserFlag(c, flagId, api);
    CrossSet(c, modeId, flagId, api, "CrossCoreSetFlag", pipe);
}

template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
__aicore__ inline void CrossCoreWaitFlag(uint16_t flagId, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_(nullptr, fadslSite_);
    using namespace fadsl_rt;
    CoreCtx& c = Cur("CrossCoreWaitFlag");
    const std::string api = Str("CrossCoreWaitFlag(", flagId, ")");
    NoteUserFlag(c, flagId, api);
    CrossWait(c, flagId, api, Str("CrossCoreWaitFlag(flagId=", flagId, ") (counter 0)"), "CrossCoreWaitFlag", pipe);
}

}  // namespace AscendC
