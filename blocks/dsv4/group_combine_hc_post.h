// group_combine.h's TP 1 rows fed straight into hc_post.h (swa.md §3.8 step 2, then §3.9): per
// item of TOKENS tokens × COLS columns,
//   attn = bf16((Σ_{g ascending} f32(p[g]) · s[g]) · wo_b_scale)   (group_combine.h's rounding)
// widened back to f32 as hc_post.h reads it, then mixed into the HC streams. attn_out never
// crosses GM, and x_out's bits are those of the two kernels run in turn.
//
// Params: GroupSum's (GROUPS, ROWS, N, PRODUCT_BUFFERS, PRODUCTS, SCALES, SCALE_BLOCKS,
// TERM) and HcStreams's (HC, HIDDEN = N, TOKENS, COLS, X_HC, X_OUT, PRODUCT, WEIGHTS), and the
// UB sizes WO_B_SCALE (the whole row), ACC, ATTN_OUT (the rounded bf16 rows), ATTN_F32
// `_BYTES`. Items are hc_post.h's (ForEachHcItem: its blocks OwnBlocks<P>, its columns
// OwnColumns<P, N>, each optionally a range of the launch's). wo_b_scale loads once, whole (an item's
// column changes from item to item), which leaves the TPipe's V_MTE2 event ids to the group
// products.
#pragma once

#include "dsv4/group_combine.h"
#include "dsv4/hc_post.h"

namespace dsv4 {

template <class P>
class GroupCombineHcPost {
    static constexpr uint32_t T = P::TOKENS;
    static constexpr uint32_t COLS = P::COLS;
    static constexpr uint32_t D = P::HIDDEN;
    static_assert(P::N == D, "the combined rows are the hidden rows hc_post reads");
    static_assert(P::WO_B_SCALE_BYTES >= D * sizeof(float), "wo_b_scale holds the whole row");
    static_assert(P::ACC_BYTES >= T * COLS * sizeof(float) && P::ATTN_F32_BYTES >= T * COLS * sizeof(float),
                  "f32 rows of an item");
    static_assert(P::ATTN_OUT_BYTES >= T * COLS * sizeof(bfloat16_t), "the item's rows rounded to bf16");

public:
    __aicore__ inline static void Run(GM_ADDR p, GM_ADDR scale, GM_ADDR woBScale, GM_ADDR xHc, GM_ADDR post,
                                      GM_ADDR comb, GM_ADDR xOut, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        GroupCombineHcPost op;
        op.Init(p, scale, woBScale, xHc, post, comb, xOut);
        ForEachHcItem<P, T, COLS>(LoadTiling(tiling).t, [&op](uint32_t t0, uint32_t c0, bool enters) {
            if (enters) {
                op.streams_.LoadWeights(t0);
            }
            op.Item(t0, c0);
        });
    }

private:
    __aicore__ inline void Init(GM_ADDR p, GM_ADDR scale, GM_ADDR woBScale, GM_ADDR xHc, GM_ADDR post, GM_ADDR comb,
                                GM_ADDR xOut)
    {
        sum_.Init(pipe_, p, scale);
        pipe_.InitBuffer(woBScale_, P::WO_B_SCALE_BYTES);
        AscendC::GlobalTensor<float> w;
        w.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(woBScale), D);
        DataCopy(woBScale_.Get<float>(), w, D);
        Handshake<HardEvent::MTE2_V>();
        streams_.Init(pipe_, xHc, post, comb, xOut);
        pipe_.InitBuffer(acc_, P::ACC_BYTES);
        pipe_.InitBuffer(attn_, P::ATTN_OUT_BYTES);
        pipe_.InitBuffer(attnF_, P::ATTN_F32_BYTES);
    }

    // Tokens [t0, t0 + T), columns [c0, c0 + COLS). The x_hc rows load with the scales.
    __aicore__ inline void Item(uint32_t t0, uint32_t c0)
    {
        streams_.LoadX(t0, c0);
        sum_.LoadScales(t0);
        LocalTensor<float> acc = acc_.Get<float>();
        sum_.Sum(t0, c0, acc);
        const LocalTensor<float> w = woBScale_.Get<float>()[c0];
        for (uint32_t r = 0; r < T; ++r) {
            Mul(acc[r * COLS], acc[r * COLS], w, COLS);
        }
        LocalTensor<bfloat16_t> rounded = attn_.Get<bfloat16_t>();
        LocalTensor<float> af = attnF_.Get<float>();
        Cast(rounded, acc, RoundMode::CAST_RINT, T * COLS);
        Cast(af, rounded, RoundMode::CAST_NONE, T * COLS);
        streams_.Mix(af, t0, c0);
    }

    TPipe pipe_;
    GroupSum<P, T, COLS> sum_;
    HcStreams<P> streams_;
    TBuf<TPosition::VECCALC> woBScale_, acc_, attn_, attnF_;
};

}  // namespace dsv4
