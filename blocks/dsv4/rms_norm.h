// The attention RMSNorm (swa.md §3.2): x_normed[d] = bf16((xf[d] * inv) * f32(w[d])) with
// xf = f32(x_mixed) and inv = 1 / sqrt(sum(xf^2) * (1 / HIDDEN) + EPS), one bf16 rounding.
// Groups of TOKEN_GROUP rows are split over the blocks and moved in tiles of TOKENS whole
// rows (one DMA each way). Every block reads and widens the weight once, so whole groups
// per block bound that re-read to 1 / (2 * TOKEN_GROUP) of the rows moved; only with fewer
// groups than blocks is a group's tiles split over blocks (`UnitParts`). A row is
// worked on in COLS-wide f32 chunks: one pass accumulates the squares lane-wise over the
// chunks (then one reduction tree), a second pass scales.
#pragma once

#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// P: HIDDEN (row width), TOKENS (rows per DMA tile), COLS (f32 chunk), EPS, and the UB
// sizes the plan decided (`*_BYTES`, each at least what its use below needs).
template <class P>
class RmsNorm {
    static constexpr uint32_t ROW = P::HIDDEN;
    static constexpr uint32_t COLS = P::COLS;
    static constexpr uint32_t CHUNKS = ROW / COLS;
    static_assert(ROW % COLS == 0, "COLS divides HIDDEN");
    static_assert(COLS * sizeof(bfloat16_t) % BLOCK_BYTES == 0, "chunks are whole 32-byte blocks");
    static_assert(TOKEN_GROUP % P::TOKENS == 0, "tiles divide a token group");
    // One block of f32 lanes for the per-row scalar math.
    static constexpr uint32_t LANES = BLOCK_BYTES / sizeof(float);
    static_assert(P::X_IN_BYTES >= P::TOKENS * ROW * sizeof(bfloat16_t), "x_in holds a tile of rows");
    static_assert(P::X_OUT_BYTES >= P::TOKENS * ROW * sizeof(bfloat16_t), "x_out holds a tile of rows");
    static_assert(P::WEIGHT_BYTES >= ROW * sizeof(float), "the weight widened to f32");
    static_assert(P::X_F32_BYTES >= COLS * sizeof(float) && P::SQUARES_BYTES >= COLS * sizeof(float) &&
                      P::SQUARE_SUMS_BYTES >= COLS * sizeof(float),
                  "f32 chunks");
    static_assert(P::REDUCE_TMP_BYTES >= COLS * sizeof(float), "ReduceSum scratch of a chunk");
    static_assert(P::SCALARS_BYTES >= 2 * LANES * sizeof(float), "inv and a block of ones");

public:
    __aicore__ inline static void Run(GM_ADDR x, GM_ADDR weight, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        constexpr uint32_t TILES = TOKEN_GROUP / P::TOKENS;  // per group
        const TilingData td = LoadTiling(tiling);
        UnitParts it(td.t / TOKEN_GROUP, TILES);
        if (it.Empty()) {
            return;
        }
        RmsNorm op;
        op.Init(x, weight, out);
        while (it.Next()) {
            const Share tiles = it.Range(TILES);
            for (uint32_t k = tiles.begin; k < tiles.end; ++k) {
                op.Tile(it.unit * TOKEN_GROUP + k * P::TOKENS);
            }
        }
    }

private:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR weight, GM_ADDR out)
    {
        x_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(x));
        out_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(out));
        AscendC::GlobalTensor<bfloat16_t> w;
        w.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(weight));
        pipe_.InitBuffer(in_, 2, P::X_IN_BYTES);
        pipe_.InitBuffer(outQ_, 2, P::X_OUT_BYTES);
        pipe_.InitBuffer(weight_, P::WEIGHT_BYTES);
        pipe_.InitBuffer(xf_, P::X_F32_BYTES);
        pipe_.InitBuffer(sq_, P::SQUARES_BYTES);
        pipe_.InitBuffer(acc_, P::SQUARE_SUMS_BYTES);
        pipe_.InitBuffer(reduceTmp_, P::REDUCE_TMP_BYTES);
        pipe_.InitBuffer(scalar_, P::SCALARS_BYTES);
        // The weight stages through an input buffer and is widened once.
        AscendC::LocalTensor<bfloat16_t> staged = in_.AllocTensor<bfloat16_t>();
        AscendC::DataCopy(staged, w, ROW);
        in_.EnQue(staged);
        staged = in_.DeQue<bfloat16_t>();
        AscendC::Cast(weight_.Get<float>(), staged, AscendC::RoundMode::CAST_NONE, ROW);
        in_.FreeTensor(staged);
        AscendC::Duplicate(scalar_.Get<float>()[LANES], 1.0f, LANES);
    }

    // Rows [r0, r0 + TOKENS).
    __aicore__ inline void Tile(uint32_t r0)
    {
        constexpr uint32_t rows = P::TOKENS;
        AscendC::LocalTensor<bfloat16_t> in = in_.AllocTensor<bfloat16_t>();
        AscendC::DataCopy(in, x_[uint64_t(r0) * ROW], rows * ROW);
        in_.EnQue(in);
        in = in_.DeQue<bfloat16_t>();
        AscendC::LocalTensor<bfloat16_t> y = outQ_.AllocTensor<bfloat16_t>();
        for (uint32_t r = 0; r < rows; ++r) {
            Row(in[r * ROW], y[r * ROW]);
        }
        in_.FreeTensor(in);
        outQ_.EnQue(y);
        y = outQ_.DeQue<bfloat16_t>();
        AscendC::DataCopy(out_[uint64_t(r0) * ROW], y, rows * ROW);
        outQ_.FreeTensor(y);
    }

    __aicore__ inline void Row(const AscendC::LocalTensor<bfloat16_t>& in, const AscendC::LocalTensor<bfloat16_t>& y)
    {
        AscendC::LocalTensor<float> xf = xf_.Get<float>();
        AscendC::LocalTensor<float> sq = sq_.Get<float>();
        AscendC::LocalTensor<float> acc = acc_.Get<float>();
        // Squares summed lane-wise over the chunks in ascending order, then one tree.
        for (uint32_t c = 0; c < CHUNKS; ++c) {
            AscendC::Cast(xf, in[c * COLS], AscendC::RoundMode::CAST_NONE, COLS);
            if (c == 0) {
                AscendC::Mul(acc, xf, xf, COLS);
            } else {
                AscendC::Mul(sq, xf, xf, COLS);
                AscendC::Add(acc, acc, sq, COLS);
            }
        }
        AscendC::LocalTensor<float> inv = scalar_.Get<float>();
        AscendC::LocalTensor<float> one = inv[LANES];
        AscendC::ReduceSum(inv, acc, reduceTmp_.Get<float>(), COLS);
        AscendC::Muls(inv, inv, 1.0f / ROW, 1);
        AscendC::Adds(inv, inv, P::EPS, 1);
        AscendC::Sqrt(inv, inv, 1);
        AscendC::Div(inv, one, inv, 1);
        VectorToScalar();
        const float s = inv.GetValue(0);
        const AscendC::LocalTensor<float> w = weight_.Get<float>();
        for (uint32_t c = 0; c < CHUNKS; ++c) {
            AscendC::Cast(xf, in[c * COLS], AscendC::RoundMode::CAST_NONE, COLS);
            AscendC::Muls(xf, xf, s, COLS);
            AscendC::Mul(xf, xf, w[c * COLS], COLS);
            AscendC::Cast(y[c * COLS], xf, AscendC::RoundMode::CAST_RINT, COLS);
        }
    }

    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> in_;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQ_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> weight_, xf_, sq_, acc_, reduceTmp_, scalar_;
    AscendC::GlobalTensor<bfloat16_t> x_, out_;
};

}  // namespace dsv4
