// The reduction of the o_proj reduce-scatter (swa.md §3.8 step 3): after the token scatter,
// row r · t + j of the window holds source rank r's f32 partial of this rank's token j; the
// owner sums them in ascending rank order and rounds once to bf16:
//   out[j, n] = bf16(((w[j, n] + w[t + j, n]) + w[2t + j, n]) + …)   for j < t.
// Rows ≥ t of each source block are neither read nor written.
//
// Params: TP, N, TILE_ROWS (a divisor of 8), TILE_N, and the UB sizes the plan decided
// (`*_BYTES`, each at least what its use below needs). Work is split over blocks by
// [TILE_ROWS × TILE_N] output tile; a tile streams its TP source tiles two at once
// (RankRowsSum, which rank_sum_hc_post.h shares).
#pragma once

#include "kernel_operator.h"
#include "dsv4/tiling_data.h"

namespace dsv4 {
using namespace AscendC;

// ((w[row] + w[t + row]) + w[2t + row]) + … for R rows × COLS columns from column col into
// acc (f32, R × COLS row-major), w the window [TP · t, N] f32 after the token scatter. P: TP,
// N and the UB size ROWS_IN_BYTES (a source rank's R × COLS rows; two load at once).
template <class P, uint32_t R, uint32_t COLS>
class RankRowsSum {
    static constexpr uint32_t TP = P::TP;
    static constexpr uint32_t N = P::N;
    static_assert(TP >= 2, "a reduce-scatter has at least two ranks");
    static_assert(N % COLS == 0 && COLS % 16 == 0, "tile rows are whole 32-byte blocks in bf16 and f32");
    static_assert(R <= 4095 && (N - COLS) * sizeof(float) / 32 <= 65535,
                  "a DataCopy of a tile: at most 4095 rows, a 16-bit gap in blocks");
    static_assert(P::ROWS_IN_BYTES >= R * COLS * sizeof(float), "rows_in holds a source rank's tile");

public:
    __aicore__ inline void Init(TPipe& pipe, GM_ADDR window, uint32_t t)
    {
        t_ = t;
        windowGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(window), uint64_t(TP) * t * N);
        pipe.InitBuffer(inQ_, 2, P::ROWS_IN_BYTES);
    }

    __aicore__ inline void Sum(uint32_t row, uint32_t col, const LocalTensor<float>& acc)
    {
        Load(0, row, col);
        Load(1, row, col);
        LocalTensor<float> w0 = inQ_.DeQue<float>();
        LocalTensor<float> w1 = inQ_.DeQue<float>();
        Add(acc, w0, w1, R * COLS);
        inQ_.FreeTensor(w0);
        inQ_.FreeTensor(w1);
        for (uint32_t r = 2; r < TP; ++r) {
            Load(r, row, col);
            LocalTensor<float> w = inQ_.DeQue<float>();
            Add(acc, acc, w, R * COLS);
            inQ_.FreeTensor(w);
        }
    }

private:
    __aicore__ inline void Load(uint32_t rank, uint32_t row, uint32_t col)
    {
        LocalTensor<float> w = inQ_.AllocTensor<float>();
        DataCopy(w, windowGm_[(uint64_t(rank) * t_ + row) * N + col],
                 DataCopyParams(R, COLS * sizeof(float) / 32, (N - COLS) * sizeof(float) / 32, 0));
        inQ_.EnQue(w);
    }

    TQue<TPosition::VECIN, 2> inQ_;
    GlobalTensor<float> windowGm_;
    uint32_t t_ = 0;
};

template <class P>
class RankSum {
    static constexpr uint32_t N = P::N;
    static constexpr uint32_t TILE_ROWS = P::TILE_ROWS;
    static constexpr uint32_t TILE_N = P::TILE_N;
    static constexpr uint32_t TILE = TILE_ROWS * TILE_N;
    static_assert(8 % TILE_ROWS == 0, "row tiles must divide the runtime row granularity 8");
    static_assert(P::ROWS_OUT_BYTES >= TILE * sizeof(bfloat16_t), "rows_out holds the bf16 tile");
    static_assert(P::ACC_BYTES >= TILE * sizeof(float), "acc holds the f32 sum of a tile");

public:
    __aicore__ inline static void Run(GM_ADDR window, GM_ADDR out, GM_ADDR, GM_ADDR tiling)
    {
        RankSum op;
        op.Init(window, out, LoadTiling(tiling).t);
        op.Process();
    }

private:
    __aicore__ inline void Init(GM_ADDR window, GM_ADDR out, uint32_t t)
    {
        t_ = t;
        sum_.Init(pipe_, window, t);
        outGm_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(out), uint64_t(t) * N);
        pipe_.InitBuffer(outQ_, 2, P::ROWS_OUT_BYTES);
        pipe_.InitBuffer(acc_, P::ACC_BYTES);
    }

    __aicore__ inline void Process()
    {
        constexpr uint32_t colTiles = N / TILE_N;
        const uint32_t tiles = t_ / TILE_ROWS * colTiles;
        for (uint32_t i = GetBlockIdx(); i < tiles; i += GetBlockNum()) {
            const uint32_t row = i / colTiles * TILE_ROWS;
            const uint32_t col = i % colTiles * TILE_N;
            sum_.Sum(row, col, acc_.Get<float>());
            Store(row, col);
        }
    }

    __aicore__ inline void Store(uint32_t row, uint32_t col)
    {
        LocalTensor<bfloat16_t> out = outQ_.AllocTensor<bfloat16_t>();
        Cast(out, acc_.Get<float>(), RoundMode::CAST_RINT, TILE);
        outQ_.EnQue(out);
        out = outQ_.DeQue<bfloat16_t>();
        DataCopy(outGm_[uint64_t(row) * N + col], out,
                 DataCopyParams(TILE_ROWS, TILE_N * sizeof(bfloat16_t) / 32, 0, (N - TILE_N) * sizeof(bfloat16_t) / 32));
        outQ_.FreeTensor(out);
    }

    TPipe pipe_;
    RankRowsSum<P, TILE_ROWS, TILE_N> sum_;
    TQue<TPosition::VECOUT, 1> outQ_;
    TBuf<TPosition::VECCALC> acc_;
    GlobalTensor<bfloat16_t> outGm_;
    uint32_t t_ = 0;
};

}  // namespace dsv4
