// fadsl CPU runtime: TPipe / TQue / TBuf (include/basic_api/kernel_tpipe.h).
//
// InitBuffer rounds every length up to 32 B and allocates from the core's physical memory of the
// position (UB for VECIN/VECOUT/VECCALC, L1 for A1/B1, L0A for A2, L0B for B2, L0C for CO1);
// the per-memory total is checked against the target capacity at the InitBuffer call.
// Event IDs: the TPipe owns the event-ID pool and the TQue operations set and wait flags with IDs
// from it exactly as the real TQueBind does (flags.h).
#pragma once
#include <deque>
#include <type_traits>
#include <vector>

#include "flags.h"

namespace fadsl_rt {
enum class BufState : uint8_t { kFree, kAllocated, kEnqueued };
inline const char* KindName(int32_t k) { return k == AscendC::AIC ? "AIC" : "AIV"; }
template <typename T, typename = void>
struct IsQue : std::false_type {};
template <typename T>
struct IsQue<T, std::void_t<decltype(T::kFadslIsQue)>> : std::true_type {};
inline bool MemOnCore(Mem m, int32_t kind) {
    return kind == AscendC::AIV ? m == Mem::kUB : (m != Mem::kUB && m != Mem::kNone);
}
}  // namespace fadsl_rt

namespace AscendC {
using TEventID = int8_t;  // impl/basic_api/kernel_tensor_base.h

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue;
template <TPosition pos = TPosition::LCM>
class TBuf;

class TPipe {
public:
    __aicore__ inline TPipe(FADSL_RT_SITE) : core_(&fadsl_rt::Cur("TPipe::TPipe")) {
        ::fadsl_rt::Api fadslCall_(nullptr, fadslSite_);
        if (core_->livePipes > 0)
            fadsl_rt::Fail("TPipe::TPipe", "a second TPipe is alive on this core; use one TPipe per kernel "
                                           "(UNVERIFIED rule, see README)");
        ++core_->livePipes;
        core_->pipe = this;
        if (core_->kind == AIC) {  // TPipe::Init on __NPU_ARCH__ 2201: M_MTE1 0..2 kept for Matmul
            for (int k = 0; k < 3; ++k)
                fadsl_rt::FlagSet(*core_, HardEvent::M_MTE1, pool_.Alloc(HardEvent::M_MTE1, "TPipe::TPipe"),
                                  "TPipe::TPipe (M_MTE1 IDs 0-2 are reserved on an AIC)", nullptr);
        }
    }
    __aicore__ inline ~TPipe() {
        if (!destroyed_) Destroy(fadsl_rt::Site());  // the runtime's own call: no kernel line
        --core_->livePipes;
        core_->pipe = nullptr;
    }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    template <class T>
    __aicore__ inline bool InitBuffer(T& que, uint8_t num, uint32_t len) {
        static_assert(fadsl_rt::IsQue<T>::value, "fadsl-cpu-runtime: InitBuffer(que, num, len) takes a TQue");
        if (que.core_) fadsl_rt::Fail("InitBuffer", "this TQue was already initialised");
        if (num == 0) fadsl_rt::Fail("InitBuffer", "num must be at least 1");
        const std::string what = fadsl_rt::Str("TQue<", fadsl_rt::PosName(T::kPos), ">");
        const uint32_t rl = Round(len);
        Reserve(T::kPos, static_cast<uint64_t>(num) * rl,
                fadsl_rt::Str(static_cast<uint64_t>(num) * rl, " B = ", unsigned(num), " x ", rl, " B for ", what), num);
        que.core_ = core_;
        que.id_ = nextQueue_++;
        for (uint8_t i = 0; i < num; ++i)
            que.bufs_.push_back(NewBuf(T::kPos, rl, que.id_,
                                       fadsl_rt::Str(what, " #", que.id_, " buffer ", i + 1, "/", unsigned(num))));
        que.state_.assign(num, fadsl_rt::BufState::kFree);
        return true;
    }
    template <TPosition bufPos>
    __aicore__ inline bool InitBuffer(TBuf<bufPos>& buf, uint32_t len) {
        if (buf.core_) fadsl_rt::Fail("InitBuffer", "this TBuf was already initialised");
        const uint32_t rl = Round(len);
        const std::string what = fadsl_rt::Str("TBuf<", fadsl_rt::PosName(bufPos), ">");
        Reserve(bufPos, rl, fadsl_rt::Str(rl, " B for ", what), 1);
        buf.core_ = core_;
        buf.buf_ = NewBuf(bufPos, rl, -1, fadsl_rt::Str(what, " #", nextQueue_++));
        return true;
    }
    // Frees every buffer (TPipe/Reset.md); tensors obtained before become invalid. Like the real
    // Reset it first waits for the free events of freed buffers, then empties the event pool.
    __aicore__ inline void Reset(FADSL_RT_SITE) {
        ::fadsl_rt::Api fadslCall_(nullptr, fadslSite_);
        WaitFreeEvents("TPipe::Reset");
        pool_ = fadsl_rt::EventPool{};
        Release();
    }
    // DestroyWithoutPipeAll + PIPE_ALL barrier: waits for the free events of freed buffers and, on an
    // AIC, for M_MTE1 IDs 0..2 set by the constructor.
    __aicore__ inline void Destroy(FADSL_RT_SITE) {
        ::fadsl_rt::Api fadslCall_(nullptr, fadslSite_);
        if (destroyed_) return;
        destroyed_ = true;
        WaitFreeEvents("TPipe::Destroy");
        if (core_->kind == AIC) {
            for (int32_t k = 0; k < 3; ++k) {
                fadsl_rt::FlagWait(*core_, HardEvent::M_MTE1, k, "TPipe::Destroy", nullptr);
                pool_.Release(HardEvent::M_MTE1, k, "TPipe::Destroy");
            }
        }
        Release();
    }

    // TPipe/AllocEventID.md, ReleaseEventID.md, FetchEventID.md
    template <HardEvent evt>
    __aicore__ inline TEventID AllocEventID() {
        static_assert(evt != HardEvent::MAX, "fadsl-cpu-runtime: HardEvent::MAX is not an event");
        Mine("AllocEventID");
        return static_cast<TEventID>(pool_.Alloc(evt, "AllocEventID"));
    }
    template <HardEvent evt>
    __aicore__ inline void ReleaseEventID(TEventID id) {
        static_assert(evt != HardEvent::MAX, "fadsl-cpu-runtime: HardEvent::MAX is not an event");
        Mine("ReleaseEventID");
        pool_.Release(evt, id, "ReleaseEventID");
    }
    __aicore__ inline TEventID FetchEventID(HardEvent evt) {
        Mine("FetchEventID");
        if (evt >= HardEvent::MAX) fadsl_rt::Fail("FetchEventID", "HardEvent::MAX is not an event");
        return static_cast<TEventID>(pool_.Lowest(evt, "FetchEventID"));
    }
    template <HardEvent evt>
    __aicore__ inline TEventID FetchEventID() {
        return FetchEventID(evt);
    }

    // ---- runtime internals (used by TQue) ----
    fadsl_rt::EventPool pool_;

private:
    fadsl_rt::CoreCtx* core_;
    bool destroyed_ = false;
    uint64_t used_[5] = {0, 0, 0, 0, 0};
    uint32_t nbufs_ = 0;
    int nextQueue_ = 0;
    std::vector<fadsl_rt::BufInfo*> mine_;

    static uint32_t Round(uint32_t len) { return (len + 31u) / 32u * 32u; }
    void Reserve(TPosition p, uint64_t bytes, const std::string& thisCall, uint32_t nb) {
        using namespace fadsl_rt;
        if (Cur("InitBuffer").gid != core_->gid) Fail("InitBuffer", "TPipe belongs to " + core_->name);
        const Mem m = MemOf(p);
        if (m == Mem::kNone) Fail("InitBuffer", Str("position ", PosName(p), " is not supported by this runtime"));
        if (!MemOnCore(m, core_->kind))
            Fail("InitBuffer", Str(PosName(p), " lives in ", MemName(m), ", which an ", KindName(core_->kind),
                                   " does not have (UB is on AIV; L1/L0A/L0B/L0C are on AIC)"));
        if (nbufs_ + nb > kMaxBuffersPerPipe)
            Fail("InitBuffer", Str("more than ", kMaxBuffersPerPipe, " buffers in one kernel (InitBuffer doc limit)"));
        const uint64_t total = used_[static_cast<int>(m)] + bytes;
        if (total > MemCapacity(m))
            Fail("InitBuffer", Str(MemName(m), " overflow: ", total, " B requested in total (this call ", thisCall,
                                   "), capacity ", MemCapacity(m), " B on ", kSocVersion));
        nbufs_ += nb;
    }
    fadsl_rt::BufInfo* NewBuf(TPosition p, uint32_t len, int qid, const std::string& label) {
        using namespace fadsl_rt;
        const Mem m = MemOf(p);
        core_->bufs.emplace_back();
        BufInfo* b = &core_->bufs.back();
        b->mem = m;
        b->pos = p;
        b->addr = static_cast<uint32_t>(used_[static_cast<int>(m)]);
        b->len = len;
        b->queueId = qid;
        b->label = label;
        used_[static_cast<int>(m)] += len;
        mine_.push_back(b);
        return b;
    }
    void Mine(const char* api) const {
        if (fadsl_rt::Cur(api).gid != core_->gid) fadsl_rt::Fail(api, "TPipe belongs to " + core_->name);
    }
    void WaitFreeEvents(const char* api) {
        for (fadsl_rt::BufInfo* b : mine_) {
            if (b->freeEvtId < 0) continue;
            fadsl_rt::FlagWait(*core_, fadsl_rt::QueEventsOf(b->pos).free, b->freeEvtId, api, b);
            b->freeEvtId = -1;
        }
    }
    void Release() {
        for (fadsl_rt::BufInfo* b : mine_) {
            ++b->generation;
            b->pending.clear();
            b->freeEvtId = b->enqEvtId = -1;
        }
        mine_.clear();
        for (uint64_t& u : used_) u = 0;
        nbufs_ = 0;
    }
};

template <TPosition pos, int32_t depth, auto mask>
class TQue {
    static_assert(fadsl_rt::QueEventsOf(pos).enq != HardEvent::MAX,
                  "fadsl-cpu-runtime: this TPosition has no queue (GetBufferLogicPos asserts pos != VECCALC/GM); "
                  "use TBuf for VECCALC");
    static_assert(depth >= 1, "fadsl-cpu-runtime: only TQue depth >= 1 is supported by this runtime");
    static constexpr fadsl_rt::QueEvents kEv = fadsl_rt::QueEventsOf(pos);

public:
    static constexpr bool kFadslIsQue = true;
    static constexpr TPosition kPos = pos;
    __aicore__ inline TQue() = default;

    template <typename T>
    __aicore__ inline LocalTensor<T> AllocTensor(FADSL_RT_SITE) {
        ::fadsl_rt::Api fadslCall_(nullptr, fadslSite_);
        LocalTensor<T> t;
        AllocTensor(t);
        return t;
    }
    template <typename T>
    __aicore__ inline void AllocTensor(LocalTensor<T>& tensor, FADSL_RT_SITE) {
        ::fadsl_rt::Api fadslCall_("AllocTensor", fadslSite_, PIPE_S);
        Ready("AllocTensor");
        const size_t n = bufs_.size();
        for (size_t k = 0; k < n; ++k) {
            const size_t i = (cursor_ + k) % n;
            if (state_[i] != fadsl_rt::BufState::kFree) continue;
            state_[i] = fadsl_rt::BufState::kAllocated;
            cursor_ = (i + 1) % n;
            fadsl_rt::BufInfo* b = bufs_[i];
            if (b->freeEvtId >= 0) {  // wait for the free event FreeTensor set, release its ID
                fadsl_rt::FlagWait(*core_, kEv.free, b->freeEvtId, "AllocTensor", b);
                Pool("AllocTensor").Release(kEv.free, b->freeEvtId, "AllocTensor");
                b->freeEvtId = -1;
            }
            tensor.core_ = core_;
            tensor.buf_ = bufs_[i];
            tensor.gen_ = bufs_[i]->generation;
            tensor.byteOff_ = 0;
            tensor.size_ = bufs_[i]->len / static_cast<uint32_t>(sizeof(T));
            return;
        }
        fadsl_rt::Fail("AllocTensor", fadsl_rt::Str("no free buffer in ", Name(), ": all ", n,
                                                    " buffers are allocated or enqueued (call FreeTensor first)"));
    }
    template <typename T>
    __aicore__ inline void FreeTensor(LocalTensor<T>& tensor, FADSL_RT_SITE) {
        ::fadsl_rt::Api fadslCall_("FreeTensor", fadslSite_, PIPE_S);
        const size_t i = Own("FreeTensor", tensor);
        if (state_[i] == fadsl_rt::BufState::kFree)
            fadsl_rt::Fail("FreeTensor", fadsl_rt::Str("double free of ", bufs_[i]->label));
        if (state_[i] == fadsl_rt::BufState::kEnqueued)
            fadsl_rt::Fail("FreeTensor", fadsl_rt::Str(bufs_[i]->label, " is still enqueued (DeQue it first)"));
        fadsl_rt::BufInfo* b = bufs_[i];
        b->freeEvtId = static_cast<int8_t>(Pool("FreeTensor").Alloc(kEv.free, "FreeTensor"));
        fadsl_rt::FlagSet(*core_, kEv.free, b->freeEvtId, "FreeTensor", b);
        state_[i] = fadsl_rt::BufState::kFree;
        ++b->generation;
    }
    template <typename T>
    __aicore__ inline bool EnQue(const LocalTensor<T>& tensor, FADSL_RT_SITE) {
        ::fadsl_rt::Api fadslCall_("EnQue", fadslSite_, PIPE_S);
        const size_t i = Own("EnQue", tensor);
        if (state_[i] != fadsl_rt::BufState::kAllocated)
            fadsl_rt::Fail("EnQue", fadsl_rt::Str(bufs_[i]->label, " is ",
                                                  state_[i] == fadsl_rt::BufState::kFree ? "not allocated"
                                                                                          : "already enqueued"));
        // UNVERIFIED: depth 0 ("in-place" queue) is treated as bounded by the number of buffers.
        const size_t limit = depth > 0 ? static_cast<size_t>(depth) : bufs_.size();
        if (fifo_.size() >= limit)
            fadsl_rt::Fail("EnQue", fadsl_rt::Str("EnQue beyond the queue depth: ", Name(), " already holds ",
                                                  fifo_.size(), " tensor(s), depth is ", depth));
        fadsl_rt::BufInfo* b = bufs_[i];
        b->enqEvtId = static_cast<int8_t>(Pool("EnQue").Alloc(kEv.enq, "EnQue"));
        fadsl_rt::FlagSet(*core_, kEv.enq, b->enqEvtId, "EnQue", b);
        state_[i] = fadsl_rt::BufState::kEnqueued;
        fifo_.push_back(Entry{i, fadsl_rt::Tick(*core_)});
        return true;
    }
    template <typename T>
    __aicore__ inline LocalTensor<T> DeQue(FADSL_RT_SITE) {
        ::fadsl_rt::Api fadslCall_(nullptr, fadslSite_);
        LocalTensor<T> t;
        DeQue(t);
        return t;
    }
    template <typename T>
    __aicore__ inline void DeQue(LocalTensor<T>& tensor, FADSL_RT_SITE) {
        ::fadsl_rt::Api fadslCall_("DeQue", fadslSite_, PIPE_S);
        Ready("DeQue");
        if (fifo_.empty())
            fadsl_rt::Fail("DeQue", fadsl_rt::Str("DeQue of an empty queue (", Name(),
                                                  "): nothing was EnQue'd, hardware would wait forever"));
        const Entry e = fifo_.front();
        fifo_.pop_front();
        state_[e.idx] = fadsl_rt::BufState::kAllocated;
        fadsl_rt::BufInfo* b = bufs_[e.idx];
        if (b->enqEvtId >= 0) {  // wait for the enqueue event EnQue set, release its ID
            fadsl_rt::FlagWait(*core_, kEv.enq, b->enqEvtId, "DeQue", b);
            Pool("DeQue").Release(kEv.enq, b->enqEvtId, "DeQue");
            b->enqEvtId = -1;
        }
        auto& v = b->pending;  // the queue's event orders every write issued before EnQue
        for (size_t k = 0; k < v.size();) {
            if (v[k].stamp <= e.stamp) {
                v[k] = v.back();
                v.pop_back();
            } else {
                ++k;
            }
        }
        // Like the real Buf2Tensor(buf): the dequeued tensor spans the whole buffer, whatever view
        // was enqueued.
        tensor.core_ = core_;
        tensor.buf_ = b;
        tensor.gen_ = b->generation;
        tensor.byteOff_ = 0;
        tensor.size_ = b->len / static_cast<uint32_t>(sizeof(T));
    }
    __aicore__ inline bool VacantInQue() { return fifo_.size() < (depth > 0 ? size_t(depth) : bufs_.size()); }
    __aicore__ inline bool HasTensorInQue() { return !fifo_.empty(); }
    __aicore__ inline int32_t GetTensorCountInQue() { return static_cast<int32_t>(fifo_.size()); }
    __aicore__ inline bool HasIdleBuffer() {
        for (auto s : state_)
            if (s == fadsl_rt::BufState::kFree) return true;
        return false;
    }

    // ---- runtime internals ----
    struct Entry {
        size_t idx;
        uint64_t stamp;
    };
    fadsl_rt::CoreCtx* core_ = nullptr;
    int id_ = -1;
    std::vector<fadsl_rt::BufInfo*> bufs_;
    std::vector<fadsl_rt::BufState> state_;
    std::deque<Entry> fifo_;
    size_t cursor_ = 0;

    std::string Name() const { return fadsl_rt::Str("TQue<", fadsl_rt::PosName(pos), ", ", depth, "> #", id_); }
    void Ready(const char* api) const {
        if (!core_) fadsl_rt::Fail(api, "TQue used before TPipe::InitBuffer");
        if (core_ != fadsl_rt::t_core) fadsl_rt::Fail(api, "TQue belongs to " + core_->name);
    }
    fadsl_rt::EventPool& Pool(const char* api) const {
        if (!core_->pipe) fadsl_rt::Fail(api, fadsl_rt::Str(Name(), " used after its TPipe was destroyed"));
        return core_->pipe->pool_;
    }
    template <typename T>
    size_t Own(const char* api, const LocalTensor<T>& t) const {
        Ready(api);
        if (!t.buf_) fadsl_rt::Fail(api, "tensor was never allocated");
        for (size_t i = 0; i < bufs_.size(); ++i) {
            if (bufs_[i] != t.buf_) continue;
            if (t.gen_ != t.buf_->generation)
                fadsl_rt::Fail(api, fadsl_rt::Str("tensor of ", t.buf_->label, " was already freed (double free?)"));
            return i;
        }
        fadsl_rt::Fail(api, fadsl_rt::Str("tensor of ", t.buf_->label, " does not belong to ", Name()));
    }
};

template <TPosition pos>
class TBuf {
public:
    __aicore__ inline TBuf() = default;
    template <typename T>
    __aicore__ inline LocalTensor<T> Get() {
        Ready("TBuf::Get");
        return Make<T>(buf_->len / static_cast<uint32_t>(sizeof(T)));
    }
    // len: number of elements (TBuf Get doc); must fit in the buffer.
    template <typename T>
    __aicore__ inline LocalTensor<T> Get(uint32_t len) {
        Ready("TBuf::Get");
        if (static_cast<uint64_t>(len) * sizeof(T) > buf_->len)
            fadsl_rt::Fail("TBuf::Get", fadsl_rt::Str(len, " elements of ", fadsl_rt::TypeName<T>::Get(),
                                                      " exceed ", buf_->label, " (", buf_->len, " B)"));
        return Make<T>(len);
    }

    // ---- runtime internals ----
    fadsl_rt::CoreCtx* core_ = nullptr;
    fadsl_rt::BufInfo* buf_ = nullptr;
    void Ready(const char* api) const {
        if (!core_) fadsl_rt::Fail(api, "TBuf used before TPipe::InitBuffer");
        if (core_ != fadsl_rt::t_core) fadsl_rt::Fail(api, "TBuf belongs to " + core_->name);
    }
    template <typename T>
    LocalTensor<T> Make(uint32_t n) const {
        LocalTensor<T> t;
        t.core_ = core_;
        t.buf_ = buf_;
        t.gen_ = buf_->generation;
        t.size_ = n;
        return t;
    }
};

}  // namespace AscendC

// include/basic_api/kernel_common.h: the TPipe of the running core (global namespace, as there).
__aicore__ inline AscendC::TPipe* GetTPipePtr() {
    fadsl_rt::CoreCtx& c = fadsl_rt::Cur("GetTPipePtr");
    if (!c.pipe) fadsl_rt::Fail("GetTPipePtr", "no TPipe is alive on this core (construct the TPipe first)");
    return c.pipe;
}
