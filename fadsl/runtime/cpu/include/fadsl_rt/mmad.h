// fadsl CPU runtime: Mmad (L0A x L0B -> L0C, pipe M) and Fixpipe (L0C -> GM, pipe FIX).
// Layouts: see cube.h. Sources: Mmad.md (table 2, dtype table 7, GEMV note, alignment),
// Fixpipe（L0C到GM数据搬运）.md (FixpipeParamsV220 table), NZ2ND.md (pseudo-code).
#pragma once
#include "cube.h"

namespace fadsl_rt {
template <typename D, typename A, typename B>
constexpr bool MmadTypesOk() {
    return (std::is_same<A, half>::value && std::is_same<B, half>::value && std::is_same<D, float>::value) ||
           (std::is_same<A, bfloat16_t>::value && std::is_same<B, bfloat16_t>::value && std::is_same<D, float>::value) ||
           (std::is_same<A, float>::value && std::is_same<B, float>::value && std::is_same<D, float>::value) ||
           (std::is_same<A, int8_t>::value && std::is_same<B, int8_t>::value && std::is_same<D, int32_t>::value);
}

// The arithmetic of Mmad: each output is 0 + a(m,0)*b(0,n) + ... + a(m,k-1)*b(k-1,n) [+ C] in
// double, in that order, rounded once to T. Every product is exact in double (at most 24-bit
// significands), so the order of the additions is the only freedom, and it is fixed. The operands
// are first unpacked from their fractal layouts into dense double matrices (A row-major, B with n
// contiguous) so that the loop over n vectorises and each element is converted once, not m*n times.
template <typename T, typename U, typename S>
void MmadCompute(T* C, const U* A, const S* B, uint32_t M, uint32_t N, uint32_t K, uint32_t K1, bool gemv,
                 bool accumulate) {
    constexpr uint32_t k0 = 32 / sizeof(U);
    const uint32_t M1 = (M + 15) / 16, N1 = (N + 15) / 16;
    thread_local std::vector<double> a, b, acc;
    a.resize(size_t(M) * K);
    b.resize(size_t(K) * N);
    acc.resize(size_t(4) * N);
    for (uint32_t m = 0; m < M; ++m)
        for (uint32_t k = 0; k < K; ++k)
            a[size_t(m) * K + k] =
                ToD(A[gemv ? k : (uint64_t(m / 16) * K1 + k / k0) * (16 * k0) + (m % 16) * k0 + k % k0]);
    for (uint32_t k = 0; k < K; ++k)
        for (uint32_t n = 0; n < N; ++n)
            b[size_t(k) * N + n] = ToD(B[(uint64_t(k / k0) * N1 + n / 16) * (16 * k0) + (n % 16) * k0 + k % k0]);
    for (uint32_t m0 = 0; m0 < M; m0 += 4) {  // four rows share each pass over B
        const uint32_t rows = std::min<uint32_t>(4, M - m0);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (uint32_t k = 0; k < K; ++k) {
            const double* bk = b.data() + size_t(k) * N;
            for (uint32_t r = 0; r < rows; ++r) {
                const double am = a[size_t(m0 + r) * K + k];
                double* out = acc.data() + size_t(r) * N;
                for (uint32_t n = 0; n < N; ++n) out[n] += am * bk[n];
            }
        }
        for (uint32_t r = 0; r < rows; ++r) {
            const uint32_t m = m0 + r;
            for (uint32_t n = 0; n < N; ++n) {
                double v = acc[size_t(r) * N + n];
                T& c = C[(uint64_t(n / 16) * M1 + m / 16) * 256 + (m % 16) * 16 + n % 16];
                if (accumulate) v += ToD(c);
                c = static_cast<T>(v);
            }
        }
    }
}
}  // namespace fadsl_rt

namespace AscendC {

// C (L0C, Nz) = A (L0A, Zz) x B (L0B, Zn) [+ C]. Products and the k-sum of one call are formed in
// double and rounded once to the L0C type. UNVERIFIED: the cube's internal accumulation order and
// precision are not documented; this is the exact-then-round reading.
template <typename T, typename U, typename S>
__aicore__ inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                            const MmadParams& p, FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Mmad", fadslSite_);
    using namespace fadsl_rt;
    static_assert(MmadTypesOk<T, U, S>(),
                  "fadsl-cpu-runtime: Mmad supports (fm, filter, dst) = (half, half, float), (bfloat16_t, "
                  "bfloat16_t, float), (float, float, float), (int8_t, int8_t, int32_t) on A2/A3");
    const char* api = "Mmad";
    RequireMem(api, dst, {Mem::kL0C}, "dst");
    RequireMem(api, fm, {Mem::kL0A}, "fm");
    RequireMem(api, filter, {Mem::kL0B}, "filter");
    RequireAligned(api, dst, 1024, "dst (L0C)");
    RequireAligned(api, fm, 512, "fm (L0A)");
    RequireAligned(api, filter, 512, "filter (L0B)");
    CheckField(api, "m", p.m, 0, 4095);
    CheckField(api, "n", p.n, 0, 4095);
    CheckField(api, "k", p.k, 0, 4095);
    if (p.m == 0 || p.n == 0 || p.k == 0) return;  // documented NOP
    if (p.cmatrixSource) Fail(api, "cmatrixSource=true (C initialised from the BiasTable) is not supported");
    const bool accumulate = p.isBias || !p.cmatrixInitVal;
    constexpr uint32_t k0 = 32 / sizeof(U);
    const uint32_t M1 = (p.m + 15) / 16, N1 = (p.n + 15) / 16;
    uint32_t K1 = (p.k + k0 - 1) / k0;
    // UNVERIFIED: kDirectionAlign=true pads float K to 16 (K-方向对齐约束): K1 counted in 8-wide fractals.
    if (std::is_same<U, float>::value && p.kDirectionAlign) K1 = (p.k + 15) / 16 * 2;
    const bool gemv = p.m == 1;  // GEMV: L0A is read as ND (Mmad doc). UNVERIFIED detail of its layout.
    const uint64_t aBytes = gemv ? static_cast<uint64_t>(p.k) * sizeof(U) : uint64_t(M1) * K1 * kFractalBytes;
    NoteMmad(p.m, p.k, p.n);
    ReadBytes(api, fm, 0, aBytes, PIPE_M);
    ReadBytes(api, filter, 0, uint64_t(K1) * N1 * kFractalBytes, PIPE_M);
    const uint64_t cBytes = uint64_t(M1) * N1 * 256 * sizeof(T);
    if (accumulate) ReadBytes(api, dst, 0, cBytes, PIPE_M);
    WriteBytes(api, dst, 0, cBytes, PIPE_M);
    MmadCompute(dst.Ptr(0), fm.Ptr(0), filter.Ptr(0), p.m, p.n, p.k, K1, gemv, accumulate);
}

// L0C (Nz) -> GM. CFG_ROW_MAJOR: NZ2ND; CFG_NZ: NZ2NZ. srcStride in C0_SIZE = 16 elements,
// dstStride = elements per ND row (ROW_MAJOR) or 32 B blocks between Z columns (NZ).
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
__aicore__ inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p,
                               FADSL_RT_SITE) {
    ::fadsl_rt::Api fadslCall_("Fixpipe", fadslSite_);
    using namespace fadsl_rt;
    static_assert(std::is_same<U, float>::value || std::is_same<U, int32_t>::value,
                  "fadsl-cpu-runtime: Fixpipe source (L0C) must be float or int32_t");
    static_assert(config.format != CO2Layout::COLUMN_MAJOR,
                  "fadsl-cpu-runtime: CFG_COLUMN_MAJOR (NZ2DN) exists only on Ascend 950");
    const char* api = "Fixpipe (L0C->GM, FixpipeParamsV220)";
    RequireMem(api, src, {Mem::kL0C}, "src");
    RequireAligned(api, src, 64, "src (L0C)");
    CheckField(api, "nSize", p.nSize, 0, 4095);
    // mSize is at most 8192 with NZ2ND (CFG_ROW_MAJOR), 65535 otherwise (Fixpipe docs)
    CheckField(api, "mSize", p.mSize, 0, config.format == CO2Layout::ROW_MAJOR ? 8192 : 65535);
    if (p.mSize == 0 || p.nSize == 0 || p.ndNum == 0) return;  // documented NOP
    if (p.isChannelSplit) Fail(api, "isChannelSplit is not supported by the fadsl CPU runtime");
    const bool rowMajor = config.format == CO2Layout::ROW_MAJOR;
    // UNVERIFIED: the V220 table says nSize must be a multiple of 16, while NZ2ND's pseudo-code walks
    // ceil(nSize/16) blocks and catlass passes tail sizes; NZ2ND accepts any nSize, NZ2NZ needs 16x.
    if (!rowMajor && p.nSize % 16 != 0) Fail(api, Str("nSize ", p.nSize, " must be a multiple of 16 for CFG_NZ"));
    const uint32_t mAl = (p.mSize + 15u) / 16u * 16u;
    if (p.srcStride < mAl)
        Fail(api, Str("srcStride ", p.srcStride, " (C0_SIZE units = 16 elements per Z column row) is smaller than "
                      "mSize rounded up to 16 (", mAl, ")"));
    if (rowMajor && p.dstStride < p.nSize)
        Fail(api, Str("dstStride ", p.dstStride, " (elements per destination row) is smaller than nSize ", p.nSize));
    if (!rowMajor && p.dstStride == 0) Fail(api, "dstStride must not be 0");
    const QuantMode_t q = p.quantPre;
    const bool ok = (q == QuantMode_t::NoQuant && std::is_same<T, U>::value) ||
                    (q == QuantMode_t::F322F16 && std::is_same<U, float>::value && std::is_same<T, half>::value) ||
                    (q == QuantMode_t::F322BF16 && std::is_same<U, float>::value && std::is_same<T, bfloat16_t>::value);
    if (!ok)
        Fail(api, Str("quantPre ", static_cast<int>(q), " does not match L0C type ", TypeName<U>::Get(), " -> GM type ",
                      TypeName<T>::Get(), " (supported: NoQuant with equal types, F322F16 float->half, F322BF16 "
                      "float->bfloat16_t)"));
    const U* C = src.Ptr(0);
    const uint64_t nBlocks = (p.nSize + 15u) / 16u;
    uint64_t srcHi = 0;
    for (uint32_t nd = 0; nd < p.ndNum; ++nd)  // UNVERIFIED: srcNdStride unit taken as C0_SIZE (NZ2ND pseudo-code)
        srcHi = std::max<uint64_t>(srcHi, (uint64_t(nd) * p.srcNdStride + (nBlocks - 1) * p.srcStride + p.mSize) * 16);
    ReadBytes(api, src, 0, srcHi * sizeof(U), PIPE_FIX);
    // the record's bursts (one per row at dstStride: the timer's L2 places them); NZ output and
    // ndNum > 1 do not write at one stride and leave them unset
    if (rowMajor && p.ndNum == 1) NoteBlocks(p.mSize, uint64_t(p.nSize) * sizeof(T));
    std::vector<T> row(p.nSize);
    for (uint32_t nd = 0; nd < p.ndNum; ++nd) {
        const uint64_t sb = uint64_t(nd) * p.srcNdStride * 16, db = uint64_t(nd) * p.dstNdStride;
        for (uint32_t m = 0; m < p.mSize; ++m) {
            for (uint32_t n = 0; n < p.nSize; ++n) {
                double v = ToD(C[sb + uint64_t(n / 16) * p.srcStride * 16 + m * 16u + n % 16]);
                if (p.reluEn && v < 0) v = 0;
                row[n] = static_cast<T>(static_cast<U>(v));  // F322F16/F322BF16 round with CAST_RINT
            }
            if (rowMajor) {
                const uint64_t off = db + uint64_t(m) * p.dstStride;
                GmSpanBytes(api, dst, (off + p.nSize) * sizeof(T));
                T* d = dst.addr_ + off;
                GmStore(api, d, row.data(), p.nSize);  // an add under SetAtomicAdd (atomic.h)
            } else {
                const uint64_t colStride = uint64_t(p.dstStride) * 32 / sizeof(T);
                for (uint64_t j = 0; j < nBlocks; ++j) {
                    const uint64_t off = db + j * colStride + uint64_t(m) * 16;
                    GmSpanBytes(api, dst, (off + 16) * sizeof(T));
                    T* d = dst.addr_ + off;
                    GmStore(api, d, row.data() + j * 16, 16);
                }
            }
        }
    }
}

}  // namespace AscendC
