// fadsl CPU runtime: simulated cores, launch state, failure reporting and core identity.
//
// Every core of a launch runs on its own std::thread with a thread_local CoreCtx. Misuse is
// reported by Fail(): one line on stderr starting with "fadsl-cpu-runtime:", naming the API
// call and the core, then std::abort() (exit status 134 from a shell, -SIGABRT in Python).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config.h"
#include "enums.h"
#include "site.h"

namespace AscendC {
class TPipe;
}

namespace fadsl_rt {

enum class Mem : uint8_t { kUB = 0, kL1, kL0A, kL0B, kL0C, kNone };
inline const char* MemName(Mem m) {
    static const char* kNames[] = {"UB", "L1", "L0A", "L0B", "L0C", "none"};
    return kNames[static_cast<int>(m)];
}
inline uint32_t MemCapacity(Mem m) {
    switch (m) {
        case Mem::kUB: return kUbBytes;
        case Mem::kL1: return kL1Bytes;
        case Mem::kL0A: return kL0aBytes;
        case Mem::kL0B: return kL0bBytes;
        case Mem::kL0C: return kL0cBytes;
        default: return 0;
    }
}
inline Mem MemOf(AscendC::TPosition p) {
    using P = AscendC::TPosition;
    switch (p) {
        case P::VECIN: case P::VECOUT: case P::VECCALC: return Mem::kUB;
        case P::A1: case P::B1: return Mem::kL1;
        case P::A2: return Mem::kL0A;
        case P::B2: return Mem::kL0B;
        case P::CO1: return Mem::kL0C;
        default: return Mem::kNone;
    }
}

// A pending (not yet synchronised) write into a local buffer by one pipe; see sync.h.
struct PendingWrite {
    uint32_t lo, hi;  // byte range inside the buffer
    pipe_t pipe;
    uint64_t stamp;
    const char* api;
    Site site;
};
// A read of a local buffer by one pipe, kept by the sanitizer for the write-after-read check.
struct PendingRead {
    uint32_t lo, hi;
    pipe_t pipe;
    uint64_t stamp;
    const char* api;
    Site site;
};

// One buffer handed out by TPipe::InitBuffer (one per TQue slot, one per TBuf).
struct BufInfo {
    Mem mem;
    AscendC::TPosition pos;
    uint32_t addr;      // byte offset inside the core's physical memory
    uint32_t len;       // bytes (rounded up to 32)
    uint32_t generation = 0;  // bumped by FreeTensor: stale LocalTensors are detected
    int queueId = -1;         // owning TQue id, -1 for TBuf
    std::string label;        // e.g. "TQue<VECIN> buffer 1/2"
    std::vector<PendingWrite> pending;
    std::vector<PendingRead> reads;  // sanitizer only (sanitize.h)
    // event IDs a TQue buffer holds from the TPipe's pool (-1: none), see flags.h
    int8_t freeEvtId = -1;  // set by FreeTensor, waited by the next AllocTensor or TPipe::Destroy
    int8_t enqEvtId = -1;   // set by EnQue, waited by DeQue
};

struct CoreCtx {
    int32_t kind = AscendC::AIV;  // AscendC::AIC or AscendC::AIV
    int gid = 0;                  // index in the launch (vector-clock slot)
    int64_t blockIdx = 0, blockNum = 1, subBlockIdx = 0, subBlockNum = 1, taskRatio = 1;
    std::string name;
    std::vector<uint8_t> mem[5];  // physical local memories of this core, poisoned with 0xFF
    std::deque<BufInfo> bufs;     // stable addresses
    int livePipes = 0;
    uint64_t stamp = 0;  // per-core operation counter (issue order)
    // SetFlag/WaitFlag state, indexed [HardEvent][eventID]
    bool flagSet[static_cast<int>(AscendC::HardEvent::MAX)][8] = {};
    uint64_t flagStamp[static_cast<int>(AscendC::HardEvent::MAX)][8] = {};
    const char* flagOp[static_cast<int>(AscendC::HardEvent::MAX)][8] = {};     // who set it (flags.h)
    const BufInfo* flagBuf[static_cast<int>(AscendC::HardEvent::MAX)][8] = {};  // its TQue buffer, if any
    uint64_t flagSeq[static_cast<int>(AscendC::HardEvent::MAX)][8] = {};  // record: seq of the SetFlag row
    Site flagSite[static_cast<int>(AscendC::HardEvent::MAX)][8];          // the SetFlag's kernel line
    // What the source pipe had waited for when the SetFlag was issued: the WaitFlag hands it on to
    // the destination pipe (ordering is transitive: MTE2 -> V -> MTE3 orders MTE2 before MTE3).
    uint64_t flagKnow[static_cast<int>(AscendC::HardEvent::MAX)][8][PIPE_MAX] = {};
    AscendC::TPipe* pipe = nullptr;  // the live TPipe (GetTPipePtr)
    // syncTo[p][q]: pipe q has waited (directly or through other pipes) for everything pipe p issued
    // up to this stamp
    uint64_t syncTo[PIPE_MAX][PIPE_MAX] = {};
    bool sanitize = false;             // FADSL_SANITIZE (sanitize.h)
    std::vector<uint8_t> written[5];  // sanitizer: 1 per local byte ever written (memcheck)
    std::vector<uint32_t> vc;  // vector clock for cross-core GM visibility
    std::string waitingOn;     // non-empty while blocked in CrossCoreWaitFlag
    bool finished = false;
    std::condition_variable wake;  // notified when this core's flag counters grow (sync.h)
    bool hasSlot = false;          // holds one of the launch's run slots (sync.h)
    const char* atomicAdd = nullptr;  // SetAtomicAdd<T>: TypeName of T until SetAtomicNone (atomic.h)
    // The executed-instruction record (site.h, record.h) and the call in progress.
    bool record = false;    // FADSL_RECORD names a file: every call appends a Row
    std::vector<Row> rows;  // this core's rows in program order
    uint64_t seq = 0;       // next row's seq
    Site site;              // site of the outermost API call in progress (empty between calls)
    int depth = 0;          // API calls in progress (nested: SyncAll -> PipeBarrier)
    int64_t open = -1;      // index in rows of the innermost API call in progress, -1: none
    std::string printed;    // AscendC::printf text not yet shown (debug.h)
};

// One cross-core flag increment: the merged vector clock of the Sets that produced it and, when
// recording, their rows as a "core:seq" list (the Wait's `from` column).
struct Incr {
    std::vector<uint32_t> vc;
    std::string from;
    Site site;  // the (last) Set's kernel line, for the kernel-end report of an unconsumed increment
};

struct LaunchState {
    std::mutex mu;
    std::vector<std::unique_ptr<CoreCtx>> cores;
    int mode = 0;  // KernelMode value
    int64_t numBlocks = 0;
    int live = 0, blocked = 0;
    std::chrono::steady_clock::time_point allBlockedSince;
    double deadlockSeconds = 10.0;
    std::vector<int> allAic, allAiv;  // gids by kind, in block order
    std::vector<int> aicOfBlock;      // MIX: gid of the AIC of each block
    std::vector<int> aivOfBlock;      // MIX: gids of the AIVs of each block (2 per block)
    // cross-core flags: one counter per (core, flagId); each increment carries the merged vector
    // clock of the Sets that produced it, so a Wait can import what the setters had published.
    std::vector<std::deque<Incr>> flagQueue;  // [gid * 16 + flagId]
    // Sets still waiting for the other members of their group: key = (mode, group, flagId),
    // value = one queue of snapshots per group member.
    std::map<uint64_t, std::vector<std::deque<Incr>>> arrivals;
    // Run slots (one per CPU): a core computes only while it holds one and gives it up while it
    // waits in CrossCoreWaitFlag, so no more cores are runnable than the machine has CPUs.
    int freeSlots = 1;
    uint64_t slotReleases = 0;
    std::condition_variable slotFreed;
    // SyncAll reserves cross-core flag IDs 11-14 (sync_all.h): the first SyncAll call, and the
    // first kernel Set/Wait on a reserved ID, so that a kernel mixing them is refused.
    std::string syncAllCall, reservedFlagCall;
};

inline std::mutex& OutMutex() {
    static std::mutex m;
    return m;
}
inline LaunchState*& Launch() {
    static LaunchState* s = nullptr;
    return s;
}
inline thread_local CoreCtx* t_core = nullptr;

inline std::string CoreName() { return t_core ? t_core->name : std::string("host"); }

[[noreturn]] inline void FailRaw(const std::string& line) {
    {
        std::lock_guard<std::mutex> g(OutMutex());
        std::fflush(stdout);
        std::fprintf(stderr, "fadsl-cpu-runtime: %s\n", line.c_str());
        std::fflush(stderr);
    }
    std::abort();
}
// "fadsl-cpu-runtime: <api> on <core>: <what>" then abort().
// " (at kernel.cpp:123)": the kernel line of the API call in progress on this core, if any.
inline std::string AtSite() {
    if (!t_core || !t_core->site.file) return std::string();
    const char* b = t_core->site.file;
    for (const char* p = b; *p; ++p)
        if (*p == '/' || *p == '\\') b = p + 1;
    return " (at " + std::string(b) + ":" + std::to_string(t_core->site.line) + ")";
}
[[noreturn]] inline void Fail(const std::string& api, const std::string& what) {
    FailRaw(api + " on " + CoreName() + ": " + what + AtSite());
}
inline void WarnOnce(const std::string& key, const std::string& text) {
    static std::mutex m;
    static std::set<std::string> seen;
    {
        std::lock_guard<std::mutex> g(m);
        if (!seen.insert(key).second) return;
    }
    std::lock_guard<std::mutex> g(OutMutex());
    std::fprintf(stderr, "fadsl-cpu-runtime: warning: %s\n", text.c_str());
    std::fflush(stderr);
}
inline CoreCtx& Cur(const char* api) {
    if (!t_core) FailRaw(std::string(api) + " called outside a kernel launched with ICPU_RUN_KF");
    return *t_core;
}
inline uint64_t Tick(CoreCtx& c) { return ++c.stamp; }

template <typename... A>
std::string Str(const A&... a) {
    std::ostringstream os;
    (void)std::initializer_list<int>{((os << a), 0)...};
    return os.str();
}

// The record's name of a core: its kind and its index among the launch's cores of that kind.
inline std::string RecCore(const CoreCtx& c) { return Str(c.kind == AscendC::AIC ? "AIC" : "AIV", c.blockIdx); }

// The per-call hook: every API function starts with `Api call(name, site)` (name nullptr for calls
// that append their own rows, e.g. SetFlag). Off (no FADSL_RECORD), it costs a thread_local read,
// a counter and a 16-byte store.
struct Api {
    CoreCtx* c;
    int64_t prevOpen = -1;
    Api(const char* name, Site s, pipe_t pipe = PIPE_MAX) : c(t_core) {
        if (!c) return;
        if (c->depth++ == 0) c->site = s;
        prevOpen = c->open;
        if (!c->record) return;
        c->open = -1;
        if (!name) return;
        c->open = static_cast<int64_t>(c->rows.size());
        c->rows.emplace_back();
        Row& r = c->rows.back();
        r.seq = c->seq++;
        r.api = name;
        r.site = c->site;
        if (pipe != PIPE_MAX) r.pipe = static_cast<int8_t>(pipe);
    }
    ~Api() {
        if (!c) return;
        c->open = prevOpen;
        if (--c->depth == 0) c->site = Site();
    }
    Api(const Api&) = delete;
    Api& operator=(const Api&) = delete;
};
// The row of the API call in progress on core c, or nullptr (not recording, or no row).
inline Row* OpenRow(CoreCtx& c) { return c.open >= 0 ? &c.rows[static_cast<size_t>(c.open)] : nullptr; }
// Appends a row of its own (a Set/Wait, also one a TQue issues) at the current site; nullptr when
// not recording. The pointer is valid until the next row is appended.
inline Row* AppendRow(CoreCtx& c, const char* api, pipe_t pipe) {
    if (!c.record) return nullptr;
    c.rows.emplace_back();
    Row& r = c.rows.back();
    r.seq = c.seq++;
    r.api = api;
    r.site = c.site;
    r.pipe = static_cast<int8_t>(pipe);
    return &r;
}
// Work sizes an API knows better than its byte accesses tell (README "Executed-instruction record").
inline Row* CurRow() { return t_core ? OpenRow(*t_core) : nullptr; }
inline void NoteBlocks(uint64_t blocks, uint64_t blockLenBytes) {
    if (Row* r = CurRow()) r->blocks = static_cast<int64_t>(blocks), r->blocklen = static_cast<int64_t>(blockLenBytes);
}
inline void NoteRepeats(uint64_t repeats) {
    if (Row* r = CurRow()) r->repeats = static_cast<int64_t>(repeats);
}
inline void NoteElems(uint64_t elems) {
    if (Row* r = CurRow()) r->elems = static_cast<int64_t>(elems);
}
inline void NoteMmad(uint32_t m, uint32_t k, uint32_t n) {
    if (Row* r = CurRow()) r->m = static_cast<int32_t>(m), r->k = static_cast<int32_t>(k), r->n = static_cast<int32_t>(n);
}

}  // namespace fadsl_rt

// ---- core identity (include/basic_api/kernel_operator_sys_var_intf.h:39-51) ----------------------
namespace AscendC {
__aicore__ inline int64_t GetBlockIdx() { return fadsl_rt::Cur("GetBlockIdx").blockIdx; }
__aicore__ inline int64_t GetBlockNum() { return fadsl_rt::Cur("GetBlockNum").blockNum; }
__aicore__ inline int64_t GetSubBlockIdx() { return fadsl_rt::Cur("GetSubBlockIdx").subBlockIdx; }
__aicore__ inline int64_t GetSubBlockNum() { return fadsl_rt::Cur("GetSubBlockNum").subBlockNum; }
__aicore__ inline int64_t GetTaskRatio() { return fadsl_rt::Cur("GetTaskRatio").taskRatio; }
// GetUserWorkspace.md; in CPU debug the whole workspace is the user's: the argument comes back
// (asc-devkit impl/basic_api/dav_c220/kernel_operator_common_impl.h, ASCENDC_CPU_DEBUG branch).
__aicore__ inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) {
    if (workspace == nullptr) {
        fadsl_rt::Fail("GetUserWorkspace", "workspace can not be nullptr");
    }
    return workspace;
}
// Trap (kernel_operator_sys_var_intf.h:55; docs "Trap": stops the AI Core on the NPU, an
// assert in CANN's CPU mode). fadsl's guards call it on an index out of range.
[[noreturn]] __aicore__ inline void Trap() {
    fadsl_rt::Fail("Trap", "the kernel stopped itself (a fadsl guard found an index out of range; "
                           "the comment above the Trap in the kernel names it)");
}
}  // namespace AscendC
