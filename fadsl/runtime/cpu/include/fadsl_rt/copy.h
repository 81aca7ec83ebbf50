// fadsl CPU runtime: DataCopy / DataCopyPad between GM and UB (and UB->UB), with the parameter
// structs of include/basic_api/kernel_struct_data_copy.h. Units (docs under
// Memory矢量计算/数据搬运): DataCopy(count) counts elements and silently rounds count*sizeof(T)
// down to a multiple of 32 B; DataCopyParams counts 32 B blocks; DataCopyPad blockLen is bytes,
// the GM-side stride is bytes and the UB-side stride is 32 B blocks.
#pragma once
#include "fields.h"
#include "atomic.h"
#include "sync.h"

namespace AscendC {

struct DataCopyParams {
    __aicore__ DataCopyParams() {}
    __aicore__ DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn,
                              const uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    // srcStride and dstStride will be deprecated, use srcGap and dstGap instead (2026 header).
    union {
        uint16_t srcGap = 0;
        uint16_t srcStride;
    };
    union {
        uint16_t dstGap = 0;
        uint16_t dstStride;
    };
};
struct DataCopyExtParams {
    __aicore__ DataCopyExtParams() {}
    __aicore__ DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn,
                                 const uint32_t dstStrideIn, const uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};
struct DataCopyPadParams {
    __aicore__ DataCopyPadParams() {}
    __aicore__ DataCopyPadParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue,
                                 const uint64_t padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
};
template <typename T>
struct DataCopyPadExtParams {
    __aicore__ DataCopyPadExtParams() {}
    __aicore__ DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue,
                                    T padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = 0;
};
struct Nd2NzParams {
    __aicore__ Nd2NzParams() {}
    __aicore__ Nd2NzParams(const uint16_t ndNumIn, const uint16_t nValueIn, const uint16_t dValueIn,
                           const uint16_t srcNdMatrixStrideIn, const uint16_t srcDValueIn, const uint16_t dstNzC0StrideIn,
                           const uint16_t dstNzNStrideIn, const uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn) {}
    uint16_t ndNum = 0;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
};

}  // namespace AscendC

namespace fadsl_rt {
using AscendC::GlobalTensor;
using AscendC::LocalTensor;

// One contiguous GM <-> local transfer of `bytes` bytes: GM byte offset `g`, local byte offset `l`.
template <typename T>
void GmToLocal(const char* api, const LocalTensor<T>& dst, uint64_t l, const GlobalTensor<T>& src, uint64_t g,
               uint64_t bytes) {
    if (bytes == 0) return;
    WriteBytes(api, dst, l, l + bytes, PIPE_MTE2);
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.addr_) + g;
    uint8_t* d = RawBytes(dst) + l;
    GmAccess(api, s, bytes, false, [&] { std::memcpy(d, s, bytes); });
}
template <typename T>
void LocalToGm(const char* api, const GlobalTensor<T>& dst, uint64_t g, const LocalTensor<T>& src, uint64_t l,
               uint64_t bytes) {
    if (bytes == 0) return;
    ReadBytes(api, src, l, l + bytes, PIPE_MTE3);
    T* d = reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(dst.addr_) + g);
    const T* s = reinterpret_cast<const T*>(RawBytes(src) + l);
    GmStore(api, d, s, bytes / sizeof(T));  // a plain write, or an add under SetAtomicAdd (atomic.h)
}
template <typename T>
void GmSpanBytes(const char* api, const GlobalTensor<T>& t, uint64_t hiBytes) {
    t.Span(api, 0, 0);
    if (t.sized_ && hiBytes > t.size_ * sizeof(T))
        Fail(api, Str("GM access up to byte ", hiBytes, " is outside the SetGlobalBuffer size (", t.size_, " x ",
                      sizeof(T), " B)"));
}
inline uint32_t RoundDown32(uint64_t bytes, const char* api, uint32_t count, size_t elem) {
    const uint64_t r = bytes / 32 * 32;
    if (r != bytes)
        WarnOnce(Str(api, count, "x", elem),
                 Str(api, ": count ", count, " x ", elem, " B = ", bytes,
                     " B is not a multiple of 32 B; the hardware silently rounds the transfer down to ", r,
                     " B (the last ", bytes - r, " B are not copied). Use DataCopyPad for unaligned lengths."));
    return static_cast<uint32_t>(r);
}
inline void CheckBlockCount(const char* api, uint32_t n) {
    if (n > 4095) Fail(api, Str("blockCount ", n, " is outside [0, 4095]"));
}
template <typename T>
void CheckPadSupported() {
    static_assert(kHasDataCopyPad || sizeof(T) == 0,
                  "fadsl-cpu-runtime: DataCopyPad is not supported on this target (FADSL_HAS_DATACOPYPAD=0: "
                  "Atlas training series 910A and Atlas inference series 310P have no DataCopyPad)");
}
// GM -> UB with per-block padding to 32 B. blockLen/srcGapBytes in bytes, dstGapBlocks in 32 B.
template <typename T>
void PadIn(const char* api, const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t blockCount,
           uint32_t blockLen, uint64_t srcGapBytes, uint64_t dstGapBlocks, bool isPad, uint32_t left, uint32_t right,
           const uint8_t* padBits) {
    CheckPadSupported<T>();
    RequireMem(api, dst, {Mem::kUB}, "dst");
    RequireAligned(api, dst, 32, "dst (UB)");
    CheckBlockCount(api, blockCount);
    CheckField(api, "blockLen", blockLen, 0, 2097151);
    if (blockCount == 0 || blockLen == 0) return;  // documented NOP
    NoteBlocks(blockCount, blockLen);
    if (blockLen % sizeof(T) != 0) Fail(api, Str("blockLen ", blockLen, " B is not a multiple of sizeof(T) = ", sizeof(T)));
    if (left * sizeof(T) > 32 || right * sizeof(T) > 32)
        Fail(api, Str("leftPadding/rightPadding (", left, "/", right, " elements) may not exceed 32 B each"));
    const uint64_t lb = left * sizeof(T), rb = right * sizeof(T);
    const uint64_t slot = (lb + blockLen + rb + 31) / 32 * 32;
    GmSpanBytes(api, src, static_cast<uint64_t>(blockCount - 1) * (blockLen + srcGapBytes) + blockLen);
    uint8_t* base = RawBytes(dst);
    for (uint32_t i = 0; i < blockCount; ++i) {
        const uint64_t l = i * (slot + dstGapBlocks * 32);
        const uint64_t g = i * (static_cast<uint64_t>(blockLen) + srcGapBytes);
        GmToLocal(api, dst, l + lb, src, g, blockLen);
        WriteBytes(api, dst, l, l + lb, PIPE_MTE2);
        WriteBytes(api, dst, l + lb + blockLen, l + slot, PIPE_MTE2);
        // UNVERIFIED detail: "random" padding (isPad=false, no SetPadValue) is modelled as 0xFF poison.
        auto fill = [&](uint64_t from, uint64_t to, const uint8_t* val) {
            for (uint64_t b = from; b < to; b += sizeof(T)) {
                if (val) std::memcpy(base + l + b, val, sizeof(T));
                else std::memset(base + l + b, 0xFF, sizeof(T));
            }
        };
        fill(0, lb, isPad ? padBits : nullptr);
        fill(lb + blockLen, lb + blockLen + rb, isPad ? padBits : nullptr);
        // dummy up to 32 B: first element of the block when no padding is requested (DataCopyPad doc)
        const uint8_t* dummy = (left == 0 && right == 0) ? base + l : (isPad ? padBits : nullptr);
        fill(lb + blockLen + rb, slot, dummy);
    }
}
// UB -> GM dropping the 32 B dummy tail of every block. srcGapBlocks in 32 B, dstGapBytes in bytes.
template <typename T>
void PadOut(const char* api, const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t blockCount,
            uint32_t blockLen, uint64_t srcGapBlocks, uint64_t dstGapBytes) {
    CheckPadSupported<T>();
    RequireMem(api, src, {Mem::kUB}, "src");
    RequireAligned(api, src, 32, "src (UB)");
    CheckBlockCount(api, blockCount);
    CheckField(api, "blockLen", blockLen, 0, 2097151);
    if (blockCount == 0 || blockLen == 0) return;
    NoteBlocks(blockCount, blockLen);
    if (blockLen % sizeof(T) != 0) Fail(api, Str("blockLen ", blockLen, " B is not a multiple of sizeof(T) = ", sizeof(T)));
    const uint64_t slot = (static_cast<uint64_t>(blockLen) + 31) / 32 * 32;
    GmSpanBytes(api, dst, static_cast<uint64_t>(blockCount - 1) * (blockLen + dstGapBytes) + blockLen);
    for (uint32_t i = 0; i < blockCount; ++i)
        LocalToGm(api, dst, i * (static_cast<uint64_t>(blockLen) + dstGapBytes), src, i * (slot + srcGapBlocks * 32),
                  blockLen);
}
}  // namespace fadsl_rt

namespace AscendC {

template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count,
                                FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("DataCopy", fadslSite_);
    const char* api = "DataCopy (GM->local, count)";
    fadsl_rt::RequireMem(api, dst, {fadsl_rt::Mem::kUB, fadsl_rt::Mem::kL1}, "dst");
    fadsl_rt::RequireAligned(api, dst, 32, "dst");
    const uint32_t bytes = fadsl_rt::RoundDown32(static_cast<uint64_t>(count) * sizeof(T), "DataCopy (GM->local)", count,
                                                 sizeof(T));
    fadsl_rt::GmSpanBytes(api, src, bytes);
    fadsl_rt::NoteBlocks(1, bytes);
    fadsl_rt::GmToLocal(api, dst, 0, src, 0, bytes);
}
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
                                FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("DataCopy", fadslSite_);
    const char* api = "DataCopy (UB->GM, count)";
    fadsl_rt::RequireMem(api, src, {fadsl_rt::Mem::kUB}, "src");
    fadsl_rt::RequireAligned(api, src, 32, "src");
    const uint32_t bytes =
        fadsl_rt::RoundDown32(static_cast<uint64_t>(count) * sizeof(T), "DataCopy (UB->GM)", count, sizeof(T));
    fadsl_rt::GmSpanBytes(api, dst, bytes);
    fadsl_rt::NoteBlocks(1, bytes);
    fadsl_rt::LocalToGm(api, dst, 0, src, 0, bytes);
}
// UB -> UB. UNVERIFIED: issued on PIPE_V (the vector unit moves UB to UB) and, like GM<->UB, count*sizeof(T)
// rounded down to 32 B.
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
                                FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("DataCopy", fadslSite_);
    const char* api = "DataCopy (UB->UB, count)";
    fadsl_rt::RequireMem(api, dst, {fadsl_rt::Mem::kUB}, "dst");
    fadsl_rt::RequireMem(api, src, {fadsl_rt::Mem::kUB}, "src");
    fadsl_rt::RequireAligned(api, dst, 32, "dst");
    fadsl_rt::RequireAligned(api, src, 32, "src");
    const uint32_t bytes =
        fadsl_rt::RoundDown32(static_cast<uint64_t>(count) * sizeof(T), "DataCopy (UB->UB)", count, sizeof(T));
    fadsl_rt::NoteBlocks(1, bytes);
    fadsl_rt::ReadBytes(api, src, 0, bytes, PIPE_V);
    fadsl_rt::WriteBytes(api, dst, 0, bytes, PIPE_V);
    std::memmove(fadsl_rt::RawBytes(dst), fadsl_rt::RawBytes(src), bytes);
}
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                                FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("DataCopy", fadslSite_);
    const char* api = "DataCopy (GM->local, DataCopyParams)";
    fadsl_rt::RequireMem(api, dst, {fadsl_rt::Mem::kUB, fadsl_rt::Mem::kL1}, "dst");
    fadsl_rt::RequireAligned(api, dst, 32, "dst");
    fadsl_rt::CheckBlockCount(api, p.blockCount);
    if (p.blockCount == 0 || p.blockLen == 0) return;
    const uint64_t len = p.blockLen * 32ull;
    fadsl_rt::NoteBlocks(p.blockCount, len);
    fadsl_rt::GmSpanBytes(api, src, (p.blockCount - 1ull) * (len + p.srcGap * 32ull) + len);
    for (uint32_t i = 0; i < p.blockCount; ++i)
        fadsl_rt::GmToLocal(api, dst, i * (len + p.dstGap * 32ull), src, i * (len + p.srcGap * 32ull), len);
}
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                                FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("DataCopy", fadslSite_);
    const char* api = "DataCopy (UB->GM, DataCopyParams)";
    fadsl_rt::RequireMem(api, src, {fadsl_rt::Mem::kUB}, "src");
    fadsl_rt::RequireAligned(api, src, 32, "src");
    fadsl_rt::CheckBlockCount(api, p.blockCount);
    if (p.blockCount == 0 || p.blockLen == 0) return;
    const uint64_t len = p.blockLen * 32ull;
    fadsl_rt::NoteBlocks(p.blockCount, len);
    fadsl_rt::GmSpanBytes(api, dst, (p.blockCount - 1ull) * (len + p.dstGap * 32ull) + len);
    for (uint32_t i = 0; i < p.blockCount; ++i)
        fadsl_rt::LocalToGm(api, dst, i * (len + p.dstGap * 32ull), src, i * (len + p.srcGap * 32ull), len);
}
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                                FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("DataCopy", fadslSite_);
    const char* api = "DataCopy (UB->UB, DataCopyParams)";
    fadsl_rt::RequireMem(api, dst, {fadsl_rt::Mem::kUB}, "dst");
    fadsl_rt::RequireMem(api, src, {fadsl_rt::Mem::kUB}, "src");
    fadsl_rt::RequireAligned(api, dst, 32, "dst");
    fadsl_rt::RequireAligned(api, src, 32, "src");
    fadsl_rt::CheckBlockCount(api, p.blockCount);
    if (p.blockCount == 0 || p.blockLen == 0) return;
    const uint64_t len = p.blockLen * 32ull;
    fadsl_rt::NoteBlocks(p.blockCount, len);
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        const uint64_t s = i * (len + p.srcGap * 32ull), d = i * (len + p.dstGap * 32ull);
        fadsl_rt::ReadBytes(api, src, s, s + len, PIPE_V);
        fadsl_rt::WriteBytes(api, dst, d, d + len, PIPE_V);
        std::memmove(fadsl_rt::RawBytes(dst) + d, fadsl_rt::RawBytes(src) + s, len);
    }
}

// ---- DataCopyPad: the four A2/A3 overloads (kernel_operator_data_copy_intf.h l.373-431) ----------
// UNVERIFIED: DataCopyPadParams::paddingValue (uint64_t) is taken as the bit pattern of T in its
// low sizeof(T) bytes.
template <typename T>
__aicore__ inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                                   const DataCopyParams& dataCopyParams, const DataCopyPadParams& padParams,
                                   FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("DataCopyPad", fadslSite_);
    uint8_t bits[8];
    std::memcpy(bits, &padParams.paddingValue, 8);
    fadsl_rt::PadIn("DataCopyPad (GM->UB, DataCopyParams)", dst, src, dataCopyParams.blockCount,
                    dataCopyParams.blockLen, dataCopyParams.srcStride, dataCopyParams.dstStride, padParams.isPad,
                    padParams.leftPadding, padParams.rightPadding, bits);
}
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                                   const DataCopyParams& dataCopyParams, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("DataCopyPad", fadslSite_);
    fadsl_rt::PadOut("DataCopyPad (UB->GM, DataCopyParams)", dst, src, dataCopyParams.blockCount,
                     dataCopyParams.blockLen, dataCopyParams.srcStride, dataCopyParams.dstStride);
}
template <typename T>
__aicore__ inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                                   const DataCopyExtParams& dataCopyParams, const DataCopyPadExtParams<T>& padParams,
                                   FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("DataCopyPad", fadslSite_);
    uint8_t bits[sizeof(T)];
    std::memcpy(bits, &padParams.paddingValue, sizeof(T));
    fadsl_rt::PadIn("DataCopyPad (GM->UB, DataCopyExtParams)", dst, src, dataCopyParams.blockCount,
                    dataCopyParams.blockLen, dataCopyParams.srcStride, dataCopyParams.dstStride, padParams.isPad,
                    padParams.leftPadding, padParams.rightPadding, bits);
}
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                                   const DataCopyExtParams& dataCopyParams, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("DataCopyPad", fadslSite_);
    fadsl_rt::PadOut("DataCopyPad (UB->GM, DataCopyExtParams)", dst, src, dataCopyParams.blockCount,
                     dataCopyParams.blockLen, dataCopyParams.srcStride, dataCopyParams.dstStride);
}

}  // namespace AscendC
