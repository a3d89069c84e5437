// Indexer-selected source of the CSA attention (hca_csa.md §6.1, §6.3): after the window
// (attention_cube.h / attention_softmax.h), every head of token t continues its online
// softmax over the compressed rows its own top-k list selects. Slot k of topk_idx[t] holds a
// logical compressed row j or -1; it is kept iff 0 <= j < (p_t + 1) / RATIO and read from
// cmp_kv row cmp_block_table[b, j / BLOCK_SIZE] * BLOCK_SIZE + j % BLOCK_SIZE. The TOPK slots
// form tiles of KV_TILE slots in list order (the reference's 128-lane tiles); a tile without a
// kept slot is skipped (it would merge as a no-op). Unlike HCA's compressed rows a token's
// rows are its own, so the gather is per token. Per tile:
//   AIC: gathers the tile's kept rows into L1 (other lanes zero; the next kept tiles into
//        ROW_BUFFERS - 1 more buffers while the cube and the AIV work on this one),
//        scores = q_t · tileᵀ (f32; q_t stays in L1 for all of the token's tiles)
//   AIV: z = score * SCALE + bias (0 kept, -1e20 not); m_i = max z, e = exp(z - m_i),
//        l_i = sum e (f32), probs = bf16(e * 2^-O_SHIFT);
//        m' = max(m, m_i), alpha = exp(m - m'), beta = exp(m_i - m'),
//        denom' = alpha * denom + beta * l_i
//   AIC: part = probs · tile, its rows as attention_cube.h's OutRows (O_HALF_COLS columns in
//        half: 2^O_SHIFT >= KV_TILE keeps them in range, as the window's o)
//   AIV: o' = alpha * o + beta * f32(part)
// Consecutive kept tiles alternate between two slabs of the group's scratch (scores, probs,
// part; alpha and beta in UB): the AIC issues tile i + 1's scores before tile i's values,
// and the AIV writes tile i + 1's probabilities before it merges tile i's part, so each side
// works while the other does. The next tiles' gathers queue behind a tile's probability
// loads (MTE2 runs in order). A group's items are one stream: the AIC gathers the next
// item's tiles under this item's last products (its q loads once this item's last scores
// are out), and the AIV writes the next item's first probabilities before it merges this
// item's last part (with two state buffers its state loads while the cube makes that part),
// then stores this item's state under the next one's work.
// `denom` arrives from the window softmax as l + exp(sink - m) and rescales with l (as in
// attention_compressed.h), so the finish kernel's o / denom is the reference's output. The
// window's o (kept in UB over the token's tiles, f32) and denom are updated in place; the
// window leaves o in the parts' rows and scale (its probabilities by 2^-O_SHIFT too), so it
// is widened on the way in and narrowed on the way out (at most denom * max |v| *
// 2^-O_SHIFT: within half's range for the cache's rows). A split's o starts at zero, f32 and
// unscaled: its parts' beta is times 2^O_SHIFT.
// Groups take contiguous runs of tokens of about equal work (`Tokens`).
// With fewer tokens than core groups (1 AIC + 2 AIV) the work is split over KV
// (dsv4/attention_combine.h): each token's tiles are dealt to S = min(GROUPS / tokens, tiles)
// splits, one work item (token, split) per group; a split starts from nothing and leaves its
// partial o, max and denominators in its slot for `AttentionCombine`. With S = 1 an item is a
// whole token. AIV k owns the 8-head groups k, k + 2, ... Hand-offs go through the group's
// GM scratch, ordered by cross-core flags.
#pragma once

#include "dsv4/attention_combine.h"
#include "dsv4/tiling_data.h"
#include "dsv4/head_tile_mmad.h"
#include "dsv4/online_softmax.h"
#include "dsv4/scalar_stream.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// P: HEADS, HEAD_DIM, SEQ, BLOCK_SIZE, RATIO, TOPK, HEAD_TILE, KV_TILE, D_TILE, GROUPS, SCALE,
// ROW_BUFFERS (tiles of rows in flight), STATE_BUFFERS (the AIV's items' state: with two an
// item starts before the previous one is settled), O_SHIFT and O_HALF_COLS (the parts' rows,
// and the window's o), and the sizes the plan decided (`*_BYTES`, each at least what its use
// below needs): the AIC's L1 and L0, the AIV's UB.
template <class P>
class AttentionIndexed {
    static constexpr uint32_t FRACTAL = 16;
    static constexpr uint32_t HD = P::HEAD_DIM;
    static constexpr uint32_t TILE = P::KV_TILE;
    static constexpr uint32_t TILES = CeilDiv(P::TOPK, TILE);
    static constexpr uint32_t TILE_BLOCKS = TILE / FRACTAL;
    static constexpr uint32_t M_PAD = AlignUp(P::HEAD_TILE, FRACTAL);
    static constexpr uint32_t HEAD_TILES = P::HEADS / P::HEAD_TILE;
    static constexpr uint32_t L0_K = P::D_TILE > TILE ? P::D_TILE : TILE;
    static constexpr uint32_t SLOT = BLOCK_BYTES / sizeof(float);
    static constexpr uint32_t VH = SLOT;  // heads per vector group: per-head f32 values in whole blocks
    static constexpr uint32_t GROUPS = P::HEADS / VH;
    static constexpr uint32_t STATS = CeilDiv(GROUPS, 2) * VH;  // heads of the busier AIV
    static constexpr uint32_t STAT_SLOTS = VH > TILES ? VH : TILES;
    static constexpr float MASK = 1.0e20f;
    static constexpr uint16_t SCORES_READY = 1, PROBS_READY = 2, PART_READY = 3;
    // f32 elements between the state buffers (an item's running max, denominators and o)
    static constexpr uint32_t MAX_STRIDE = P::RUN_MAX_BYTES / sizeof(float);
    static constexpr uint32_t DENOM_STRIDE = P::RUN_DENOM_BYTES / sizeof(float);
    static constexpr uint32_t O_STRIDE = P::O_BYTES / sizeof(float);
    using Splits = KvSplits<P::GROUPS, TILES>;
    static constexpr uint32_t SLABS = 2;  // tiles alternate between two slabs of scratch
    static constexpr uint32_t SLAB = P::HEADS * TILE;  // a slab of scores or probs
    using SlotsOf = SplitSlots<P::HEADS, HD, (TILES > 1), SLABS>;
    static_assert(TILE % FRACTAL == 0 && P::TOPK % FRACTAL == 0, "KV_TILE and TOPK: whole fractals");
    static_assert(HD % P::D_TILE == 0 && P::D_TILE % FRACTAL == 0, "D_TILE: whole fractals dividing HEAD_DIM");
    static_assert(P::HEADS % P::HEAD_TILE == 0 && P::HEADS % VH == 0, "HEAD_TILE and VH divide HEADS");
    static_assert(HD <= 65535 && TILE <= 16384 && M_PAD <= 16384,
                  "ND2NZ: a 16-bit source row, at most 16384 rows and NZ row stride");
    // AIC
    static_assert(P::Q_BYTES >= HEAD_TILES * M_PAD * HD * sizeof(bfloat16_t), "q holds a token's head tiles");
    static_assert(P::ROWS_BYTES >= TILE * HD * sizeof(bfloat16_t), "a rows buffer holds a tile of selected rows");
    static_assert(P::ROW_BUFFERS >= 2 && P::ROW_BUFFERS <= 3, "two or three tiles of rows in flight");
    static_assert(P::A_TILE_BYTES >= M_PAD * TILE * sizeof(bfloat16_t), "a_tile holds a tile of probs rows");
    static_assert(P::A_L0_BYTES >= M_PAD * L0_K * sizeof(bfloat16_t) &&
                      P::B_L0_BYTES >= P::D_TILE * TILE * sizeof(bfloat16_t) &&
                      P::C_L0_BYTES >= M_PAD * L0_K * sizeof(float),
                  "L0 tiles of HeadTileMmad");
    // AIV
    static_assert(P::INDEX_ROW_BYTES >= P::TOPK * sizeof(int32_t) && P::VALID_BYTES >= P::TOPK * sizeof(float) &&
                      P::BIAS_BYTES >= P::TOPK * sizeof(float),
                  "a token's slots");
    static_assert(P::SCORES_BYTES >= VH * TILE * sizeof(float) && P::PROBS_BYTES >= VH * TILE * sizeof(bfloat16_t),
                  "VH heads over a tile's lanes");
    static_assert(P::REDUCE_TMP_BYTES >= TILE * sizeof(float) &&
                      P::REDUCE_TMP_BYTES >= FoldFloats(VH, TILE) * sizeof(float),
                  "reduction scratch over a tile's lanes, a group's rows folded");
    static_assert(P::ROW_STATS_BYTES >= STAT_SLOTS * SLOT * sizeof(float),
                  "a block per head of a group, a slot per tile");
    static_assert(P::RUN_MAX_BYTES >= STATS * sizeof(float) && P::RUN_DENOM_BYTES >= STATS * sizeof(float) &&
                      P::TILE_MAX_BYTES >= STATS * sizeof(float) && P::TILE_SUM_BYTES >= STATS * sizeof(float) &&
                      P::ALPHA_BYTES >= SLABS * STATS * sizeof(float) && P::BETA_BYTES >= SLABS * STATS * sizeof(float),
                  "a value per head of the AIV (alpha and beta: per slab)");
    using Parts = OutRows<P>;  // the parts' rows (and the window's o): half columns, then f32 ones
    // a state buffer's o: the AIV's heads of a token in f32, and a group's rows as the cube
    // leaves them (the window's rows load a group ahead: LoadO)
    static_assert(P::O_BYTES >= STATS * HD * sizeof(float) + VH * Parts::HALVES * sizeof(half),
                  "o holds the AIV's heads of a token and a group's rows more");
    static_assert(P::STATE_BUFFERS == 1 || P::STATE_BUFFERS == 2, "one or two items' state (o, max, denominators)");
    static_assert(P::RUN_MAX_BYTES % BLOCK_BYTES == 0 && P::RUN_DENOM_BYTES % BLOCK_BYTES == 0 &&
                      P::O_BYTES % BLOCK_BYTES == 0,
                  "state buffers start on blocks");
    static constexpr uint32_t HD_BLOCKS = BlocksOf<float>(HD);
    static_assert(P::O_HALF_COLS > 0 && Parts::Fits(TILE),
                  "a tile's part leaves the cube in half but the rope columns");
    static_assert(HD_BLOCKS <= 255 && Parts::BLOCKS <= 255, "a group's rows an 8-bit repeat stride apart");
    static_assert(P::PART_BYTES >= VH * Parts::HALVES * sizeof(half) &&
                      P::PART_CHUNK_BYTES >= VH * F32_REPEAT * sizeof(float),
                  "part holds a group's rows as the cube leaves them, part_chunk a repeat of each in f32");
    static_assert(P::SPREAD_BYTES >= VH * BLOCK_BYTES, "a group's beta over a block per head");

public:
    __aicore__ inline static void Run(GM_ADDR q, GM_ADDR cmpKv, GM_ADDR cmpTable, GM_ADDR positions, GM_ADDR topkIdx,
                                      GM_ADDR scores, GM_ADDR probs, GM_ADDR part, GM_ADDR stats, GM_ADDR o,
                                      GM_ADDR denom, GM_ADDR rowMax, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        const uint32_t splits = Splits::OnGroups(td.t);
        const Share share = splits > 1 ? GroupShare(td.t * splits) : Tokens(positions, td.t);
        if (share.begin >= share.end) {
            return;
        }
        AttentionIndexed op;
        op.Bind(q, cmpKv, cmpTable, positions, topkIdx, scores, probs, part, stats, o, denom, rowMax);
        if ASCEND_IS_AIC {
            op.InitCube(topkIdx, td);
            const Item first(share.begin, splits);
            op.slots_.Warm(static_cast<uint64_t>(first.t) * P::TOPK + first.first * TILE);
            op.CubeItems(share, splits, td);
        }
        if ASCEND_IS_AIV {
            op.InitVector();
            op.VectorItems(share, splits, static_cast<uint32_t>(AscendC::GetSubBlockIdx()));
        }
    }

private:
    // With whole tokens (S = 1) the group's contiguous run of about equal work: a token
    // weighs per tile its min(TOPK, (p_t + 1) / RATIO) selectable slots fill 8 (a gather and
    // two products with their hand-offs), 10 where it selects among more rows than TOPK (its
    // rows scattered: about a DMA per row, where a token that keeps all its rows copies runs
    // of a page), and 1 for its own work (query, slots and state, mostly under its
    // neighbours' tiles): the weights that even the groups' ends in the modeled trace of
    // FLASH CSA at 512 tokens (busiest group 330 µs against 370 with 4 per tile and 1).
    __aicore__ inline static Share Tokens(GM_ADDR positions, uint32_t t)
    {
        ScalarStream<int32_t> p;
        p.Init(positions, t);
        p.Warm(0);
        return WeightedShare(t, GroupIdx(), static_cast<uint32_t>(AscendC::GetBlockNum()), [&](uint32_t u) {
            const int64_t next = static_cast<int64_t>(p.Get(u)) + 1;
            const int64_t rows = next > 0 ? next / P::RATIO : 0;
            const uint32_t slots = static_cast<uint32_t>(rows < P::TOPK ? rows : P::TOPK);
            return (rows > P::TOPK ? 10 : 8) * uint64_t(CeilDiv(slots, TILE)) + 1;
        });
    }

    // Work item `index` of `splits` per token: its token, its tiles [first, end), and (S > 1)
    // its slot.
    struct Item {
        uint32_t index, t, first, end;
        bool split;

        __aicore__ inline Item(uint32_t i, uint32_t splits)
            : index(i), t(i / splits), first(Splits::First(i % splits, splits, TILES)),
              end(Splits::First(i % splits + 1, splits, TILES)), split(splits > 1)
        {
        }
    };

    __aicore__ inline void Bind(GM_ADDR q, GM_ADDR cmpKv, GM_ADDR cmpTable, GM_ADDR positions, GM_ADDR topkIdx,
                                GM_ADDR scores, GM_ADDR probs, GM_ADDR part, GM_ADDR stats, GM_ADDR o, GM_ADDR denom,
                                GM_ADDR rowMax)
    {
        const uint64_t slab = static_cast<uint64_t>(GroupIdx()) * SLABS * SLAB;  // the group's scores and probs
        q_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(q));
        kv_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(cmpKv));
        table_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(cmpTable));
        positions_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(positions));
        topk_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(topkIdx));
        scores_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(scores) + slab);
        probs_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(probs) + slab);
        splitSlots_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(part));
        for (uint32_t k = 0; k < SLABS; ++k) {
            partRows_[k].Init(part + SlotsOf::Part(GroupIdx(), k) * sizeof(float));
        }
        stats_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(stats));
        oRows_.Init(o);
        denom_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(denom));
        rowMax_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(rowMax));
    }

    // Slots of tile j: the last tile may be shorter (whole fractals either way).
    __aicore__ inline static uint32_t Lanes(uint32_t j) { return Min(TILE, P::TOPK - j * TILE); }

    // Compressed rows token t may select: (p_t + 1) / RATIO.
    __aicore__ inline int64_t Bound(uint32_t t)
    {
        const int64_t p = positions_.GetValue(t);
        return p + 1 > 0 ? (p + 1) / P::RATIO : 0;
    }

    // ---- AIC ----

    __aicore__ inline void InitCube(GM_ADDR topkIdx, const TilingData& td)
    {
        slots_.Init(topkIdx, static_cast<uint64_t>(td.t) * P::TOPK);
        tableRows_.Init(reinterpret_cast<GM_ADDR>(table_.GetPhyAddr(0)), static_cast<uint64_t>(td.b) * td.cmp_tw);
        tableWidth_ = td.cmp_tw;
        pipe_.InitBuffer(qQ_, 1, P::Q_BYTES);
        pipe_.InitBuffer(rowsQ_, P::ROW_BUFFERS, P::ROWS_BYTES);
        pipe_.InitBuffer(aTile_, 2, P::A_TILE_BYTES);
        pipe_.InitBuffer(aL0_, 2, P::A_L0_BYTES);
        pipe_.InitBuffer(bL0_, 2, P::B_L0_BYTES);
        pipe_.InitBuffer(cL0_, HEAD_TILE_C_BUFFERS, P::C_L0_BYTES);
    }

    // The group's kept tiles gathered ahead, in order across its items: up to ROW_BUFFERS in
    // flight (the one the cube works on included), so a tile's gather runs under the earlier
    // tiles' products, the next item's under the last tiles of this one (an entry: a tile and
    // its token). `next` is the gather's cursor: the next tile of item `item` to look at.
    struct Ahead {
        struct Entry {
            uint32_t tile, t;
        } at[P::ROW_BUFFERS];
        uint32_t head, count;
        uint32_t item, last, t, next, end;  // last: the share's end
        int64_t bound;

        __aicore__ inline const Entry& Get(uint32_t e) const { return at[(head + e) % P::ROW_BUFFERS]; }
    };

    __aicore__ inline void Fill(Ahead& a, uint32_t splits, const TilingData& td, uint32_t most = P::ROW_BUFFERS)
    {
        while (a.count < most && a.item < a.last) {
            if (a.next >= a.end) {
                if (++a.item < a.last) {
                    Start(a, splits);
                }
                continue;
            }
            const uint32_t j = Gather(a.t, a.next, a.end, a.bound, td);
            a.next = j + 1;
            if (j < a.end) {
                a.at[(a.head + a.count) % P::ROW_BUFFERS] = {j, a.t};
                ++a.count;
            }
        }
    }

    // The gather's cursor at the first tile of item a.item.
    __aicore__ inline void Start(Ahead& a, uint32_t splits)
    {
        const Item it(a.item, splits);
        a.t = it.t;
        a.next = it.first;
        a.end = it.end;
        a.bound = Bound(it.t);
        // a new request's cmp_block_table row: its slots pick its pages in no known order
        const uint32_t b = it.t / P::SEQ;
        if (b != askedRow_) {
            askedRow_ = b;
            tableRows_.AskRange(static_cast<uint64_t>(b) * tableWidth_, tableWidth_);
        }
    }

    // The share's items as one stream of kept tiles. Tile i + 1's scores (the other slab) go
    // ahead of tile i's values, so the cube works on them while the AIV turns tile i's
    // scores into probabilities. Where tile i + 1 is another token's, that token's q is
    // loaded instead (into the buffer tile i's scores were the last to read, MTE2 running it
    // behind the gathers already issued) and tile i + 1 scored after tile i's values.
    __aicore__ inline void CubeItems(const Share& share, uint32_t splits, const TilingData& td)
    {
        Ahead ahead{};
        ahead.item = share.begin;
        ahead.last = share.end;
        Start(ahead, splits);
        Fill(ahead, splits, td, 1);
        if (ahead.count == 0) {
            return;
        }
        uint32_t qToken = ahead.Get(0).t;
        LoadQ(qToken);  // before the later gathers
        Fill(ahead, splits, td);
        q1_ = qQ_.DeQue<bfloat16_t>();
        AscendC::LocalTensor<bfloat16_t> tile;
        bool scored = false;  // the head tile's scores are out
        uint32_t slab = 0;
        while (ahead.count > 0) {
            const uint32_t lanes = Lanes(ahead.Get(0).tile);
            if (!scored) {
                tile = rowsQ_.template DeQue<bfloat16_t>();
                Scores(tile, lanes, slab);
            }
            scored = false;
            AscendC::LocalTensor<bfloat16_t> next;
            if (ahead.count > 1 && ahead.Get(1).t == qToken) {
                next = rowsQ_.template DeQue<bfloat16_t>();
                Scores(next, Lanes(ahead.Get(1).tile), slab ^ 1);
                scored = true;
            } else if (ahead.count > 1) {
                qQ_.FreeTensor(q1_);
                qToken = ahead.Get(1).t;
                LoadQ(qToken);
            }
            AscendC::CrossCoreWaitFlag(PROBS_READY);
            Values(tile, lanes, slab);
            rowsQ_.FreeTensor(tile);
            ahead.head = (ahead.head + 1) % P::ROW_BUFFERS;
            --ahead.count;
            // the next gathers queue behind these values' probability loads
            Fill(ahead, splits, td);
            if (!scored && ahead.count > 0) {
                q1_ = qQ_.DeQue<bfloat16_t>();
            }
            tile = next;
            slab ^= 1;
        }
        qQ_.FreeTensor(q1_);
    }

    // scores[slab] = q_t · tileᵀ, head tile by head tile; then SCORES_READY.
    __aicore__ inline void Scores(const AscendC::LocalTensor<bfloat16_t>& tile, uint32_t lanes, uint32_t slab)
    {
        for (uint32_t m = 0; m < HEAD_TILES; ++m) {
            // k = head dims, B = tileᵀ (its fractals are already L0B's)
            HeadTileMmad<P::HEAD_TILE, P::D_TILE, TILE_BLOCKS, false>(
                aL0_, bL0_, cL0_, q1_[m * M_PAD * HD], tile, HD, 0, lanes,
                scores_[slab * SLAB + m * P::HEAD_TILE * lanes], lanes);
        }
        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(SCORES_READY);
    }

    // parts[slab] = probs[slab] · tile, head tile by head tile; then PART_READY.
    __aicore__ inline void Values(const AscendC::LocalTensor<bfloat16_t>& tile, uint32_t lanes, uint32_t slab)
    {
        for (uint32_t m = 0; m < HEAD_TILES; ++m) {
            AscendC::LocalTensor<bfloat16_t> a = aTile_.AllocTensor<bfloat16_t>();
            AscendC::DataCopy(a, probs_[slab * SLAB + m * P::HEAD_TILE * lanes],
                              AscendC::Nd2NzParams(1, P::HEAD_TILE, lanes, 0, lanes, M_PAD, 1, 0));
            aTile_.EnQue(a);
            a = aTile_.DeQue<bfloat16_t>();
            const uint64_t row = m * P::HEAD_TILE;  // of the group's part
            const Parts& out = partRows_[slab];
            for (uint32_t n0 = 0; n0 < HD; n0 += P::D_TILE) {
                // k = the tile's lanes, B = tile (fractals transposed to L0B)
                HeadTileMmadTo<P::HEAD_TILE, TILE, TILE_BLOCKS, true>(
                    aL0_, bL0_, cL0_, a, tile, lanes, n0, P::D_TILE,
                    [&](const AscendC::LocalTensor<float>& c) {
                        out.template Write<P::HEAD_TILE>(c, row, n0, P::D_TILE);
                    });
            }
            aTile_.FreeTensor(a);
        }
        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(PART_READY);
    }

    // The first of tiles [from, end) with a kept slot, gathered into a rows buffer and
    // queued for the cube; `end` if none has one.
    __aicore__ inline uint32_t Gather(uint32_t t, uint32_t from, uint32_t end, int64_t bound, const TilingData& td)
    {
        for (uint32_t j = from; j < end; ++j) {
            AscendC::LocalTensor<bfloat16_t> u = rowsQ_.template AllocTensor<bfloat16_t>();
            if (GatherTile(t, j, bound, td, u)) {
                rowsQ_.EnQue(u);
                return j;
            }
            rowsQ_.FreeTensor(u);
        }
        return end;
    }

    // Tile j's kept rows into the NZ tile u [TILE, HD], lane k in row k, as its slots are
    // read: a run of consecutive physical rows is one DMA, issued when the run ends, so the
    // copies run under the reads of the next slots; runs of lanes not kept are zeroed
    // (0 x garbage cannot occur) once some slot is kept. False if none is (u then unused).
    // A kept slot's page must be a page of the pool (hca_csa.md §11.5): a violation stops
    // the launch.
    __aicore__ inline bool GatherTile(uint32_t t, uint32_t j, int64_t bound, const TilingData& td,
                                      const AscendC::LocalTensor<bfloat16_t>& u)
    {
        const uint32_t lanes = Lanes(j);
        const uint32_t b = t / P::SEQ;
        const uint64_t at = static_cast<uint64_t>(t) * P::TOPK + j * TILE;
        uint32_t holes[TILE];  // first lane and length of each run not kept, two entries each
        uint32_t nHoles = 0;
        uint32_t start = 0;  // the open run's first lane
        int32_t first = 0;   // its first physical row, -1 for a run not kept
        for (uint32_t k = 0; k <= lanes; ++k) {
            int32_t row = -1;
            if (k < lanes) {
                const int32_t slot = slots_.Get(at + k);
                if (slot >= 0 && slot < bound) {
                    const uint32_t logical = static_cast<uint32_t>(slot) / P::BLOCK_SIZE;
                    ascendc_assert(logical < td.cmp_tw,
                                   "token %u selects compressed row %d, page %u of a %u-page cmp_block_table row", t,
                                   slot, logical, td.cmp_tw);
                    const int32_t page = table_.GetValue(static_cast<uint64_t>(b) * td.cmp_tw + logical);
                    ascendc_assert(page >= 0 && page < static_cast<int32_t>(td.cmp_nb),
                                   "token %u: cmp_block_table[%u, %u] = %d is not a page of the %u-page cmp_kv pool",
                                   t, b, logical, page, td.cmp_nb);
                    row = page * static_cast<int32_t>(P::BLOCK_SIZE) + slot % static_cast<int32_t>(P::BLOCK_SIZE);
                }
            }
            const int32_t n = static_cast<int32_t>(k - start);
            const bool extends = k > 0 && k < lanes && (first < 0 ? row < 0 : row == first + n);
            if (extends) {
                continue;
            }
            if (k > 0 && first < 0) {
                holes[nHoles++] = start;
                holes[nHoles++] = k - start;
            } else if (k > 0) {
                AscendC::DataCopy(u[start * FRACTAL], kv_[static_cast<uint64_t>(first) * HD],
                                  AscendC::Nd2NzParams(1, k - start, HD, 0, HD, TILE, 1, 0));
            }
            start = k;
            first = row;
        }
        if (nHoles == 2 && holes[1] == lanes) {
            return false;
        }
        for (uint32_t h = 0; h < nHoles; h += 2) {
            const uint32_t n = holes[h + 1];
            AscendC::Fill(u[holes[h] * FRACTAL],
                          AscendC::InitConstValueParams<bfloat16_t>(HD / FRACTAL, n, TILE - n, bfloat16_t(0.0f)));
        }
        return true;
    }

    // Token t's heads into L1, HEAD_TILE rows per NZ tile of M_PAD-row column blocks, queued
    // (into the buffer the previous token's q freed once the cube's reads of it were done).
    __aicore__ inline void LoadQ(uint32_t t)
    {
        AscendC::LocalTensor<bfloat16_t> q = qQ_.AllocTensor<bfloat16_t>();
        for (uint32_t m = 0; m < HEAD_TILES; ++m) {
            const uint64_t row = static_cast<uint64_t>(t) * P::HEADS + m * P::HEAD_TILE;
            AscendC::DataCopy(q[m * M_PAD * HD], q_[row * HD],
                              AscendC::Nd2NzParams(1, P::HEAD_TILE, HD, 0, HD, M_PAD, 1, 0));
        }
        qQ_.EnQue(q);
    }


    // ---- AIV ----

    __aicore__ inline void InitVector()
    {
        pipe_.InitBuffer(indexRow_, P::INDEX_ROW_BYTES);
        pipe_.InitBuffer(valid_, P::VALID_BYTES);
        pipe_.InitBuffer(bias_, P::BIAS_BYTES);
        pipe_.InitBuffer(scoresQ_, 1, P::SCORES_BYTES);
        pipe_.InitBuffer(probsQ_, 1, P::PROBS_BYTES);
        pipe_.InitBuffer(reduceTmp_, P::REDUCE_TMP_BYTES);
        pipe_.InitBuffer(rowStats_, P::ROW_STATS_BYTES);
        pipe_.InitBuffer(runMax_, P::STATE_BUFFERS * P::RUN_MAX_BYTES);
        pipe_.InitBuffer(runDenom_, P::STATE_BUFFERS * P::RUN_DENOM_BYTES);
        pipe_.InitBuffer(tileMax_, P::TILE_MAX_BYTES);
        pipe_.InitBuffer(tileSum_, P::TILE_SUM_BYTES);
        pipe_.InitBuffer(alpha_, P::ALPHA_BYTES);
        pipe_.InitBuffer(beta_, P::BETA_BYTES);
        pipe_.InitBuffer(o1_, P::STATE_BUFFERS * P::O_BYTES);
        pipe_.InitBuffer(partQ_, 2, P::PART_BYTES);
        pipe_.InitBuffer(partChunk_, P::PART_CHUNK_BYTES);
        pipe_.InitBuffer(spread_, P::SPREAD_BYTES);
    }

    // The share's items in order, as one stream of kept tiles (the cube's): tile i's
    // probabilities go out before tile i - 1's part merges, across items too. An item starts
    // from its max and denominators alone (its slots, its first probabilities); its o loads
    // once those are out, under the previous item's last merge and store, so the cube makes
    // the item's first part while the AIV settles the previous item. With two state buffers
    // the items worked on alternate between them; with one the previous item is settled
    // before the next one's state loads.
    __aicore__ inline void VectorItems(const Share& share, uint32_t splits, uint32_t sub)
    {
        const uint32_t mine = GROUPS > sub ? CeilDiv(GROUPS - sub, 2) : 0;  // 8-head groups sub, sub + 2, ...
        const uint32_t heads = mine * VH;
        uint32_t state = 0;  // the item's state buffer
        Open last{Item(share.begin, splits), 0, 0, false, false};
        for (uint32_t i = share.begin; i < share.end; ++i) {
            const Item it(i, splits);
            bool kept[TILES];
            const bool any = Slots(it.t, it, kept);
            if (!any && !it.split) {
                continue;  // the window's state stands
            }
            if (P::STATE_BUFFERS == 1 || !any) {
                Settle(last, mine, sub);
            }
            LoadStats(it, sub, mine, state);
            bool first = true;
            for (uint32_t j = it.first; j < it.end; ++j) {
                if (!kept[j]) {
                    continue;
                }
                AscendC::CrossCoreWaitFlag(SCORES_READY);
                for (uint32_t g = 0; g < mine; ++g) {
                    Softmax(sub + 2 * g, g, j, slab_);
                }
                if (heads > 0) {
                    OnlineRescale(runMax_.Get<float>()[state * MAX_STRIDE],
                                  runDenom_.Get<float>()[state * DENOM_STRIDE], tileMax_.Get<float>(),
                                  tileSum_.Get<float>(), alpha_.Get<float>()[slab_ * STATS],
                                  beta_.Get<float>()[slab_ * STATS], heads);
                }
                AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(PROBS_READY);
                if (first) {
                    LoadO(it, sub, mine, state);
                    Settle(last, mine, sub);
                    WidenO(it, mine, state);
                    first = false;
                } else {
                    MergeTile(mine, sub, last);
                }
                last = {it, state, slab_, true, true};
                slab_ ^= 1;
            }
            if (!any) {  // a split without a kept tile: its empty state
                LoadO(it, sub, mine, state);
                last = {it, state, 0, false, true};
                Settle(last, mine, sub);
            }
            state = (state + 1) % P::STATE_BUFFERS;
        }
        Settle(last, mine, sub);
    }

    // The item the AIV worked on last: its state buffer, and the slab of its last part while
    // that part is still to merge; open until its state is stored.
    struct Open {
        Item it;
        uint32_t state, slab;
        bool part, open;
    };

    // The open item's last part merged and its state stored.
    __aicore__ inline void Settle(Open& last, uint32_t mine, uint32_t sub)
    {
        if (last.part) {
            MergeTile(mine, sub, last);
            last.part = false;
        }
        if (last.open) {
            StoreState(last.it, sub, mine, last.state);
            last.open = false;
        }
    }

    // The bias of token t's slots (0 kept, -1e20 not) and which tiles keep a slot; false if
    // none of the item's does. kept = clamp(slot + 1, 0, 1) * clamp(bound - slot, 0, 1) on the slots as f32
    // (exact: the bound is below 2^24, and a slot rounded by the cast stays on its side).
    __aicore__ inline bool Slots(uint32_t t, const Item& it, bool* kept)
    {
        const float bound = static_cast<float>(Bound(t));
        AscendC::LocalTensor<int32_t> row = indexRow_.Get<int32_t>();
        AscendC::LocalTensor<float> valid = valid_.Get<float>();
        AscendC::LocalTensor<float> bias = bias_.Get<float>();
        AscendC::LocalTensor<float> stats = rowStats_.Get<float>();
        // The previous token's vector reads of the row are done before it is overwritten.
        Handshake<AscendC::HardEvent::V_MTE2>();
        AscendC::DataCopy(row, topk_[static_cast<uint64_t>(t) * P::TOPK], P::TOPK);
        Handshake<AscendC::HardEvent::MTE2_V>();
        AscendC::Cast(valid, row, AscendC::RoundMode::CAST_RINT, P::TOPK);
        AscendC::Muls(bias, valid, -1.0f, P::TOPK);
        AscendC::Adds(bias, bias, bound, P::TOPK);  // bound - slot
        AscendC::Maxs(bias, bias, 0.0f, P::TOPK);
        AscendC::Mins(bias, bias, 1.0f, P::TOPK);
        AscendC::Adds(valid, valid, 1.0f, P::TOPK);  // slot + 1
        AscendC::Maxs(valid, valid, 0.0f, P::TOPK);
        AscendC::Mins(valid, valid, 1.0f, P::TOPK);
        AscendC::Mul(valid, valid, bias, P::TOPK);
        AscendC::Adds(bias, valid, -1.0f, P::TOPK);
        AscendC::Muls(bias, bias, MASK, P::TOPK);
        for (uint32_t j = 0; j < TILES; ++j) {
            AscendC::ReduceMax(stats[j * SLOT], valid[j * TILE], reduceTmp_.Get<float>(), Lanes(j));
        }
        VectorToScalar();
        bool any = false;
        for (uint32_t j = 0; j < TILES; ++j) {
            kept[j] = stats.GetValue(j * SLOT) > 0.0f;
            any = any || (kept[j] && j >= it.first && j < it.end);
        }
        return any;
    }

    // The max and denominators this AIV's heads of the item start from, into state buffer k
    // once the store of the buffer's previous item has read them: the window's, or for a
    // split nothing (m = -1e20, denom 0).
    __aicore__ inline void LoadStats(const Item& it, uint32_t sub, uint32_t mine, uint32_t k)
    {
        AscendC::LocalTensor<float> m = runMax_.Get<float>()[k * MAX_STRIDE];
        AscendC::LocalTensor<float> den = runDenom_.Get<float>()[k * DENOM_STRIDE];
        if (it.split) {
            Handshake<AscendC::HardEvent::MTE3_V>();
            if (mine > 0) {
                AscendC::Duplicate(m, -MASK, mine * VH);
                AscendC::Duplicate(den, 0.0f, mine * VH);
            }
            return;
        }
        Handshake<AscendC::HardEvent::MTE3_MTE2>();
        for (uint32_t i = 0; i < mine; ++i) {
            const uint64_t head = static_cast<uint64_t>(it.t) * P::HEADS + (sub + 2 * i) * VH;
            AscendC::DataCopy(m[i * VH], rowMax_[head], VH);
            AscendC::DataCopy(den[i * VH], denom_[head], VH);
        }
        Handshake<AscendC::HardEvent::MTE2_V>();
    }

    // The o this AIV's heads of the item start from, into state buffer k once the store of
    // the buffer's previous item has read it: the window's rows (group i's into the place of
    // group i + 1, the buffer holds a group's rows more; WidenO puts them in their own), or
    // for a split zero.
    __aicore__ inline void LoadO(const Item& it, uint32_t sub, uint32_t mine, uint32_t k)
    {
        AscendC::LocalTensor<float> o = o1_.Get<float>()[k * O_STRIDE];
        if (it.split) {
            Handshake<AscendC::HardEvent::MTE3_V>();
            if (mine > 0) {
                AscendC::Duplicate(o, 0.0f, mine * VH * HD);
            }
            return;
        }
        Handshake<AscendC::HardEvent::MTE3_MTE2>();
        for (uint32_t i = 0; i < mine; ++i) {
            const uint64_t head = static_cast<uint64_t>(it.t) * P::HEADS + (sub + 2 * i) * VH;
            AscendC::DataCopy(o[(i + 1) * VH * HD].template ReinterpretCast<half>(), oRows_.From(head),
                              VH * Parts::HALVES);
        }
    }

    // The window's rows LoadO brought into state buffer k, widened in order, each into its
    // own place once the one before has left it.
    __aicore__ inline void WidenO(const Item& it, uint32_t mine, uint32_t k)
    {
        if (it.split) {
            return;
        }
        AscendC::LocalTensor<float> o = o1_.Get<float>()[k * O_STRIDE];
        Handshake<AscendC::HardEvent::MTE2_V>();
        for (uint32_t i = 0; i < mine; ++i) {
            Parts::Widen(o[i * VH * HD], o[(i + 1) * VH * HD].template ReinterpretCast<half>(), VH, HD_BLOCKS);
        }
    }

    // o and the denominators (the item's state buffer) back in place, or for a split o, max
    // and denominators to its slot; the next load into the buffer waits for them. The
    // window's rows leave as the cube left them, group i narrowed into the place of group
    // i - 1 (group 0's into the buffer's spare place).
    __aicore__ inline void StoreState(const Item& it, uint32_t sub, uint32_t mine, uint32_t state)
    {
        AscendC::LocalTensor<float> m = runMax_.Get<float>()[state * MAX_STRIDE];
        AscendC::LocalTensor<float> den = runDenom_.Get<float>()[state * DENOM_STRIDE];
        AscendC::LocalTensor<float> o = o1_.Get<float>()[state * O_STRIDE];
        const auto narrowed = [&](uint32_t i) {
            return o[(i > 0 ? i - 1 : mine) * VH * HD].template ReinterpretCast<half>();
        };
        if (!it.split) {
            for (uint32_t i = 0; i < mine; ++i) {
                Parts::Narrow(narrowed(i), o[i * VH * HD], VH, HD_BLOCKS);
            }
        }
        Handshake<AscendC::HardEvent::V_MTE3>();
        for (uint32_t i = 0; i < mine; ++i) {
            const uint32_t h = (sub + 2 * i) * VH;
            if (it.split) {
                AscendC::DataCopy(stats_[SlotsOf::SplitMax(it.index) + h], m[i * VH], VH);
                AscendC::DataCopy(stats_[SlotsOf::SplitDenom(it.index) + h], den[i * VH], VH);
                AscendC::DataCopy(splitSlots_[SlotsOf::SplitO(it.index) + static_cast<uint64_t>(h) * HD], o[i * VH * HD],
                                  VH * HD);
            } else {
                const uint64_t head = static_cast<uint64_t>(it.t) * P::HEADS + h;
                AscendC::DataCopy(denom_[head], den[i * VH], VH);
                AscendC::DataCopy(oRows_.From(head), narrowed(i), VH * Parts::HALVES);
            }
        }
    }

    // The open item's last part, once the cube has it, into its o: a group's rows load
    // while the previous group's merge.
    __aicore__ inline void MergeTile(uint32_t mine, uint32_t sub, const Open& last)
    {
        AscendC::CrossCoreWaitFlag(PART_READY);
        if (mine > 0) {
            LoadPart(sub, last.slab);
        }
        for (uint32_t i = 0; i < mine; ++i) {
            if (i + 1 < mine) {
                LoadPart(sub + 2 * (i + 1), last.slab);
            }
            Merge(i, last);
        }
    }

    // Group g's rows of the part in `slab`, as the cube left them.
    __aicore__ inline void LoadPart(uint32_t g, uint32_t slab)
    {
        AscendC::LocalTensor<half> part = partQ_.AllocTensor<half>();
        AscendC::DataCopy(part, partRows_[slab].From(static_cast<uint64_t>(g) * VH), VH * Parts::HALVES);
        partQ_.EnQue(part);
    }

    // Group g (local index i) over tile j: tile max and sum into the statistics, bf16
    // probabilities out (the group's slab: a tile's rows are its `lanes` apart).
    __aicore__ inline void Softmax(uint32_t g, uint32_t i, uint32_t j, uint32_t slab)
    {
        const uint32_t lanes = Lanes(j), len = VH * lanes;
        const uint64_t at = slab * SLAB + static_cast<uint64_t>(g) * VH * lanes;
        AscendC::LocalTensor<float> z = scoresQ_.AllocTensor<float>();
        AscendC::DataCopy(z, scores_[at], len);
        scoresQ_.EnQue(z);
        z = scoresQ_.DeQue<float>();
        ExpRows<VH>(z, bias_.Get<float>()[j * TILE], P::SCALE, lanes, reduceTmp_.Get<float>(), rowStats_.Get<float>(),
                    tileMax_.Get<float>(), tileSum_.Get<float>(), i * VH);
        AscendC::Muls(z, z, 1.0f / static_cast<float>(1u << P::O_SHIFT), len);
        AscendC::LocalTensor<bfloat16_t> p = probsQ_.AllocTensor<bfloat16_t>();
        AscendC::Cast(p, z, AscendC::RoundMode::CAST_RINT, len);
        scoresQ_.FreeTensor(z);
        probsQ_.EnQue(p);
        p = probsQ_.DeQue<bfloat16_t>();
        AscendC::DataCopy(probs_[at], p, len);
        probsQ_.FreeTensor(p);
    }

    // o = alpha * o + beta * part for the AIV's group of local index i (its part loaded) of
    // the open item, scales of its part's slab: o by the head's alpha, then the part a repeat
    // of columns at a time, widened, times the head's beta (times 2^O_SHIFT into a split's
    // unscaled o) and added.
    __aicore__ inline void Merge(uint32_t i, const Open& last)
    {
        const uint32_t slab = last.slab;
        AscendC::LocalTensor<half> part = partQ_.DeQue<half>();
        AscendC::LocalTensor<float> o = o1_.Get<float>()[last.state * O_STRIDE + i * VH * HD];
        AscendC::LocalTensor<float> alpha = alpha_.Get<float>()[slab * STATS + i * VH];
        AscendC::LocalTensor<float> beta = spread_.Get<float>();
        AscendC::Brcb(beta, beta_.Get<float>()[slab * STATS + i * VH], 1, AscendC::BrcbRepeatParams(1, 8));
        if (last.it.split) {
            AscendC::Muls(beta, beta, static_cast<float>(1u << P::O_SHIFT), VH * SLOT);
        }
        for (uint32_t h = 0; h < VH; ++h) {
            AscendC::Muls(o[h * HD], o[h * HD], alpha.GetValue(h), HD);
        }
        Parts::AddWidened(o, part, beta, VH, HD_BLOCKS, partChunk_.Get<float>());
        partQ_.FreeTensor(part);
    }

    AscendC::TPipe pipe_;
    // AIC
    AscendC::TQue<AscendC::TPosition::A1, 1> qQ_;  // a token's q, loaded under the previous token's products
    AscendC::LocalTensor<bfloat16_t> q1_;          // the current token's, off the queue
    AscendC::TQue<AscendC::TPosition::B1, P::ROW_BUFFERS> rowsQ_;
    AscendC::TQue<AscendC::TPosition::A1, 1> aTile_;
    AscendC::TQue<AscendC::TPosition::A2, 1> aL0_;
    AscendC::TQue<AscendC::TPosition::B2, 1> bL0_;
    AscendC::TQue<AscendC::TPosition::CO1, 1> cL0_;
    // AIV
    AscendC::TQue<AscendC::TPosition::VECIN, 1> scoresQ_;
    AscendC::TQue<AscendC::TPosition::VECIN, 2> partQ_;  // a group's rows and the next's
    AscendC::TBuf<AscendC::TPosition::VECCALC> partChunk_, spread_;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> probsQ_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> indexRow_, valid_, bias_, reduceTmp_, rowStats_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> runMax_, runDenom_, tileMax_, tileSum_, alpha_, beta_, o1_;
    AscendC::GlobalTensor<bfloat16_t> q_, kv_, probs_;
    AscendC::GlobalTensor<int32_t> table_, positions_, topk_;
    AscendC::GlobalTensor<float> scores_, splitSlots_, stats_, denom_, rowMax_;
    Parts oRows_;            // the window's o, as its cube left it
    Parts partRows_[SLABS];  // the group's parts, a slab's each
    ScalarStream<int32_t> slots_;  // the AIC's reads of the top-k lists, in token order
    ScalarStream<int32_t> tableRows_;  // cmp_block_table, whose rows the AIC asks for ahead
    uint32_t tableWidth_ = 0;
    uint32_t askedRow_ = ~0u;  // the request whose table row was asked for last
    uint32_t slab_ = 0;               // the AIV's slab of the next kept tile
};

}  // namespace dsv4
