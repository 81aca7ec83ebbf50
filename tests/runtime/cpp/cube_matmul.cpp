// Cube path tests: the asc-devkit matmul_basic_api sample's exact call sequence (GM->L1 Nd2Nz,
// L1->L0A/L0B LoadData incl. transpose, Mmad, Fixpipe F322F16) plus q @ k^T and non-square cases.
// Buffers come from TPipe/TBuf instead of the sample's LocalMemAllocator.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tikicpulib.h"

constexpr uint32_t CUBE_BLOCK = 16;

template <uint32_t M, uint32_t K, uint32_t N, uint32_t singleCoreM, uint32_t baseM, uint32_t baseK, uint32_t baseN>
__aicore__ inline void mmad_custom(__gm__ uint8_t* a, __gm__ uint8_t* b, __gm__ uint8_t* c) {
    AscendC::GlobalTensor<half> aGM;
    AscendC::GlobalTensor<half> bGM;
    AscendC::GlobalTensor<half> cGM;
    uint32_t mIterIdx = AscendC::GetBlockIdx() % (M / singleCoreM);
    aGM.SetGlobalBuffer((__gm__ half*)a + mIterIdx * singleCoreM * K);
    bGM.SetGlobalBuffer((__gm__ half*)b);
    cGM.SetGlobalBuffer((__gm__ half*)c + mIterIdx * singleCoreM * N);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::A1> a1Buf;
    AscendC::TBuf<AscendC::TPosition::B1> b1Buf;
    AscendC::TBuf<AscendC::TPosition::A2> a2Buf;
    AscendC::TBuf<AscendC::TPosition::B2> b2Buf;
    AscendC::TBuf<AscendC::TPosition::CO1> cBuf;
    pipe.InitBuffer(a1Buf, baseM * baseK * sizeof(half));
    pipe.InitBuffer(b1Buf, baseK * baseN * sizeof(half));
    pipe.InitBuffer(a2Buf, baseM * baseK * sizeof(half));
    pipe.InitBuffer(b2Buf, baseK * baseN * sizeof(half));
    pipe.InitBuffer(cBuf, baseM * baseN * sizeof(float));
    AscendC::LocalTensor<half> a1Local = a1Buf.Get<half>();
    AscendC::LocalTensor<half> b1Local = b1Buf.Get<half>();
    AscendC::LocalTensor<half> a2Local = a2Buf.Get<half>();
    AscendC::LocalTensor<half> b2Local = b2Buf.Get<half>();
    AscendC::LocalTensor<float> cLocal = cBuf.Get<float>();
    AscendC::DataCopy(a1Local, aGM, AscendC::Nd2NzParams{1, baseM, baseK, 0, K, baseM, 1, 0});
    AscendC::DataCopy(b1Local, bGM, AscendC::Nd2NzParams{1, baseK, baseN, 0, N, baseK, 1, 0});
    AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(EVENT_ID0);
    for (int i = 0; i < baseM / CUBE_BLOCK; ++i) {
        AscendC::LoadData(a2Local[i * baseK * CUBE_BLOCK], a1Local[i * 512 / sizeof(half)],
                          AscendC::LoadData2DParams{0, baseK / CUBE_BLOCK, baseM / CUBE_BLOCK, 0, 0, false, 0});
    }
    for (int i = 0; i < baseK / CUBE_BLOCK; ++i) {
        AscendC::LoadData(b2Local[i * baseN * CUBE_BLOCK], b1Local[i * 512 / sizeof(half)],
                          AscendC::LoadData2DParams{0, baseN / CUBE_BLOCK, baseK / CUBE_BLOCK, 0, 0, true, 0});
    }
    AscendC::SetFlag<AscendC::HardEvent::MTE1_M>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE1_M>(EVENT_ID0);
    AscendC::Mmad(cLocal, a2Local, b2Local, AscendC::MmadParams{baseM, baseN, baseK, 0, false, true});
    AscendC::SetFlag<AscendC::HardEvent::M_FIX>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::M_FIX>(EVENT_ID0);
    AscendC::Fixpipe(cGM, cLocal,
                     AscendC::FixpipeParamsV220{baseN, baseM, baseM, N, false, QuantMode_t::F322F16, 0, 1, 0, 0, 0});
    AscendC::PipeBarrier<PIPE_ALL>();
}
extern "C" __global__ __aicore__ void mm_sample(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    mmad_custom<256, 64, 256, 128, 128, 64, 256>(a, b, c);
}

// C[M,N] = Q[M,K] @ Kt[N,K]^T: Kt loaded ND->NZ, its fractals already are L0B's Zn fractals.
// T = half or float (k0 = 32 / sizeof(T)), output OutT via Fixpipe.
template <typename T, typename OutT, uint32_t M, uint32_t K, uint32_t N, bool kNzOut = false>
__aicore__ inline void qk_t(GM_ADDR q, GM_ADDR k, GM_ADDR c, QuantMode_t quant) {
    constexpr uint32_t k0 = 32 / sizeof(T);
    AscendC::GlobalTensor<T> qGM, kGM;
    AscendC::GlobalTensor<OutT> cGM;
    qGM.SetGlobalBuffer((__gm__ T*)q, M * K);
    kGM.SetGlobalBuffer((__gm__ T*)k, N * K);
    cGM.SetGlobalBuffer((__gm__ OutT*)c, M * N);
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::A1, 1> qA1;
    AscendC::TQue<AscendC::TPosition::B1, 1> kB1;
    AscendC::TBuf<AscendC::TPosition::A2> a2Buf;
    AscendC::TBuf<AscendC::TPosition::B2> b2Buf;
    AscendC::TBuf<AscendC::TPosition::CO1> cBuf;
    pipe.InitBuffer(qA1, 1, M * K * sizeof(T));
    pipe.InitBuffer(kB1, 1, N * K * sizeof(T));
    pipe.InitBuffer(a2Buf, M * K * sizeof(T));
    pipe.InitBuffer(b2Buf, N * K * sizeof(T));
    pipe.InitBuffer(cBuf, M * N * sizeof(float));
    auto q1 = qA1.AllocTensor<T>();
    auto k1 = kB1.AllocTensor<T>();
    AscendC::DataCopy(q1, qGM, AscendC::Nd2NzParams{1, M, K, 0, K, M, 1, 0});
    AscendC::DataCopy(k1, kGM, AscendC::Nd2NzParams{1, N, K, 0, K, N, 1, 0});
    qA1.EnQue(q1);
    kB1.EnQue(k1);
    auto qa = qA1.DeQue<T>();
    auto kb = kB1.DeQue<T>();
    auto a2 = a2Buf.Get<T>();
    auto b2 = b2Buf.Get<T>();
    for (uint32_t i = 0; i < M / 16; ++i)
        AscendC::LoadData(a2[i * K * 16], qa[i * 512 / sizeof(T)],
                          AscendC::LoadData2DParams{0, K / k0, M / 16, 0, 0, false, 0});
    AscendC::LoadData(b2, kb, AscendC::LoadData2DParams{0, (K / k0) * (N / 16), 1, 0, 0, false, 0});
    qA1.FreeTensor(qa);
    kB1.FreeTensor(kb);
    AscendC::SetFlag<AscendC::HardEvent::MTE1_M>(EVENT_ID1);
    AscendC::WaitFlag<AscendC::HardEvent::MTE1_M>(EVENT_ID1);
    auto cl = cBuf.Get<float>();
    AscendC::MmadParams mp;
    mp.m = M;
    mp.n = N;
    mp.k = K;
    AscendC::Mmad(cl, a2, b2, mp);
    AscendC::SetFlag<AscendC::HardEvent::M_FIX>(EVENT_ID1);
    AscendC::WaitFlag<AscendC::HardEvent::M_FIX>(EVENT_ID1);
    AscendC::FixpipeParamsV220 fp;
    fp.nSize = N;
    fp.mSize = M;
    fp.srcStride = (M + 15) / 16 * 16;
    fp.dstStride = N;
    fp.quantPre = quant;
    if constexpr (kNzOut) {
        fp.dstStride = M * 16 * sizeof(OutT) / 32;  // NZ2NZ: 32 B blocks between Z columns
        AscendC::Fixpipe<OutT, float, AscendC::CFG_NZ>(cGM, cl, fp);
    } else {
        AscendC::Fixpipe<OutT, float, AscendC::CFG_ROW_MAJOR>(cGM, cl, fp);
    }
}
extern "C" __global__ __aicore__ void qkt_half(GM_ADDR q, GM_ADDR k, GM_ADDR c) {
    qk_t<half, half, 64, 128, 96>(q, k, c, QuantMode_t::F322F16);
}
extern "C" __global__ __aicore__ void qkt_half_nz(GM_ADDR q, GM_ADDR k, GM_ADDR c) {
    qk_t<half, half, 64, 128, 96, true>(q, k, c, QuantMode_t::F322F16);
}
extern "C" __global__ __aicore__ void qkt_float(GM_ADDR q, GM_ADDR k, GM_ADDR c) {
    qk_t<float, float, 32, 48, 64>(q, k, c, QuantMode_t::NoQuant);
}

// Non-square A[M,K] @ B[K,N] (half in, float out) in the sample's style, accumulated over two
// k-halves with cmatrixInitVal=false for the second Mmad.
extern "C" __global__ __aicore__ void mm_nonsquare(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    constexpr uint32_t M = 48, K = 96, N = 32, KH = K / 2;
    AscendC::GlobalTensor<half> aGM, bGM;
    AscendC::GlobalTensor<float> cGM;
    aGM.SetGlobalBuffer((__gm__ half*)a, M * K);
    bGM.SetGlobalBuffer((__gm__ half*)b, K * N);
    cGM.SetGlobalBuffer((__gm__ float*)c, M * N);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::A1> a1Buf;
    AscendC::TBuf<AscendC::TPosition::B1> b1Buf;
    AscendC::TBuf<AscendC::TPosition::A2> a2Buf;
    AscendC::TBuf<AscendC::TPosition::B2> b2Buf;
    AscendC::TBuf<AscendC::TPosition::CO1> cBuf;
    pipe.InitBuffer(a1Buf, M * K * 2);
    pipe.InitBuffer(b1Buf, K * N * 2);
    pipe.InitBuffer(a2Buf, M * KH * 2);
    pipe.InitBuffer(b2Buf, KH * N * 2);
    pipe.InitBuffer(cBuf, M * N * 4);
    auto a1 = a1Buf.Get<half>(), b1 = b1Buf.Get<half>(), a2 = a2Buf.Get<half>(), b2 = b2Buf.Get<half>();
    auto cl = cBuf.Get<float>();
    AscendC::DataCopy(a1, aGM, AscendC::Nd2NzParams{1, M, K, 0, K, M, 1, 0});
    AscendC::DataCopy(b1, bGM, AscendC::Nd2NzParams{1, K, N, 0, N, K, 1, 0});
    AscendC::PipeBarrier<PIPE_ALL>();
    for (uint32_t h = 0; h < 2; ++h) {
        if (h) {
            // an AIC's TPipe holds M_MTE1 IDs 0..2 (set): take a free ID from the pool
            const AscendC::TEventID e = GetTPipePtr()->FetchEventID(AscendC::HardEvent::M_MTE1);
            AscendC::SetFlag<AscendC::HardEvent::M_MTE1>(e);
            AscendC::WaitFlag<AscendC::HardEvent::M_MTE1>(e);
        }
        for (uint32_t i = 0; i < M / 16; ++i)  // A: k-blocks h*KH/16 .. of row block i
            AscendC::LoadData(a2[i * KH * 16], a1[(h * KH / 16 * (M / 16) + i) * 256],
                              AscendC::LoadData2DParams{0, KH / 16, M / 16, 0, 0, false, 0});
        for (uint32_t i = 0; i < KH / 16; ++i)  // B: k-block (h*KH/16 + i), transposed fractals
            AscendC::LoadData(b2[i * N * 16], b1[(h * KH / 16 + i) * 256],
                              AscendC::LoadData2DParams{0, N / 16, K / 16, 0, 0, true, 0});
        AscendC::SetFlag<AscendC::HardEvent::MTE1_M>(EVENT_ID2);
        AscendC::WaitFlag<AscendC::HardEvent::MTE1_M>(EVENT_ID2);
        AscendC::Mmad(cl, a2, b2, AscendC::MmadParams{M, N, KH, 0, false, h == 0});
        AscendC::PipeBarrier<PIPE_M>();
    }
    AscendC::SetFlag<AscendC::HardEvent::M_FIX>(EVENT_ID2);
    AscendC::WaitFlag<AscendC::HardEvent::M_FIX>(EVENT_ID2);
    AscendC::Fixpipe(cGM, cl, AscendC::FixpipeParamsV220{N, M, M, N, false, QuantMode_t::NoQuant, 0, 1, 0, 0, 0});
}

static std::vector<char> ReadAll(const char* p) {
    FILE* f = std::fopen(p, "rb");
    if (!f) { std::perror(p); std::exit(2); }
    std::vector<char> v;
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) v.insert(v.end(), buf, buf + n);
    std::fclose(f);
    return v;
}
static uint8_t* ToGm(const std::vector<char>& v) {
    uint8_t* p = (uint8_t*)AscendC::GmAlloc(v.size());
    std::memcpy(p, v.data(), v.size());
    return p;
}
int main(int argc, char** argv) {
    if (argc != 6) { std::fprintf(stderr, "usage: case a b out out_bytes\n"); return 2; }
    const std::string c = argv[1];
    uint8_t* a = ToGm(ReadAll(argv[2]));
    uint8_t* b = ToGm(ReadAll(argv[3]));
    const size_t outBytes = std::strtoul(argv[5], nullptr, 10);
    uint8_t* o = (uint8_t*)AscendC::GmAlloc(outBytes);
    AscendC::SetKernelMode(KernelMode::AIC_MODE);
    if (c == "sample") ICPU_RUN_KF(mm_sample, 2, a, b, o);
    else if (c == "qkt_half") ICPU_RUN_KF(qkt_half, 1, a, b, o);
    else if (c == "qkt_float") ICPU_RUN_KF(qkt_float, 1, a, b, o);
    else if (c == "qkt_half_nz") ICPU_RUN_KF(qkt_half_nz, 1, a, b, o);
    else if (c == "nonsquare") ICPU_RUN_KF(mm_nonsquare, 1, a, b, o);
    else return 2;
    FILE* f = std::fopen(argv[4], "wb");
    std::fwrite(o, 1, outBytes, f);
    std::fclose(f);
    AscendC::GmFree(a);
    AscendC::GmFree(b);
    AscendC::GmFree(o);
    return 0;
}
