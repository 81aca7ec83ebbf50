// fadsl CPU runtime: intra-core event flags (the state behind SetFlag/WaitFlag) and the TPipe's
// event-ID pool (TPipe::AllocEventID / ReleaseEventID / FetchEventID).
//
// Model, after asc-devkit impl/basic_api/kernel_tpipe_impl.h and kernel_tquebind_impl.h for
// __NPU_ARCH__ 2201 (Atlas A2/A3):
// * every HardEvent has its own pool of QUE_MAX_EVENT = 8 IDs (impl/basic_api/kernel_macros.h),
//   a bit mask; AllocEventID occupies the lowest free ID, ReleaseEventID frees it, FetchEventID
//   returns the lowest free ID without occupying it;
// * a TQue of depth >= 1 takes its IDs from that pool at run time: FreeTensor allocates an ID of
//   the queue's free event and sets it, the next AllocTensor of that buffer (or TPipe::Destroy)
//   waits and releases it; EnQue allocates and sets an ID of the enqueue event, DeQue waits and
//   releases it (QueEventsOf below gives the two events per position);
// * on an AIC, TPipe's constructor allocates and sets M_MTE1 IDs 0, 1 and 2 (reserved for the
//   Matmul API), and Destroy waits for and releases them.
// A flag set twice on one (event, ID) before a wait, or waited without a set, is refused whoever
// issued it (the kernel or a TQue), naming both sides.
#pragma once
#include <cstring>
#include <string>

#include "memory.h"

namespace fadsl_rt {
constexpr int kQueMaxEvent = 8;  // QUE_MAX_EVENT for __NPU_ARCH__ 2201
constexpr int kEvents = static_cast<int>(AscendC::HardEvent::MAX);

// Who set a flag: a plain SetFlag of the kernel (buf == nullptr) or an operation of a TQue buffer.
inline std::string FlagOwner(const char* op, const BufInfo* buf) {
    return buf ? Str(op, " of ", buf->label) : std::string(op);
}
inline std::string FlagApi(const char* verb, AscendC::HardEvent ev, int32_t id) {
    return Str(verb, "<HardEvent::", Describe(ev).name, ">(", id, ")");
}
inline std::string Inside(const char* op, const BufInfo* buf) {
    return buf ? Str(" (inside ", op, " of ", buf->label, ")") : std::string();
}

// The record's `queue` column for a Set/Wait: the TQue buffer, "TPipe" for the TPipe's own, else none.
inline const char* FlagIssuer(const char* op, const BufInfo* buf) {
    if (buf) return buf->label.c_str();
    return std::strncmp(op, "TPipe", 5) == 0 ? "TPipe" : nullptr;
}
inline void NoteFlag(CoreCtx& c, bool isSet, AscendC::HardEvent ev, int32_t id, const char* op, const BufInfo* buf) {
    const EventInfo ei = Describe(ev);
    const int e = static_cast<int>(ev);
    Row* r = AppendRow(c, isSet ? "SetFlag" : "WaitFlag", isSet ? ei.src : ei.dst);
    if (!r) return;
    r->event = static_cast<int16_t>(e);
    r->id = static_cast<int8_t>(id);
    r->queue = FlagIssuer(op, buf);
    if (isSet) c.flagSeq[e][id] = r->seq;
    else r->from = std::to_string(c.flagSeq[e][id]);
}

// SetFlag<ev>(id) issued by `op` (of `buf` when a TQue issues it).
inline void FlagSet(CoreCtx& c, AscendC::HardEvent ev, int32_t id, const char* op, const BufInfo* buf) {
    if (id < 0 || id > 7)
        Fail(FlagApi("SetFlag", ev, id), "eventID must be in [0, 7] on A2/A3" + Inside(op, buf));
    const int e = static_cast<int>(ev);
    if (c.flagSet[e][id])
        Fail(FlagApi("SetFlag", ev, id),
             Str("the same event is already set and not yet waited for (set by ",
                 FlagOwner(c.flagOp[e][id], c.flagBuf[e][id]), ")", Inside(op, buf),
                 " (consecutive SetFlag with the same HardEvent and eventID is undefined behaviour; inside the "
                 "TPipe/TQue paradigm take event IDs from GetTPipePtr()->AllocEventID/FetchEventID)"));
    NoteFlag(c, true, ev, id, op, buf);
    c.flagSet[e][id] = true;
    c.flagStamp[e][id] = Tick(c);
    c.flagSite[e][id] = c.site;
    const EventInfo ei = Describe(ev);
    for (int p = 0; p < PIPE_MAX; ++p) c.flagKnow[e][id][p] = c.syncTo[p][ei.src];
    c.flagKnow[e][id][ei.src] = c.flagStamp[e][id];
    c.flagOp[e][id] = op;
    c.flagBuf[e][id] = buf;
}

// WaitFlag<ev>(id): the destination pipe now waits for everything the source pipe issued before the set.
inline void FlagWait(CoreCtx& c, AscendC::HardEvent ev, int32_t id, const char* op, const BufInfo* buf) {
    if (id < 0 || id > 7)
        Fail(FlagApi("WaitFlag", ev, id), "eventID must be in [0, 7] on A2/A3" + Inside(op, buf));
    const int e = static_cast<int>(ev);
    if (!c.flagSet[e][id])
        Fail(FlagApi("WaitFlag", ev, id),
             "no matching SetFlag (same HardEvent and eventID) was issued before this WaitFlag" + Inside(op, buf) +
                 "; the hardware would wait forever");
    NoteFlag(c, false, ev, id, op, buf);
    c.flagSet[e][id] = false;
    const EventInfo ei = Describe(ev);
    for (int p = 0; p < PIPE_MAX; ++p) c.syncTo[p][ei.dst] = std::max(c.syncTo[p][ei.dst], c.flagKnow[e][id][p]);
    Tick(c);
}

// One TPipe's event-ID pool: a bit mask of occupied IDs per HardEvent.
struct EventPool {
    uint8_t occupy[kEvents] = {};

    int32_t Lowest(AscendC::HardEvent ev, const char* api) const {
        const uint8_t m = occupy[static_cast<int>(ev)];
        for (int32_t id = 0; id < kQueMaxEvent; ++id)
            if (!(m & (1u << id))) return id;
        Fail(api, Str("all ", kQueMaxEvent, " IDs of HardEvent::", Describe(ev).name,
                      " are allocated (by TQue buffers or AllocEventID) and none is free: release one with "
                      "ReleaseEventID, or free/dequeue tensors first"));
    }
    int32_t Alloc(AscendC::HardEvent ev, const char* api) {
        const int32_t id = Lowest(ev, api);
        occupy[static_cast<int>(ev)] |= static_cast<uint8_t>(1u << id);
        return id;
    }
    void Release(AscendC::HardEvent ev, int32_t id, const char* api) {
        if (id < 0 || id >= kQueMaxEvent)
            Fail(api, Str("event ID ", id, " of HardEvent::", Describe(ev).name, " is outside [0, ", kQueMaxEvent, ")"));
        uint8_t& m = occupy[static_cast<int>(ev)];
        if (!(m & (1u << id)))
            Fail(api, Str("event ID ", id, " of HardEvent::", Describe(ev).name,
                          " is not allocated (release only what AllocEventID returned, once)"));
        m = static_cast<uint8_t>(m & ~(1u << id));
    }
};

// The enqueue and free events of TQue<pos> on A2/A3: GetBufferLogicPos gives the (src, dst)
// positions, GetPhyType their memories and GetQueEvt(src, dst, fwd) the event (impl/basic_api/
// kernel_event.h). HardEvent::MAX: the position has no queue (VECCALC, GM, ...).
struct QueEvents {
    AscendC::HardEvent enq, free;
};
constexpr QueEvents QueEventsOf(AscendC::TPosition pos) {
    using AscendC::HardEvent;
    using AscendC::TPosition;
    switch (pos) {
        case TPosition::VECIN: return {HardEvent::MTE2_V, HardEvent::V_MTE2};    // GM -> UB
        case TPosition::VECOUT: return {HardEvent::V_MTE3, HardEvent::MTE3_V};   // UB -> GM
        case TPosition::A1:
        case TPosition::B1: return {HardEvent::MTE2_MTE1, HardEvent::MTE1_MTE2};  // GM -> L1
        case TPosition::A2:
        case TPosition::B2: return {HardEvent::MTE1_M, HardEvent::M_MTE1};  // L1 -> L0A/L0B
        case TPosition::CO1: return {HardEvent::M_FIX, HardEvent::FIX_M};   // L0C -> CO2 (GM on 2201)
        default: return {HardEvent::MAX, HardEvent::MAX};
    }
}
}  // namespace fadsl_rt
