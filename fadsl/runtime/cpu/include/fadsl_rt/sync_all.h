// fadsl CPU runtime: SyncAll, the hardware all-core barrier (include/basic_api/
// kernel_operator_block_sync_intf.h; doc SyncAll.md, "硬同步" prototype, supported on A2/A3).
// asc-devkit builds it on A2/A3 (impl/basic_api/dav_c220/kernel_operator_sync_impl.h,
// SyncAllImpl) from cross-core flags, and so does this runtime, with the same flag IDs:
//   SyncAll<true>():  every core sets mode-0 flag 14 and waits on it (all AIVs, or all AICs).
//   SyncAll<false>(): each AIV sets mode-2 flag 12 to its AIC and waits on flag 13; each AIC
//                     waits on 12, sets mode-0 flag 11 (all AICs), waits on 11, then sets mode-2
//                     flag 13 to its AIVs. So no core passes before every core of the launch arrived.
// Because the Sets and Waits carry vector clocks, GM written by any core before the barrier is
// visible to every core after it, and GM read after it without the barrier is still reported.
// The soft-sync prototype (GM and UB workspaces) is not implemented: fadsl does not emit it.
#pragma once
#include "sync.h"

namespace AscendC {

template <bool isAIVOnly = true>
__aicore__ inline void SyncAll(FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_(nullptr, fadslSite_);
    using namespace fadsl_rt;
    CoreCtx& c = Cur("SyncAll");
    const std::string api = isAIVOnly ? "SyncAll<true>()" : "SyncAll<false>()";
    LaunchState& L = *Launch();
    {
        std::lock_guard<std::mutex> g(L.mu);
        if (!L.reservedFlagCall.empty()) Fail(api, ReservedFlagClash(L.reservedFlagCall, api));
        if (L.syncAllCall.empty()) L.syncAllCall = Str(api, " on ", c.name);
        if (!isAIVOnly && L.mode != 0)
            Fail(api, "SyncAll<false>() synchronises the AICs with the AIVs of a MIX launch (KernelMode::MIX_MODE); "
                      "this launch has one kind of core, whose partner cores would never arrive: use SyncAll<true>()");
    }
    PipeBarrier<PIPE_ALL>();
    if (isAIVOnly) {
        CrossSet(c, 0, 14, api, "SyncAll");
        CrossWait(c, 14, api, Str(api, " (waiting for every ", c.kind == AIC ? "AIC" : "AIV", " of the launch)"), "SyncAll");
        return;
    }
    if (c.kind == AIC) {
        CrossWait(c, 12, api, Str(api, " (the AIC waits for its two AIVs to arrive)"), "SyncAll");
        CrossSet(c, 0, 11, api, "SyncAll");
        CrossWait(c, 11, api, Str(api, " (the AIC waits for every AIC of the launch)"), "SyncAll");
        CrossSet(c, 2, 13, api, "SyncAll");
        return;
    }
    CrossSet(c, 2, 12, api, "SyncAll");
    CrossWait(c, 13, api, Str(api, " (the AIV waits for its AIC to release the barrier)"), "SyncAll");
}

}  // namespace AscendC
