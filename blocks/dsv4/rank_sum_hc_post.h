// rank_sum.h's rows fed straight into hc_post.h (swa.md §3.8 step 3, then §3.9): per item of
// TOKENS tokens × COLS columns,
//   attn = bf16(((w[j] + w[t + j]) + w[2t + j]) + …)   (rank_sum.h's order and rounding)
// widened back to f32 as hc_post.h reads it, then mixed into the HC streams. attn_out never
// crosses GM, and x_out's bits are those of the two kernels run in turn.
//
// Params: RankRowsSum's (TP, N = HIDDEN, ROWS_IN), HcStreams's (HC, HIDDEN, TOKENS, COLS,
// X_HC, X_OUT, PRODUCT, WEIGHTS), and the UB sizes ACC (the rows' f32 sum), ATTN_OUT (rounded
// to bf16), ATTN_F32 `_BYTES`. Items are hc_post.h's (ForEachHcItem).
#pragma once

#include "dsv4/hc_post.h"
#include "dsv4/rank_sum.h"

namespace dsv4 {

template <class P>
class RankSumHcPost {
    static constexpr uint32_t T = P::TOKENS;
    static constexpr uint32_t COLS = P::COLS;
    static constexpr uint32_t TILE = T * COLS;
    static_assert(P::N == P::HIDDEN, "the summed rows are the hidden rows hc_post reads");
    static_assert(P::ACC_BYTES >= TILE * sizeof(float) && P::ATTN_F32_BYTES >= TILE * sizeof(float),
                  "f32 rows of an item");
    static_assert(P::ATTN_OUT_BYTES >= TILE * sizeof(bfloat16_t), "the item's rows rounded to bf16");

public:
    __aicore__ inline static void Run(GM_ADDR window, GM_ADDR xHc, GM_ADDR post, GM_ADDR comb, GM_ADDR xOut,
                                      GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const uint32_t t = LoadTiling(tiling).t;
        RankSumHcPost op;
        op.Init(window, xHc, post, comb, xOut, t);
        ForEachHcItem<P, T, COLS>(t, [&op](uint32_t t0, uint32_t c0, bool enters) {
            if (enters) {
                op.streams_.LoadWeights(t0);
            }
            op.Item(t0, c0);
        });
    }

private:
    __aicore__ inline void Init(GM_ADDR window, GM_ADDR xHc, GM_ADDR post, GM_ADDR comb, GM_ADDR xOut, uint32_t t)
    {
        sum_.Init(pipe_, window, t);
        streams_.Init(pipe_, xHc, post, comb, xOut);
        pipe_.InitBuffer(acc_, P::ACC_BYTES);
        pipe_.InitBuffer(attn_, P::ATTN_OUT_BYTES);
        pipe_.InitBuffer(attnF_, P::ATTN_F32_BYTES);
    }

    // Tokens [t0, t0 + T), columns [c0, c0 + COLS): the ranks' rows summed and rounded once,
    // widened, then the mix. The x_hc rows load with the ranks' rows.
    __aicore__ inline void Item(uint32_t t0, uint32_t c0)
    {
        streams_.LoadX(t0, c0);
        AscendC::LocalTensor<float> acc = acc_.Get<float>();
        sum_.Sum(t0, c0, acc);
        AscendC::LocalTensor<bfloat16_t> rounded = attn_.Get<bfloat16_t>();
        AscendC::LocalTensor<float> af = attnF_.Get<float>();
        AscendC::Cast(rounded, acc, AscendC::RoundMode::CAST_RINT, TILE);
        AscendC::Cast(af, rounded, AscendC::RoundMode::CAST_NONE, TILE);
        streams_.Mix(af, t0, c0);
    }

    AscendC::TPipe pipe_;
    RankRowsSum<P, T, COLS> sum_;
    HcStreams<P> streams_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> acc_, attn_, attnF_;
};

}  // namespace dsv4
