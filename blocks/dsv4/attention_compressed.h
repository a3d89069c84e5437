// Compressed-row source of the HCA attention (hca_csa.md §6.1-6.2): after the window
// (attention_cube.h / attention_softmax.h), every query row of a request continues its
// online softmax over the request's compressed rows 0 .. C_t - 1, with
//   C_t = min((p_t + 1) / RATIO, kv_seq_lens[b] / RATIO, MAX_ROWS).
// A request's tokens share the prefix 0 .. C_max - 1 (C_max = max_t C_t); it is processed
// in chunks of up to CHUNK rows (CHUNK / BLOCK_SIZE pages through cmp_block_table, as many
// as L1 holds: every chunk costs a round trip of o and part through GM, so few is cheap).
// A chunk has `lanes` = its rows rounded up to 16 (the last one may be shorter). Per chunk:
//   AIC: gathers the chunk into L1 (rows >= C_max zero), scores = q_request · chunkᵀ (f32;
//        L0 tiles of KV_TILE rows and D_TILE head dims)
//   AIV: z = score * SCALE, lanes r >= C_t masked to -1e20; m_i = max z, e = exp(z - m_i),
//        l_i = sum e (f32), probs = bf16(e * 2^-O_SHIFT), bf16(e) for a split's first chunk
//        (zeros for a token with no row in the tile);
//        m' = max(m, m_i), alpha = exp(m - m'), beta = exp(m_i - m'),
//        denom' = alpha * denom + beta * l_i
//   AIC: part = probs_request · chunk, its rows as head_tile_mmad.h's OutRows (O_HALF_COLS
//        columns in half: 2^O_SHIFT >= CHUNK keeps them in range); a split's first chunk
//        writes its o (f32) instead
//   AIV: o' = alpha * o + beta * f32(part), VH heads at a time
// The window leaves o in the parts' rows and scale (its probabilities by 2^-O_SHIFT too:
// attention_softmax.h), so a merge into it widens o, adds and narrows it back; a split's o
// is f32 and unscaled, its parts' beta times 2^O_SHIFT. Kept so, o is at most
// denom * max |v| * 2^-O_SHIFT: within half's range for the cache's rows.
// `denom` arrives from the window softmax as l + exp(sink - m); the sink term rescales with
// l (alpha * exp(sink - m) = exp(sink - m')), so the finish kernel's o / denom is the
// reference's o / (l + exp(sink - m)).
//
// Work is split over KV (dsv4/attention_combine.h) when there are fewer requests than core
// groups: each request's chunks are dealt to S = min(GROUPS / requests, MAX_CHUNKS) splits,
// one work item (request, split) per group; a split's first chunk's product is its o (it
// starts from m = -1e20: alpha 0, beta 1). With S = 1 an item is a piece of a request's heads
// (whole cube and vector tiles, `HEAD_PIECE`) and continues the window's o and denom in
// place.
// A group (1 AIC + 2 AIV) takes items in turn (with S = 1 a contiguous run of about equal GM
// traffic, `Requests`); AIV k merges tokens [k*SEQ/2, (k+1)*SEQ/2).
// Handoffs go through the group's GM scratch (scores, probs, part: two of each, consecutive
// (item, chunk) steps alternating), ordered by cross-core flags. The AIC runs a step's gather
// and scores before the previous step's values where both steps' rows fit the chunk buffer
// (short requests: many steps of few lanes), so it works while the AIVs run a softmax.
// Where requests never split (a single chunk at most: no combine follows) the launch can also
// finish (PF, attention_finish.h): once an item's last merge is flushed, the AIV finishes its
// tokens' heads of the item, so the attention needs no finish launch.
#pragma once

#include "dsv4/attention_combine.h"
#include "dsv4/attention_finish.h"
#include "dsv4/tiling_data.h"
#include "dsv4/head_tile_mmad.h"
#include "dsv4/online_softmax.h"
#include "dsv4/scalar_stream.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// Scalar streams over the tokens' positions and the requests' KV lengths, so a run of
// reads overlaps its misses instead of queueing them (a group reading 64 requests' 36 lines
// one by one started the launch 31 µs late in the modeled trace).
struct RequestMeta {
    ScalarStream<int32_t> positions, lens;

    __aicore__ inline void Init(GM_ADDR p, GM_ADDR kvSeqLens, uint32_t requests, uint32_t seq)
    {
        positions.Init(p, static_cast<uint64_t>(requests) * seq);
        lens.Init(kvSeqLens, requests);
        lens.Warm(0);
    }
};

// The compressed rows visible to each token of request b (scalar metadata reads).
template <class P>
struct CompressedRows {
    int32_t visible[P::SEQ];
    int32_t rows;  // C_max

    // At most min(len / RATIO, MAX_ROWS) for a request of KV length len.
    __aicore__ inline static int64_t Bound(int64_t len)
    {
        const int64_t byLen = len > 0 ? len / P::RATIO : 0;
        return byLen < static_cast<int64_t>(P::MAX_ROWS) ? byLen : static_cast<int64_t>(P::MAX_ROWS);
    }

    __aicore__ inline void Read(RequestMeta& meta, uint32_t b)
    {
        const int64_t bound = Bound(meta.lens.Get(b));
        rows = 0;
        for (uint32_t s = 0; s < P::SEQ; ++s) {
            const int64_t p = meta.positions.Get(b * P::SEQ + s);
            int64_t c = p + 1 > 0 ? (p + 1) / P::RATIO : 0;
            c = c < bound ? c : bound;
            visible[s] = static_cast<int32_t>(c);
            rows = visible[s] > rows ? visible[s] : rows;
        }
    }

    __aicore__ inline uint32_t Chunks() const { return CeilDiv(static_cast<uint32_t>(rows), P::CHUNK); }

    // Lanes of chunk j: its rows rounded up to whole fractals.
    __aicore__ inline uint32_t Lanes(uint32_t j) const
    {
        const uint32_t left = static_cast<uint32_t>(rows) - j * P::CHUNK;
        return AlignUp(left < P::CHUNK ? left : P::CHUNK, 16u);
    }
};

// P: HEADS, HEAD_DIM, SEQ, BLOCK_SIZE, RATIO, MAX_ROWS, HEAD_TILE, KV_TILE, D_TILE, CHUNK,
// GROUPS, SCALE, O_SHIFT and O_HALF_COLS (the parts' rows, and the window's o), and the
// sizes the plan decided (`*_BYTES`, each at least what its use below needs): the AIC's L1
// and L0, the AIV's UB.
// PF: the finish's parameters, or NoFinish.
template <class P, class PF = NoFinish>
class AttentionCompressed {
    static constexpr uint32_t FRACTAL = 16;
    static constexpr uint32_t ROWS = P::SEQ * P::HEADS;
    static constexpr uint32_t HD = P::HEAD_DIM;
    static constexpr uint32_t TILE = P::KV_TILE;  // cube L0 step over rows
    static constexpr uint32_t CHUNK = P::CHUNK;
    static constexpr uint32_t CHUNK_BLOCKS = CHUNK / FRACTAL;
    static constexpr uint32_t M_PAD = AlignUp(P::HEAD_TILE, FRACTAL);
    static constexpr uint32_t A_COLS = HD > CHUNK ? HD : CHUNK;
    static constexpr uint32_t L0_K = P::D_TILE > TILE ? P::D_TILE : TILE;
    static constexpr uint32_t TOKENS = P::SEQ / 2;  // per AIV
    static constexpr uint32_t STATS = TOKENS * P::HEADS;
    static constexpr uint32_t SLOT = BLOCK_BYTES / sizeof(float);
    static constexpr uint32_t VH = SLOT;  // heads per vector tile: per-head f32 values in whole blocks
    static constexpr uint32_t SCORE_TILE = VH * CHUNK;  // capacity; a chunk uses VH * lanes
    static constexpr float MASK = 1.0e20f;
    static constexpr uint16_t SCORES_READY = 1, PROBS_READY = 2, PART_READY = 3;
    static constexpr uint32_t MAX_CHUNKS = CeilDiv(P::MAX_ROWS, P::CHUNK);
    // Heads go to groups in pieces of whole cube tiles and whole vector tiles.
    static constexpr uint32_t HEAD_PIECE = P::HEAD_TILE > VH ? P::HEAD_TILE : VH;
    static constexpr uint32_t HEAD_PIECES = P::HEADS / HEAD_PIECE;
    using Splits = KvSplits<P::GROUPS, MAX_CHUNKS>;
    static constexpr bool FINISH = Finishes<PF>::VALUE;
    // Scores and probabilities of two (token, heads) tiles, the next loading under this one;
    // one with the finish, whose o queue takes the V_MTE2 event ids a second slot would hold
    // (8 per core: two slots each of the scores, the merge's o and part, and the finish's o).
    static constexpr uint32_t SCORE_BUFFERS = FINISH ? 1 : 2;
    static constexpr uint32_t SLABS = 2;  // consecutive steps' parts (and merge scales) alternate
    using Slots = SplitSlots<ROWS, HD, (MAX_CHUNKS > 1), SLABS>;
    static_assert(P::SEQ % 2 == 0, "the two AIVs of a block split the request's tokens");
    static_assert(TILE % FRACTAL == 0, "KV_TILE: whole fractals");
    static_assert(CHUNK % FRACTAL == 0 && CHUNK % P::BLOCK_SIZE == 0, "CHUNK: whole fractals and whole pages");
    static_assert(HD % P::D_TILE == 0 && P::D_TILE % FRACTAL == 0, "D_TILE: whole fractals dividing HEAD_DIM");
    static_assert(P::HEADS % P::HEAD_TILE == 0 && P::HEADS % VH == 0, "HEAD_TILE and VH divide HEADS");
    static_assert(HEAD_PIECE % P::HEAD_TILE == 0 && HEAD_PIECE % VH == 0 && P::HEADS % HEAD_PIECE == 0,
                  "head pieces: whole cube and vector tiles");
    static_assert(P::GROUPS >= 1, "at least one group");
    static_assert(HD <= 65535 && CHUNK <= 16384 && M_PAD <= 16384,
                  "ND2NZ: a 16-bit source row, at most 16384 rows and NZ row stride");
    // AIC
    static_assert(P::CHUNK_BYTES >= CHUNK * HD * sizeof(bfloat16_t), "chunk holds a chunk of compressed rows");
    static_assert(P::A_TILE_BYTES >= M_PAD * A_COLS * sizeof(bfloat16_t), "a_tile holds a tile of q or probs rows");
    static_assert(P::A_L0_BYTES >= M_PAD * L0_K * sizeof(bfloat16_t) &&
                      P::B_L0_BYTES >= P::D_TILE * TILE * sizeof(bfloat16_t) &&
                      P::C_L0_BYTES >= M_PAD * L0_K * sizeof(float),
                  "L0 tiles of HeadTileMmad");
    // AIV
    static_assert(P::SCORES_BYTES >= SCORE_TILE * sizeof(float) && P::PROBS_BYTES >= SCORE_TILE * sizeof(bfloat16_t),
                  "VH heads over a chunk's lanes");
    static_assert(P::LANE_BYTES >= CHUNK * sizeof(float) && P::BIAS_BYTES >= CHUNK * sizeof(float) &&
                      P::REDUCE_TMP_BYTES >= CHUNK * sizeof(float),
                  "f32 over a chunk's lanes");
    static_assert(P::REDUCE_TMP_BYTES >= FoldFloats(VH, CHUNK) * sizeof(float), "a vector tile's rows folded");
    static_assert(P::ROW_STATS_BYTES >= VH * SLOT * sizeof(float), "a block per head of a vector tile");
    static_assert(P::RUN_MAX_BYTES >= STATS * sizeof(float) && P::RUN_DENOM_BYTES >= STATS * sizeof(float) &&
                      P::TILE_MAX_BYTES >= STATS * sizeof(float) && P::TILE_SUM_BYTES >= STATS * sizeof(float) &&
                      P::ALPHA_BYTES >= SLABS * STATS * sizeof(float) && P::BETA_BYTES >= SLABS * STATS * sizeof(float),
                  "a value per head of the AIV's tokens");
    using Parts = OutRows<P>;  // the parts' rows: half columns, then f32 ones
    static constexpr uint32_t HD_BLOCKS = BlocksOf<float>(HD);
    static_assert(P::O_HALF_COLS > 0 && Parts::Fits(CHUNK),
                  "a chunk's part leaves the cube in half but the rope columns");
    static_assert(HD_BLOCKS <= 255 && Parts::BLOCKS <= 255, "VH head rows an 8-bit repeat stride apart");
    static_assert(P::O_IN_BYTES >= VH * HD * sizeof(float) && P::O_OUT_BYTES >= VH * HD * sizeof(float) &&
                      P::PART_IN_BYTES >= VH * Parts::HALVES * sizeof(half) && P::WIDE_BYTES >= VH * HD * sizeof(float),
                  "VH head rows of o (f32, or as the cube leaves them), and of the part; a merge's f32 rows");
    static_assert(P::CHUNK_F32_BYTES >= VH * F32_REPEAT * sizeof(float), "a repeat of VH rows in f32");
    static_assert(P::SPREAD_BYTES >= VH * BLOCK_BYTES, "VH heads' beta over a block each");

    // Work item `item`: of a request's `splits` splits over KV, or (one split) of its `parts`
    // head parts: its request, whether it is a split, its chunks [first, end) and its heads
    // [h0, h1) of every token.
    struct Item {
        uint32_t b;
        bool split;
        uint32_t first, end, h0, h1;
        CompressedRows<P> rows;

        __aicore__ inline Item(uint32_t item, uint32_t splits, uint32_t parts, RequestMeta& meta)
            : b(item / (splits * parts)), split(splits > 1)
        {
            rows.Read(meta, b);
            const uint32_t s = item / parts % splits, chunks = rows.Chunks();
            first = Splits::First(s, splits, chunks);
            end = Splits::First(s + 1, splits, chunks);
            const Share heads = PartRange(item % parts, parts, HEAD_PIECES);
            h0 = heads.begin * HEAD_PIECE;
            h1 = heads.end * HEAD_PIECE;
        }
    };

public:
    __aicore__ inline static void Run(GM_ADDR q, GM_ADDR cmpKv, GM_ADDR cmpTable, GM_ADDR positions,
                                      GM_ADDR kvSeqLens, GM_ADDR rowMax, GM_ADDR scores, GM_ADDR probs,
                                      GM_ADDR part, GM_ADDR stats, GM_ADDR o, GM_ADDR denom, GM_ADDR workspace,
                                      GM_ADDR tiling)
    {
        RunWith(q, cmpKv, cmpTable, positions, kvSeqLens, rowMax, scores, probs, part, stats, o, denom, nullptr,
                nullptr, nullptr, tiling);
        (void)workspace;
    }

    // And every item's heads finished into `packed` (PF; RoPE rows by `positions` with
    // PF::POSITIONS, else token-local).
    __aicore__ inline static void Run(GM_ADDR q, GM_ADDR cmpKv, GM_ADDR cmpTable, GM_ADDR positions,
                                      GM_ADDR kvSeqLens, GM_ADDR rowMax, GM_ADDR scores, GM_ADDR probs,
                                      GM_ADDR part, GM_ADDR stats, GM_ADDR o, GM_ADDR denom, GM_ADDR freqsCos,
                                      GM_ADDR freqsSin, GM_ADDR packed, GM_ADDR workspace, GM_ADDR tiling)
    {
        static_assert(FINISH && MAX_CHUNKS == 1, "a finishing launch: no request splits over KV");
        static_assert(PF::HEADS == P::HEADS && PF::HEAD_DIM == HD && HEAD_PIECE % PF::HEAD_TILE == 0,
                      "the finish takes whole tiles of an item's heads");
        RunWith(q, cmpKv, cmpTable, positions, kvSeqLens, rowMax, scores, probs, part, stats, o, denom, freqsCos,
                freqsSin, packed, tiling);
        (void)workspace;
    }

private:
    __aicore__ inline static void RunWith(GM_ADDR q, GM_ADDR cmpKv, GM_ADDR cmpTable, GM_ADDR positions,
                                          GM_ADDR kvSeqLens, GM_ADDR rowMax, GM_ADDR scores, GM_ADDR probs,
                                          GM_ADDR part, GM_ADDR stats, GM_ADDR o, GM_ADDR denom, GM_ADDR freqsCos,
                                          GM_ADDR freqsSin, GM_ADDR packed, GM_ADDR tiling)
    {
        const TilingData td = LoadTiling(tiling);
        const uint32_t splits = Splits::OnGroups(td.b);
        // Without a split over KV a request's heads go in pieces: more, smaller items deal
        // evenly over the groups and leave a shorter last merge, and a piece's gather and
        // scores run under the one before's values (FLASH at 512 tokens, 64 requests on 24
        // groups: 224 → 189 µs; 16 requests at TP 4: 162 → 66 µs, 8 groups idle before).
        const uint32_t parts = splits > 1 ? 1 : HEAD_PIECES;
        RequestMeta meta;
        meta.Init(positions, kvSeqLens, td.b, P::SEQ);
        const Share share = splits > 1 ? GroupShare(td.b * splits) : Requests(meta, td.b, parts);
        if (share.begin >= share.end) {
            return;
        }
        meta.positions.Warm(static_cast<uint64_t>(share.begin / (splits * parts)) * P::SEQ);
        AttentionCompressed op;
        op.Bind(q, cmpKv, cmpTable, rowMax, scores, probs, part, stats, o, denom);
        op.meta_ = meta;
        if ASCEND_IS_AIC {
            op.InitCube();
            op.CubeSteps(share, splits, parts, td);
        }
        if ASCEND_IS_AIV {
            op.InitVector();
            if constexpr (FINISH) {
                op.finish_.Init(op.pipe_, o, denom, freqsCos, freqsSin, PF::POSITIONS ? positions : nullptr, packed);
            } else {
                (void)freqsCos;
                (void)freqsSin;
                (void)packed;
            }
            const uint32_t s0 = static_cast<uint32_t>(AscendC::GetSubBlockIdx()) * TOKENS;
            Merge pending;
            for (uint32_t i = share.begin; i < share.end; ++i) {
                op.VectorItem(i, Item(i, splits, parts, op.meta_), s0, pending);
            }
            op.Flush(pending, s0);
        }
    }

    // With S = 1 the group's contiguous run of the requests' `parts` head pieces, of about
    // equal GM traffic: a piece weighs what its request does (the pieces are equal), in KiB
    // its query, each chunk's round trips of o and part (at f32 rows, though both move in
    // half but the rope columns: a chunk's hand-offs cost about alike whatever its bytes, and
    // weighed at their half rows the deployment's 16 pieces dealt two of a short request's to
    // one group and left another idle), and per lane its scores and probabilities both ways
    // and its row; one more for its metadata reads, so the requests without compressed rows
    // spread too. Its rows are taken at their bound by its length (its tokens' positions,
    // eight times the lines, are read by its group only).
    __aicore__ inline static Share Requests(RequestMeta& meta, uint32_t b, uint32_t parts)
    {
        constexpr uint64_t Q = uint64_t(ROWS) * HD * sizeof(bfloat16_t);
        constexpr uint64_t PER_CHUNK = 4 * uint64_t(ROWS) * HD * sizeof(float);
        constexpr uint64_t PER_LANE = ROWS * 2 * (sizeof(float) + sizeof(bfloat16_t)) + HD * sizeof(bfloat16_t);
        return WeightedShare(b * parts, GroupIdx(), static_cast<uint32_t>(AscendC::GetBlockNum()), [&](uint32_t u) {
            const uint32_t rows = static_cast<uint32_t>(CompressedRows<P>::Bound(meta.lens.Get(u / parts)));
            const uint64_t bytes =
                rows > 0 ? Q + CeilDiv(rows, P::CHUNK) * PER_CHUNK + AlignUp(rows, 16u) * PER_LANE : 0;
            return 1 + bytes / 1024;
        });
    }

    __aicore__ inline void Bind(GM_ADDR q, GM_ADDR cmpKv, GM_ADDR cmpTable, GM_ADDR rowMax, GM_ADDR scores,
                                GM_ADDR probs, GM_ADDR part, GM_ADDR stats, GM_ADDR o, GM_ADDR denom)
    {
        // the group's scores and probs: SLABS of ROWS x CHUNK, consecutive steps alternating
        const uint64_t slab = static_cast<uint64_t>(GroupIdx()) * SLABS * ROWS * CHUNK;
        q_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(q));
        kv_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(cmpKv));
        table_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(cmpTable));
        rowMax_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(rowMax));
        slots_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(part));
        for (uint32_t k = 0; k < SLABS; ++k) {
            scores_[k].SetGlobalBuffer(reinterpret_cast<__gm__ float*>(scores) + slab + k * ROWS * CHUNK);
            probs_[k].SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(probs) + slab + k * ROWS * CHUNK);
            partRows_[k].Init(part + Slots::Part(GroupIdx(), k) * sizeof(float));
        }
        stats_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(stats));
        oRows_.Init(o);
        denom_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(denom));
    }

    // A split's o rows (f32) in its slot.
    __aicore__ inline AscendC::GlobalTensor<float> SplitO(uint32_t item) { return slots_[Slots::SplitO(item)]; }

    // ---- AIC ----

    __aicore__ inline void InitCube()
    {
        pipe_.InitBuffer(tile_, P::CHUNK_BYTES);
        pipe_.InitBuffer(aTile_, 2, P::A_TILE_BYTES);
        pipe_.InitBuffer(aL0_, 2, P::A_L0_BYTES);
        pipe_.InitBuffer(bL0_, 2, P::B_L0_BYTES);
        pipe_.InitBuffer(cL0_, HEAD_TILE_C_BUFFERS, P::C_L0_BYTES);
    }

    // A step: chunk j of work item `item`, its rows at row `at` of the chunk buffer.
    struct Step {
        uint32_t item, j, at;
        Item it;
    };

    // The group's steps in order. Where the next step's rows fit the chunk buffer beside this
    // one's, its gather and scores run with this step's values (Together), so the cube works
    // while the vector cores run this step's softmax (and they then find the next scores
    // waiting).
    __aicore__ inline void CubeSteps(const Share& share, uint32_t splits, uint32_t parts, const TilingData& td)
    {
        Step cur{share.begin, 0, 0, Item(share.begin, splits, parts, meta_)};
        cur.j = cur.it.first;
        if (!NextStep(cur, share, splits, parts, true)) {
            return;
        }
        Scores(cur, 0, td);
        for (uint32_t step = 0;; ++step) {
            Step next = cur;
            const bool more = NextStep(next, share, splits, parts, false);
            const uint32_t lanes = cur.it.rows.Lanes(cur.j);
            const uint32_t nextLanes = more ? next.it.rows.Lanes(next.j) : 0;
            bool ahead = false;
            if (more && cur.at + lanes + nextLanes <= CHUNK) {
                next.at = cur.at + lanes;
                ahead = true;
            } else if (more && nextLanes <= cur.at) {
                next.at = 0;
                ahead = true;
            }
            if (ahead) {
                Together(next, step + 1, cur, step, td);
            } else {
                Values(cur, step);
            }
            if (!more) {
                return;
            }
            if (!ahead) {
                next.at = 0;
                Scores(next, step + 1, td);
            }
            cur = next;
        }
    }

    // `s` at its step, or (`first`) at the first step from it, else at the step after it:
    // the item's next chunk or the first chunk of a later item of the share that has one.
    // False when there is none.
    __aicore__ inline bool NextStep(Step& s, const Share& share, uint32_t splits, uint32_t parts, bool first)
    {
        if (!first) {
            ++s.j;
        }
        while (s.j >= s.it.end) {
            if (++s.item >= share.end) {
                return false;
            }
            s.it = Item(s.item, splits, parts, meta_);
            s.j = s.it.first;
        }
        return true;
    }

    // The (token, HEAD_TILE heads) query tiles of a step, in order: the item's heads of each token.
    __aicore__ inline static uint32_t HeadTiles(const Item& it) { return P::SEQ * ((it.h1 - it.h0) / P::HEAD_TILE); }

    // The first query row of head tile i of the item.
    __aicore__ inline static uint32_t TileRow(const Item& it, uint32_t i)
    {
        const uint32_t perToken = (it.h1 - it.h0) / P::HEAD_TILE;
        return i / perToken * P::HEADS + it.h0 + i % perToken * P::HEAD_TILE;
    }

    // Step `step`'s chunk gathered at its rows and its scores out (slab step % SLABS).
    __aicore__ inline void Scores(const Step& s, uint32_t step, const TilingData& td)
    {
        LoadChunk(s, td);
        for (uint32_t i = 0; i < HeadTiles(s.it); ++i) {
            ScoresTile(s, step, i);
        }
        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(SCORES_READY);
    }

    // Step `step`'s values, once its probabilities are out: its part (a split's first: its o).
    __aicore__ inline void Values(const Step& s, uint32_t step)
    {
        AscendC::CrossCoreWaitFlag(PROBS_READY);
        for (uint32_t i = 0; i < HeadTiles(s.it); ++i) {
            ValuesTile(s, step, i);
        }
        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(PART_READY);
        // The chunk's rows may be overwritten once every load from them has been issued.
        Handshake<AscendC::HardEvent::MTE1_MTE2>();
    }

    // Step `next`'s gather and scores with step `cur`'s values: a quarter of the scores'
    // query tiles while the vector cores turn cur's scores into probabilities, then a values
    // tile and a scores tile in turn, so the query loads (MTE2) run under the parts' stores
    // (FIX) instead of before them (in-order MTE2 would otherwise hold the probabilities'
    // loads behind every query tile). A quarter: FLASH HCA at 512 tokens modeled 132.5 µs
    // with none ahead, 123.8 with a quarter, 129.7 with half, 136.6 with three quarters.
    __aicore__ inline void Together(const Step& next, uint32_t nextStep, const Step& cur, uint32_t step,
                                    const TilingData& td)
    {
        LoadChunk(next, td);
        const uint32_t n = HeadTiles(next.it), c = HeadTiles(cur.it);
        uint32_t i = 0;
        for (; i < n / 4; ++i) {
            ScoresTile(next, nextStep, i);
        }
        AscendC::CrossCoreWaitFlag(PROBS_READY);
        for (uint32_t k = 0; k < c || i < n; ++k) {
            if (k < c) {
                ValuesTile(cur, step, k);
                if (k + 1 == c) {
                    AscendC::CrossCoreSetFlag<2, PIPE_FIX>(PART_READY);
                }
            }
            if (i < n) {
                ScoresTile(next, nextStep, i);
                if (++i == n) {
                    AscendC::CrossCoreSetFlag<2, PIPE_FIX>(SCORES_READY);
                }
            }
        }
        // cur's rows may be overwritten once every load from them has been issued
        Handshake<AscendC::HardEvent::MTE1_MTE2>();
    }

    // Head tile i of step `step`'s scores: q rows · chunkᵀ, KV_TILE lanes at a time.
    __aicore__ inline void ScoresTile(const Step& s, uint32_t step, uint32_t i)
    {
        const Item& it = s.it;
        const uint32_t lanes = it.rows.Lanes(s.j);  // scores and probs rows of this chunk are `lanes` wide
        const uint32_t m0 = TileRow(it, i);
        AscendC::LocalTensor<bfloat16_t> a = LoadRows(q_[(static_cast<uint64_t>(it.b) * ROWS + m0) * HD], HD);
        for (uint32_t n0 = 0; n0 < lanes; n0 += TILE) {
            // k = head dims, B = chunkᵀ from the step's rows (its fractals are already L0B's)
            HeadTileMmad<P::HEAD_TILE, P::D_TILE, CHUNK_BLOCKS, false>(
                aL0_, bL0_, cL0_, a, tile_.Get<bfloat16_t>()[s.at * FRACTAL], HD, n0, Min(TILE, lanes - n0),
                scores_[step % SLABS][m0 * lanes + n0], lanes);
        }
        aTile_.FreeTensor(a);
    }

    // Head tile i of step `step`'s values: probs rows · chunk, into the part (a split's first
    // chunk: its o).
    __aicore__ inline void ValuesTile(const Step& s, uint32_t step, uint32_t i)
    {
        const Item& it = s.it;
        const uint32_t lanes = it.rows.Lanes(s.j);
        const uint32_t m0 = TileRow(it, i);
        const Parts& out = partRows_[step % SLABS];
        const AscendC::GlobalTensor<float> o = SplitO(s.item);
        const bool isO = it.split && s.j == it.first;
        AscendC::LocalTensor<bfloat16_t> a = LoadRows(probs_[step % SLABS][m0 * lanes], lanes);
        for (uint32_t n0 = 0; n0 < HD; n0 += P::D_TILE) {
            // k = chunk lanes, B = chunk (fractals transposed to L0B)
            HeadTileMmadTo<P::HEAD_TILE, TILE, CHUNK_BLOCKS, true>(
                aL0_, bL0_, cL0_, a, tile_.Get<bfloat16_t>()[s.at * FRACTAL], lanes, n0, P::D_TILE,
                [&](const AscendC::LocalTensor<float>& c) {
                    if (isO) {
                        FixpipeColumns<P::HEAD_TILE>(o[m0 * HD + n0], c, 0, P::D_TILE, HD);
                    } else {
                        out.template Write<P::HEAD_TILE>(c, m0, n0, P::D_TILE);
                    }
                });
        }
        aTile_.FreeTensor(a);
    }

    // Step s's chunk j of request b, compressed rows [j*CHUNK, j*CHUNK + lanes), into rows
    // [at, at + lanes) of the NZ chunk buffer [CHUNK, HD], one page run per DMA; rows >= C_max
    // are zero. Every page covering a visible row must be a page of the pool (hca_csa.md
    // §11.5): a violation stops the launch.
    __aicore__ inline void LoadChunk(const Step& s, const TilingData& td)
    {
        const uint32_t b = s.it.b, j = s.j, lanes = s.it.rows.Lanes(j);
        const uint32_t rows = static_cast<uint32_t>(s.it.rows.rows);
        AscendC::LocalTensor<bfloat16_t> u = tile_.Get<bfloat16_t>()[s.at * FRACTAL];
        const uint32_t r0 = j * CHUNK;
        const uint32_t n = Min(CHUNK, rows - r0);
        if (n < lanes) {
            // rows n .. lanes of every column block (CHUNK rows high)
            AscendC::Fill(u[n * FRACTAL],
                          AscendC::InitConstValueParams<bfloat16_t>(HD / FRACTAL, lanes - n, CHUNK - lanes + n,
                                                                    bfloat16_t(0.0f)));
        }
        for (uint32_t k = 0; k < n; k += P::BLOCK_SIZE) {
            const uint32_t logical = (r0 + k) / P::BLOCK_SIZE;
            ascendc_assert(logical < td.cmp_tw,
                           "request %u: compressed row %u needs page %u of a %u-page cmp_block_table row", b, r0 + k,
                           logical, td.cmp_tw);
            const int32_t page = table_.GetValue(static_cast<uint64_t>(b) * td.cmp_tw + logical);
            ascendc_assert(page >= 0 && page < static_cast<int32_t>(td.cmp_nb),
                           "request %u: cmp_block_table[%u, %u] = %d is not a page of the %u-page cmp_kv pool", b,
                           b, logical, page, td.cmp_nb);
            const uint32_t run = Min(P::BLOCK_SIZE, n - k);
            AscendC::DataCopy(u[k * FRACTAL], kv_[static_cast<uint64_t>(page) * P::BLOCK_SIZE * HD],
                              AscendC::Nd2NzParams(1, run, HD, 0, HD, CHUNK, 1, 0));
        }
        Handshake<AscendC::HardEvent::MTE2_MTE1>();
    }

    __aicore__ inline AscendC::LocalTensor<bfloat16_t> LoadRows(const AscendC::GlobalTensor<bfloat16_t>& src,
                                                                uint32_t cols)
    {
        AscendC::LocalTensor<bfloat16_t> a = aTile_.AllocTensor<bfloat16_t>();
        AscendC::DataCopy(a, src, AscendC::Nd2NzParams(1, P::HEAD_TILE, cols, 0, cols, M_PAD, 1, 0));
        aTile_.EnQue(a);
        return aTile_.DeQue<bfloat16_t>();
    }

    // ---- AIV ----

    __aicore__ inline void InitVector()
    {
        pipe_.InitBuffer(scoresQ_, SCORE_BUFFERS, P::SCORES_BYTES);
        pipe_.InitBuffer(probsQ_, SCORE_BUFFERS, P::PROBS_BYTES);
        pipe_.InitBuffer(lane_, P::LANE_BYTES);
        pipe_.InitBuffer(bias_, P::BIAS_BYTES);
        pipe_.InitBuffer(reduceTmp_, P::REDUCE_TMP_BYTES);
        pipe_.InitBuffer(rowStats_, P::ROW_STATS_BYTES);
        pipe_.InitBuffer(runMax_, P::RUN_MAX_BYTES);
        pipe_.InitBuffer(runDenom_, P::RUN_DENOM_BYTES);
        pipe_.InitBuffer(tileMax_, P::TILE_MAX_BYTES);
        pipe_.InitBuffer(tileSum_, P::TILE_SUM_BYTES);
        pipe_.InitBuffer(alpha_, P::ALPHA_BYTES);
        pipe_.InitBuffer(beta_, P::BETA_BYTES);
        pipe_.InitBuffer(oIn_, 2, P::O_IN_BYTES);
        pipe_.InitBuffer(partIn_, 2, P::PART_IN_BYTES);
        pipe_.InitBuffer(oOut_, 2, P::O_OUT_BYTES);
        pipe_.InitBuffer(wide_, P::WIDE_BYTES);
        pipe_.InitBuffer(chunkF32_, P::CHUNK_F32_BYTES);
        pipe_.InitBuffer(spread_, P::SPREAD_BYTES);
        AscendC::LocalTensor<float> lane = lane_.Get<float>();
        for (uint32_t k = 0; k < CHUNK; ++k) {
            lane.SetValue(k, static_cast<float>(k));
        }
        ScalarToVector();
    }

    // A step's merge, deferred until the next step's probabilities are out (the cube then
    // computes that step's part while this one merges): its o rows (a split's slot, else the
    // window's rows of request b), its item's heads, its slab; none for a split's first
    // chunk (its product already is its o).
    // `last`: the item's last step (with PF its heads are finished once it is merged).
    struct Merge {
        bool due = false, skip = false, last = false, split = false;
        uint32_t slab = 0, h0 = 0, h1 = 0, b = 0;
        AscendC::GlobalTensor<float> o;
    };

    // The deferred merge, once the cube's part is there.
    __aicore__ inline void Flush(Merge& m, uint32_t s0)
    {
        if (!m.due) {
            return;
        }
        AscendC::CrossCoreWaitFlag(PART_READY);
        if (!m.skip) {
            MergeStep(m, s0);
        }
        m.due = false;
        if (m.last) {
            Handshake<AscendC::HardEvent::MTE3_MTE2>();  // the merged rows are out
            Finish(m.b, s0, m.h0, m.h1);
        }
    }

    // With PF: heads [h0, h1) of this AIV's tokens of request b, their o and denominators final.
    __aicore__ inline void Finish(uint32_t b, uint32_t s0, uint32_t h0, uint32_t h1)
    {
        if constexpr (FINISH) {
            for (uint32_t s = 0; s < TOKENS; ++s) {
                finish_.Heads(b * P::SEQ + s0 + s, h0, h1);
            }
        } else {
            (void)b, (void)s0, (void)h0, (void)h1;
        }
    }

    __aicore__ inline void VectorItem(uint32_t item, const Item& it, uint32_t s0, Merge& pending)
    {
        const uint64_t stats0 = (static_cast<uint64_t>(it.b) * P::SEQ + s0) * P::HEADS;
        AscendC::LocalTensor<float> m = runMax_.Get<float>();
        AscendC::LocalTensor<float> den = runDenom_.Get<float>();
        if (it.split) {
            AscendC::Duplicate(m, -MASK, STATS);
            AscendC::Duplicate(den, 0.0f, STATS);
        } else if (it.first == it.end) {
            Finish(it.b, s0, it.h0, it.h1);  // no chunk: the window's state stands
            return;
        } else {
            // only the item's heads: another group's item may write the others' denominators
            for (uint32_t r = 0; r < Runs(it); ++r) {
                const uint32_t at = r * P::HEADS + it.h0;
                AscendC::DataCopy(m[at], rowMax_[stats0 + at], RunLen(it));
                AscendC::DataCopy(den[at], denom_[stats0 + at], RunLen(it));
            }
            Handshake<AscendC::HardEvent::MTE2_V>();
        }
        const AscendC::GlobalTensor<float> o = SplitO(item);
        for (uint32_t j = it.first; j < it.end; ++j) {
            const uint32_t lanes = it.rows.Lanes(j);
            const bool first = it.split && j == it.first;  // its product is the split's o, unscaled
            uint32_t valid[TOKENS];
            for (uint32_t s = 0; s < TOKENS; ++s) {
                const int32_t left = it.rows.visible[s0 + s] - static_cast<int32_t>(j * CHUNK);
                valid[s] = left <= 0 ? 0u : Min(lanes, static_cast<uint32_t>(left));
            }
            // (token, VH heads) tiles in order, each one's scores loading under the one before
            const uint32_t slab = step_ % SLABS;
            const uint32_t pieces = (it.h1 - it.h0) / VH;
            const auto load = [&](uint32_t k) {
                if (valid[k / pieces] > 0) {
                    LoadScores(slab, s0 + k / pieces, it.h0 + k % pieces * VH, lanes);
                }
            };
            AscendC::CrossCoreWaitFlag(SCORES_READY);
            constexpr uint32_t AHEAD = SCORE_BUFFERS - 1;  // tiles loaded before the one worked on
            for (uint32_t k = 0; k < AHEAD; ++k) {
                load(k);
            }
            for (uint32_t k = 0; k < TOKENS * pieces; ++k) {
                const uint32_t s = k / pieces;
                if (k % pieces == 0) {
                    Bias(valid[s], lanes);
                }
                if (k + AHEAD < TOKENS * pieces) {
                    load(k + AHEAD);
                }
                Softmax(slab, s0 + s, s, it.h0 + k % pieces * VH, valid[s], lanes, !first);
            }
            Rescale(it, m, den, slab);
            AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(PROBS_READY);
            Flush(pending, s0);
            pending.due = true;
            pending.skip = first;
            pending.slab = slab;
            pending.h0 = it.h0;
            pending.h1 = it.h1;
            pending.b = it.b;
            pending.last = FINISH && j + 1 == it.end;
            pending.split = it.split;
            pending.o = o;
            ++step_;
        }
        Handshake<AscendC::HardEvent::V_MTE3>();
        if (it.split) {
            const uint64_t row = static_cast<uint64_t>(s0) * P::HEADS;
            AscendC::DataCopy(stats_[Slots::SplitMax(item) + row], m, STATS);
            AscendC::DataCopy(stats_[Slots::SplitDenom(item) + row], den, STATS);
        } else {
            for (uint32_t r = 0; r < Runs(it); ++r) {
                const uint32_t at = r * P::HEADS + it.h0;
                AscendC::DataCopy(denom_[stats0 + at], den[at], RunLen(it));
            }
        }
        // The next item's statistics may overwrite these once they have left.
        Handshake<AscendC::HardEvent::MTE3_MTE2>();
    }

    // The item's per-head values of the AIV's tokens ([token][head] from its heads' first) as
    // runs: one run of STATS with all heads, else one of its heads per token.
    __aicore__ inline static uint32_t Runs(const Item& it) { return it.h1 - it.h0 == P::HEADS ? 1 : TOKENS; }
    __aicore__ inline static uint32_t RunLen(const Item& it) { return it.h1 - it.h0 == P::HEADS ? STATS : it.h1 - it.h0; }

    // The chunk's statistics into the running ones, for the item's heads; its merge scales
    // into `slab`.
    __aicore__ inline void Rescale(const Item& it, const AscendC::LocalTensor<float>& m,
                                   const AscendC::LocalTensor<float>& den, uint32_t slab)
    {
        for (uint32_t r = 0; r < Runs(it); ++r) {
            const uint32_t at = r * P::HEADS + it.h0;
            OnlineRescale(m[at], den[at], tileMax_.Get<float>()[at], tileSum_.Get<float>()[at],
                          alpha_.Get<float>()[slab * STATS + at], beta_.Get<float>()[slab * STATS + at], RunLen(it));
        }
    }

    // bias[lane] = 0 for lane < valid, else -1e20: (clamp(valid - lane, 0, 1) - 1) * 1e20.
    __aicore__ inline void Bias(uint32_t valid, uint32_t lanes)
    {
        AscendC::LocalTensor<float> bias = bias_.Get<float>();
        AscendC::Muls(bias, lane_.Get<float>(), -1.0f, lanes);
        AscendC::Adds(bias, bias, static_cast<float>(valid), lanes);
        AscendC::Maxs(bias, bias, 0.0f, lanes);
        AscendC::Mins(bias, bias, 1.0f, lanes);
        AscendC::Adds(bias, bias, -1.0f, lanes);
        AscendC::Muls(bias, bias, MASK, lanes);
    }

    // Where the scores and probabilities of VH heads from h0 of token `token` are: the group's
    // slab holds this chunk's rows `lanes` apart.
    __aicore__ inline static uint64_t SlabAt(uint32_t token, uint32_t h0, uint32_t lanes)
    {
        return (static_cast<uint64_t>(token) * P::HEADS + h0) * lanes;
    }

    __aicore__ inline void LoadScores(uint32_t slab, uint32_t token, uint32_t h0, uint32_t lanes)
    {
        AscendC::LocalTensor<float> z = scoresQ_.AllocTensor<float>();
        AscendC::DataCopy(z, scores_[slab][SlabAt(token, h0, lanes)], VH * lanes);
        scoresQ_.EnQue(z);
    }

    // VH heads from h0 of the item's token `token` (local index s) over the chunk's lanes,
    // their scores loaded (LoadScores) where valid > 0: tile max and sum into the statistics,
    // bf16 probabilities out, `scaled` by 2^-O_SHIFT where a part follows. A token without a
    // row in the tile gets zero probabilities and (m_i, l_i) = (-1e20, 0), which merges as a
    // no-op.
    __aicore__ inline void Softmax(uint32_t slab, uint32_t token, uint32_t s, uint32_t h0, uint32_t valid,
                                   uint32_t lanes, bool scaled)
    {
        const uint64_t at = SlabAt(token, h0, lanes);
        const uint32_t len = VH * lanes;
        AscendC::LocalTensor<float> tileMax = tileMax_.Get<float>();
        AscendC::LocalTensor<float> tileSum = tileSum_.Get<float>();
        AscendC::LocalTensor<bfloat16_t> p = probsQ_.AllocTensor<bfloat16_t>();
        if (valid == 0) {
            AscendC::Duplicate(p, bfloat16_t(0.0f), len);
            VectorToScalar();
            for (uint32_t h = 0; h < VH; ++h) {
                tileMax.SetValue(s * P::HEADS + h0 + h, -MASK);
                tileSum.SetValue(s * P::HEADS + h0 + h, 0.0f);
            }
        } else {
            AscendC::LocalTensor<float> z = scoresQ_.DeQue<float>();
            ExpRows<VH>(z, bias_.Get<float>(), P::SCALE, lanes, reduceTmp_.Get<float>(), rowStats_.Get<float>(),
                        tileMax, tileSum, s * P::HEADS + h0);
            if (scaled) {
                AscendC::Muls(z, z, 1.0f / static_cast<float>(1u << P::O_SHIFT), len);
            }
            AscendC::Cast(p, z, AscendC::RoundMode::CAST_RINT, len);
            scoresQ_.FreeTensor(z);
        }
        probsQ_.EnQue(p);
        p = probsQ_.DeQue<bfloat16_t>();
        AscendC::DataCopy(probs_[slab][at], p, len);
        probsQ_.FreeTensor(p);
    }

    // o = alpha * o + beta * part for the step's heads of the AIV's tokens, VH head rows at a
    // time (the next rows load while these are merged and stored): the part widened, times
    // the head's beta (times 2^O_SHIFT into a split's unscaled o), a head per repeat. The
    // window's rows widen (times alpha) a repeat of columns at a time into the sum, which
    // narrows back into their layout; a split's f32 rows are scaled by alpha and added.
    __aicore__ inline void MergeStep(const Merge& m, uint32_t s0)
    {
        const uint32_t units = TOKENS * (m.h1 - m.h0) / VH;
        LoadMergeRows(m, s0, 0);
        for (uint32_t u = 0; u < units; ++u) {
            if (u + 1 < units) {
                LoadMergeRows(m, s0, u + 1);
            }
            const uint64_t row = RowOf(m, s0, u);
            const uint32_t i = static_cast<uint32_t>(row) - s0 * P::HEADS;  // statistics index
            AscendC::LocalTensor<half> part = partIn_.DeQue<half>();
            AscendC::LocalTensor<float> spread = spread_.Get<float>();
            AscendC::LocalTensor<float> alpha = alpha_.Get<float>()[m.slab * STATS + i];
            AscendC::Brcb(spread, beta_.Get<float>()[m.slab * STATS + i], 1, AscendC::BrcbRepeatParams(1, 8));
            if (m.split) {
                AscendC::Muls(spread, spread, static_cast<float>(1u << P::O_SHIFT), VH * SLOT);
                AscendC::LocalTensor<float> out = oOut_.AllocTensor<float>();
                Parts::Widen(out, part, spread, VH, 0, HD, HD_BLOCKS);
                partIn_.FreeTensor(part);
                AscendC::LocalTensor<float> oIn = oIn_.DeQue<float>();
                for (uint32_t h = 0; h < VH; ++h) {
                    AscendC::Muls(oIn[h * HD], oIn[h * HD], alpha.GetValue(h), HD);
                }
                AscendC::Add(out, out, oIn, VH * HD);
                oIn_.FreeTensor(oIn);
                oOut_.EnQue(out);
                out = oOut_.DeQue<float>();
                AscendC::DataCopy(m.o[row * HD], out, VH * HD);
                oOut_.FreeTensor(out);
                continue;
            }
            AscendC::LocalTensor<float> sum = wide_.Get<float>();
            Parts::Widen(sum, part, spread, VH, 0, HD, HD_BLOCKS);
            partIn_.FreeTensor(part);
            AscendC::Brcb(spread, alpha, 1, AscendC::BrcbRepeatParams(1, 8));
            AscendC::LocalTensor<half> oIn = oIn_.DeQue<half>();
            Parts::AddWidened(sum, oIn, spread, VH, HD_BLOCKS, chunkF32_.Get<float>());
            oIn_.FreeTensor(oIn);
            AscendC::LocalTensor<half> out = oOut_.AllocTensor<half>();
            Parts::Narrow(out, sum, VH, HD_BLOCKS);
            oOut_.EnQue(out);
            out = oOut_.DeQue<half>();
            AscendC::DataCopy(oRows_.From(static_cast<uint64_t>(m.b) * ROWS + row), out, VH * Parts::HALVES);
            oOut_.FreeTensor(out);
        }
        // The next merge's loads of these rows wait for their stores.
        Handshake<AscendC::HardEvent::MTE3_MTE2>();
    }

    // Request row (token * HEADS + head) of merge unit u: the AIV's token s0 + u / pieces,
    // heads from h0 + (u % pieces) * VH.
    __aicore__ inline static uint64_t RowOf(const Merge& m, uint32_t s0, uint32_t u)
    {
        const uint32_t pieces = (m.h1 - m.h0) / VH;
        return static_cast<uint64_t>(s0 + u / pieces) * P::HEADS + m.h0 + u % pieces * VH;
    }

    // Unit u's rows of o (a split's f32, else the window's as the cube left them) and of the
    // step's part.
    __aicore__ inline void LoadMergeRows(const Merge& m, uint32_t s0, uint32_t u)
    {
        const uint64_t row = RowOf(m, s0, u);
        if (m.split) {
            AscendC::LocalTensor<float> oIn = oIn_.AllocTensor<float>();
            AscendC::DataCopy(oIn, m.o[row * HD], VH * HD);
            oIn_.EnQue(oIn);
        } else {
            AscendC::LocalTensor<half> oIn = oIn_.AllocTensor<half>();
            AscendC::DataCopy(oIn, oRows_.From(static_cast<uint64_t>(m.b) * ROWS + row), VH * Parts::HALVES);
            oIn_.EnQue(oIn);
        }
        AscendC::LocalTensor<half> part = partIn_.AllocTensor<half>();
        AscendC::DataCopy(part, partRows_[m.slab].From(row), VH * Parts::HALVES);
        partIn_.EnQue(part);
    }

    AscendC::TPipe pipe_;
    typename FinisherOf<PF>::Type finish_;
    // AIC
    AscendC::TBuf<AscendC::TPosition::B1> tile_;
    AscendC::TQue<AscendC::TPosition::A1, 1> aTile_;
    AscendC::TQue<AscendC::TPosition::A2, 1> aL0_;
    AscendC::TQue<AscendC::TPosition::B2, 1> bL0_;
    AscendC::TQue<AscendC::TPosition::CO1, 1> cL0_;
    // AIV
    AscendC::TQue<AscendC::TPosition::VECIN, 2> scoresQ_;  // SCORE_BUFFERS slots
    AscendC::TQue<AscendC::TPosition::VECOUT, 2> probsQ_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> lane_, bias_, reduceTmp_, rowStats_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> runMax_, runDenom_, tileMax_, tileSum_, alpha_, beta_, spread_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> wide_, chunkF32_;  // a merge's f32 rows, a repeat of them
    AscendC::TQue<AscendC::TPosition::VECIN, 2> oIn_, partIn_;  // this unit's rows and the next's
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> oOut_;
    AscendC::GlobalTensor<bfloat16_t> q_, kv_, probs_[SLABS];
    AscendC::GlobalTensor<int32_t> table_;
    RequestMeta meta_;
    AscendC::GlobalTensor<float> rowMax_, scores_[SLABS], slots_, stats_, denom_;
    Parts oRows_;            // the window's o, as its cube left it
    Parts partRows_[SLABS];  // the group's parts, a slab's each
    uint32_t step_ = 0;  // AIV: (item, chunk) steps so far: the slabs of the next
};

}  // namespace dsv4
