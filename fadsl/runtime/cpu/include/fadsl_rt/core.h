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
    AscendC::TPipe* pipe = nullptr;  // the live TPipe (GetTPipePtr)
    // syncTo[p][q]: pipe q has waited for everything pipe p issued up to this stamp
    uint64_t syncTo[PIPE_MAX][PIPE_MAX] = {};
    std::vector<uint32_t> vc;  // vector clock for cross-core GM visibility
    std::string waitingOn;     // non-empty while blocked in CrossCoreWaitFlag
    bool finished = false;
    std::condition_variable wake;  // notified when this core's flag counters grow (sync.h)
    bool hasSlot = false;          // holds one of the launch's run slots (sync.h)
    const char* atomicAdd = nullptr;  // SetAtomicAdd<T>: TypeName of T until SetAtomicNone (atomic.h)
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
    std::vector<std::deque<std::vector<uint32_t>>> flagQueue;  // [gid * 16 + flagId]
    // Sets still waiting for the other members of their group: key = (mode, group, flagId),
    // value = one queue of snapshots per group member.
    std::map<uint64_t, std::vector<std::deque<std::vector<uint32_t>>>> arrivals;
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
[[noreturn]] inline void Fail(const std::string& api, const std::string& what) {
    FailRaw(api + " on " + CoreName() + ": " + what);
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
