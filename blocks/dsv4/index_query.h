// The vector kernels of index_query (hca_csa.md §5.1, §5.2), around the stage's cube
// matmuls (dsv4/matmul.h): AIV only, rows = the runtime token count t.
//   IndexQHeads   idx_acc i32 [t, H·HD] -> (f32(acc)·qr_scale[t])·idx_wq_b_scale[n] -> RoPE
//                 on each head's last RD dims with the request's step row -> bf16 [t, H·HD]
//   IndexQQuant   Hadamard rows f32 [t·H, HD] -> int8 per (token, head) row (quant.h):
//                 idx_q i8 [t, H·HD], idx_q_scale f32 [t, H]; head sums f32 [t, H] ·
//                 WEIGHTS_SCALE -> idx_weights f32 [t, H]
// The step row (§5.1, §11.6): every token of a request rotates with row p0_b of the full
// [max_positions, RD] table, p0_b = position_ids of the request's first token (requests
// are SEQ consecutive tokens); rope.h RopeRow gathers it. With P::TOKEN_ROWS (the ring CSA,
// csa_1m.md §5.1) each token rotates with its own row t of the token-local [t, RD] tables.
// No RMSNorm on index queries.
// Each kernel's UB sizes are the plan's `*_BYTES` params (IndexQHeads also passes rope.h's
// ROPE_*_BYTES), each at least what its use below needs.
#pragma once

#include "dsv4/qkv_proj_rope.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

using namespace AscendC;

// Params: H, HD, RD, HG (heads per work item), SEQ (tokens per request), TOKEN_ROWS, and the UB sizes
// ACC_IN, Q_OUT, X, WQ_B_SCALE, QR_SCALE, and with RD <= 64 ROPE_PARTNERS, ROPE_SWAP_HEADS
// (`*_BYTES`). Blocks (OwnBlocks<P>, as QHeads') form a grid of H/HG head groups x token
// ranges (blocks / (H/HG) of them, in 8-row units); a block loads its heads' idx_wq_b_scale once, walks its tokens one
// at a time (the next token's row in flight) and loads a request's step row when it
// reaches the request.
template <typename P>
class IndexQHeads {
public:
    __aicore__ static inline void Run(GM_ADDR acc, GM_ADDR qrScale, GM_ADDR wqbScale, GM_ADDR cos, GM_ADDR sin,
                                      GM_ADDR positions, GM_ADDR q, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        IndexQHeads op;
        op.Process(acc, qrScale, wqbScale, cos, sin, positions, q, LoadTiling(tiling).t);
    }

private:
    static constexpr uint32_t HD = P::HD, W = P::HG * P::HD, ROW = P::H * P::HD;
    static constexpr uint32_t NOPE = P::HD - P::RD, GROUPS = P::H / P::HG;
    static_assert(P::H % P::HG == 0, "head groups take whole heads");
    static_assert(NOPE * sizeof(float) % 32 == 0, "the rope slice starts on a 32-byte block");
    static_assert(P::ACC_IN_BYTES >= W * sizeof(int32_t), "acc_in holds a head group's row");
    static_assert(P::Q_OUT_BYTES >= W * sizeof(bfloat16_t), "q_out holds a head group's row");
    static_assert(P::X_BYTES >= W * sizeof(float) && P::WQ_B_SCALE_BYTES >= W * sizeof(float),
                  "the group's f32 row and idx_wq_b_scale slice");
    static_assert(P::QR_SCALE_BYTES >= 8 * sizeof(float), "8 tokens' qr_scale");
    // The group's rope slices in one rotation where each is one f32 repeat (rope.h).
    static constexpr bool HEADS_AT_ONCE = P::RD <= 64;

    // Token row `row`'s head group into an acc_in buffer, queued.
    __aicore__ inline void LoadRow(const GlobalTensor<int32_t>& gAcc, uint32_t row, uint32_t col)
    {
        LocalTensor<int32_t> a = in_.AllocTensor<int32_t>();
        DataCopy(a, gAcc[uint64_t(row) * ROW + col], W);
        in_.EnQue(a);
    }

    __aicore__ inline void Process(GM_ADDR acc, GM_ADDR qrScale, GM_ADDR wqbScale, GM_ADDR cos, GM_ADDR sin,
                                   GM_ADDR positions, GM_ADDR q, uint32_t t)
    {
        uint32_t group = 0;
        RowRun run{};
        if (!HeadGroupRows<P>(t, GROUPS, group, run)) {
            return;
        }
        GlobalTensor<int32_t> gAcc, gPos;
        GlobalTensor<float> gTokScale, gWScale;
        GlobalTensor<bfloat16_t> gCos, gSin, gQ;
        gAcc.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(acc));
        gPos.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(positions));
        gTokScale.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(qrScale));
        gWScale.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(wqbScale));
        gCos.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(cos));
        gSin.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(sin));
        gQ.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(q));
        pipe_.InitBuffer(in_, 2, P::ACC_IN_BYTES);
        pipe_.InitBuffer(out_, 2, P::Q_OUT_BYTES);
        pipe_.InitBuffer(x_, P::X_BYTES);
        pipe_.InitBuffer(wScale_, P::WQ_B_SCALE_BYTES);
        pipe_.InitBuffer(tokScale_, P::QR_SCALE_BYTES);
        rope_.Init(pipe_, false);
        if constexpr (HEADS_AT_ONCE) {
            ropeHeads_.Init(pipe_);
        }
        const uint32_t col = group * W;
        LocalTensor<float> ws = wScale_.Get<float>(), x = x_.Get<float>(), ts = tokScale_.Get<float>();
        DataCopy(ws, gWScale[col], W);
        LoadRow(gAcc, run.first, col);
        // The token (TOKEN_ROWS) or the request's first token whose row the tables hold (none
        // yet).
        uint32_t loaded = t;
        for (uint32_t row0 = run.first; row0 < run.end; row0 += 8) {
            DataCopy(ts, gTokScale[row0], 8);
            Handshake<HardEvent::MTE2_S>();
            for (uint32_t row = row0; row < row0 + 8; ++row) {
                const float tokScale = ts.GetValue(row - row0);
                const uint32_t first = row - row % P::SEQ;
                LocalTensor<int32_t> a = in_.DeQue<int32_t>();
                const uint32_t key = P::TOKEN_ROWS ? row : first;
                if (key != loaded) {
                    rope_.Load(gCos, gSin, P::TOKEN_ROWS ? RopeRow<false>(gPos, row) : RopeRow<true>(gPos, first));
                    loaded = key;
                }
                // the next row in flight while this one computes (after the rope Load, whose
                // flag would otherwise wait for it)
                if (row + 1 < run.end) {
                    LoadRow(gAcc, row + 1, col);
                }
                Cast(x, a, RoundMode::CAST_NONE, W);
                in_.FreeTensor(a);
                Muls(x, x, tokScale, W);
                Mul(x, x, ws, W);
                if constexpr (HEADS_AT_ONCE) {
                    ropeHeads_.Apply(rope_, x[NOPE]);
                } else {
                    for (uint32_t h = 0; h < P::HG; ++h) {
                        rope_.Apply(x[h * HD + NOPE]);
                    }
                }
                LocalTensor<bfloat16_t> o = out_.AllocTensor<bfloat16_t>();
                Cast(o, x, RoundMode::CAST_RINT, W);
                out_.EnQue(o);
                o = out_.DeQue<bfloat16_t>();
                DataCopy(gQ[uint64_t(row) * ROW + col], o, W);
                out_.FreeTensor(o);
            }
            // the next DataCopy into ts must not overtake the scalar reads above
            Handshake<HardEvent::S_MTE2>();
        }
    }

    TPipe pipe_;
    TQue<TPosition::VECIN, 1> in_;
    TQue<TPosition::VECOUT, 1> out_;
    TBuf<TPosition::VECCALC> x_, wScale_, tokScale_;
    Rope<P> rope_;
    RopeHeads<P, P::HG, HD> ropeHeads_;
};

// Params: H, HD, TILE_ROWS (tokens per tile, divides 8), WEIGHTS_SCALE, and the UB sizes
// QH_IN, Q_OUT, SCALES_OUT, SUMS_IN, WEIGHTS_OUT, WORK, F16, SLOT, REDUCE_TMP (`*_BYTES`).
// Work items are TILE_ROWS-token tiles, each cut into head parts when the tiles are fewer
// than the blocks (`UnitParts`, in pieces of 8 heads: a token's scales and weights of a
// piece are a 32-byte block); an item moves its tokens' rows of its heads in one strided
// DMA each way.
template <typename P>
class IndexQQuant {
public:
    __aicore__ static inline void Run(GM_ADDR qh, GM_ADDR sums, GM_ADDR q, GM_ADDR qScale, GM_ADDR weights,
                                      GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        IndexQQuant op;
        op.Process(qh, sums, q, qScale, weights, LoadTiling(tiling).t);
    }

private:
    static constexpr uint32_t HD = P::HD, TR = P::TILE_ROWS, ROW = P::H * P::HD;
    static constexpr uint32_t HEAD_ROWS = TR * P::H;  // (token, head) rows per tile
    static constexpr uint32_t PIECE = BLOCK_BYTES / sizeof(float), PIECES = P::H / PIECE;
    static_assert(8 % TR == 0, "token tiles divide the runtime token granularity 8");
    static_assert(P::H * sizeof(float) % 32 == 0, "a token's scales and weights are whole 32-byte blocks");
    static_assert(HD * sizeof(int8_t) % 32 == 0, "a head's int8 row is whole 32-byte blocks");
    static_assert(P::QH_IN_BYTES >= TR * ROW * sizeof(float), "qh_in holds a tile of rows");
    static_assert(P::Q_OUT_BYTES >= TR * ROW * sizeof(int8_t), "q_out holds a tile of rows");
    static_assert(P::SCALES_OUT_BYTES >= HEAD_ROWS * sizeof(float) && P::SUMS_IN_BYTES >= HEAD_ROWS * sizeof(float) &&
                      P::WEIGHTS_OUT_BYTES >= HEAD_ROWS * sizeof(float),
                  "a tile's scales, head sums and weights");
    // (token, head) rows quantised at once: as many as work holds, whole 8-row pieces
    static constexpr uint32_t BATCH = P::WORK_BYTES / (HD * sizeof(float)) / 8 * 8;
    static_assert(BATCH >= 8 && P::F16_BYTES >= BATCH * HD * sizeof(half), "a batch of rows' scratch");
    static_assert(P::SLOT_BYTES >= BATCH * 8 * sizeof(float), "a block of scalars per row of a batch");
    static_assert(P::REDUCE_TMP_BYTES >= ReduceTmpElems(HD) * sizeof(float), "ReduceMax scratch of a head");

    // An item's place: its first token, first head and heads.
    struct Item {
        uint32_t row, h0, heads;
    };
    __aicore__ inline static Item Place(const UnitParts& it)
    {
        const Share pieces = it.Range(PIECES);
        return Item{it.unit * TR, pieces.begin * PIECE, (pieces.end - pieces.begin) * PIECE};
    }

    // An item's token rows of its heads and their head sums, queued.
    __aicore__ inline void Load(const Item& i)
    {
        LocalTensor<float> x = in_.AllocTensor<float>();
        DataCopy(x, gQh_[uint64_t(i.row) * ROW + i.h0 * HD],
                 DataCopyParams(TR, BlocksOf<float>(i.heads * HD), BlocksOf<float>(ROW - i.heads * HD), 0));
        in_.EnQue(x);
        LocalTensor<float> s = sumsIn_.AllocTensor<float>();
        DataCopy(s, gSums_[i.row * P::H + i.h0],
                 DataCopyParams(TR, BlocksOf<float>(i.heads), BlocksOf<float>(P::H - i.heads), 0));
        sumsIn_.EnQue(s);
    }

    __aicore__ inline void Process(GM_ADDR qh, GM_ADDR sums, GM_ADDR q, GM_ADDR qScale, GM_ADDR weights, uint32_t t)
    {
        UnitParts it(t / TR, PIECES);
        if (it.Empty()) {
            return;
        }
        GlobalTensor<float> gScale, gWeights;
        GlobalTensor<int8_t> gQ;
        gQh_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(qh));
        gSums_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(sums));
        gQ.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t*>(q));
        gScale.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(qScale));
        gWeights.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(weights));
        pipe_.InitBuffer(in_, 2, P::QH_IN_BYTES);
        pipe_.InitBuffer(out_, 2, P::Q_OUT_BYTES);
        pipe_.InitBuffer(scales_, 2, P::SCALES_OUT_BYTES);
        pipe_.InitBuffer(sumsIn_, 2, P::SUMS_IN_BYTES);
        pipe_.InitBuffer(weightsOut_, 2, P::WEIGHTS_OUT_BYTES);
        pipe_.InitBuffer(work_, P::WORK_BYTES);
        pipe_.InitBuffer(half_, P::F16_BYTES);
        pipe_.InitBuffer(slot_, P::SLOT_BYTES);
        pipe_.InitBuffer(tmp_, P::REDUCE_TMP_BYTES);
        LocalTensor<float> work = work_.Get<float>(), slot = slot_.Get<float>(), tmp = tmp_.Get<float>();
        LocalTensor<half> h = half_.Get<half>();
        it.Next();
        Item cur = Place(it);
        Load(cur);
        for (;;) {
            UnitParts ahead = it;
            const bool more = ahead.Next();
            const uint32_t rows = TR * cur.heads;  // (token, head) rows of the item
            // per token: heads f32 of the scales, sums and weights; heads * HD int8 of the row
            const uint16_t headBlocks = BlocksOf<float>(cur.heads), headGap = BlocksOf<float>(P::H - cur.heads);
            LocalTensor<float> s = sumsIn_.DeQue<float>();
            LocalTensor<float> w = weightsOut_.AllocTensor<float>();
            Muls(w, s, P::WEIGHTS_SCALE, rows);
            sumsIn_.FreeTensor(s);
            weightsOut_.EnQue(w);

            LocalTensor<float> x = in_.DeQue<float>();
            // the next item's rows in flight under this one's work
            if (more) {
                Load(Place(ahead));
            }
            LocalTensor<int8_t> qi = out_.AllocTensor<int8_t>();
            LocalTensor<float> sc = scales_.AllocTensor<float>();
            for (uint32_t r0 = 0; r0 < rows; r0 += BATCH) {
                const uint32_t n = Min(BATCH, rows - r0);
                float s[BATCH];
                QuantizeRows<BATCH>(qi[r0 * HD], x[r0 * HD], n, HD, work, h, slot, tmp, s);
                for (uint32_t r = 0; r < n; ++r) {
                    sc.SetValue(r0 + r, s[r]);
                }
            }
            in_.FreeTensor(x);
            out_.EnQue(qi);
            scales_.EnQue(sc);

            w = weightsOut_.DeQue<float>();
            DataCopy(gWeights[cur.row * P::H + cur.h0], w, DataCopyParams(TR, headBlocks, 0, headGap));
            weightsOut_.FreeTensor(w);
            qi = out_.DeQue<int8_t>();
            DataCopy(gQ[uint64_t(cur.row) * ROW + cur.h0 * HD], qi,
                     DataCopyParams(TR, BlocksOf<int8_t>(cur.heads * HD), 0, BlocksOf<int8_t>(ROW - cur.heads * HD)));
            out_.FreeTensor(qi);
            sc = scales_.DeQue<float>();
            // The scales were written by the scalar unit.
            Handshake<HardEvent::S_MTE3>();
            DataCopy(gScale[cur.row * P::H + cur.h0], sc, DataCopyParams(TR, headBlocks, 0, headGap));
            // The next tile's scalar writes must not overtake this copy.
            Handshake<HardEvent::MTE3_S>();
            scales_.FreeTensor(sc);
            if (!more) {
                break;
            }
            it = ahead;
            cur = Place(it);
        }
    }

    TPipe pipe_;
    TQue<TPosition::VECIN, 1> in_, sumsIn_;
    TQue<TPosition::VECOUT, 1> out_, scales_, weightsOut_;
    TBuf<TPosition::VECCALC> work_, half_, slot_, tmp_;
    GlobalTensor<float> gQh_, gSums_;
};

}  // namespace dsv4
