// The lightning indexer's scores and exact top-k over long candidate lists (csa_1m.md §5.4,
// §5.5): a request's candidates in leaves of LEAF rows, every leaf on its own work item so a
// batch-1 request at 1M (262,144 candidates) runs on every core, then the leaves' best lists
// merged FAN_IN at a time, level by level, until one list per token is left.
//  IndexLeaves (mixed: a group is 1 AIC + 2 AIV; work items (request b, leaf L), L <
//     ceil(V_b / LEAF), V_b = min(kv_seq_lens[b] / RATIO, CAP), dealt to the groups in turn, so
//     a long request's leaves spread over every group beside short ones):
//    AIC: raw = ReLU(q_i8 · k_i8ᵀ) (int32, dsv4/index_score.h ScoreCube) of the request's
//         SEQ·HEADS query rows and the leaf's keys L·LEAF .. (whole pages up to V_b) into one
//         of the group's two stage slots [SEQ·HEADS, LEAF]; a slot is written again once both
//         AIVs have read it.
//    AIV k: the request's tokens s ≡ k (mod 2) with valid = min(LEAF, V_t − L·LEAF) > 0,
//         V_t = min(V_b, (p_t + 1) / RATIO): the head-weighted scores of the leaf's rows
//         (dsv4/index_select.h HeadWeighted) times their key scales, FP32_NEG_INF from valid
//         up to the next 32, through TopK (dsv4/topk.h); the leaf's list - its TOPK best
//         (score, logical row) pairs, best first, then (FP32_NEG_INF, −1) - into
//         leaves [t, LEAVES, TOPK] pairs.
//  IndexMerge (AIV; work items (token t, group g of FAN_IN lists)): token t has
//     n_0 = ceil(V_t / LEAF) lists at level 0 (the leaves) and n_{l+1} = ceil(n_l / FAN_IN);
//     lists g·FAN_IN .. of level LEVEL, two at a time through TopK, into list g of level
//     LEVEL + 1, or (FINAL) topk_idx[t]: the best min(TOPK, V_t) rows, then −1 (all −1 when
//     V_t = 0). Lists come in row order and TopK lets earlier lists win ties, so the order is
//     the golden's (descending score, ties by ascending row): the leaves' and every level's.
#pragma once

#include "dsv4/index_select.h"

namespace dsv4 {

// P: ScoreCube's (HEADS, HEAD_DIM, SEQ, BLOCK_SIZE, TILE_M/N/K, KEY_ROWS and its L1/L0 sizes),
// HeadWeighted's and TopK's (TOPK, SORT_CHUNK and their UB sizes), RATIO, CAP, LEAF, LEAVES
// (ceil(CAP / LEAF)), and the UB sizes KEY_SCALES (a leaf's key scales) and PAD (a list of
// padding pairs). GM: idx_q, idx_q_scale, idx_weights, idx_kv_cache, idx_kv_scale
// [pages·BLOCK_SIZE] f32, idx_block_table, kv_seq_lens, position_ids, stage [groups · 2 ·
// SEQ·HEADS, LEAF] i32, leaves [t, LEAVES, 2·TOPK] f32 (index lanes hold int32 bits).
template <class P>
class IndexLeaves {
    static constexpr uint32_t ROWS = ScoreCube<P>::ROWS;
    static constexpr uint32_t KR = P::KEY_ROWS;
    static constexpr uint32_t K = P::TOPK;
    static constexpr uint32_t CHUNK = P::SORT_CHUNK;
    static constexpr uint32_t UNIT = 32;                   // Sort32's list length
    static constexpr uint32_t LIST = 2 * K;                // floats of a list of pairs
    static constexpr float NEG = -3.4028234663852886e38f;  // FP32_NEG_INF
    static constexpr uint16_t READY = 1, FREE = 2;
    static_assert(P::LEAF % KR == 0 && KR % P::BLOCK_SIZE == 0 && KR % UNIT == 0 && CHUNK % KR == 0,
                  "leaves of whole raw passes of whole pages and sort lists; whole passes per sort chunk");
    static_assert(P::LEAVES * P::LEAF >= P::CAP, "the leaves cover CAP");
    static_assert(K % UNIT == 0, "lists of whole 32-pair units (TopK::Add counts)");
    static_assert((P::LEAF - KR) * sizeof(int32_t) / BLOCK_BYTES <= 65535, "a pass's gap in the stage rows");
    static_assert(P::KEY_SCALES_BYTES >= P::LEAF * sizeof(float) && P::PAD_BYTES >= LIST * sizeof(float),
                  "a leaf's key scales, a list of padding pairs");

public:
    __aicore__ inline static void Run(GM_ADDR q, GM_ADDR qScale, GM_ADDR weights, GM_ADDR keys, GM_ADDR keyScale,
                                      GM_ADDR table, GM_ADDR kvSeqLens, GM_ADDR positions, GM_ADDR stage,
                                      GM_ADDR leaves, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        IndexLeaves op;
        op.Bind(table, kvSeqLens, positions, stage, leaves, td);
        const Deal deal{op.group_, static_cast<uint32_t>(AscendC::GetBlockNum()), td.b * P::LEAVES};
        if ASCEND_IS_AIC {
            op.cube_.Init(op.pipe_, q, keys, table, td);
            op.Cube(deal);
        }
        if ASCEND_IS_AIV {
            op.best_.Init(op.pipe_);  // first: its sort buffers' alignment
            op.weighted_.Init(op.pipe_, qScale, weights);
            op.InitVector(keyScale);
            op.Vector(deal, static_cast<uint32_t>(AscendC::GetSubBlockIdx()));
        }
    }

private:
    // The work items of a group: group, group + groups, ... below total.
    struct Deal {
        uint32_t group, groups, total;
    };

    __aicore__ inline void Bind(GM_ADDR table, GM_ADDR kvSeqLens, GM_ADDR positions, GM_ADDR stage, GM_ADDR leaves,
                                const TilingData& td)
    {
        table_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(table));
        lens_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(kvSeqLens));
        positions_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(positions));
        leaves_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(leaves));
        group_ = GroupIdx();
        stage_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(stage) +
                               static_cast<uint64_t>(group_) * 2 * ROWS * P::LEAF);
        pages_ = td.idx_nb;
        tableWidth_ = td.idx_tw;
    }

    __aicore__ inline uint64_t Slot(uint32_t n) const { return static_cast<uint64_t>(n % 2) * ROWS * P::LEAF; }

    // ---- AIC ----

    __aicore__ inline void Cube(const Deal& deal)
    {
        uint32_t n = 0, held = 0xFFFFFFFFu;
        for (uint32_t item = deal.group; item < deal.total; item += deal.groups) {
            const uint32_t b = item / P::LEAVES, first = item % P::LEAVES * P::LEAF;
            const uint32_t rows = RequestRows<P>(lens_, b);
            if (first >= rows) {
                continue;
            }
            if (b != held) {
                cube_.Query(b);
                held = b;
            }
            if (n >= 2) {
                AscendC::CrossCoreWaitFlag(FREE);  // both AIVs have read this slot
            }
            cube_.Keys(b, first, AlignUp(Min(P::LEAF, rows - first), P::BLOCK_SIZE), stage_[Slot(n)], P::LEAF);
            AscendC::CrossCoreSetFlag<2, PIPE_FIX>(READY);
            ++n;
        }
        for (uint32_t k = 0; k < Min(n, 2u); ++k) {
            AscendC::CrossCoreWaitFlag(FREE);
        }
        cube_.Release();
    }

    // ---- AIV ----

    __aicore__ inline void InitVector(GM_ADDR keyScale)
    {
        keyScale_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(keyScale));
        pipe_.InitBuffer(keyScales_, P::KEY_SCALES_BYTES);
        pipe_.InitBuffer(pad_, P::PAD_BYTES);
        // Passes read whole KEY_ROWS of scales: the ones past a leaf's pages are defined.
        AscendC::Duplicate(keyScales_.Get<float>(), 0.0f, static_cast<int32_t>(P::LEAF));
        AscendC::LocalTensor<float> pad = pad_.Get<float>();
        AscendC::LocalTensor<int32_t> bits = pad.ReinterpretCast<int32_t>();
        for (uint32_t i = 0; i < K; ++i) {
            pad.SetValue(2 * i, NEG);
            bits.SetValue(2 * i + 1, -1);
        }
        Handshake<AscendC::HardEvent::S_MTE3>();
        Handshake<AscendC::HardEvent::V_MTE2>();
    }

    __aicore__ inline void Vector(const Deal& deal, uint32_t sub)
    {
        uint32_t n = 0;
        for (uint32_t item = deal.group; item < deal.total; item += deal.groups) {
            const uint32_t b = item / P::LEAVES, leaf = item % P::LEAVES, first = leaf * P::LEAF;
            const uint32_t rows = RequestRows<P>(lens_, b);
            if (first >= rows) {
                continue;
            }
            AscendC::CrossCoreWaitFlag(READY);
            GatherKeyScales<P>(keyScales_.Get<float>(), keyScale_, table_, tableWidth_, pages_, b, first,
                               AlignUp(Min(P::LEAF, rows - first), P::BLOCK_SIZE));
            for (uint32_t s = sub; s < P::SEQ; s += 2) {
                const uint32_t t = b * P::SEQ + s;
                const uint32_t visible = VisibleRows<P>(lens_, positions_, t);
                if (visible > first) {
                    Leaf(t, s, leaf, Min(P::LEAF, visible - first), stage_[Slot(n)]);
                }
            }
            AscendC::CrossCoreSetFlag<2, PIPE_MTE2>(FREE);
            ++n;
        }
    }

    // Token t's (request token s) best of the leaf's first `valid` rows into its list.
    __aicore__ inline void Leaf(uint32_t t, uint32_t s, uint32_t leaf, uint32_t valid,
                                const AscendC::GlobalTensor<int32_t>& raw)
    {
        weighted_.HeadScales(t);
        best_.Reset();
        const uint32_t n = AlignUp(valid, UNIT);
        AscendC::LocalTensor<float> ks = keyScales_.Get<float>();
        AscendC::LocalTensor<float> scores = best_.Scores();
        const uint64_t row = static_cast<uint64_t>(s) * P::HEADS * P::LEAF;
        for (uint32_t c0 = 0; c0 < n; c0 += KR) {
            const uint32_t base = c0 / CHUNK * CHUNK;
            weighted_.Ahead(raw[row], P::LEAF, c0, n);
            weighted_.Weigh(ks[c0], scores[c0 - base]);
            const uint32_t end = Min(c0 + KR, n);
            if (end == n && valid < n) {
                Handshake<AscendC::HardEvent::V_S>();
                for (uint32_t j = valid; j < n; ++j) {
                    scores.SetValue(j - base, NEG);
                }
                ScalarToVector();
            }
            if (end == n || end - base == CHUNK) {
                best_.Add(end - base, leaf * P::LEAF + base);
            }
        }
        const uint32_t kept = best_.Kept();
        const uint64_t at = (static_cast<uint64_t>(t) * P::LEAVES + leaf) * LIST;
        Handshake<AscendC::HardEvent::V_MTE3>();
        AscendC::DataCopy(leaves_[at], best_.Best(), kept * 2);
        if (kept < K) {
            AscendC::DataCopy(leaves_[at + kept * 2], pad_.Get<float>(), (K - kept) * 2);
        }
        // The next token's merges rewrite the running best.
        Handshake<AscendC::HardEvent::MTE3_V>();
    }

    AscendC::TPipe pipe_;
    ScoreCube<P> cube_;
    TopK<P> best_;
    HeadWeighted<P> weighted_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> keyScales_, pad_;
    AscendC::GlobalTensor<int32_t> table_, lens_, positions_, stage_;
    AscendC::GlobalTensor<float> keyScale_, leaves_;
    uint32_t pages_ = 0;
    uint32_t tableWidth_ = 0;
    uint32_t group_ = 0;
};

// P: TOPK and SORT_CHUNK (2·TOPK: two lists per TopK::AddIndexed) and TopK's UB sizes, SEQ,
// RATIO, CAP, LEAF, FAN_IN, LEVEL (of the lists read; 0: the leaves), N_IN and N_OUT (lists
// per token read and written), FINAL (write topk_idx), and the UB sizes PAIRS (two lists as
// read) and OUT (a top-k row). GM: in [t, N_IN, 2·TOPK] f32, kv_seq_lens, position_ids, out
// [t, N_OUT, 2·TOPK] f32, or (FINAL) topk_idx [t, TOPK] i32.
template <class P>
class IndexMerge {
    static constexpr uint32_t K = P::TOPK;
    static constexpr uint32_t LIST = 2 * K;  // floats of a list of pairs
    static_assert(P::SORT_CHUNK == LIST, "two lists per merge");
    static_assert(!P::FINAL || P::N_OUT == 1, "the final level leaves one list");
    static_assert(P::PAIRS_BYTES >= 2 * LIST * sizeof(float) && P::OUT_BYTES >= K * sizeof(int32_t),
                  "two lists in, a top-k row out");

public:
    __aicore__ inline static void Run(GM_ADDR in, GM_ADDR kvSeqLens, GM_ADDR positions, GM_ADDR out,
                                      GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        const Share share = BlockShare(td.t * P::N_OUT);
        if (share.begin >= share.end) {
            return;
        }
        IndexMerge op;
        op.Init(in, kvSeqLens, positions, out);
        for (uint32_t item = share.begin; item < share.end; ++item) {
            op.Item(item / P::N_OUT, item % P::N_OUT);
        }
    }

private:
    __aicore__ inline void Init(GM_ADDR in, GM_ADDR kvSeqLens, GM_ADDR positions, GM_ADDR out)
    {
        in_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(in));
        lens_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(kvSeqLens));
        positions_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(positions));
        out_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(out));
        topk_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(out));
        best_.Init(pipe_);  // first: its sort buffers' alignment
        pipe_.InitBuffer(pairs_, P::PAIRS_BYTES);
        pipe_.InitBuffer(row_, P::OUT_BYTES);
    }

    // Lists g·FAN_IN .. of token t's level into its list g of the next level (or its row).
    __aicore__ inline void Item(uint32_t t, uint32_t g)
    {
        const uint32_t visible = VisibleRows<P>(lens_, positions_, t);
        uint32_t lists = CeilDiv(visible, P::LEAF);
        for (uint32_t l = 0; l < P::LEVEL; ++l) {
            lists = CeilDiv(lists, P::FAN_IN);
        }
        const uint32_t begin = g * P::FAN_IN, end = Min(begin + P::FAN_IN, lists);
        if (begin >= end) {
            if constexpr (P::FINAL) {
                Row(t, 0);  // no candidates: all −1
            }
            return;
        }
        best_.Reset();
        AscendC::LocalTensor<float> pairs = pairs_.Get<float>();
        for (uint32_t i = begin; i < end; i += 2) {
            const uint32_t m = Min(2u, end - i);
            Handshake<AscendC::HardEvent::V_MTE2>();  // the previous merge has read pairs
            AscendC::DataCopy(pairs, in_[(static_cast<uint64_t>(t) * P::N_IN + i) * LIST], m * LIST);
            Handshake<AscendC::HardEvent::MTE2_V>();
            // Even lanes are scores, odd lanes the rows' bits (GatherMask patterns 1 and 2).
            AscendC::LocalTensor<uint32_t> bits = pairs.ReinterpretCast<uint32_t>();
            AscendC::LocalTensor<float> scores = best_.Scores();
            AscendC::LocalTensor<int32_t> index = best_.Index();
            for (uint32_t j = 0; j < m; ++j) {
                uint64_t taken = 0;
                AscendC::GatherMask(scores.ReinterpretCast<uint32_t>()[j * K], bits[j * LIST], 1, true, LIST,
                                    AscendC::GatherMaskParams(1, 1, 8, 0), taken);
                AscendC::GatherMask(index.ReinterpretCast<uint32_t>()[j * K], bits[j * LIST], 2, true, LIST,
                                    AscendC::GatherMaskParams(1, 1, 8, 0), taken);
            }
            best_.AddIndexed(m * K);
        }
        if constexpr (P::FINAL) {
            Row(t, visible);
        } else {
            const uint64_t at = (static_cast<uint64_t>(t) * P::N_OUT + g) * LIST;
            Handshake<AscendC::HardEvent::V_MTE3>();
            // Each input list holds K pairs, so the merged best does too.
            AscendC::DataCopy(out_[at], best_.Best(), LIST);
            Handshake<AscendC::HardEvent::MTE3_V>();
        }
    }

    // topk_idx[t]: the best min(TOPK, count) rows, then −1.
    __aicore__ inline void Row(uint32_t t, uint32_t count)
    {
        AscendC::LocalTensor<int32_t> row = row_.Get<int32_t>();
        if (count == 0) {
            AscendC::Duplicate(row, -1, static_cast<int32_t>(K));
        } else {
            best_.Indices(row, count);
        }
        Handshake<AscendC::HardEvent::V_MTE3>();
        AscendC::DataCopy(topk_[static_cast<uint64_t>(t) * K], row, K);
        Handshake<AscendC::HardEvent::MTE3_V>();
    }

    AscendC::TPipe pipe_;
    TopK<P> best_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> pairs_, row_;
    AscendC::GlobalTensor<float> in_, out_;
    AscendC::GlobalTensor<int32_t> lens_, positions_, topk_;
};

}  // namespace dsv4
