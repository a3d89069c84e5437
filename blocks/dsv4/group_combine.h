// The dequantised sum over the o_proj groups (swa.md §3.7 steps 4–5, §3.8 step 2): for every
// valid row u < group_t and column n,
//   out[u, n] = (Σ_{g ascending} f32(p[g, u, n]) · s[g, u]) · wo_b_scale[n]
// from the exact int32 wo_b products p [GROUPS, ROWS, N] and the per-(group, row) dequant scales
// s [GROUPS, ROWS]; f32 throughout, then either rounded once to bf16 (TP 1: attn_out [t, N]) or
// kept f32 (TP > 1: the rank's partial [ROWS, N]). Rows ≥ group_t are neither read nor written.
//
// Params: GROUPS, ROWS, N, TILE_N (a divisor of N), OUT_BF16, PRODUCT_BUFFERS, and the UB
// sizes the plan decided (PRODUCTS, SCALES, SCALE_BLOCKS, OUT, WO_B_SCALE, ACC, TERM
// `_BYTES`, each at least what its use below needs); optionally BLOCK_BASE, BLOCKS and COL0,
// NCOLS: a range of the launch's blocks (OwnBlocks) and of the columns (OwnColumns), as the
// consumer of a column range beside the product of the next (generator gemm::overlap).
// A tile is one row × TILE_N columns, so
// a group's scale is one value and every vector instruction spans the tile. The tiles are
// ordered column by column over the blocks, so a block's consecutive tiles share their
// wo_b_scale slice (loaded again only when the column changes); a tile streams its GROUPS
// product rows PRODUCT_BUFFERS deep.
#pragma once

#include "kernel_operator.h"
#include "dsv4/pipe_sync.h"
#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {
using namespace AscendC;

// Σ_{g ascending} f32(p[g, row + r, col + c]) · s[g, row + r] for R rows × COLS columns into
// acc (f32, R × COLS row-major), exact products cast once per group. P: GROUPS, ROWS, N,
// PRODUCT_BUFFERS and the UB sizes PRODUCTS, SCALES, SCALE_BLOCKS, TERM `_BYTES`. A caller loads the rows' scales
// (LoadScales) first, so their GM latency passes while it issues its other loads. The vector
// unit reads the scales, each spread over a block (Brcb), not the scalar unit: a scalar read
// would wait for every load issued before it to land, the caller's large ones too.
template <class P, uint32_t R, uint32_t COLS>
class GroupSum {
    static constexpr uint32_t GROUPS = P::GROUPS;
    static constexpr uint32_t N = P::N;
    // the rows' scales of a group start on a 32-byte block (one DataCopyPad burst each)
    static constexpr uint32_t SCALE_STRIDE = AlignUp(R, BLOCK_BYTES / sizeof(float));
    static_assert(COLS % 16 == 0 && N % COLS == 0, "tiles are whole 32-byte blocks of a row");
    static_assert(GROUPS >= 1 && GROUPS <= 4095, "one DataCopyPad of the groups' scales: at most 4095 blocks");
    static_assert(R <= 4095 && (N - COLS) * sizeof(int32_t) / BLOCK_BYTES <= 65535,
                  "one DataCopy of a group's rows: at most 4095 rows, a 16-bit gap in blocks");
    static_assert(P::PRODUCTS_BYTES >= R * COLS * sizeof(int32_t), "products holds a group's tile");
    static_assert(P::SCALES_BYTES >= GROUPS * SCALE_STRIDE * sizeof(float), "scales holds a block run per group");
    static_assert(P::TERM_BYTES >= R * COLS * sizeof(float), "term holds a group's tile in f32");
    static constexpr uint32_t LANES = BLOCK_BYTES / sizeof(float);
    // group products in flight (each holds a V_MTE2 event id while free: 8 per TPipe)
    static constexpr uint32_t BUFS = P::PRODUCT_BUFFERS;
    static_assert(BUFS >= 2 && BUFS <= 6, "products double buffered at least, event ids left for the rest");
    static_assert(P::SCALE_BLOCKS_BYTES >= GROUPS * SCALE_STRIDE * BLOCK_BYTES, "a block per scale");
    static_assert(GROUPS * SCALE_STRIDE / LANES <= 255 && COLS / (8 * LANES) <= 255, "one repeat call each");

public:
    __aicore__ inline void Init(TPipe& pipe, GM_ADDR p, GM_ADDR scale)
    {
        pGm_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(p), uint64_t(GROUPS) * P::ROWS * N);
        scaleGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(scale), uint64_t(GROUPS) * P::ROWS);
        pipe.InitBuffer(pQ_, BUFS, P::PRODUCTS_BYTES);
        pipe.InitBuffer(scaleQ_, 1, P::SCALES_BYTES);
        pipe.InitBuffer(scaleBlocks_, P::SCALE_BLOCKS_BYTES);
        pipe.InitBuffer(term_, P::TERM_BYTES);
    }

    // s[g, row .. row + R) for every group.
    __aicore__ inline void LoadScales(uint32_t row)
    {
        LocalTensor<float> s = scaleQ_.AllocTensor<float>();
        DataCopyPad(s, scaleGm_[row],
                    DataCopyExtParams(GROUPS, R * sizeof(float), (P::ROWS - R) * sizeof(float), 0, 0),
                    DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
        scaleQ_.EnQue(s);
    }

    __aicore__ inline void Sum(uint32_t row, uint32_t col, const LocalTensor<float>& acc)
    {
        for (uint32_t g = 0; g + 1 < BUFS && g < GROUPS; ++g) {
            LoadProducts(g, row, col);
        }
        LocalTensor<float> s = scaleQ_.DeQue<float>();
        LocalTensor<float> blocks = scaleBlocks_.Get<float>();
        Brcb(blocks, s, GROUPS * SCALE_STRIDE / LANES, BrcbRepeatParams(1, 8));
        scaleQ_.FreeTensor(s);
        LocalTensor<float> term = term_.Get<float>();
        for (uint32_t g = 0; g < GROUPS; ++g) {
            if (g + BUFS - 1 < GROUPS) {
                LoadProducts(g + BUFS - 1, row, col);
            }
            LocalTensor<int32_t> p = pQ_.template DeQue<int32_t>();
            LocalTensor<float> f = g == 0 ? acc : term;
            // Exact: |p| ≤ K · 127² < 2^24.
            Cast(f, p, RoundMode::CAST_NONE, R * COLS);
            pQ_.FreeTensor(p);
            for (uint32_t r = 0; r < R; ++r) {
                Scale(f[r * COLS], blocks[(g * SCALE_STRIDE + r) * LANES]);
            }
            if (g > 0) {
                Add(acc, acc, term, R * COLS);
            }
        }
    }

private:
    // row *= the block's value: whole repeats of 64 lanes along the row, then the rest (one
    // call per row: vec_common.h's MulRows takes a repeat per row, a call per 64 columns,
    // which for these few wide rows would be many short calls).
    __aicore__ inline void Scale(const LocalTensor<float>& row, const LocalTensor<float>& block)
    {
        constexpr uint32_t REPEAT = 8 * LANES;
        const BinaryRepeatParams broadcast(1, 1, 0, 8, 8, 0);
        if constexpr (COLS >= REPEAT) {
            Mul(row, row, block, REPEAT, COLS / REPEAT, broadcast);
        }
        if constexpr (COLS % REPEAT != 0) {
            Mul(row[COLS / REPEAT * REPEAT], row[COLS / REPEAT * REPEAT], block, COLS % REPEAT, 1, broadcast);
        }
    }

    __aicore__ inline void LoadProducts(uint32_t g, uint32_t row, uint32_t col)
    {
        LocalTensor<int32_t> p = pQ_.template AllocTensor<int32_t>();
        const GlobalTensor<int32_t> src = pGm_[(uint64_t(g) * P::ROWS + row) * N + col];
        if constexpr (R == 1) {
            DataCopy(p, src, COLS);
        } else {
            DataCopy(p, src, DataCopyParams(R, BlocksOf<int32_t>(COLS), BlocksOf<int32_t>(N - COLS), 0));
        }
        pQ_.EnQue(p);
    }

    TQue<TPosition::VECIN, BUFS> pQ_;
    TQue<TPosition::VECIN, 1> scaleQ_;
    TBuf<TPosition::VECCALC> scaleBlocks_, term_;
    GlobalTensor<int32_t> pGm_;
    GlobalTensor<float> scaleGm_;
};

template <class P>
class GroupCombine {
    using Out = typename Either<P::OUT_BF16, float, bfloat16_t>::T;
    static constexpr uint32_t N = P::N;
    static constexpr uint32_t TILE_N = P::TILE_N;
    static_assert(P::OUT_BYTES >= TILE_N * sizeof(Out), "out holds a tile");
    static_assert(P::WO_B_SCALE_BYTES >= TILE_N * sizeof(float) && P::ACC_BYTES >= TILE_N * sizeof(float),
                  "f32 tiles");

public:
    __aicore__ inline static void Run(GM_ADDR p, GM_ADDR scale, GM_ADDR woBScale, GM_ADDR out, GM_ADDR,
                                      GM_ADDR tiling)
    {
        GroupCombine op;
        op.Init(p, scale, woBScale, out, LoadTiling(tiling).group_t);
        op.Process();
    }

private:
    __aicore__ inline void Init(GM_ADDR p, GM_ADDR scale, GM_ADDR woBScale, GM_ADDR out, uint32_t rows)
    {
        rows_ = rows;
        sum_.Init(pipe_, p, scale);
        woBScaleGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(woBScale), N);
        outGm_.SetGlobalBuffer(reinterpret_cast<__gm__ Out*>(out), uint64_t(rows) * N);
        pipe_.InitBuffer(outQ_, 2, P::OUT_BYTES);
        pipe_.InitBuffer(woBScale_, P::WO_B_SCALE_BYTES);
        pipe_.InitBuffer(acc_, P::ACC_BYTES);
    }

    __aicore__ inline void Process()
    {
        using Cols = OwnColumns<P, N>;
        static_assert(Cols::FIRST % TILE_N == 0 && Cols::COUNT % TILE_N == 0, "whole tiles of the columns");
        const uint32_t tiles = rows_ * (Cols::COUNT / TILE_N);
        uint32_t loaded = N;  // the column of the wo_b_scale slice in UB (none yet)
        for (uint32_t i = OwnBlocks<P>::Idx(); i < tiles; i += OwnBlocks<P>::Num()) {
            const uint32_t row = i % rows_;
            const uint32_t col = Cols::FIRST + i / rows_ * TILE_N;
            if (col != loaded) {
                LoadWoBScale(col, loaded != N);
                loaded = col;
            }
            sum_.LoadScales(row);
            sum_.Sum(row, col, acc_.Get<float>());
            Store(row, col);
        }
    }

    __aicore__ inline void LoadWoBScale(uint32_t col, bool inUse)
    {
        LocalTensor<float> w = woBScale_.Get<float>();
        if (inUse) {
            // The previous slice's last multiply must finish before the copy overwrites it.
            Handshake<HardEvent::V_MTE2>();
        }
        DataCopy(w, woBScaleGm_[col], TILE_N);
        Handshake<HardEvent::MTE2_V>();
    }

    // out = acc · wo_b_scale, f32 or rounded once to bf16.
    __aicore__ inline void Store(uint32_t row, uint32_t col)
    {
        LocalTensor<float> acc = acc_.Get<float>();
        LocalTensor<float> w = woBScale_.Get<float>();
        LocalTensor<Out> out = outQ_.AllocTensor<Out>();
        if constexpr (P::OUT_BF16) {
            Mul(acc, acc, w, TILE_N);
            Cast(out, acc, RoundMode::CAST_RINT, TILE_N);
        } else {
            Mul(out, acc, w, TILE_N);
        }
        outQ_.EnQue(out);
        out = outQ_.DeQue<Out>();
        DataCopy(outGm_[uint64_t(row) * N + col], out, TILE_N);
        outQ_.FreeTensor(out);
    }

    TPipe pipe_;
    GroupSum<P, 1, TILE_N> sum_;
    TQue<TPosition::VECOUT, 1> outQ_;
    TBuf<TPosition::VECCALC> woBScale_;
    TBuf<TPosition::VECCALC> acc_;
    GlobalTensor<float> woBScaleGm_;
    GlobalTensor<Out> outGm_;
    uint32_t rows_ = 0;
};

}  // namespace dsv4
