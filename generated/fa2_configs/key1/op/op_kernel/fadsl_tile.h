// fadsl_tile.h: hand-written Ascend C helpers that fadsl-generated kernels call.
//
// Every helper is built only from documented Ascend C API (kernel_operator.h); the
// generated kernel stays a readable sequence of these calls. Shapes are per core:
// `rows` x `cols` tiles stored row-major in UB, cols a multiple of 32 bytes.
// Same-pipe data dependencies between vector instructions are separated with
// PipeBarrier<PIPE_V> as the PipeBarrier documentation asks.
//
// API names: CompareScalar, InitConstValue and WholeReduceMax/Sum are the names of the
// CANN 8.x toolkits this classic project targets. Their successors (Compares and Fill from
// CANN 9.0.0, ReduceRepeat from 9.1.0) are missing from asc-devkit tag v8.5.0, while the old
// names are still declared, marked "has been updated", up to asc-devkit master (checked at
// v8.5.0, v9.0.0, v9.0.1, v9.1.0.pre and 82b89a15; docs/backend.md).
#ifndef FADSL_TILE_H
#define FADSL_TILE_H

#include "kernel_operator.h"

namespace fadsl {

// ---------------------------------------------------------------------------
// Intra-core synchronisation
// ---------------------------------------------------------------------------

// SetFlag + WaitFlag of `E` with an event ID the TPipe has free. Inside the TPipe/TQue paradigm
// the queues take IDs from the TPipe's pool at run time (FreeTensor / EnQue allocate and set one),
// so a kernel must not pick IDs itself: the SetFlag/WaitFlag page asks for AllocEventID or
// FetchEventID, and FetchEventID (TPipe/FetchEventID.md) suits an immediate set-then-wait pair.
template <AscendC::HardEvent E>
__aicore__ inline void SetWaitFlag()
{
    const AscendC::TEventID id = GetTPipePtr()->FetchEventID(E);
    AscendC::SetFlag<E>(id);
    AscendC::WaitFlag<E>(id);
}

// ---------------------------------------------------------------------------
// Scalars
// ---------------------------------------------------------------------------

template <typename T>
__aicore__ inline T CeilDiv(T a, T b)
{
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

template <typename T>
__aicore__ inline T Min(T a, T b)
{
    return a < b ? a : b;
}

template <typename T>
__aicore__ inline T Max(T a, T b)
{
    return a > b ? a : b;
}

// `value` as the type T of the Ascend C parameter field it is passed to. `fadsl check` proves
// every such value in range (passes/api_fields.py); under the fadsl CPU runtime a value that T
// cannot hold stops the run instead of being wrapped by the cast. On the device: a plain cast.
// `name` says which field, for that message.
template <typename T, typename V>
__aicore__ inline T Field(V value, const char* name)
{
#if defined(FADSL_CPU_RUNTIME)
    return fadsl_rt::NarrowField<T>(static_cast<int64_t>(value), name);
#else
    (void)name;
    return static_cast<T>(value);
#endif
}

// End of one task of the grid loop; the vector class calls it, sub-block 0 only, so each task
// counts once. Under the fadsl CPU runtime it counts finished tasks for `fadsl sim`'s progress
// line (fadsl_rt/progress.h). On the device: nothing.
__aicore__ inline void TaskDone()
{
#if defined(FADSL_CPU_RUNTIME)
    if (AscendC::GetSubBlockIdx() == 0) {
        fadsl_rt::TaskDone();
    }
#endif
}

// Valid length of a block of `size` starting at `start` in an extent of `extent`.
__aicore__ inline int64_t Valid(int64_t start, int64_t size, int64_t extent)
{
    return Max<int64_t>(0, Min<int64_t>(size, extent - start));
}

__aicore__ inline float FloatBits(uint32_t bits)
{
    union {
        uint32_t u;
        float f;
    } v;
    v.u = bits;
    return v.f;
}

__aicore__ inline float Inf() { return FloatBits(0x7f800000u); }
__aicore__ inline float NegInf() { return FloatBits(0xff800000u); }

// Copies a POD tiling struct from GM word by word (as the matmul samples' CopyTiling).
template <typename Tiling>
__aicore__ inline void CopyTiling(Tiling* dst, GM_ADDR src)
{
    uint32_t* out = reinterpret_cast<uint32_t*>(dst);
    __gm__ uint32_t* in = reinterpret_cast<__gm__ uint32_t*>(src);
    for (uint32_t i = 0; i < sizeof(Tiling) / sizeof(uint32_t); ++i) {
        out[i] = in[i];
    }
}

// ---------------------------------------------------------------------------
// Level-0 binary op by name (the template argument picks the instruction)
// ---------------------------------------------------------------------------

enum class Bin { ADD, SUB, MUL, DIV, MAX, MIN };

template <Bin OP, typename T>
__aicore__ inline void BinaryL0(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a,
                                const AscendC::LocalTensor<T>& b, uint64_t mask, uint8_t repeat,
                                const AscendC::BinaryRepeatParams& p)
{
    if constexpr (OP == Bin::ADD) {
        AscendC::Add(dst, a, b, mask, repeat, p);
    } else if constexpr (OP == Bin::SUB) {
        AscendC::Sub(dst, a, b, mask, repeat, p);
    } else if constexpr (OP == Bin::MUL) {
        AscendC::Mul(dst, a, b, mask, repeat, p);
    } else if constexpr (OP == Bin::DIV) {
        AscendC::Div(dst, a, b, mask, repeat, p);
    } else if constexpr (OP == Bin::MAX) {
        AscendC::Max(dst, a, b, mask, repeat, p);
    } else {
        AscendC::Min(dst, a, b, mask, repeat, p);
    }
}

constexpr uint32_t MAX_REPEAT_ROWS = 248;  // <= 255 repeats, a multiple of 8 rows for Brcb

// dst[r, c] = src[r, c] OP vec[r]  (or vec[r] OP src[r, c] when vecFirst).
// vec is broadcast through `brcb`, a [rows, 32 B] temporary (Brcb + zero block stride).
template <Bin OP, typename T>
__aicore__ inline void RowBroadcast(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                    const AscendC::LocalTensor<T>& vec, const AscendC::LocalTensor<T>& brcb,
                                    uint32_t rows, uint32_t cols, bool vecFirst)
{
    constexpr uint32_t perBlock = 32 / sizeof(T);
    constexpr uint32_t perRepeat = 256 / sizeof(T);
    const uint8_t rowBlocks = Field<uint8_t>(cols / perBlock, "BinaryRepeatParams/UnaryRepeatParams repStride");
    AscendC::Brcb(brcb, vec, Field<uint8_t>((rows + 7) / 8, "Brcb.repeatTime"), AscendC::BrcbRepeatParams(1, 8));
    AscendC::PipeBarrier<PIPE_V>();
    for (uint32_t r0 = 0; r0 < rows; r0 += MAX_REPEAT_ROWS) {
        const uint8_t n = Field<uint8_t>(Min(MAX_REPEAT_ROWS, rows - r0), "level-0 repeatTime");
        for (uint32_t c0 = 0; c0 < cols; c0 += perRepeat) {
            const uint64_t lanes = Min(perRepeat, cols - c0);
            const uint32_t at = r0 * cols + c0;
            const AscendC::LocalTensor<T> b = brcb[r0 * perBlock];
            if (vecFirst) {
                BinaryL0<OP>(dst[at], b, src[at], lanes, n,
                             AscendC::BinaryRepeatParams(1, 0, 1, rowBlocks, 1, rowBlocks));
            } else {
                BinaryL0<OP>(dst[at], src[at], b, lanes, n,
                             AscendC::BinaryRepeatParams(1, 1, 0, rowBlocks, rowBlocks, 1));
            }
        }
    }
}

// dst[r, c] = src[r, c] OP vec[c]  (or vec[c] OP src[r, c] when vecFirst): zero repeat stride.
template <Bin OP, typename T>
__aicore__ inline void ColBroadcast(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                    const AscendC::LocalTensor<T>& vec, uint32_t rows, uint32_t cols,
                                    bool vecFirst)
{
    constexpr uint32_t perBlock = 32 / sizeof(T);
    constexpr uint32_t perRepeat = 256 / sizeof(T);
    const uint8_t rowBlocks = Field<uint8_t>(cols / perBlock, "BinaryRepeatParams/UnaryRepeatParams repStride");
    for (uint32_t r0 = 0; r0 < rows; r0 += MAX_REPEAT_ROWS) {
        const uint8_t n = Field<uint8_t>(Min(MAX_REPEAT_ROWS, rows - r0), "level-0 repeatTime");
        for (uint32_t c0 = 0; c0 < cols; c0 += perRepeat) {
            const uint64_t lanes = Min(perRepeat, cols - c0);
            const uint32_t at = r0 * cols + c0;
            if (vecFirst) {
                BinaryL0<OP>(dst[at], vec[c0], src[at], lanes, n,
                             AscendC::BinaryRepeatParams(1, 1, 1, rowBlocks, 0, rowBlocks));
            } else {
                BinaryL0<OP>(dst[at], src[at], vec[c0], lanes, n,
                             AscendC::BinaryRepeatParams(1, 1, 1, rowBlocks, rowBlocks, 0));
            }
        }
    }
}

// dst[r, c] = rowVec[r] OP colVec[c]: the row side is first spread over `tmp` [rows, cols].
template <Bin OP, typename T>
__aicore__ inline void Outer(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& rowVec,
                             const AscendC::LocalTensor<T>& colVec, const AscendC::LocalTensor<T>& tmp,
                             const AscendC::LocalTensor<T>& brcb, uint32_t rows, uint32_t cols, bool rowFirst)
{
    AscendC::Duplicate(tmp, static_cast<T>(0), static_cast<int32_t>(rows * cols));
    AscendC::PipeBarrier<PIPE_V>();
    RowBroadcast<Bin::ADD>(tmp, tmp, rowVec, brcb, rows, cols, false);
    AscendC::PipeBarrier<PIPE_V>();
    ColBroadcast<OP>(dst, tmp, colVec, rows, cols, !rowFirst);
}

// ---------------------------------------------------------------------------
// Row reductions: WholeReduceMax/Sum each 256-byte column chunk of every row into
// `work` [chunks, rowsPad] (rowsPad = rows rounded up to a 32-byte block), then combine
// the chunks' row values with Max/Add. `work` holds one value per row and chunk, not a
// 256-byte row, so a wide tile's reduction needs little UB.
// ---------------------------------------------------------------------------

template <bool IS_MAX, typename T>
__aicore__ inline void WholeReduceRows(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                       uint32_t rows, uint32_t cols, uint32_t width)
{
    constexpr uint32_t perBlock = 32 / sizeof(T);
    const uint8_t rowBlocks = Field<uint8_t>(cols / perBlock, "WholeReduceMax/Sum.srcRepStride");
    for (uint32_t r0 = 0; r0 < rows; r0 += MAX_REPEAT_ROWS) {
        const int32_t n = static_cast<int32_t>(Min(MAX_REPEAT_ROWS, rows - r0));
        if constexpr (IS_MAX) {
            AscendC::WholeReduceMax(dst[r0], src[r0 * cols], static_cast<int32_t>(width), n, 1, 1, rowBlocks,
                                    AscendC::ReduceOrder::ORDER_ONLY_VALUE);
        } else {
            AscendC::WholeReduceSum(dst[r0], src[r0 * cols], static_cast<int32_t>(width), n, 1, 1, rowBlocks);
        }
    }
}

// Row reductions by blocks (cols a whole number of 256-byte repeats): each level folds every
// 32-byte block to one value with BlockReduceMax/Sum over the whole tile at once (a row of w
// values becomes w / perBlock, the rows stay contiguous), until a row fits one repeat; then one
// WholeReduceMax/Sum per row. `work` holds rows x (the widths of all levels). A [32, 512] f32
// tile: 2 BlockReduce calls (256 repeats), a barrier and 1 WholeReduce, where RowReduce issues
// 8 WholeReduce, 7 Max/Add and 7 barriers. plan/memory/vector_forms.py block_levels picks the widths.
constexpr uint32_t MAX_BLOCK_REDUCE_REPEATS = 255;

template <bool IS_MAX, typename T>
__aicore__ inline void BlockReduceFlat(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                       uint32_t repeats)
{
    constexpr int32_t perRepeat = 256 / sizeof(T);
    for (uint32_t r0 = 0; r0 < repeats; r0 += MAX_BLOCK_REDUCE_REPEATS) {
        const int32_t n = static_cast<int32_t>(Min(MAX_BLOCK_REDUCE_REPEATS, repeats - r0));
        if constexpr (IS_MAX) {
            AscendC::BlockReduceMax(dst[r0 * 8], src[r0 * perRepeat], n, perRepeat, 1, 1, 8);
        } else {
            AscendC::BlockReduceSum(dst[r0 * 8], src[r0 * perRepeat], n, perRepeat, 1, 1, 8);
        }
    }
}

template <bool IS_MAX, typename T>
__aicore__ inline void RowReduceBlocks(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                       const AscendC::LocalTensor<T>& work, uint32_t rows, uint32_t cols)
{
    constexpr uint32_t perBlock = 32 / sizeof(T);
    constexpr uint32_t perRepeat = 256 / sizeof(T);
    AscendC::LocalTensor<T> from = src;
    uint32_t width = cols;
    uint32_t at = 0;
    while (width > perRepeat) {
        BlockReduceFlat<IS_MAX>(work[at], from, rows * width / perRepeat);
        AscendC::PipeBarrier<PIPE_V>();
        from = work[at];
        width /= perBlock;
        at += rows * width;
    }
    WholeReduceRows<IS_MAX>(dst, from, rows, width, width);
}

// Whether RowReduceBlocks applies to rows of `cols` elements (plan/memory/instr_counts.py block_levels):
// wider than one repeat, a whole number of repeats at every level wider than one, the last
// level's width whole 32-byte blocks.
template <typename T>
__aicore__ inline bool BlockLevelsFit(uint32_t cols)
{
    constexpr uint32_t perBlock = 32 / sizeof(T);
    constexpr uint32_t perRepeat = 256 / sizeof(T);
    if (cols <= perRepeat) {
        return false;
    }
    uint32_t width = cols;
    while (width > perRepeat) {
        if (width % perRepeat != 0) {
            return false;
        }
        width /= perBlock;
    }
    return width % perBlock == 0;
}

template <bool IS_MAX, typename T>
__aicore__ inline void RowReduce(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                 const AscendC::LocalTensor<T>& work, uint32_t rows, uint32_t cols)
{
    constexpr uint32_t perBlock = 32 / sizeof(T);
    constexpr uint32_t perRepeat = 256 / sizeof(T);
    if (cols <= perRepeat) {
        WholeReduceRows<IS_MAX>(dst, src, rows, cols, cols);
        return;
    }
    if (BlockLevelsFit<T>(cols)) {
        RowReduceBlocks<IS_MAX>(dst, src, work, rows, cols);
        return;
    }
    const uint32_t rowsPad = (rows + perBlock - 1) / perBlock * perBlock;
    for (uint32_t c0 = 0; c0 < cols; c0 += perRepeat) {
        WholeReduceRows<IS_MAX>(work[c0 / perRepeat * rowsPad], src[c0], rows, cols, Min(perRepeat, cols - c0));
    }
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::LocalTensor<T> from = work;
    for (uint32_t c0 = perRepeat; c0 < cols; c0 += perRepeat) {
        if constexpr (IS_MAX) {
            AscendC::Max(dst, from, work[c0 / perRepeat * rowsPad], static_cast<int32_t>(rows));
        } else {
            AscendC::Add(dst, from, work[c0 / perRepeat * rowsPad], static_cast<int32_t>(rows));
        }
        from = dst;
        if (c0 + perRepeat < cols) {
            AscendC::PipeBarrier<PIPE_V>();
        }
    }
}

template <typename T>
__aicore__ inline void RowMax(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                              const AscendC::LocalTensor<T>& work, uint32_t rows, uint32_t cols)
{
    RowReduce<true>(dst, src, work, rows, cols);
}

template <typename T>
__aicore__ inline void RowSum(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                              const AscendC::LocalTensor<T>& work, uint32_t rows, uint32_t cols)
{
    RowReduce<false>(dst, src, work, rows, cols);
}

// ---------------------------------------------------------------------------
// Unary helpers without a single instruction
// ---------------------------------------------------------------------------

// 2^x = exp(x * ln 2)
template <typename T>
__aicore__ inline void Exp2(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, int32_t count)
{
    AscendC::Muls(dst, src, static_cast<T>(0.693147180559945309f), count);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::Exp(dst, dst, count);
}

// tanh(x) = 1 - 2 / (exp(2x) + 1); `tmp` holds the constant 2.
template <typename T>
__aicore__ inline void Tanh(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                            const AscendC::LocalTensor<T>& tmp, int32_t count)
{
    AscendC::Muls(dst, src, static_cast<T>(2.0f), count);
    AscendC::Duplicate(tmp, static_cast<T>(-2.0f), count);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::Exp(dst, dst, count);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::Adds(dst, dst, static_cast<T>(1.0f), count);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::Div(dst, tmp, dst, count);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::Adds(dst, dst, static_cast<T>(1.0f), count);
}

// ---------------------------------------------------------------------------
// Counter-based random numbers (fadsl/rng.py is the same generator in numpy)
// ---------------------------------------------------------------------------

// Philox4x32-10 (Salmon et al., SC 2011): ten rounds on the counter `ctr`, key (k0, k1).
__aicore__ inline void Philox4x32(uint32_t ctr[4], uint32_t k0, uint32_t k1)
{
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * ctr[0];
        const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * ctr[2];
        const uint32_t c1 = ctr[1];
        const uint32_t c3 = ctr[3];
        ctr[0] = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
        ctr[1] = static_cast<uint32_t>(p1);
        ctr[2] = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
        ctr[3] = static_cast<uint32_t>(p0);
    }
}

// dst[r, c] (rows x cols f32 in UB) = uniform [0, 1) at position (rowStart + r, colStart + c):
// word col % 4 of Philox4x32-10 at counter (col / 4, row, stream, offset), key (seed0, seed1),
// as (bits >> 8) * 2^-24. The scalar unit computes it (the vector unit has no 32 x 32 -> 64
// multiply), so it waits for vector instructions on the tile and the vector unit waits for it.
__aicore__ inline void PhiloxUniform(const AscendC::LocalTensor<float>& dst, uint32_t seed0, uint32_t seed1,
                                     uint32_t offset, uint32_t stream, int64_t rowStart, int64_t colStart,
                                     uint32_t rows, uint32_t cols)
{
    SetWaitFlag<AscendC::HardEvent::V_S>();
    for (uint32_t r = 0; r < rows; ++r) {
        uint32_t c = 0;
        while (c < cols) {
            const uint64_t col = static_cast<uint64_t>(colStart + c);
            uint32_t ctr[4] = {static_cast<uint32_t>(col >> 2), static_cast<uint32_t>(rowStart + r), stream, offset};
            Philox4x32(ctr, seed0, seed1);
            for (uint32_t lane = static_cast<uint32_t>(col & 3); lane < 4 && c < cols; ++lane, ++c) {
                dst.SetValue(r * cols + c, static_cast<float>(ctr[lane] >> 8) * 5.9604644775390625e-08f);
            }
        }
    }
    SetWaitFlag<AscendC::HardEvent::S_V>();
}

// ---------------------------------------------------------------------------
// Range check of gather indices read from a tensor
// ---------------------------------------------------------------------------

// Trap() unless each of the `count` indices in `index` (f32 integers, exact below 2^24) lies in
// [0, extent): the level-2 ReduceMax of the indices and of their negations (result in element 0;
// `work` sized by ReduceMax.md's sharedTmpBuffer formula, `top` 16 floats), read by the scalar
// unit. `scratch` may be `index` itself: it is negated after its maximum is taken.
__aicore__ inline void TrapOutside(const AscendC::LocalTensor<float>& index, const AscendC::LocalTensor<float>& scratch,
                                   const AscendC::LocalTensor<float>& work, const AscendC::LocalTensor<float>& top,
                                   int32_t count, int64_t extent)
{
    AscendC::ReduceMax(top, index, work, count, false);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::Muls(scratch, index, -1.0f, count);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::ReduceMax(top[8], scratch, work, count, false);
    SetWaitFlag<AscendC::HardEvent::V_S>();
    const float highest = top.GetValue(0);
    const float negatedLowest = top.GetValue(8);
    if (highest >= static_cast<float>(extent) || negatedLowest > 0.0f) {
        AscendC::Trap();
    }
}

// ---------------------------------------------------------------------------
// Cube operand staging: ND blocks in GM -> NZ in L1 -> fractals in L0A / L0B
// ---------------------------------------------------------------------------

// `rows` valid rows (of a `padRows` block) of `cols` elements, GM row stride `stride`.
template <typename T>
__aicore__ inline void CopyNdToNz(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src,
                                  uint32_t rows, uint32_t cols, uint32_t stride, uint32_t padRows)
{
    AscendC::DataCopy(dst, src,
                      AscendC::Nd2NzParams{1, Field<uint16_t>(rows, "Nd2NzParams.nValue"),
                                           Field<uint16_t>(cols, "Nd2NzParams.dValue"), 0,
                                           Field<uint16_t>(stride, "Nd2NzParams.srcDValue"),
                                           Field<uint16_t>(padRows, "Nd2NzParams.dstNzC0Stride"), 1, 0});
}

// Zero rows [valid, padRows) of an NZ tile of `cols` columns in L1: the padding of a
// contraction tail must be 0 so that the full-size Mmad adds nothing for it.
template <typename T>
__aicore__ inline void ZeroTailRows(const AscendC::LocalTensor<T>& tile, uint32_t valid, uint32_t cols,
                                    uint32_t padRows)
{
    constexpr uint32_t c0 = 32 / sizeof(T);
    if (valid >= padRows) {
        return;
    }
    const AscendC::InitConstValueParams<T> params{Field<uint16_t>(cols / c0, "InitConstValueParams.repeatTimes"),
                                                  Field<uint16_t>(padRows - valid, "InitConstValueParams.blockNum"),
                                                  Field<uint16_t>(valid, "InitConstValueParams.dstGap"),
                                                  static_cast<T>(0)};
    AscendC::InitConstValue(tile[valid * c0], params);
}

// Zero the column blocks [ceil(valid / C0), cols / C0) of an NZ tile of `padRows` rows in L1.
// Nd2Nz already zero-fills a row's last 32-byte block (copy_gm_to_cbuf_multi_nd2nz); the
// blocks past it (a head dim padded beyond that block) are zeroed here, so that a Mmad
// over the padded columns adds nothing for them.
template <typename T>
__aicore__ inline void ZeroTailCols(const AscendC::LocalTensor<T>& tile, uint32_t valid, uint32_t cols,
                                    uint32_t padRows)
{
    constexpr uint32_t c0 = 32 / sizeof(T);
    const uint32_t first = (valid + c0 - 1) / c0;
    if (first >= cols / c0) {
        return;
    }
    const AscendC::InitConstValueParams<T> params{
        1, Field<uint16_t>((cols / c0 - first) * padRows, "InitConstValueParams.blockNum"), 0, static_cast<T>(0)};
    AscendC::InitConstValue(tile[first * padRows * c0], params);
}

// A [m x k] in L1 (NZ, m padded) -> L0A (Zz), one LoadData per 16-row strip.
template <typename T>
__aicore__ inline void LoadA(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint32_t m,
                             uint32_t k)
{
    constexpr uint32_t k0 = 32 / sizeof(T);
    for (uint32_t i = 0; i < m / 16; ++i) {
        const AscendC::LoadData2DParams params{0, Field<uint8_t>(k / k0, "LoadData2DParams.repeatTimes"),
                                               Field<uint16_t>(m / 16, "LoadData2DParams.srcStride"), 0, 0, false, 0};
        AscendC::LoadData(dst[i * k * 16], src[i * 512 / sizeof(T)], params);
    }
}

// A given as its transpose At [k x m] in L1 (NZ, k padded; 16-bit T, so C0 = 16): fractal
// (m strip i, k strip j) of L0A's Zz is At's fractal (k strip j, m column block i) transposed,
// and At's fractals lie in L1 in exactly that order (column block by column block), so they are
// copied in order with LoadData's per-fractal transpose, at most 255 per call.
template <typename T>
__aicore__ inline void LoadATransposed(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                       uint32_t m, uint32_t k)
{
    static_assert(sizeof(T) == 2, "LoadData transposes only 16-bit fractals");
    constexpr uint32_t fractal = 512 / sizeof(T);
    const uint32_t total = (m / 16) * (k / 16);
    for (uint32_t f = 0; f < total; f += 255) {
        const uint8_t count = Field<uint8_t>(Min<uint32_t>(255, total - f), "LoadData2DParams.repeatTimes");
        AscendC::LoadData(dst[f * fractal], src[f * fractal], AscendC::LoadData2DParams{0, count, 1, 0, 0, true, 0});
    }
}

// B given as its transpose Bt [n x k] in L1 (NZ): its fractals already are L0B's, so the
// fractals are copied in order, at most 255 per LoadData.
template <typename T>
__aicore__ inline void LoadBTransposed(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                       uint32_t k, uint32_t n)
{
    constexpr uint32_t k0 = 32 / sizeof(T);
    constexpr uint32_t fractal = 512 / sizeof(T);
    const uint32_t total = (k / k0) * (n / 16);
    for (uint32_t f = 0; f < total; f += 255) {
        const uint8_t count = Field<uint8_t>(Min<uint32_t>(255, total - f), "LoadData2DParams.repeatTimes");
        AscendC::LoadData(dst[f * fractal], src[f * fractal], AscendC::LoadData2DParams{0, count, 1, 0, 0, false, 0});
    }
}

// B [k x n] in L1 (NZ, k padded) -> L0B (Zn): transposing LoadData per 16-row strip of k.
template <typename T>
__aicore__ inline void LoadB(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint32_t k,
                             uint32_t n)
{
    for (uint32_t i = 0; i < k / 16; ++i) {
        const AscendC::LoadData2DParams params{0, Field<uint8_t>(n / 16, "LoadData2DParams.repeatTimes"),
                                               Field<uint16_t>(k / 16, "LoadData2DParams.srcStride"), 0, 0, true, 0};
        AscendC::LoadData(dst[i * n * 16], src[i * 512 / sizeof(T)], params);
    }
}

// Windows of an operand in L1 for a sub-dot (fadsl/plan/memory/l0_split.py): the tile stays
// whole in L1 (NZ, `srcRows` rows padded to 16) and only the fractals of the window move.

// Rows [m0, m0 + m) and columns [k0, k0 + k) of A [srcRows x K] (NZ) -> L0A (Zz). Column
// block k0 / C0 starts at k0 * srcRows, row strip m0 / 16 of it at m0 * C0: the window's
// fractals of one row strip are `k / C0` fractals `srcRows / 16` apart, as in LoadA.
template <typename T>
__aicore__ inline void LoadAPart(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                 uint32_t srcRows, uint32_t m0, uint32_t k0, uint32_t m, uint32_t k)
{
    constexpr uint32_t c0 = 32 / sizeof(T);
    for (uint32_t i = 0; i < m / 16; ++i) {
        const AscendC::LoadData2DParams params{0, Field<uint8_t>(k / c0, "LoadData2DParams.repeatTimes"),
                                               Field<uint16_t>(srcRows / 16, "LoadData2DParams.srcStride"), 0, 0,
                                               false, 0};
        AscendC::LoadData(dst[i * k * 16], src[k0 * srcRows + (m0 + i * 16) * c0], params);
    }
}

// Rows [k0, k0 + k) and columns [n0, n0 + n) of B [srcRows x N] (NZ, 16-bit) -> L0B (Zn):
// one transposing LoadData per 16-row strip of the window, its fractals `srcRows / 16` apart.
template <typename T>
__aicore__ inline void LoadBPart(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                 uint32_t srcRows, uint32_t k0, uint32_t n0, uint32_t k, uint32_t n)
{
    static_assert(sizeof(T) == 2, "LoadData transposes only 16-bit fractals");
    for (uint32_t i = 0; i < k / 16; ++i) {
        const AscendC::LoadData2DParams params{0, Field<uint8_t>(n / 16, "LoadData2DParams.repeatTimes"),
                                               Field<uint16_t>(srcRows / 16, "LoadData2DParams.srcStride"), 0, 0,
                                               true, 0};
        AscendC::LoadData(dst[i * n * 16], src[n0 * srcRows + (k0 + i * 16) * 16], params);
    }
}

// B given as its transpose Bt [srcRows x K] (NZ): rows [n0, n0 + n) and columns [k0, k0 + k)
// of Bt are, per column block of k, a contiguous run of n / 16 fractals (L0B's order).
template <typename T>
__aicore__ inline void LoadBTransposedPart(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                           uint32_t srcRows, uint32_t n0, uint32_t k0, uint32_t k, uint32_t n)
{
    constexpr uint32_t c0 = 32 / sizeof(T);
    constexpr uint32_t fractal = 512 / sizeof(T);
    for (uint32_t j = 0; j < k / c0; ++j) {
        const uint32_t first = (k0 / c0 + j) * srcRows * c0 + n0 * c0;
        const AscendC::LoadData2DParams params{0, Field<uint8_t>(n / 16, "LoadData2DParams.repeatTimes"), 1, 0, 0,
                                               false, 0};
        AscendC::LoadData(dst[j * (n / 16) * fractal], src[first], params);
    }
}


// ---------------------------------------------------------------------------
// Scalar math of mods (scalar_def): per-task values such as ALiBi's slope
// exp2(-8 (h + 1) / N), computed once per task by the scalar unit. Plain float
// arithmetic, comparisons and the bit layout of IEEE binary32 only (no libm on the
// core): a range reduction to |r| <= ln2 / 2 and a degree-7 Taylor polynomial for
// exp / exp2 (error < 1e-8 before rounding), the atanh series of the mantissa for
// log / log2, Newton's iteration for sqrt: within 3 units in the last place of the
// f32-rounded exact value (tests/variants/test_mod_scalar_math.py).
// ---------------------------------------------------------------------------

__aicore__ inline uint32_t FloatWord(float x)
{
    union {
        uint32_t u;
        float f;
    } v;
    v.f = x;
    return v.u;
}

__aicore__ inline float ScalarNaN() { return FloatBits(0x7fc00000u); }
__aicore__ inline float ScalarAbs(float x) { return x < 0.0f ? -x : x; }
__aicore__ inline float ScalarMin(float a, float b) { return b < a ? b : a; }
__aicore__ inline float ScalarMax(float a, float b) { return b > a ? b : a; }

__aicore__ inline float ScalarFloor(float x)
{
    if (!(ScalarAbs(x) < 8388608.0f)) {
        return x;  // NaN, infinities and integers beyond 2^23
    }
    float t = static_cast<float>(static_cast<int32_t>(x));
    return t > x ? t - 1.0f : t;
}

// p * 2^n for an integer n in [-252, 254]: two steps by powers of two in range, so
// that neither overflows on its own (p 2^128 is finite for p < 1).
__aicore__ inline float ScalarScale(float p, int32_t n)
{
    int32_t a = n / 2;
    int32_t b = n - a;
    float fa = FloatBits(static_cast<uint32_t>(a + 127) << 23);
    float fb = FloatBits(static_cast<uint32_t>(b + 127) << 23);
    return (p * fa) * fb;
}

// e^r for |r| <= 0.35: Taylor to degree 7 by Horner.
__aicore__ inline float ScalarExpSmall(float r)
{
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    return p * r + 1.0f;
}

__aicore__ inline float ScalarExp2(float x)
{
    if (x != x) {
        return x;
    }
    if (x >= 128.0f) {
        return Inf();
    }
    if (x < -150.0f) {
        return 0.0f;
    }
    float n = ScalarFloor(x + 0.5f);
    float r = (x - n) * 0.693147180559945f;  // x - n is exact
    return ScalarScale(ScalarExpSmall(r), static_cast<int32_t>(n));
}

__aicore__ inline float ScalarExp(float x)
{
    if (x != x) {
        return x;
    }
    if (x > 88.8f) {
        return Inf();
    }
    if (x < -104.0f) {
        return 0.0f;
    }
    float n = ScalarFloor(x * 1.44269504088896f + 0.5f);
    // Cody and Waite: ln 2 = hi + lo with hi exact in 16 bits, so n * hi is exact
    float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
    return ScalarScale(ScalarExpSmall(r), static_cast<int32_t>(n));
}

// ln(m) for m in [sqrt(1/2), sqrt(2)]: 2 atanh((m - 1) / (m + 1)), |s| <= 0.172.
__aicore__ inline float ScalarLogMantissa(float m)
{
    float s = (m - 1.0f) / (m + 1.0f);
    float s2 = s * s;
    float p = 1.0f / 11.0f;
    p = p * s2 + 1.0f / 9.0f;
    p = p * s2 + 1.0f / 7.0f;
    p = p * s2 + 1.0f / 5.0f;
    p = p * s2 + 1.0f / 3.0f;
    p = p * s2 + 1.0f;
    return 2.0f * s * p;
}

// x = 2^e * m with m in [sqrt(1/2), sqrt(2)); false for NaN, x <= 0 and infinity.
__aicore__ inline bool ScalarSplit(float x, int32_t& e, float& m)
{
    if (!(x > 0.0f) || x == Inf()) {
        return false;
    }
    e = 0;
    if (x < 1.17549435e-38f) {  // subnormal: scale into the normal range
        x = x * 8388608.0f;
        e = -23;
    }
    uint32_t bits = FloatWord(x);
    e += static_cast<int32_t>((bits >> 23) & 0xffu) - 127;
    m = FloatBits((bits & 0x007fffffu) | 0x3f800000u);
    if (m > 1.41421356f) {
        m = m * 0.5f;
        e += 1;
    }
    return true;
}

__aicore__ inline float ScalarLogSpecial(float x)
{
    if (x == 0.0f) {
        return NegInf();
    }
    return x == Inf() ? x : ScalarNaN();  // NaN and negative numbers: NaN
}

__aicore__ inline float ScalarLog(float x)
{
    int32_t e;
    float m;
    if (!ScalarSplit(x, e, m)) {
        return ScalarLogSpecial(x);
    }
    float fe = static_cast<float>(e);
    return fe * 0.693145751953125f + (fe * 1.428606765330187e-06f + ScalarLogMantissa(m));
}

__aicore__ inline float ScalarLog2(float x)
{
    int32_t e;
    float m;
    if (!ScalarSplit(x, e, m)) {
        return ScalarLogSpecial(x);
    }
    return static_cast<float>(e) + ScalarLogMantissa(m) * 1.44269504088896f;
}

__aicore__ inline float ScalarSqrt(float x)
{
    if (x != x || x < 0.0f) {
        return ScalarNaN();
    }
    if (x == 0.0f || x == Inf()) {
        return x;
    }
    int32_t e;
    float m;
    ScalarSplit(x, e, m);
    if (e % 2 != 0) {  // make the exponent even: sqrt(2^e m) = 2^(e/2) sqrt(m)
        m = m * 2.0f;
        e -= 1;
    }
    float y = 0.5f * (1.0f + m);  // m in [0.7, 2.9): Newton from here converges
    for (int32_t i = 0; i < 5; ++i) {
        y = 0.5f * (y + m / y);
    }
    return ScalarScale(y, e / 2);
}

// a ** b: repeated squaring for an integral b (negative bases allowed), else
// exp2(b log2 a), NaN for a negative base (as torch.pow). The second form is exact
// for a = 2 (ALiBi's 2 ** (-8 (h + 1) / N)); otherwise its relative error grows with
// |b log2 a| (about 2 |b log2 a| units of 2^-24: the f32 rounding of the product).
__aicore__ inline float ScalarPow(float a, float b)
{
    if (b == ScalarFloor(b) && ScalarAbs(b) < 16777216.0f) {
        int64_t n = static_cast<int64_t>(ScalarAbs(b));
        float result = 1.0f;
        float base = b < 0.0f ? 1.0f / a : a;  // x^-n as (1/x)^n: no overflow on the way
        while (n > 0) {
            if (n % 2 == 1) {
                result = result * base;
            }
            base = base * base;
            n = n / 2;
        }
        return result;
    }
    if (a == 0.0f) {
        return b > 0.0f ? 0.0f : Inf();
    }
    return ScalarExp2(b * ScalarLog2(a));
}

// sin / cos: x = n pi/2 + r with |r| <= pi/4 (Cody and Waite: pi/2 in three parts,
// the first two short enough that n times them is exact for |n| < 2^13, i.e.
// |x| < 12867), then Cephes' minimax polynomials on r; the quadrant n mod 4 picks
// sin r, cos r or their negatives. NaN for NaN, infinities and |x| > 2^20 (beyond,
// no reduction without a table of 2/pi is accurate in f32); measured error in
// tests/variants/test_mod_trig.py.
__aicore__ inline float ScalarSinSmall(float r)
{
    float z = r * r;
    float p = -1.9515295891e-4f;
    p = p * z + 8.3321608736e-3f;
    p = p * z - 1.6666654611e-1f;
    return p * z * r + r;
}

__aicore__ inline float ScalarCosSmall(float r)
{
    float z = r * r;
    float p = 2.443315711809948e-5f;
    p = p * z - 1.388731625493765e-3f;
    p = p * z + 4.166664568298827e-2f;
    return p * z * z - 0.5f * z + 1.0f;
}

// sin(x + quarter pi/2): the quadrant shift is exact (an integer added to n).
__aicore__ inline float ScalarSinQuadrant(float x, float quarter)
{
    if (!(ScalarAbs(x) <= 1048576.0f)) {
        return ScalarNaN();
    }
    float n = ScalarFloor(x * 0.636619772367581f + 0.5f);
    float r = ((x - n * 1.5703125f) - n * 4.837512969970703125e-4f) -
              n * 7.549790126404332e-8f;
    float m = n + quarter;
    int32_t q = static_cast<int32_t>(m - 4.0f * ScalarFloor(m * 0.25f));
    float v = (q % 2 == 0) ? ScalarSinSmall(r) : ScalarCosSmall(r);
    return q >= 2 ? -v : v;
}

__aicore__ inline float ScalarSin(float x) { return ScalarSinQuadrant(x, 0.0f); }
__aicore__ inline float ScalarCos(float x) { return ScalarSinQuadrant(x, 1.0f); }

// tanh: Cephes' odd polynomial for |x| < 0.625, else 1 - 2 / (e^(2|x|) + 1) (no
// cancellation: the result is above 0.55), +-1 beyond |x| = 9 (f32 rounds it there).
__aicore__ inline float ScalarTanh(float x)
{
    if (x != x) {
        return x;
    }
    float a = ScalarAbs(x);
    if (a < 0.625f) {
        float z = x * x;
        float p = -5.70498872745e-3f;
        p = p * z + 2.06390887954e-2f;
        p = p * z - 5.37397155531e-2f;
        p = p * z + 1.33314422036e-1f;
        p = p * z - 3.33332819422e-1f;
        return x + x * z * p;
    }
    float t = a > 9.0f ? 1.0f : 1.0f - 2.0f / (ScalarExp(2.0f * a) + 1.0f);
    return x < 0.0f ? -t : t;
}

// sigmoid: 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below (subnormal results kept).
__aicore__ inline float ScalarSigmoid(float x)
{
    if (x >= 0.0f) {
        return 1.0f / (1.0f + ScalarExp(-x));
    }
    float e = ScalarExp(x);
    return e / (1.0f + e);
}

}  // namespace fadsl

#endif  // FADSL_TILE_H
