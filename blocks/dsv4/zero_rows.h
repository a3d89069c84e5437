// Zeroes the first M rows (the matmul's M, ProductRows in dsv4/tiling_data.h) of BATCH
// matrices of N 4-byte elements (f32 or i32: zero has the same bits) with row stride LD,
// batch stride STRIDE (AIV only): the accumulator a split-K matmul (dsv4/matmul.h, ATOMIC)
// adds its partial sums into. Rows >= M are not touched. Blocks take consecutive runs of
// rows; one zeroed UB tile is copied out
// repeatedly, ROWS_PER_COPY rows per DataCopy (the whole row when it fits, else in
// TILE-element pieces). The zero tile's UB size is the plan's ZERO_TILE_BYTES, at least
// TILE elements.
#pragma once

#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

template <typename P>
class ZeroRows {
    using T = uint32_t;
    static constexpr uint32_t TILE = P::TILE;  // elements of the zero tile
    static constexpr uint32_t PIECE = P::N < TILE ? P::N : TILE;
    static constexpr uint32_t ROWS_PER_COPY = P::N <= TILE ? TILE / P::N : 1;
    static_assert(PIECE * sizeof(T) % 32 == 0 && P::N % PIECE == 0 && P::LD * sizeof(T) % 32 == 0,
                  "rows move in whole 32-byte blocks");
    static_assert(P::ZERO_TILE_BYTES >= TILE * sizeof(T), "zero_tile holds the zero tile");
    static_assert(ROWS_PER_COPY <= 4095 && (ROWS_PER_COPY == 1 || (P::LD - PIECE) * sizeof(T) / 32 <= 65535),
                  "a DataCopy of rows: at most 4095, a 16-bit gap in blocks");

public:
    __aicore__ static inline void Run(GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        TilingData td = LoadTiling(tiling);
        const uint32_t m = ProductRows<P>(td);
        AscendC::GlobalTensor<T> g;
        g.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(out));
        AscendC::TPipe pipe;
        AscendC::TBuf<AscendC::TPosition::VECOUT> buf;
        pipe.InitBuffer(buf, P::ZERO_TILE_BYTES);
        AscendC::LocalTensor<T> zero = buf.Get<T>();
        AscendC::Duplicate(zero, T(0), TILE);
        Handshake<AscendC::HardEvent::V_MTE3>();

        for (RowRuns run(m, ROWS_PER_COPY, BlockShare(P::BATCH * m)); run.Next();) {
            AscendC::DataCopyParams cp(run.rows, PIECE * sizeof(T) / 32, 0, (P::LD - PIECE) * sizeof(T) / 32);
            for (uint32_t n = 0; n < P::N; n += PIECE) {
                AscendC::DataCopy(g[run.batch * P::STRIDE + run.row * P::LD + n], zero, cp);
            }
        }
    }
};

}  // namespace dsv4
