// Vector side of the lightning indexer (hca_csa.md §5.4, §5.5), AIV only: per token t of
// request b, with V_t = min(kv_seq_lens[b] / RATIO, (p_t + 1) / RATIO, CAP) visible rows,
//   score[j] = k_s[j] · Σ_h c[h] · raw[t, h, j],    c[h] = q_s[t, h] · w[t, h]
// for j < V_t (raw from IndexScores is already ReLU'd int32; q_s > 0 moves out of the ReLU),
// KEY_ROWS columns at a time: the HEADS raw rows are cast, scaled by c (a [HEADS, KEY_ROWS]
// tile of c[h] rows built once per token) and summed by a halving tree of adds, then scaled
// by the key scales of the request (its pages of idx_kv_scale, gathered once per request).
// Rows j in [V_t, V_t rounded up to 32) score FP32_NEG_INF, so no padding can beat a real row;
// the scores go to the top-k (dsv4/topk.h) a SORT_CHUNK at a time, and topk_idx[t] gets the
// best min(TOPK, V_t) rows, best first, then −1 (all −1 when V_t = 0).
// Blocks take contiguous token ranges of about equal work (so a request's key scales are
// gathered once per block).
#pragma once

#include "dsv4/index_score.h"
#include "dsv4/scalar_stream.h"
#include "dsv4/tiling_data.h"
#include "dsv4/topk.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// The head-weighted scores of raw passes (§5.4), for the kernels that use them (IndexSelect
// below, IndexLeaves in dsv4/index_leaves.h): per token the [HEADS, KEY_ROWS] tile of
// c[h] = q_s[t, h] · w[t, h] (HeadScales), then per pass of KEY_ROWS raw columns of the
// token's HEADS rows: cast to f32, · c, summed over heads by a halving tree of adds, · k_s.
// With RAW_BUFS = 2 passes are loaded into two buffers in turn, so the next pass's load runs
// under this one's vector work (Ahead, then Weigh); with 1 (when two do not fit UB) each
// pass loads before its work. P: HEADS, KEY_ROWS, RAW_BUFS, and the UB sizes RAW_I32 (a pass
// of raw rows, each buffer), RAW_F32 (the same as f32), HEAD_SCALES (the c[h] tile),
// HEAD_ROWS (q_s and w rows as read). GM: idx_q_scale
// [t, HEADS] f32, idx_weights [t, HEADS] f32.
template <class P>
class HeadWeighted {
    static constexpr uint32_t KR = P::KEY_ROWS;
    static constexpr uint32_t HEADS_PAD = AlignUp(P::HEADS, 8);
    static_assert(P::RAW_I32_BYTES >= P::HEADS * KR * sizeof(int32_t) &&
                      P::RAW_F32_BYTES >= P::HEADS * KR * sizeof(float) &&
                      P::HEAD_SCALES_BYTES >= P::HEADS * KR * sizeof(float),
                  "a pass of HEADS raw rows, as read, as f32, and its c[h] rows");
    static_assert(P::HEAD_ROWS_BYTES >= 2 * HEADS_PAD * sizeof(float), "q_s and w rows");
    static_assert(P::HEADS <= 4095, "a DataCopy of a pass of raw rows: at most 4095 rows");
    static_assert(P::RAW_BUFS == 1 || P::RAW_BUFS == 2, "one raw buffer, or two in turn");

public:
    __aicore__ inline void Init(AscendC::TPipe& pipe, GM_ADDR qScale, GM_ADDR weights)
    {
        qScale_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(qScale));
        weights_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(weights));
        pipe.InitBuffer(rawIn_, P::RAW_BUFS, P::RAW_I32_BYTES);
        pipe.InitBuffer(rawF_, P::RAW_F32_BYTES);
        pipe.InitBuffer(headScales_, P::HEAD_SCALES_BYTES);
        pipe.InitBuffer(headRows_, P::HEAD_ROWS_BYTES);
    }

    // c[h] = q_s[t, h] · w[t, h], each as a row of KEY_ROWS.
    __aicore__ inline void HeadScales(uint32_t t)
    {
        AscendC::LocalTensor<float> rows = headRows_.Get<float>();
        const AscendC::DataCopyExtParams copy(1, P::HEADS * sizeof(float), 0, 0, 0);
        const AscendC::DataCopyPadExtParams<float> pad(false, 0, 0, 0.0f);
        AscendC::DataCopyPad(rows, qScale_[static_cast<uint64_t>(t) * P::HEADS], copy, pad);
        AscendC::DataCopyPad(rows[HEADS_PAD], weights_[static_cast<uint64_t>(t) * P::HEADS], copy, pad);
        Handshake<AscendC::HardEvent::MTE2_S>();
        AscendC::LocalTensor<float> c = headScales_.Get<float>();
        for (uint32_t h = 0; h < P::HEADS; ++h) {
            const float v = rows.GetValue(h) * rows.GetValue(HEADS_PAD + h);
            AscendC::Duplicate(c[h * KR], v, static_cast<int32_t>(KR));
        }
    }

    // Before weighing the pass at column c0 of the token's n columns of raw rows (`raw`: its
    // head 0, column 0; row stride `stride`): loads that pass unless it was loaded ahead, and
    // with two buffers the next one ahead.
    __aicore__ inline void Ahead(const AscendC::GlobalTensor<int32_t>& raw, uint32_t stride, uint32_t c0, uint32_t n)
    {
        if (c0 == 0 || P::RAW_BUFS == 1) {
            Load(raw[c0], stride);
        }
        if (P::RAW_BUFS == 2 && c0 + KR < n) {
            Load(raw[c0 + KR], stride);
        }
    }

    // The oldest loaded pass: out[0 .. KEY_ROWS) = ks[j] · Σ_h c[h] · raw[h, j] with the
    // pass's key scales `ks`.
    __aicore__ inline void Weigh(const AscendC::LocalTensor<float>& ks, const AscendC::LocalTensor<float>& out)
    {
        AscendC::LocalTensor<int32_t> rawI = rawIn_.DeQue<int32_t>();
        AscendC::LocalTensor<float> rawF = rawF_.Get<float>();
        AscendC::Cast(rawF, rawI, AscendC::RoundMode::CAST_NONE, static_cast<int32_t>(P::HEADS * KR));
        rawIn_.FreeTensor(rawI);
        AscendC::Mul(rawF, rawF, headScales_.Get<float>(), static_cast<int32_t>(P::HEADS * KR));
        for (uint32_t rows = P::HEADS; rows > 1;) {
            const uint32_t half = rows / 2;
            AscendC::Add(rawF, rawF, rawF[(rows - half) * KR], static_cast<int32_t>(half * KR));
            rows -= half;
        }
        AscendC::Mul(out, rawF, ks, static_cast<int32_t>(KR));
    }

private:
    // Starts loading a pass of raw rows from `raw` (head 0, the pass's first column).
    __aicore__ inline void Load(const AscendC::GlobalTensor<int32_t>& raw, uint32_t stride)
    {
        ascendc_assert((stride - KR) * sizeof(int32_t) / BLOCK_BYTES <= 65535);
        AscendC::LocalTensor<int32_t> rawI = rawIn_.AllocTensor<int32_t>();
        AscendC::DataCopy(rawI, raw,
                          AscendC::DataCopyParams(P::HEADS, BlocksOf<int32_t>(KR), BlocksOf<int32_t>(stride - KR), 0));
        rawIn_.EnQue(rawI);
    }

    AscendC::TQue<AscendC::TPosition::VECIN, 2> rawIn_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> rawF_, headScales_, headRows_;
    AscendC::GlobalTensor<float> qScale_, weights_;
};

// k_s of request b's compressed rows first .. first + rows (whole pages of P::BLOCK_SIZE) into
// ks, through idx_block_table (`tableWidth` columns) of the `pages`-page pool, once the vector
// work that read ks before is done. Every page must be one of the pool's (§11.5). The page
// numbers are read as a stream (its later lines asked for ahead: one round trip, not one
// per line).
template <class P>
__aicore__ inline void GatherKeyScales(const AscendC::LocalTensor<float>& ks, AscendC::GlobalTensor<float>& keyScale,
                                       AscendC::GlobalTensor<int32_t>& table, uint32_t tableWidth, uint32_t pages,
                                       uint32_t b, uint32_t first, uint32_t rows)
{
    ScalarStream<int32_t> row;
    row.Init(reinterpret_cast<GM_ADDR>(table.GetPhyAddr(static_cast<uint64_t>(b) * tableWidth)), tableWidth);
    row.Warm(first / P::BLOCK_SIZE);
    Handshake<AscendC::HardEvent::V_MTE2>();
    for (uint32_t r = 0; r < rows; r += P::BLOCK_SIZE) {
        const uint32_t logical = (first + r) / P::BLOCK_SIZE;
        ascendc_assert(logical < tableWidth);
        const int32_t page = row.Get(logical);
        ascendc_assert(page >= 0 && static_cast<uint32_t>(page) < pages);
        AscendC::DataCopy(ks[r], keyScale[static_cast<uint64_t>(page) * P::BLOCK_SIZE], P::BLOCK_SIZE);
    }
    Handshake<AscendC::HardEvent::MTE2_V>();
}

// P: HEADS, SEQ, RATIO, BLOCK_SIZE, CAP, STRIDE (raw row length: CAP in whole pages),
// KEY_ROWS (raw columns per pass), TOPK and SORT_CHUNK (dsv4/topk.h), and the UB sizes the
// plan decided (`*_BYTES`): RAW_I32 (a pass of raw rows), RAW_F32 (the same as f32),
// HEAD_SCALES (the c[h] tile), HEAD_ROWS (q_s and w rows as read), KEY_SCALES (a request's
// k_s), OUT (a token's top-k row), and TopK's (which holds the scores of a sort chunk).
// GM: raw [t, HEADS, STRIDE] i32, idx_q_scale [t, HEADS] f32, idx_weights [t, HEADS] f32,
// idx_kv_scale [pages·BLOCK_SIZE] f32, idx_block_table [b, idx_tw] i32, kv_seq_lens [b] i32,
// position_ids [t] i32, topk_idx [t, TOPK] i32.
template <class P>
class IndexSelect {
    static constexpr uint32_t KR = P::KEY_ROWS;
    static constexpr uint32_t UNIT = 32;  // Sort32's list length
    static constexpr float NEG = -3.4028234663852886e38f;  // FP32_NEG_INF
    static_assert(KR % UNIT == 0 && P::SORT_CHUNK % KR == 0, "raw passes of whole sort lists, whole passes per chunk");
    static_assert(P::BLOCK_SIZE % UNIT == 0, "a request's last page covers its tokens' padding to 32");
    static_assert(P::STRIDE % KR == 0 && KR % P::BLOCK_SIZE == 0 && P::STRIDE >= P::CAP,
                  "raw rows hold CAP in whole passes of whole pages");
    static_assert(P::TOPK % 8 == 0, "top-k rows in whole 32-byte blocks");
    static_assert((P::STRIDE - KR) * sizeof(int32_t) / BLOCK_BYTES <= 65535,
                  "a DataCopy of a pass of raw rows: a 16-bit gap in blocks");
    static_assert(P::KEY_SCALES_BYTES >= P::STRIDE * sizeof(float), "a request's key scales");
    static_assert(P::OUT_BYTES >= P::TOPK * sizeof(int32_t), "a top-k row");

public:
    __aicore__ inline static void Run(GM_ADDR raw, GM_ADDR qScale, GM_ADDR weights, GM_ADDR keyScale, GM_ADDR table,
                                      GM_ADDR kvSeqLens, GM_ADDR positions, GM_ADDR topk, GM_ADDR workspace,
                                      GM_ADDR tiling)
    {
        (void)workspace;
        AskFirstLines(kvSeqLens, positions);
        const TilingData td = LoadTiling(tiling);
        IndexSelect op;
        op.lens_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(kvSeqLens));
        const Share share = op.Tokens(td.t);
        if (share.begin >= share.end) {
            return;
        }
        op.Init(raw, qScale, weights, keyScale, table, positions, topk, td);
        for (uint32_t t = share.begin; t < share.end; ++t) {
            op.Token(t);
        }
    }

private:
    // This block's tokens: a contiguous run of about a block's share of the work, a token
    // weighing its request's passes plus one (its top-k and output row), so the blocks
    // holding long requests take fewer tokens. A request's weight is read once per pass
    // over the tokens (its SEQ tokens follow each other).
    __aicore__ inline Share Tokens(uint32_t t)
    {
        uint32_t request = t;  // no request yet
        uint64_t weight = 0;
        return WeightedShare(t, static_cast<uint32_t>(AscendC::GetBlockIdx()),
                             static_cast<uint32_t>(AscendC::GetBlockNum()), [&](uint32_t u) {
                                 if (u / P::SEQ != request) {
                                     request = u / P::SEQ;
                                     weight = Weight(request);
                                 }
                                 return weight;
                             });
    }

    // A token of request b: its passes, plus one.
    __aicore__ inline uint64_t Weight(uint32_t b) { return CeilDiv(RequestRows<P>(lens_, b), KR) + 1; }

    __aicore__ inline void Init(GM_ADDR raw, GM_ADDR qScale, GM_ADDR weights, GM_ADDR keyScale, GM_ADDR table,
                                GM_ADDR positions, GM_ADDR topk, const TilingData& td)
    {
        raw_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(raw));
        keyScale_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(keyScale));
        table_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(table));
        positions_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(positions));
        topk_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(topk));
        pages_ = td.idx_nb;
        tableWidth_ = td.idx_tw;
        best_.Init(pipe_);  // first: its sort buffers' alignment
        weighted_.Init(pipe_, qScale, weights);
        pipe_.InitBuffer(keyScales_, P::KEY_SCALES_BYTES);
        pipe_.InitBuffer(out_, P::OUT_BYTES);
        // Passes read whole KEY_ROWS of scales: the ones past a request's pages are defined.
        AscendC::Duplicate(keyScales_.Get<float>(), 0.0f, static_cast<int32_t>(P::STRIDE));
    }

    __aicore__ inline void Token(uint32_t t)
    {
        const uint32_t b = t / P::SEQ;
        const uint32_t visible = VisibleRows<P>(lens_, positions_, t);
        AscendC::LocalTensor<int32_t> out = out_.Get<int32_t>();
        if (visible == 0) {
            AscendC::Duplicate(out, -1, static_cast<int32_t>(P::TOPK));
        } else {
            if (b != loaded_) {
                GatherKeyScales<P>(keyScales_.Get<float>(), keyScale_, table_, tableWidth_, pages_, b, 0,
                                   RequestRows<P>(lens_, b));
                loaded_ = b;
            }
            Scores(t, visible);
            best_.Indices(out, visible);
        }
        Handshake<AscendC::HardEvent::V_MTE3>();
        AscendC::DataCopy(topk_[static_cast<uint64_t>(t) * P::TOPK], out, P::TOPK);
        // The next token's row is built in the same buffer.
        Handshake<AscendC::HardEvent::MTE3_V>();
    }

    // The scores of token t's `visible` rows (padded to 32 with FP32_NEG_INF), into the top-k.
    __aicore__ inline void Scores(uint32_t t, uint32_t visible)
    {
        weighted_.HeadScales(t);
        best_.Reset();
        const uint32_t n = AlignUp(visible, UNIT);
        AscendC::LocalTensor<float> ks = keyScales_.Get<float>();
        AscendC::LocalTensor<float> scores = best_.Scores();
        const uint64_t row = static_cast<uint64_t>(t) * P::HEADS * P::STRIDE;
        for (uint32_t c0 = 0; c0 < n; c0 += KR) {
            // Whole passes (the columns past n are the last page's or unwritten raw, unused).
            const uint32_t base = c0 / P::SORT_CHUNK * P::SORT_CHUNK;
            weighted_.Ahead(raw_[row], P::STRIDE, c0, n);
            weighted_.Weigh(ks[c0], scores[c0 - base]);
            const uint32_t end = Min(c0 + KR, n);
            if (end == n && visible < n) {
                Handshake<AscendC::HardEvent::V_S>();
                for (uint32_t j = visible; j < n; ++j) {
                    scores.SetValue(j - base, NEG);
                }
                ScalarToVector();
            }
            if (end == n || end - base == P::SORT_CHUNK) {
                best_.Add(end - base, base);
            }
        }
    }

    AscendC::TPipe pipe_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> keyScales_, out_;
    TopK<P> best_;
    HeadWeighted<P> weighted_;
    AscendC::GlobalTensor<int32_t> raw_, table_, lens_, positions_, topk_;
    AscendC::GlobalTensor<float> keyScale_;
    uint32_t pages_ = 0;
    uint32_t tableWidth_ = 0;
    uint32_t loaded_ = 0xFFFFFFFFu;
};

}  // namespace dsv4
