// The sanitizer's seeded mutants (issue 28): one small AIV kernel with the synchronisation and
// initialisation patterns the generated kernels use, and each defect re-introduced on purpose by
// name. argv: the defect ("" = none, the clean kernel). Run with FADSL_SANITIZE=1.
//   drop_v_mte2_wait  dQ cast phase: chunk i+1's copy into `sums` does not wait for chunk i's Cast
//   drop_mte2_v_wait  the Cast reads `sums` without waiting for the copy into it
//   drop_tque_free    the output tile is cleared again while MTE3 may still copy it out, instead
//                     of FreeTensor -> AllocTensor
//   drop_dup_v_mte2   the pad-fill Duplicate of a loaded tile and the copy into it, unordered
//   drop_pad_zero     a CompareScalar padded to a whole repeat reads lanes nothing wrote
//   set_never_waited  a SetFlag with no WaitFlag at kernel end
//   gm_oob            a copy past the end of a GM tensor
#include <cstdio>
#include <string>

#include "tikicpulib.h"

using namespace AscendC;

static std::string g_defect;
static bool Defect(const char* name) { return g_defect == name; }

template <HardEvent E>
static void SetWait() {
    SetFlag<E>(EVENT_ID0);
    WaitFlag<E>(EVENT_ID0);
}

extern "C" __global__ __aicore__ void sanitize_kernel(GM_ADDR x) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> sums, calc, maskBuf;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(sums, 128 * sizeof(float));
    pipe.InitBuffer(calc, 128 * sizeof(float));
    pipe.InitBuffer(maskBuf, 256);
    pipe.InitBuffer(inQ, 1, 128 * sizeof(float));
    pipe.InitBuffer(outQ, 1, 128 * sizeof(half));
    GlobalTensor<float> f32;
    GlobalTensor<half> f16;
    f32.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(x), 256);
    f16.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(x + 1024), 256);

    // The cast phase: chunks of f32 sums copied in (MTE2), cast (V), copied out (MTE3).
    LocalTensor<float> s = sums.Get<float>();
    for (int chunk = 0; chunk < 3; ++chunk) {
        DataCopy(s, f32[chunk * 32], 32);
        if (!Defect("drop_mte2_v_wait")) SetWait<HardEvent::MTE2_V>();
        LocalTensor<half> o = outQ.AllocTensor<half>();
        Cast(o, s, RoundMode::CAST_RINT, 32);
        if (!Defect("drop_v_mte2_wait")) SetWait<HardEvent::V_MTE2>();
        outQ.EnQue(o);
        o = outQ.DeQue<half>();
        DataCopy(f16[chunk * 32], o, 32);
        if (Defect("drop_tque_free")) Duplicate(o, half(0.0f), 32);
        outQ.FreeTensor(o);
    }

    // A tile loaded with its pad filled first (V), then the copy (MTE2).
    LocalTensor<float> t = inQ.AllocTensor<float>();
    Duplicate(t, 0.0f, 64);
    if (!Defect("drop_dup_v_mte2")) SetWait<HardEvent::V_MTE2>();
    DataCopy(t, f32[Defect("gm_oob") ? 240 : 96], 32);
    inQ.EnQue(t);
    t = inQ.DeQue<float>();

    // where(v == 0, 1, v) on 32 floats: the Compare computes a whole 64-lane repeat.
    LocalTensor<float> v = calc.Get<float>();
    LocalTensor<uint8_t> mask = maskBuf.Get<uint8_t>();
    Adds(v, t, 1.0f, 32);
    if (!Defect("drop_pad_zero")) Duplicate(v[32], 0.0f, 32);
    PipeBarrier<PIPE_V>();
    CompareScalar(mask, v, 0.0f, CMPMODE::EQ, 64);
    PipeBarrier<PIPE_V>();
    Select(t, mask, v, 1.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, 32);
    SetWait<HardEvent::V_MTE3>();
    DataCopy(f32[128], t, 32);
    inQ.FreeTensor(t);
    if (Defect("set_never_waited")) SetFlag<HardEvent::V_MTE3>(EVENT_ID1);
}

int main(int argc, char** argv) {
    g_defect = argc > 1 ? argv[1] : "";
    uint8_t* x = static_cast<uint8_t*>(AscendC::GmAlloc(2048));
    float* f = reinterpret_cast<float*>(x);
    for (int i = 0; i < 256; ++i) f[i] = static_cast<float>(i % 7);
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(sanitize_kernel, 1, x);
    AscendC::GmFree(x);
    std::printf("done\n");
    return 0;
}
