// Softmax of the window attention (swa.md §3.5, §3.6 steps 3 and 5), per token t and head h
// over the request's union lanes (AttentionScores):
//   z = f32(score) * SCALE + bias, bias = 0 on the token's lanes [Begin, End), else -1e20
//   m = max z,  e = exp(z - m),  l = sum e (f32, unrounded),  probs = bf16(e * 2^-O_SHIFT)
//   denom = l + exp(attn_sink[h] - m)
// The power of two is exact: it lets the values product leave o in half (attention_cube.h),
// as |o * 2^-O_SHIFT| <= max |v| where 2^O_SHIFT >= WINDOW (e <= 1 on at most WINDOW lanes).
// The bias is the reference's clamp form on a lane index: (clamp(lane - Begin + 1, 0, 1) *
// clamp(End - lane, 0, 1) - 1) * 1e20, exactly +0 or -1e20. Masked lanes exp to exactly 0,
// so probs is zero outside the token's lanes (and on the zero rows past the union).
// A work item is a range of a request's (token, HEAD_TILE heads) units, token-major: whole
// requests when there are as many requests as blocks, else each request's units in as many
// ranges as blocks per request. First an item checks the metadata contract the union relies
// on (attention_window.h) up to its last token: every valid lane of every token must equal
// the union entry it maps to; a violation stops the launch with the request and token (the
// golden's per-token gather is what the union reproduces when the contract holds).
#pragma once

#include "dsv4/attention_window.h"
#include "dsv4/online_softmax.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// P: HEADS, WINDOW, SEQ, UNION_ROWS, HEAD_TILE, SCALE (HEAD_DIM^-0.5), O_SHIFT (0, or
// 2^O_SHIFT >= WINDOW), and the UB sizes the plan decided (`*_BYTES`, each at least what
// its use below needs).
template <class P>
class AttentionSoftmax {
    static constexpr uint32_t N = P::UNION_ROWS;
    static constexpr uint32_t TILE = P::HEAD_TILE * N;
    static constexpr uint32_t LANES_PAD = AlignUp(P::WINDOW, BLOCK_BYTES / sizeof(int32_t));
    static constexpr uint32_t SLOT = BLOCK_BYTES / sizeof(float);  // f32 per 32-byte block
    static constexpr float MASK = 1.0e20f;
    static constexpr uint32_t TILES = P::HEADS / P::HEAD_TILE;  // per token
    static constexpr uint32_t UNITS = P::SEQ * TILES;           // per request
    static_assert(P::HEADS % P::HEAD_TILE == 0 && P::HEAD_TILE % SLOT == 0, "HEAD_TILE: whole blocks dividing HEADS");
    static_assert(N % 16 == 0 && N >= P::WINDOW + P::SEQ - 1, "UNION_ROWS holds the union, bf16 rows in whole blocks");
    static_assert(P::O_SHIFT == 0 || (P::O_SHIFT <= 15 && (uint64_t(1) << P::O_SHIFT) >= P::WINDOW),
                  "probabilities scaled so that o fits half");
    static_assert(P::SCORES_BYTES >= TILE * sizeof(float) && P::PROBS_BYTES >= TILE * sizeof(bfloat16_t),
                  "a tile of head rows over the union lanes");
    static_assert(P::INDEX_ROW_BYTES >= LANES_PAD * sizeof(int32_t) &&
                      P::LANE_OFFSETS_BYTES >= LANES_PAD * sizeof(int32_t) &&
                      P::GATHER_OFFSETS_BYTES >= LANES_PAD * sizeof(int32_t) &&
                      P::EXPECTED_BYTES >= LANES_PAD * sizeof(int32_t) &&
                      P::MISMATCH_BYTES >= LANES_PAD * sizeof(float),
                  "a token's lanes, padded to a block");
    static_assert(P::UNION_BYTES >= N * sizeof(int32_t), "the union's entries");
    static_assert(P::LANE_BYTES >= N * sizeof(float) && P::BIAS_BYTES >= N * sizeof(float) &&
                      P::CLAMP_BYTES >= N * sizeof(float) && P::REDUCE_TMP_BYTES >= N * sizeof(float),
                  "f32 over the union lanes");
    static_assert(P::REDUCE_TMP_BYTES >= FoldFloats(P::HEAD_TILE, N) * sizeof(float), "a tile's rows folded");
    static_assert(P::ROW_STATS_BYTES >= P::HEAD_TILE * SLOT * sizeof(float), "a block per head of a tile");
    static_assert(P::SINK_BYTES >= P::HEADS * sizeof(float) && P::ROW_MAX_BYTES >= P::HEADS * sizeof(float) &&
                      P::ROW_SUM_BYTES >= P::HEADS * sizeof(float) && P::DENOM_BYTES >= P::HEADS * sizeof(float),
                  "a value per head");

public:
    __aicore__ inline static void Run(GM_ADDR scores, GM_ADDR swaIndices, GM_ADDR swaLens, GM_ADDR attnSink,
                                      GM_ADDR probs, GM_ADDR denom, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        AttentionSoftmax op;
        op.Init(scores, swaIndices, swaLens, attnSink, probs, denom);
        op.Items(td.b);
    }

    // As above, and each head's max m to `rowMax` [t, HEADS] f32, where a further source
    // (attention_compressed.h) continues the online softmax.
    __aicore__ inline static void Run(GM_ADDR scores, GM_ADDR swaIndices, GM_ADDR swaLens, GM_ADDR attnSink,
                                      GM_ADDR probs, GM_ADDR denom, GM_ADDR rowMax, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        AttentionSoftmax op;
        op.Init(scores, swaIndices, swaLens, attnSink, probs, denom);
        op.maxOut_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(rowMax));
        op.writeMax_ = true;
        op.Items(td.b);
    }

private:
    // The fused window kernel runs the same steps tile by tile (attention_window_fused.h).
    template <class, class, class>
    friend class AttentionWindowFused;

    __aicore__ inline void Init(GM_ADDR scores, GM_ADDR swaIndices, GM_ADDR swaLens, GM_ADDR attnSink, GM_ADDR probs,
                                GM_ADDR denom)
    {
        scores_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(scores));
        indices_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(swaIndices));
        lens_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(swaLens));
        probs_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(probs));
        denom_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(denom));
        pipe_.InitBuffer(scoresQ_, 2, P::SCORES_BYTES);
        pipe_.InitBuffer(probsQ_, 2, P::PROBS_BYTES);
        pipe_.InitBuffer(indexRow_, P::INDEX_ROW_BYTES);
        pipe_.InitBuffer(union_, P::UNION_BYTES);
        pipe_.InitBuffer(laneOffsets_, P::LANE_OFFSETS_BYTES);
        pipe_.InitBuffer(gatherOffsets_, P::GATHER_OFFSETS_BYTES);
        pipe_.InitBuffer(expected_, P::EXPECTED_BYTES);
        pipe_.InitBuffer(mismatch_, P::MISMATCH_BYTES);
        pipe_.InitBuffer(lane_, P::LANE_BYTES);
        pipe_.InitBuffer(bias_, P::BIAS_BYTES);
        pipe_.InitBuffer(clamp_, P::CLAMP_BYTES);
        pipe_.InitBuffer(reduceTmp_, P::REDUCE_TMP_BYTES);
        pipe_.InitBuffer(rowStats_, P::ROW_STATS_BYTES);
        pipe_.InitBuffer(sink_, P::SINK_BYTES);
        pipe_.InitBuffer(rowMax_, P::ROW_MAX_BYTES);
        pipe_.InitBuffer(rowSum_, P::ROW_SUM_BYTES);
        pipe_.InitBuffer(denomOut_, P::DENOM_BYTES);
        // Constants: lane index k (f32) and the byte offset of int32 lane k.
        AscendC::LocalTensor<float> lane = lane_.Get<float>();
        for (uint32_t k = 0; k < N; ++k) {
            lane.SetValue(k, static_cast<float>(k));
        }
        AscendC::LocalTensor<int32_t> offsets = laneOffsets_.Get<int32_t>();
        for (uint32_t k = 0; k < LANES_PAD; ++k) {
            offsets.SetValue(k, static_cast<int32_t>(k * sizeof(int32_t)));
        }
        AscendC::GlobalTensor<float> sinkG;
        sinkG.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(attnSink));
        AscendC::DataCopy(sink_.Get<float>(), sinkG, P::HEADS);
        Handshake<AscendC::HardEvent::MTE2_V>();
        ScalarToVector();
    }

    // This block's items: each request's UNITS units in `parts` ranges (blocks per request,
    // at least 1, at most UNITS), the items in contiguous shares of the blocks.
    __aicore__ inline void Items(uint32_t requests)
    {
        for (UnitParts it(requests, UNITS); it.Next();) {
            const Share units = it.Range(UNITS);
            Item(it.unit, units.begin, units.end);
        }
    }

    // Units [u0, u1) of request b.
    __aicore__ inline void Item(uint32_t b, uint32_t u0, uint32_t u1)
    {
        WindowUnion<P> w;
        w.ReadLens(lens_, b);
        CheckContract(w, b, (u1 - 1) / TILES + 1);
        for (uint32_t u = u0; u < u1;) {
            const uint32_t s = u / TILES, t = b * P::SEQ + s;
            const uint32_t tile0 = u % TILES;
            const uint32_t tile1 = Min(TILES, tile0 + (u1 - u));
            Bias(w.Begin(s), w.End(s));
            for (uint32_t i = tile0; i < tile1; ++i) {
                Tile(t, i * P::HEAD_TILE);
            }
            Denominators(t, tile0 * P::HEAD_TILE, (tile1 - tile0) * P::HEAD_TILE);
            u += tile1 - tile0;
        }
    }

    // Token s's valid lanes must be union entries [Begin(s), End(s)): the union is token 0's
    // lanes, then each later token's last lane; each token's row is compared with a gather
    // from the union as it grows.
    __aicore__ inline void CheckContract(const WindowUnion<P>& w, uint32_t b, uint32_t tokens)
    {
        AscendC::LocalTensor<int32_t> row = indexRow_.Get<int32_t>();
        AscendC::LocalTensor<int32_t> uni = union_.Get<int32_t>();
        AscendC::LocalTensor<int32_t> offsets = gatherOffsets_.Get<int32_t>();
        AscendC::LocalTensor<int32_t> expected = expected_.Get<int32_t>();
        AscendC::LocalTensor<float> mismatch = mismatch_.Get<float>();
        AscendC::LocalTensor<float> worst = rowStats_.Get<float>();
        for (uint32_t s = 0; s < tokens; ++s) {
            const uint32_t t = b * P::SEQ + s;
            AscendC::DataCopyPad(row, indices_[static_cast<uint64_t>(t) * P::WINDOW],
                                 AscendC::DataCopyExtParams(1, P::WINDOW * sizeof(int32_t), 0, 0, 0),
                                 AscendC::DataCopyPadExtParams<int32_t>(false, 0, 0, 0));
            Handshake<AscendC::HardEvent::MTE2_V>();
            if (s == 0) {
                AscendC::DataCopy(uni, row, LANES_PAD);
            } else {
                Handshake<AscendC::HardEvent::MTE2_S>();
                uni.SetValue(w.End(s) - 1, row.GetValue(w.lens[s] - 1));
                ScalarToVector();
                const int32_t n = w.lens[s];
                AscendC::Adds(offsets, laneOffsets_.Get<int32_t>(), static_cast<int32_t>(w.Begin(s) * sizeof(int32_t)),
                              n);
                AscendC::Gather(expected, uni, offsets.ReinterpretCast<uint32_t>(), 0, static_cast<uint32_t>(n));
                AscendC::Sub(expected, expected, row, n);
                AscendC::Cast(mismatch, expected, AscendC::RoundMode::CAST_RINT, static_cast<uint32_t>(n));
                AscendC::Abs(mismatch, mismatch, n);
                AscendC::ReduceMax(worst, mismatch, reduceTmp_.Get<float>(), n);
                VectorToScalar();
                ascendc_assert(worst.GetValue(0) == 0.0f,
                               "request %u, token %u: swa_indices lanes are not the request's window union (each "
                               "token's lanes must be consecutive positions ending at the token, the request's "
                               "tokens consecutive)",
                               b, s);
            }
            // The next row may overwrite this one once the vector reads are done.
            Handshake<AscendC::HardEvent::V_MTE2>();
        }
    }

    __aicore__ inline void Bias(uint32_t begin, uint32_t end)
    {
        AscendC::LocalTensor<float> lane = lane_.Get<float>();
        AscendC::LocalTensor<float> bias = bias_.Get<float>();
        AscendC::LocalTensor<float> clamp = clamp_.Get<float>();
        AscendC::Adds(bias, lane, 1.0f - static_cast<float>(begin), N);  // lane - begin + 1
        AscendC::Maxs(bias, bias, 0.0f, N);
        AscendC::Mins(bias, bias, 1.0f, N);
        AscendC::Muls(clamp, lane, -1.0f, N);
        AscendC::Adds(clamp, clamp, static_cast<float>(end), N);  // end - lane
        AscendC::Maxs(clamp, clamp, 0.0f, N);
        AscendC::Mins(clamp, clamp, 1.0f, N);
        AscendC::Mul(bias, bias, clamp, N);
        AscendC::Adds(bias, bias, -1.0f, N);
        AscendC::Muls(bias, bias, MASK, N);
    }

    // HEAD_TILE heads of token t: scale, mask, row max, exp, row sum, bf16 probs.
    __aicore__ inline void Tile(uint32_t t, uint32_t h0)
    {
        LoadTile(t, h0);
        ComputeTile(t, h0);
    }

    // Tile's first half: its scores start loading (a caller may queue other loads behind
    // them before ComputeTile waits for them).
    __aicore__ inline void LoadTile(uint32_t t, uint32_t h0)
    {
        const uint64_t row = static_cast<uint64_t>(t) * P::HEADS + h0;
        AscendC::LocalTensor<float> z = scoresQ_.AllocTensor<float>();
        AscendC::DataCopy(z, scores_[row * N], TILE);
        scoresQ_.EnQue(z);
    }

    // The rest of Tile, on the scores LoadTile queued last.
    __aicore__ inline void ComputeTile(uint32_t t, uint32_t h0)
    {
        const uint64_t row = static_cast<uint64_t>(t) * P::HEADS + h0;
        AscendC::LocalTensor<float> z = scoresQ_.DeQue<float>();
        ExpRows<P::HEAD_TILE>(z, bias_.Get<float>(), P::SCALE, N, reduceTmp_.Get<float>(), rowStats_.Get<float>(),
                              rowMax_.Get<float>(), rowSum_.Get<float>(), h0);
        if constexpr (P::O_SHIFT > 0) {
            AscendC::Muls(z, z, 1.0f / static_cast<float>(1u << P::O_SHIFT), TILE);
        }
        AscendC::LocalTensor<bfloat16_t> p = probsQ_.AllocTensor<bfloat16_t>();
        AscendC::Cast(p, z, AscendC::RoundMode::CAST_RINT, TILE);
        scoresQ_.FreeTensor(z);
        probsQ_.EnQue(p);
        p = probsQ_.DeQue<bfloat16_t>();
        AscendC::DataCopy(probs_[row * N], p, TILE);
        probsQ_.FreeTensor(p);
    }

    // denom = l + exp(sink - m) for heads [h0, h0 + n) of token t.
    __aicore__ inline void Denominators(uint32_t t, uint32_t h0, uint32_t n)
    {
        AscendC::LocalTensor<float> d = denomOut_.Get<float>()[h0];
        const AscendC::LocalTensor<float> m = rowMax_.Get<float>()[h0];
        AscendC::Sub(d, sink_.Get<float>()[h0], m, n);
        AscendC::Exp(d, d, n);
        AscendC::Add(d, rowSum_.Get<float>()[h0], d, n);
        Handshake<AscendC::HardEvent::V_MTE3>();
        const uint64_t at = static_cast<uint64_t>(t) * P::HEADS + h0;
        AscendC::DataCopy(denom_[at], d, n);
        if (writeMax_) {
            AscendC::DataCopy(maxOut_[at], m, n);
        }
        Handshake<AscendC::HardEvent::MTE3_V>();
    }

    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> scoresQ_;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> probsQ_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> indexRow_, union_, laneOffsets_, gatherOffsets_, expected_, mismatch_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> lane_, bias_, clamp_, reduceTmp_, rowStats_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> sink_, rowMax_, rowSum_, denomOut_;
    AscendC::GlobalTensor<float> scores_;
    AscendC::GlobalTensor<int32_t> indices_;
    AscendC::GlobalTensor<int32_t> lens_;
    AscendC::GlobalTensor<bfloat16_t> probs_;
    AscendC::GlobalTensor<float> denom_;
    AscendC::GlobalTensor<float> maxOut_;
    bool writeMax_ = false;
};

}  // namespace dsv4
