// hc_post (swa.md §3.9): the attention output folded back into the HC streams, all f32:
//   x_out[o, d] = ((((f32(attn_out[d]) * post[o]) + x_hc[0, d] * comb[0, o])
//                   + x_hc[1, d] * comb[1, o]) + x_hc[2, d] * comb[2, o]) + x_hc[3, d] * comb[3, o]
// with every product and sum rounded to f32 in exactly that order (comb[i, o] = comb[i*HC + o]).
// Work items are (token group of TOKENS rows, COLS-wide column chunk) pairs, split over the
// blocks in contiguous runs; a block reloads a group's post/comb weights only when its run
// enters a new group.
#pragma once

#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// What an item of T tokens × COLS columns does with the HC streams, given the attention rows
// widened to f32: loads the token group's post/comb and the item's x_hc rows, mixes, stores
// x_out. P: HC, HIDDEN, TOKENS, COLS and the UB sizes X_HC, X_OUT, PRODUCT, WEIGHTS `_BYTES`.
template <class P>
class HcStreams {
    static constexpr uint32_t HC = P::HC;
    static constexpr uint32_t D = P::HIDDEN;
    static constexpr uint32_t T = P::TOKENS;
    static constexpr uint32_t COLS = P::COLS;
    static_assert(D % COLS == 0, "COLS divides HIDDEN");
    static_assert(COLS * sizeof(bfloat16_t) % BLOCK_BYTES == 0, "chunks are whole 32-byte blocks");
    static_assert(T * HC <= 4095 && (D - COLS) * sizeof(float) / BLOCK_BYTES <= 65535,
                  "a DataCopy of an item's stream rows: at most 4095 rows, a 16-bit gap in blocks");
    // post and comb of one token group, each region starting on a block.
    static constexpr uint32_t POST_LEN = AlignUp(T * HC, BLOCK_BYTES / sizeof(float));
    static constexpr uint32_t COMB_LEN = AlignUp(T * HC * HC, BLOCK_BYTES / sizeof(float));
    static_assert(P::X_HC_BYTES >= T * HC * COLS * sizeof(float) && P::X_OUT_BYTES >= T * HC * COLS * sizeof(float),
                  "x_hc and x_out hold an item's stream rows");
    static_assert(P::PRODUCT_BYTES >= COLS * sizeof(float), "a product row");
    static_assert(P::WEIGHTS_BYTES >= (POST_LEN + COMB_LEN) * sizeof(float), "post, then comb from a block");

public:
    __aicore__ inline void Init(AscendC::TPipe& pipe, GM_ADDR xHc, GM_ADDR post, GM_ADDR comb, GM_ADDR xOut)
    {
        xHc_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(xHc));
        post_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(post));
        comb_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(comb));
        xOut_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(xOut));
        pipe.InitBuffer(xQ_, 2, P::X_HC_BYTES);
        pipe.InitBuffer(yQ_, 2, P::X_OUT_BYTES);
        pipe.InitBuffer(prod_, P::PRODUCT_BYTES);
        pipe.InitBuffer(weights_, P::WEIGHTS_BYTES);
    }

    // post [T, HC] and comb [T, HC*HC] of the group at token t0, read as per-token scalars.
    __aicore__ inline void LoadWeights(uint32_t t0)
    {
        AscendC::LocalTensor<float> w = weights_.Get<float>();
        AscendC::DataCopyPadExtParams<float> noPad;
        AscendC::DataCopyPad(w, post_[uint64_t(t0) * HC], AscendC::DataCopyExtParams(1, T * HC * sizeof(float), 0, 0, 0),
                             noPad);
        AscendC::DataCopyPad(w[POST_LEN], comb_[uint64_t(t0) * HC * HC],
                             AscendC::DataCopyExtParams(1, T * HC * HC * sizeof(float), 0, 0, 0), noPad);
        Handshake<AscendC::HardEvent::MTE2_S>();
        for (uint32_t r = 0; r < T; ++r) {
            for (uint32_t o = 0; o < HC; ++o) {
                postW_[r][o] = w.GetValue(r * HC + o);
            }
            for (uint32_t i = 0; i < HC * HC; ++i) {
                combW_[r][i] = w.GetValue(POST_LEN + r * HC * HC + i);
            }
        }
    }

    // The T * HC x_hc rows of tokens [t0, t0 + T), columns [c0, c0 + COLS).
    __aicore__ inline void LoadX(uint32_t t0, uint32_t c0)
    {
        AscendC::LocalTensor<float> x = xQ_.AllocTensor<float>();
        AscendC::DataCopy(x, xHc_[uint64_t(t0) * HC * D + c0],
                          AscendC::DataCopyParams(T * HC, BlocksOf<float>(COLS), BlocksOf<float>(D - COLS), 0));
        xQ_.EnQue(x);
    }

    // x_out of the item LoadX loaded, from the attention rows af (f32, T × COLS).
    __aicore__ inline void Mix(const AscendC::LocalTensor<float>& af, uint32_t t0, uint32_t c0)
    {
        AscendC::LocalTensor<float> x = xQ_.DeQue<float>();
        AscendC::LocalTensor<float> prod = prod_.Get<float>();
        AscendC::LocalTensor<float> y = yQ_.AllocTensor<float>();
        for (uint32_t r = 0; r < T; ++r) {
            for (uint32_t o = 0; o < HC; ++o) {
                AscendC::LocalTensor<float> acc = y[(r * HC + o) * COLS];
                AscendC::Muls(acc, af[r * COLS], postW_[r][o], COLS);
                for (uint32_t i = 0; i < HC; ++i) {
                    AscendC::Muls(prod, x[(r * HC + i) * COLS], combW_[r][i * HC + o], COLS);
                    AscendC::Add(acc, acc, prod, COLS);
                }
            }
        }
        xQ_.FreeTensor(x);
        yQ_.EnQue(y);
        y = yQ_.DeQue<float>();
        AscendC::DataCopy(xOut_[uint64_t(t0) * HC * D + c0], y,
                          AscendC::DataCopyParams(T * HC, BlocksOf<float>(COLS), 0, BlocksOf<float>(D - COLS)));
        yQ_.FreeTensor(y);
    }

private:
    AscendC::TQue<AscendC::TPosition::VECIN, 1> xQ_;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> yQ_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> prod_, weights_;
    AscendC::GlobalTensor<float> xHc_, post_, comb_, xOut_;
    float postW_[T][HC];
    float combW_[T][HC * HC];
};

// The items of a kernel with Params P over T-token groups of t tokens: (group, COLS chunk of
// its columns, OwnColumns<P, P::HIDDEN>) pairs split over its blocks (OwnBlocks<P>) in
// contiguous runs; `item(t0, c0, enters)` runs one, `enters` when it is the first of its
// token group on this block (whose post/comb are then loaded).
template <class P, uint32_t T, uint32_t COLS, class Item>
__aicore__ inline void ForEachHcItem(uint32_t t, Item item)
{
    using Cols = OwnColumns<P, P::HIDDEN>;
    static_assert(Cols::FIRST % COLS == 0 && Cols::COUNT % COLS == 0, "whole items of the columns");
    constexpr uint32_t CHUNKS = Cols::COUNT / COLS;
    const Share share = OwnBlocks<P>::Of(t / T * CHUNKS);
    uint32_t group = ~0u;
    for (uint32_t i = share.begin; i < share.end; ++i) {
        const bool enters = i / CHUNKS != group;
        group = i / CHUNKS;
        item(group * T, Cols::FIRST + (i % CHUNKS) * COLS, enters);
    }
}

// P: HC (streams), HIDDEN, TOKENS (rows per item), COLS (columns per item), and the UB sizes
// the plan decided (`*_BYTES`, each at least what its use needs: HcStreams's, ATTN_OUT,
// ATTN_F32).
template <class P>
class HcPost {
    static constexpr uint32_t D = P::HIDDEN;
    static constexpr uint32_t T = P::TOKENS;
    static constexpr uint32_t COLS = P::COLS;
    static_assert(P::ATTN_OUT_BYTES >= T * COLS * sizeof(bfloat16_t), "attn_out holds an item's rows");
    static_assert(P::ATTN_F32_BYTES >= T * COLS * sizeof(float), "attn_out widened to f32");

public:
    __aicore__ inline static void Run(GM_ADDR attnOut, GM_ADDR xHc, GM_ADDR post, GM_ADDR comb, GM_ADDR xOut,
                                      GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        HcPost op;
        op.Init(attnOut, xHc, post, comb, xOut);
        ForEachHcItem<P, T, COLS>(LoadTiling(tiling).t, [&op](uint32_t t0, uint32_t c0, bool enters) {
            if (enters) {
                op.streams_.LoadWeights(t0);
            }
            op.Item(t0, c0);
        });
    }

private:
    __aicore__ inline void Init(GM_ADDR attnOut, GM_ADDR xHc, GM_ADDR post, GM_ADDR comb, GM_ADDR xOut)
    {
        attn_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(attnOut));
        pipe_.InitBuffer(attnQ_, 2, P::ATTN_OUT_BYTES);
        streams_.Init(pipe_, xHc, post, comb, xOut);
        pipe_.InitBuffer(attnF_, P::ATTN_F32_BYTES);
    }

    // Tokens [t0, t0 + T), columns [c0, c0 + COLS): attn_out's rows widened, then the mix.
    __aicore__ inline void Item(uint32_t t0, uint32_t c0)
    {
        AscendC::LocalTensor<bfloat16_t> a = attnQ_.AllocTensor<bfloat16_t>();
        AscendC::DataCopy(a, attn_[uint64_t(t0) * D + c0],
                          AscendC::DataCopyParams(T, BlocksOf<bfloat16_t>(COLS), BlocksOf<bfloat16_t>(D - COLS), 0));
        attnQ_.EnQue(a);
        streams_.LoadX(t0, c0);
        a = attnQ_.DeQue<bfloat16_t>();
        AscendC::LocalTensor<float> af = attnF_.Get<float>();
        AscendC::Cast(af, a, AscendC::RoundMode::CAST_NONE, T * COLS);
        attnQ_.FreeTensor(a);
        streams_.Mix(af, t0, c0);
    }

    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> attnQ_;
    HcStreams<P> streams_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> attnF_;
    AscendC::GlobalTensor<bfloat16_t> attn_;
};

}  // namespace dsv4
