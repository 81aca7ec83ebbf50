// fadsl CPU runtime: cube data path on A2/A3 (arch 2201):
//   GM --DataCopy(Nd2NzParams), MTE2--> L1 --LoadData(LoadData2DParams), MTE1--> L0A/L0B
//   --Mmad, M--> L0C --Fixpipe(FixpipeParamsV220), FIX--> GM
// Layouts (Mmad doc table 2, 关键分形格式详解, load2d.py pseudo-code, NZ2ND pseudo-code):
//   L1 after Nd2Nz: NZ. Column block j (C0 = 32/sizeof(T) columns) starts at j*dstNzC0Stride*C0,
//     row n of it at n*dstNzNStride*C0 (elements).
//   L0A (A, m x k): "Zz": fractal (mb, kb) at (mb*K1 + kb)*512 B, element (m%16, k%k0) row-major.
//   L0B (B, k x n): "Zn": fractal (kb, nb) at (kb*N1 + nb)*512 B, element (k%k0, n%16) at n%16*k0 + k%k0.
//   L0C (C, m x n, float/int32): "Nz": fractal (nb, mb) at (nb*M1 + mb)*16*16 elements, row-major.
#pragma once
#include "copy.h"

namespace AscendC {

using LoadData2dParams = struct LoadData2DParams;
struct LoadData2DParams {
    __aicore__ LoadData2DParams() {}
    __aicore__ LoadData2DParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                                const uint8_t sidIn, const uint16_t dstGapIn, const bool ifTransposeIn,
                                const uint8_t addrModeIn)
        : startIndex(startIndexIn), dstGap(dstGapIn), srcStride(srcStrideIn), ifTranspose(ifTransposeIn),
          repeatTimes(repeatTimesIn), sid(sidIn), addrMode(addrModeIn) {}
    uint16_t startIndex = 0;
    uint16_t dstGap = 0;
    uint16_t srcStride = 0;
    bool ifTranspose = 0;
    uint8_t repeatTimes = 0;
    uint8_t sid = 0;
    uint8_t addrMode = 0;
};

struct MmadParams {
    __aicore__ MmadParams() {}
    __aicore__ MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const bool isBiasIn,
                          const int32_t fmOffsetIn, const bool enSsparseIn, const bool enWinogradAIn,
                          const bool enWinogradBIn)
        : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn) {}
    __aicore__ MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const uint8_t unitFlagIn,
                          const bool cmatrixSourceIn, const bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn),
          cmatrixInitVal(cmatrixInitValIn) {}
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;
};

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };
struct FixpipeConfig {
    CO2Layout format;
    __aicore__ constexpr inline FixpipeConfig(CO2Layout format_) : format(format_) {}
    __aicore__ constexpr inline FixpipeConfig(CO2Layout format_, bool) : format(format_) {}
    __aicore__ constexpr inline FixpipeConfig(CO2Layout format_, bool, bool) : format(format_) {}
};
inline constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
inline constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};
inline constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR};

struct FixpipeParamsV220 {
    __aicore__ FixpipeParamsV220() {}
    __aicore__ FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                                 const uint32_t dstStrideIn, const bool reluEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
    __aicore__ FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                                 const uint32_t dstStrideIn, const bool reluEnIn, const QuantMode_t quantPreIn,
                                 const int64_t deqScalarIn, const uint16_t ndNumIn, const uint16_t srcNdStrideIn,
                                 const uint16_t dstNdStrideIn, const uint8_t unitFlagIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), quantPre(quantPreIn),
          deqScalar(static_cast<uint64_t>(deqScalarIn)), ndNum(ndNumIn), srcNdStride(srcNdStrideIn),
          dstNdStride(dstNdStrideIn), reluEn(reluEnIn), unitFlag(unitFlagIn) {}
    __aicore__ FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                                 const uint32_t dstStrideIn, const bool reluEnIn, const QuantMode_t quantPreIn,
                                 const int64_t deqScalarIn, const uint16_t ndNumIn, const uint16_t srcNdStrideIn,
                                 const uint16_t dstNdStrideIn, const uint8_t unitFlagIn, const bool isChannelSplitIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), quantPre(quantPreIn),
          deqScalar(static_cast<uint64_t>(deqScalarIn)), ndNum(ndNumIn), srcNdStride(srcNdStrideIn),
          dstNdStride(dstNdStrideIn), reluEn(reluEnIn), unitFlag(unitFlagIn), isChannelSplit(isChannelSplitIn) {}
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
};

// GM -> L1 with ND -> NZ conversion (DataCopy（GMToL1随路转换-ND2NZ搬运）.md). Pipe MTE2.
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p,
                                FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("DataCopy", fadslSite_);
    using namespace fadsl_rt;
    const char* api = "DataCopy (GM->L1, Nd2NzParams)";
    RequireMem(api, dst, {Mem::kL1}, "dst");
    RequireAligned(api, dst, 32, "dst (L1)");
    CheckField(api, "ndNum", p.ndNum, 0, 4095);
    CheckField(api, "nValue", p.nValue, 0, 16384);
    CheckField(api, "dstNzC0Stride", p.dstNzC0Stride, 0, 16384);
    CheckField(api, "dstNzNStride", p.dstNzNStride, 0, 16384);
    CheckField(api, "dstNzMatrixStride", p.dstNzMatrixStride, 0, 16384);
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;  // documented NOP
    if (p.srcDValue < 1 || p.dstNzC0Stride < 1 || p.dstNzNStride < 1)
        Fail(api, "srcDValue, dstNzC0Stride and dstNzNStride must be at least 1");
    constexpr uint64_t c0 = 32 / sizeof(T);
    const uint64_t dBlocks = (p.dValue + c0 - 1) / c0;
    uint64_t hi = 0, gHi = 0;  // extents in elements
    for (uint64_t nd = 0; nd < p.ndNum; ++nd) {
        const uint64_t db = nd * p.dstNzMatrixStride, sb = nd * p.srcNdMatrixStride;
        hi = std::max<uint64_t>(hi, db + (dBlocks - 1) * p.dstNzC0Stride * c0 + (p.nValue - 1ull) * p.dstNzNStride * c0 + c0);
        gHi = std::max<uint64_t>(gHi, sb + (p.nValue - 1ull) * p.srcDValue + p.dValue);
    }
    WriteBytes(api, dst, 0, hi * sizeof(T), PIPE_MTE2);
    GmSpanBytes(api, src, gHi * sizeof(T));
    NoteBlocks(uint64_t(p.ndNum) * p.nValue, p.dValue * sizeof(T));
    std::vector<T> row(dBlocks * c0);
    for (uint64_t nd = 0; nd < p.ndNum; ++nd) {
        const uint64_t db = nd * p.dstNzMatrixStride, sb = nd * p.srcNdMatrixStride;
        for (uint64_t n = 0; n < p.nValue; ++n) {
            const T* s = src.addr_ + sb + n * p.srcDValue;
            std::memset(static_cast<void*>(row.data()), 0, row.size() * sizeof(T));  // pad d to C0 with zeros
            GmAccess(api, s, p.dValue * sizeof(T), false, [&] { std::memcpy(row.data(), s, p.dValue * sizeof(T)); });
            for (uint64_t j = 0; j < dBlocks; ++j)
                std::memcpy(dst.Ptr(db + j * p.dstNzC0Stride * c0 + n * p.dstNzNStride * c0), row.data() + j * c0,
                            c0 * sizeof(T));
        }
    }
}

// L1 -> L0A/L0B, 512-byte fractals (LoadData_2D.md, load2d.py). Pipe MTE1.
template <typename T>
__aicore__ inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p,
                                FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("LoadData", fadslSite_);
    using namespace fadsl_rt;
    const char* api = "LoadData (L1->L0, LoadData2DParams)";
    RequireMem(api, dst, {Mem::kL0A, Mem::kL0B}, "dst");
    RequireMem(api, src, {Mem::kL1}, "src");
    RequireAligned(api, dst, 512, "dst (L0A/L0B)");
    RequireAligned(api, src, 32, "src (L1)");
    if (p.repeatTimes == 0) return;  // documented NOP
    if (p.addrMode != 0) Fail(api, "addrMode must be 0 on the L1->L0 path (only GM->L1 supports decrementing)");
    if (p.ifTranspose && sizeof(T) != 2) Fail(api, "ifTranspose supports only b16 types (half, bfloat16_t, int16)");
    constexpr uint32_t fe = kFractalBytes / sizeof(T);
    const uint32_t rowElems = 32 / sizeof(T);
    std::vector<T> tmp(fe);
    NoteRepeats(p.repeatTimes);
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        const uint64_t sf = p.startIndex + static_cast<uint64_t>(p.srcStride) * i;
        const uint64_t df = static_cast<uint64_t>(p.dstGap + 1u) * i;
        ReadBytes(api, src, sf * kFractalBytes, (sf + 1) * kFractalBytes, PIPE_MTE1);
        WriteBytes(api, dst, df * kFractalBytes, (df + 1) * kFractalBytes, PIPE_MTE1);
        const T* s = src.Ptr(sf * fe);
        if (!p.ifTranspose) {
            std::memcpy(tmp.data(), s, kFractalBytes);
        } else {
            for (uint32_t r = 0; r < 16; ++r)
                for (uint32_t c = 0; c < rowElems; ++c) tmp[r * rowElems + c] = s[c * rowElems + r];
        }
        std::memcpy(dst.Ptr(df * fe), tmp.data(), kFractalBytes);
    }
}

}  // namespace AscendC
