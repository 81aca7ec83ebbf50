// fadsl CPU runtime: host side of CPU debug (tikicpulib.h): GmAlloc/GmFree, SetKernelMode and the
// ICPU_RUN_KF launcher. Every core of the launch is a std::thread running the kernel function
// concurrently; the launcher joins them and then checks that every cross-core flag was consumed.
#pragma once
#include <cstdlib>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

#include "debug.h"
#include "record.h"
#include "sync.h"
#include "tiling_key.h"

// CPU-debug kernel mode (SetKernelMode.md). Global namespace: samples write KernelMode::AIV_MODE
// unqualified. UNVERIFIED whether stub_def.h also declares it inside AscendC.
enum class KernelMode { MIX_MODE = 0, AIC_MODE, AIV_MODE };

namespace fadsl_rt {
inline KernelMode& CurrentMode() {
    static KernelMode m = KernelMode::MIX_MODE;  // default per SetKernelMode.md
    return m;
}
inline double DeadlockSeconds() {
    const char* e = std::getenv("FADSL_DEADLOCK_SECONDS");
    if (!e || !*e) return 10.0;
    char* end = nullptr;
    const double v = std::strtod(e, &end);
    if (end == e || !(v > 0)) FailRaw(Str("FADSL_DEADLOCK_SECONDS=\"", e, "\" is not a positive number"));
    return v;
}
template <typename A>
void CheckKernelArg(const char* name, int idx, const A& a) {
    if constexpr (std::is_pointer<A>::value) {
        if (a == nullptr) return;
        std::lock_guard<std::mutex> g(Gm().mu);
        if (!FindRegionLocked(reinterpret_cast<uintptr_t>(a), 0))
            FailRaw(Str("ICPU_RUN_KF(", name, ") on host: argument ", idx, " (", static_cast<const void*>(a),
                        ") is a pointer that was not returned by AscendC::GmAlloc"));
    } else {
        (void)name;
        (void)idx;
        (void)a;
    }
}
inline std::unique_ptr<CoreCtx> MakeCore(int32_t kind, int gid, int64_t blk, int64_t num, int64_t sub, int64_t subNum,
                                         int64_t ratio, std::string name) {
    auto c = std::make_unique<CoreCtx>();
    c->kind = kind;
    c->gid = gid;
    c->blockIdx = blk;
    c->blockNum = num;
    c->subBlockIdx = sub;
    c->subBlockNum = subNum;
    c->taskRatio = ratio;
    c->name = std::move(name);
    if (kind == AscendC::AIV) {
        c->mem[static_cast<int>(Mem::kUB)].assign(kUbBytes, 0xFF);
    } else {
        c->mem[static_cast<int>(Mem::kL1)].assign(kL1Bytes, 0xFF);
        c->mem[static_cast<int>(Mem::kL0A)].assign(kL0aBytes, 0xFF);
        c->mem[static_cast<int>(Mem::kL0B)].assign(kL0bBytes, 0xFF);
        c->mem[static_cast<int>(Mem::kL0C)].assign(kL0cBytes, 0xFF);
    }
    return c;
}

template <typename... KArgs, typename... Args>
void RunKernel(const char* name, void (*func)(KArgs...), int64_t numBlocks, Args&&... args) {
    static_assert(sizeof...(KArgs) == sizeof...(Args), "fadsl-cpu-runtime: ICPU_RUN_KF argument count does not match "
                                                       "the kernel's parameter list");
    static_assert(sizeof...(Args) <= 32, "fadsl-cpu-runtime: ICPU_RUN_KF takes at most 32 kernel arguments");
    std::tuple<std::decay_t<KArgs>...> targs(std::forward<Args>(args)...);
    {
        int i = 0;
        std::apply([&](const auto&... a) { (CheckKernelArg(name, i++, a), ...); }, targs);
    }
    const KernelMode mode = CurrentMode();
    const char* modeName = mode == KernelMode::MIX_MODE ? "MIX_MODE" : mode == KernelMode::AIC_MODE ? "AIC_MODE" : "AIV_MODE";
    const int64_t limit = mode == KernelMode::AIV_MODE ? kAivCores : kAicCores;
    if (numBlocks < 1 || numBlocks > limit)
        FailRaw(Str("ICPU_RUN_KF(", name, ") on host: numBlocks ", numBlocks, " is outside [1, ", limit, "]: ",
                    kSocVersion, " has ", kAicCores, " AIC and ", kAivCores, " AIV cores and a ", modeName,
                    " launch may use at most ", limit,
                    mode == KernelMode::MIX_MODE ? " blocks (one block = 1 AIC + 2 AIV)" : " blocks"));
    LaunchState L;
    L.mode = static_cast<int>(mode);
    L.numBlocks = numBlocks;
    L.deadlockSeconds = DeadlockSeconds();
    int gid = 0;
    if (mode != KernelMode::AIV_MODE) {
        for (int64_t b = 0; b < numBlocks; ++b) {
            L.aicOfBlock.push_back(gid);
            L.allAic.push_back(gid);
            L.cores.push_back(MakeCore(AscendC::AIC, gid++, b, numBlocks, 0, 1, 1, Str("AIC ", b, " (block ", b, ")")));
        }
    }
    if (mode == KernelMode::MIX_MODE) {
        for (int64_t j = 0; j < 2 * numBlocks; ++j) {
            L.aivOfBlock.push_back(gid);
            L.allAiv.push_back(gid);
            L.cores.push_back(MakeCore(AscendC::AIV, gid++, j, numBlocks, j % 2, 2, 2,
                                       Str("AIV ", j, " (block ", j / 2, ", sub-block ", j % 2, ")")));
        }
    } else if (mode == KernelMode::AIV_MODE) {
        for (int64_t j = 0; j < numBlocks; ++j) {
            L.allAiv.push_back(gid);
            L.cores.push_back(MakeCore(AscendC::AIV, gid++, j, numBlocks, 0, 1, 1, Str("AIV ", j, " (block ", j, ")")));
        }
    }
    const char* recordPath = RecordPath();
    const bool sanitize = SanitizeRequested();
    Sanitized() = SanitizeLog{};
    for (auto& c : L.cores) {
        c->vc.assign(L.cores.size(), 0);
        c->record = recordPath != nullptr;
        c->sanitize = sanitize;
        if (sanitize)
            for (int m = 0; m < 5; ++m) c->written[m].assign(c->mem[m].size(), 0);
    }
    L.flagQueue.resize(L.cores.size() * kFlagIds);
    L.live = static_cast<int>(L.cores.size());
    L.freeSlots = CpuCount();
    GmResetShadow();
    if (Launch()) FailRaw(Str("ICPU_RUN_KF(", name, ") on host: another launch is still running"));
    Launch() = &L;
    std::vector<std::thread> threads;
    for (auto& cp : L.cores) {
        CoreCtx* c = cp.get();
        threads.emplace_back([c, &L, &targs, func]() {
            t_core = c;
            g_coreType = c->kind;
            {
                std::unique_lock<std::mutex> lk(L.mu);
                AcquireSlotLocked(L, *c, lk);
            }
            std::tuple<std::decay_t<KArgs>...> mine = targs;
            std::apply(func, mine);
            for (int e = 0; e < static_cast<int>(AscendC::HardEvent::MAX); ++e)
                for (int id = 0; id < 8; ++id)
                    if (c->flagSet[e][id])
                        Fail("kernel end", Str("SetFlag<HardEvent::", Describe(static_cast<AscendC::HardEvent>(e)).name,
                                               ">(", id, ") was never matched by a WaitFlag (set at ",
                                               SiteText(c->flagSite[e][id]), ")"));
            std::lock_guard<std::mutex> g(L.mu);
            c->finished = true;
            --L.live;
            ReleaseSlotLocked(L, *c);
            NoteAllBlockedLocked(L);
        });
    }
    for (auto& t : threads) t.join();
    Launch() = nullptr;
    FlushPrinted(L.cores);
    if (recordPath) WriteRecord(L, name, recordPath);
    if (sanitize && Sanitized().reports > 0)
        FailRaw(Str("ICPU_RUN_KF(", name, ") at kernel end: the sanitizer (FADSL_SANITIZE=1) made ",
                    Sanitized().reports, " report(s), listed above"));
    for (auto& c : L.cores)
        for (int f = 0; f < kFlagIds; ++f)
            if (!L.flagQueue[c->gid * kFlagIds + f].empty())
                FailRaw(Str("ICPU_RUN_KF(", name, ") at kernel end: ", L.flagQueue[c->gid * kFlagIds + f].size(),
                            " CrossCoreSetFlag increment(s) of flagId ", f, " for ", c->name, " (the last set at ",
                            SiteText(L.flagQueue[c->gid * kFlagIds + f].back().site),
                            ") were never consumed by a CrossCoreWaitFlag (Set/Wait must be paired)"));
    for (auto& kv : L.arrivals)
        for (size_t m = 0; m < kv.second.size(); ++m)
            if (!kv.second[m].empty())
                FailRaw(Str("ICPU_RUN_KF(", name, ") at kernel end: CrossCoreSetFlag<", (kv.first >> 56), ">(",
                            ((kv.first >> 48) & 0xFF), ") was set by only some cores of its group (member ", m,
                            " has ", kv.second[m].size(), " unmatched Set(s)); modes 0/1 and AIV->AIC mode 2 need "
                            "every member to set the flag"));
}
}  // namespace fadsl_rt

namespace AscendC {
// GmAlloc.md: returns shared memory usable as kernel GM; filled with 0xFF so unwritten GM reads as NaN.
inline void* GmAlloc(size_t size) { return fadsl_rt::GmAllocImpl(size); }
inline void GmFree(void* ptr) { fadsl_rt::GmFreeImpl(ptr); }
inline void SetKernelMode(KernelMode mode) { fadsl_rt::CurrentMode() = mode; }
}  // namespace AscendC

// ICPU_RUN_KF.md: #define ICPU_RUN_KF(func, numBlocks, ...)
#define ICPU_RUN_KF(func, numBlocks, ...) ::fadsl_rt::RunKernel(#func, func, numBlocks, ##__VA_ARGS__)

// ICPU_SET_TILING_KEY.md: the key of the following launches (tiling_key.h).
#define ICPU_SET_TILING_KEY(tilingKey) (::fadsl_rt::TilingKey() = static_cast<uint64_t>(tilingKey))
