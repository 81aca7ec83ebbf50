// fadsl CPU runtime: LocalTensor / GlobalTensor (include/basic_api/kernel_tensor.h) and the
// intra-core pipe hazard tracker on local buffers.
//
// Hazard model (README "Race and hazard detection"): each write into a local buffer by pipe P
// leaves a pending record (byte range, P, issue stamp). A later read of an overlapping range by
// another pipe Q is legal only if Q synchronised with P after the write: a matching
// SetFlag<P_Q>/WaitFlag<P_Q> pair issued after the write, PipeBarrier<PIPE_ALL>, or an
// EnQue/DeQue of the buffer's tensor (DeQue clears the buffer's records).
#pragma once
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include "gm.h"
#include "sanitize.h"
#include "types.h"

namespace fadsl_rt {

// A read of [lo, hi) of b by `pipe`: read-after-write across pipes (always; a report that lets
// the run go on under the sanitizer), and under the sanitizer memcheck (`init`) and the read's
// record for the write-after-read check.
inline void CheckRead(CoreCtx& c, BufInfo& b, uint32_t lo, uint32_t hi, pipe_t pipe, const char* api,
                      bool init = true) {
    for (const PendingWrite& w : b.pending) {
        if (w.hi <= lo || w.lo >= hi || w.pipe == pipe) continue;
        if (c.syncTo[w.pipe][pipe] >= w.stamp) continue;
        const std::string what = Str(
            "reads ", MemName(b.mem), " bytes [", lo, ", ", hi, ") of ", b.label, " that ", w.api, " (",
            PipeName(w.pipe), ") wrote at ", SiteText(w.site), ", with no synchronisation in between: expected an "
            "EnQue/DeQue of that tensor, SetFlag/WaitFlag<HardEvent::", ShortPipe(w.pipe), "_", ShortPipe(pipe),
            "> after the write, or PipeBarrier<PIPE_ALL>");
        if (!c.sanitize) Fail(api, what);
        Report("read-after-write", Str(SiteText(c.site), "|", SiteText(w.site)), Str(api, " (", PipeName(pipe), ") ", what));
    }
    if (!c.sanitize) return;
    if (init) CheckInit(c, b, lo, hi, api);
    // UNVERIFIED: a scalar read (GetValue) has its value before the scalar unit issues anything
    // after it, so a later write by any pipe cannot overtake it; it is not kept for write-after-read.
    if (pipe != PIPE_S) NoteRead(c, b, lo, hi, pipe, api);
}
inline void RecordWrite(CoreCtx& c, BufInfo& b, uint32_t lo, uint32_t hi, pipe_t pipe, const char* api) {
    if (c.sanitize) {
        CheckWriteHazards(c, b, lo, hi, pipe, api);
        DropCoveredReads(b, lo, hi);
        MarkWritten(c, b, lo, hi);
    }
    const uint64_t st = Tick(c);
    auto& v = b.pending;
    for (size_t i = 0; i < v.size();) {
        if (v[i].lo >= lo && v[i].hi <= hi) {
            v[i] = v.back();
            v.pop_back();
        } else {
            ++i;
        }
    }
    if (v.size() >= 256) v.erase(v.begin());  // bounded memory; only loses precision, never adds errors
    v.push_back(PendingWrite{lo, hi, pipe, st, InternApi(api), c.site});
}

template <typename T> struct LocalAccess;

// Record hook of a local access (site.h): pipe, memories, element type and sizes of the open row.
inline void NoteLocal(CoreCtx& c, Mem mem, uint64_t bytes, size_t elem, const char* dtype, pipe_t pipe, bool isWrite) {
    Row* r = OpenRow(c);
    if (!r) return;
    if (r->pipe < 0) r->pipe = static_cast<int8_t>(pipe);
    if (isWrite) {
        r->dst = static_cast<int8_t>(mem);
        r->dtype = dtype;
        r->writeElems += static_cast<int64_t>(bytes / elem);
        r->localBytes += static_cast<int64_t>(bytes);
    } else {
        if (r->src < 0) r->src = static_cast<int8_t>(mem);
        if (!r->dtype) r->dtype = dtype;
        r->readElems += static_cast<int64_t>(bytes / elem);
    }
}

}  // namespace fadsl_rt

namespace AscendC {

template <typename T>
class LocalTensor {
public:
    using PrimType = T;
    __aicore__ inline LocalTensor() = default;

    // Offset view (elements), same buffer.
    __aicore__ inline LocalTensor operator[](const uint32_t offset) const {
        Valid("LocalTensor::operator[]");
        if (offset > size_)
            fadsl_rt::Fail("LocalTensor::operator[]",
                           fadsl_rt::Str("offset ", offset, " is past the end of a tensor of ", size_, " elements"));
        LocalTensor r = *this;
        r.byteOff_ += offset * static_cast<uint32_t>(sizeof(T));
        r.size_ -= offset;
        return r;
    }
    __aicore__ inline T GetValue(const uint32_t index, FADSL_RT_SITE) const {
        ::fadsl_rt::Api fadslCall_("GetValue", fadslSite_, PIPE_S);
        const char* api = "LocalTensor::GetValue";
        Span(api, index, 1);
        fadsl_rt::CheckRead(*core_, *buf_, Lo(index), Lo(index + 1), PIPE_S, api);
        fadsl_rt::NoteLocal(*core_, buf_->mem, sizeof(T), sizeof(T), fadsl_rt::TypeName<T>::Get(), PIPE_S, false);
        T v;
        std::memcpy(&v, Ptr(index), sizeof(T));
        return v;
    }
    template <typename T1>
    __aicore__ inline void SetValue(const uint32_t index, const T1 value, FADSL_RT_SITE) const {
        ::fadsl_rt::Api fadslCall_("SetValue", fadslSite_, PIPE_S);
        const char* api = "LocalTensor::SetValue";
        Span(api, index, 1);
        fadsl_rt::RecordWrite(*core_, *buf_, Lo(index), Lo(index + 1), PIPE_S, api);
        fadsl_rt::NoteLocal(*core_, buf_->mem, sizeof(T), sizeof(T), fadsl_rt::TypeName<T>::Get(), PIPE_S, true);
        const T v = static_cast<T>(value);
        std::memcpy(Ptr(index), &v, sizeof(T));
    }
    __aicore__ inline uint32_t GetSize() const { return size_; }
    __aicore__ inline TPosition GetPosition() const {
        Valid("LocalTensor::GetPosition");
        return buf_->pos;
    }
    template <typename CAST_T>
    __aicore__ inline LocalTensor<CAST_T> ReinterpretCast() const {
        Valid("LocalTensor::ReinterpretCast");
        LocalTensor<CAST_T> r;
        r.core_ = core_;
        r.buf_ = buf_;
        r.gen_ = gen_;
        r.byteOff_ = byteOff_;
        r.size_ = static_cast<uint32_t>(static_cast<uint64_t>(size_) * sizeof(T) / sizeof(CAST_T));
        return r;
    }

    // ---- runtime internals (not Ascend C API) ----
    fadsl_rt::CoreCtx* core_ = nullptr;
    fadsl_rt::BufInfo* buf_ = nullptr;
    uint32_t gen_ = 0;
    uint32_t byteOff_ = 0;  // byte offset of element 0 inside the buffer
    uint32_t size_ = 0;     // elements visible through this view

    void Valid(const char* api) const {
        if (!buf_) fadsl_rt::Fail(api, "use of a LocalTensor that was never obtained from AllocTensor/DeQue/Get");
        if (core_ != fadsl_rt::t_core) fadsl_rt::Fail(api, "LocalTensor belongs to " + core_->name);
        if (buf_->generation != gen_)
            fadsl_rt::Fail(api, fadsl_rt::Str("use of a LocalTensor of ", buf_->label,
                                              " after FreeTensor (or after its TPipe was reset/destroyed)"));
    }
    uint32_t Lo(uint64_t idx) const { return static_cast<uint32_t>(byteOff_ + idx * sizeof(T)); }
    uint32_t Addr() const { return buf_->addr + byteOff_; }  // physical byte address
    // Checks that elements [first, first+count) lie inside the underlying buffer.
    void Span(const char* api, uint64_t first, uint64_t count) const {
        Valid(api);
        const uint64_t end = byteOff_ + (first + count) * sizeof(T);
        if (end > buf_->len)
            fadsl_rt::Fail(api, fadsl_rt::Str("access to elements [", first, ", ", first + count, ") of a ",
                                              fadsl_rt::TypeName<T>::Get(), " tensor at byte offset ", byteOff_,
                                              " of ", buf_->label, " ends at byte ", end, ", past the buffer's ",
                                              buf_->len, " B"));
    }
    T* Ptr(uint64_t idx) const {
        return reinterpret_cast<T*>(core_->mem[static_cast<int>(buf_->mem)].data() + buf_->addr + byteOff_) + idx;
    }
};

template <typename T>
class GlobalTensor {
public:
    using PrimType = T;
    __aicore__ inline GlobalTensor() = default;
    __aicore__ inline void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize) {
        Bind("GlobalTensor::SetGlobalBuffer", buffer);
        std::lock_guard<std::mutex> g(fadsl_rt::Gm().mu);
        if (!fadsl_rt::FindRegionLocked(reinterpret_cast<uintptr_t>(buffer), bufferSize * sizeof(T)))
            fadsl_rt::Fail("GlobalTensor::SetGlobalBuffer",
                           fadsl_rt::Str("bufferSize ", bufferSize, " x ", sizeof(T), " B runs past the end of its ",
                                         "AscendC::GmAlloc buffer"));
        size_ = bufferSize;
        sized_ = true;
    }
    __aicore__ inline void SetGlobalBuffer(__gm__ T* buffer) {
        Bind("GlobalTensor::SetGlobalBuffer", buffer);
        sized_ = false;
    }
    __aicore__ inline GlobalTensor operator[](const uint64_t offset) const {
        if (sized_ && offset > size_)
            fadsl_rt::Fail("GlobalTensor::operator[]",
                           fadsl_rt::Str("offset ", offset, " is past the SetGlobalBuffer size ", size_));
        GlobalTensor r = *this;
        r.addr_ = addr_ + offset;
        if (sized_) r.size_ = size_ - offset;
        return r;
    }
    __aicore__ inline T GetValue(const uint64_t offset, FADSL_RT_SITE) const {
        ::fadsl_rt::Api fadslCall_("GetValue", fadslSite_, PIPE_S);
        const char* api = "GlobalTensor::GetValue";
        Span(api, offset, 1);
        T v;
        fadsl_rt::GmAccess(api, addr_ + offset, sizeof(T), false, [&] { std::memcpy(&v, addr_ + offset, sizeof(T)); });
        return v;
    }
    __aicore__ inline void SetValue(const uint64_t offset, T value, FADSL_RT_SITE) const {
        ::fadsl_rt::Api fadslCall_("SetValue", fadslSite_, PIPE_S);
        const char* api = "GlobalTensor::SetValue";
        Span(api, offset, 1);
        fadsl_rt::GmAccess(api, addr_ + offset, sizeof(T), true, [&] { std::memcpy(addr_ + offset, &value, sizeof(T)); });
    }
    __aicore__ inline uint64_t GetSize() const { return size_; }
    __aicore__ inline __gm__ T* GetPhyAddr() const { return addr_; }
    __aicore__ inline __gm__ T* GetPhyAddr(const uint64_t offset) const { return addr_ + offset; }

    // ---- runtime internals ----
    T* addr_ = nullptr;
    uint64_t size_ = 0;
    bool sized_ = false;

    void Bind(const char* api, T* p) {
        const uintptr_t a = reinterpret_cast<uintptr_t>(p);
        std::lock_guard<std::mutex> g(fadsl_rt::Gm().mu);
        if (!fadsl_rt::FindRegionLocked(a, 0))
            fadsl_rt::Fail(api, fadsl_rt::Str("pointer ", static_cast<void*>(p),
                                              " is not inside any buffer from AscendC::GmAlloc"));
        if (a % alignof(T) != 0)
            fadsl_rt::Fail(api, fadsl_rt::Str("GM address is not aligned to sizeof(", fadsl_rt::TypeName<T>::Get(), ")"));
        addr_ = p;
    }
    void Span(const char* api, uint64_t first, uint64_t count) const {
        if (!addr_) fadsl_rt::Fail(api, "GlobalTensor used before SetGlobalBuffer");
        if (sized_ && first + count > size_)
            fadsl_rt::Fail(api, fadsl_rt::Str("access to elements [", first, ", ", first + count,
                                              ") is outside the SetGlobalBuffer size ", size_));
    }
};

}  // namespace AscendC

namespace fadsl_rt {
// Checked access helpers used by every data-movement and compute call.
template <typename T>
void RequireMem(const char* api, const AscendC::LocalTensor<T>& t, std::initializer_list<Mem> allowed,
                const char* role) {
    t.Valid(api);
    for (Mem m : allowed)
        if (t.buf_->mem == m) return;
    std::string want;
    for (Mem m : allowed) want += (want.empty() ? "" : " or ") + std::string(MemName(m));
    Fail(api, Str(role, " must be in ", want, " but is a tensor of ", t.buf_->label, " (", MemName(t.buf_->mem), ")"));
}
template <typename T>
void RequireAligned(const char* api, const AscendC::LocalTensor<T>& t, uint32_t align, const char* role) {
    t.Valid(api);
    if (t.Addr() % align != 0)
        Fail(api, Str(role, " start address (byte ", t.Addr(), " of ", MemName(t.buf_->mem), ", ", t.buf_->label,
                      " + ", t.byteOff_, ") is not ", align, "-byte aligned"));
}
// Byte-range read/write of a local tensor by `pipe` (range relative to element 0 of the view).
// `init` false: the caller checks the bytes it really reads itself (level-0 lanes, vector_l0.h).
template <typename T>
void ReadBytes(const char* api, const AscendC::LocalTensor<T>& t, uint64_t lo, uint64_t hi, pipe_t pipe,
               bool init = true) {
    t.Valid(api);
    if (hi <= lo) return;
    if (t.byteOff_ + hi > t.buf_->len)
        Fail(api, Str("reads bytes [", t.byteOff_ + lo, ", ", t.byteOff_ + hi, ") of ", t.buf_->label,
                      ", past the buffer's ", t.buf_->len, " B"));
    CheckRead(*t.core_, *t.buf_, static_cast<uint32_t>(t.byteOff_ + lo), static_cast<uint32_t>(t.byteOff_ + hi), pipe,
              api, init);
    NoteLocal(*t.core_, t.buf_->mem, hi - lo, sizeof(T), TypeName<T>::Get(), pipe, false);
}
template <typename T>
void WriteBytes(const char* api, const AscendC::LocalTensor<T>& t, uint64_t lo, uint64_t hi, pipe_t pipe) {
    t.Valid(api);
    if (hi <= lo) return;
    if (t.byteOff_ + hi > t.buf_->len)
        Fail(api, Str("writes bytes [", t.byteOff_ + lo, ", ", t.byteOff_ + hi, ") of ", t.buf_->label,
                      ", past the buffer's ", t.buf_->len, " B"));
    RecordWrite(*t.core_, *t.buf_, static_cast<uint32_t>(t.byteOff_ + lo), static_cast<uint32_t>(t.byteOff_ + hi), pipe,
                api);
    NoteLocal(*t.core_, t.buf_->mem, hi - lo, sizeof(T), TypeName<T>::Get(), pipe, true);
}
template <typename T>
uint8_t* RawBytes(const AscendC::LocalTensor<T>& t) {
    return reinterpret_cast<uint8_t*>(t.Ptr(0));
}
}  // namespace fadsl_rt
