// Adds the k-slice partial products of a split-K bf16 matmul (dsv4/matmul.h with
// SLICE_STRIDE_C) into C, in slice order: C = ((P0 + P1) + P2) + ... (AIV only). Atomic
// f32 adds into C would make the result depend on the order the cube cores finish in; a
// fixed order makes every run repeat bit for bit.
//   parts: [SLICES][BATCH][ROWS][N] f32, dense (ROWS the row capacity);
//   out:   BATCH matrices of N f32 columns, row stride LD, batch stride STRIDE.
// Only the first M rows (the matmul's M, ProductRows in dsv4/tiling_data.h) are read or
// written.
// Its blocks (OwnBlocks<P>: the launch's, or a range of them beside other kernels,
// dsv4/together.h) take consecutive runs of rows; a copy moves whole rows when they fit TILE, else
// TILE-element pieces of one row. The UB sizes are the plan's PARTS_IN_BYTES and
// SUMS_BYTES, each at least TILE f32.
#pragma once

#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

template <typename P>
class KSliceSum {
    static constexpr uint32_t PIECE = P::N < P::TILE ? P::N : P::TILE;
    static constexpr uint32_t ROWS_PER_COPY = P::N <= P::TILE ? P::TILE / P::N : 1;
    static constexpr uint32_t SLICE = P::BATCH * P::ROWS * P::N;  // elements of one slice's partials
    static_assert(P::SLICES >= 2, "one k slice writes C itself");
    static_assert(PIECE % 8 == 0 && P::N % PIECE == 0 && P::LD % 8 == 0, "rows move in whole 32-byte blocks");
    static_assert(ROWS_PER_COPY <= 4095 && (ROWS_PER_COPY == 1 || (P::LD - PIECE) * sizeof(float) / 32 <= 65535),
                  "a DataCopy of rows: at most 4095, a 16-bit gap in blocks");
    static_assert(P::PARTS_IN_BYTES >= P::TILE * sizeof(float) && P::SUMS_BYTES >= P::TILE * sizeof(float),
                  "parts_in and sums hold a tile");

public:
    __aicore__ static inline void Run(GM_ADDR parts, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        KSliceSum op;
        op.Init(parts, out, tiling);
        op.Process();
    }

private:
    __aicore__ inline void Init(GM_ADDR parts, GM_ADDR out, GM_ADDR tiling)
    {
        TilingData td = LoadTiling(tiling);
        m_ = ProductRows<P>(td);
        parts_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(parts));
        out_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(out));
        pipe_.InitBuffer(in_, 2, P::PARTS_IN_BYTES);
        pipe_.InitBuffer(sums_, 2, P::SUMS_BYTES);
    }

    __aicore__ inline void Process()
    {
        for (RowRuns run(m_, ROWS_PER_COPY, OwnBlocks<P>::Of(P::BATCH * m_)); run.Next();) {
            for (uint32_t n = 0; n < P::N; n += PIECE) {
                Sum((run.batch * P::ROWS + run.row) * P::N + n, run.batch * P::STRIDE + run.row * P::LD + n,
                    run.rows);
            }
        }
    }

    // `rows` rows of PIECE columns (contiguous in the partials when rows > 1: PIECE == N).
    __aicore__ inline void Sum(uint32_t src, uint32_t dst, uint32_t rows)
    {
        const uint32_t len = rows * PIECE;
        AscendC::LocalTensor<float> sum = sums_.AllocTensor<float>();
        AscendC::LocalTensor<float> first = Load(src, len);
        for (uint32_t ks = 1; ks < P::SLICES; ++ks) {
            AscendC::LocalTensor<float> part = Load(ks * SLICE + src, len);
            AscendC::Add(sum, ks == 1 ? first : sum, part, len);
            in_.FreeTensor(part);
            if (ks == 1) {
                in_.FreeTensor(first);
            }
        }
        sums_.EnQue(sum);
        sum = sums_.DeQue<float>();
        AscendC::DataCopyParams cp(rows, PIECE * sizeof(float) / 32, 0, (P::LD - PIECE) * sizeof(float) / 32);
        AscendC::DataCopy(out_[dst], sum, cp);
        sums_.FreeTensor(sum);
    }

    __aicore__ inline AscendC::LocalTensor<float> Load(uint32_t offset, uint32_t len)
    {
        AscendC::LocalTensor<float> t = in_.AllocTensor<float>();
        AscendC::DataCopy(t, parts_[offset], len);
        in_.EnQue(t);
        return in_.DeQue<float>();
    }

    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::TPosition::VECIN, 2> in_;
    AscendC::TQue<AscendC::TPosition::VECOUT, 2> sums_;
    AscendC::GlobalTensor<float> parts_, out_;
    uint32_t m_ = 0;
};

}  // namespace dsv4
