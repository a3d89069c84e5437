// Cube side of the window attention (swa.md §3.6 steps 2 and 4). A work item is a range of
// a request's HEAD_TILE-row query tiles (`UnitParts`: a request's tiles go to several blocks
// when there are fewer requests than blocks; a tile's product is the same wherever it runs).
// Per item a block gathers the union of the request's window rows (WindowUnion) into L1
// once, row runs of consecutive pool rows per DMA, rows past the union set to zero; that one
// L1 copy is K for the scores and V for the values (K = V = the cache row). Query-side rows
// stream through L1 in HEAD_TILE-row tiles, each read once.
//   scores [SEQ*HEADS, UNION_ROWS] = q_request · unionᵀ       (AttentionScores)
//   o      [SEQ*HEADS, HEAD_DIM]   = probs_request · union     (AttentionValues)
// Each is the product for all SEQ*HEADS query rows of the request against all union rows;
// the softmax kernel masks each token's lanes. Both kernels allocate the same buffers.
// With UNION_BUFFERS 2 (the fused launch, where L1 holds two) the next item's union
// gathers into the other buffer while this item's tiles run (BeginUnion, FillUnion a run
// at a time, UseUnion), so the cube does not wait for it at the item boundary.
#pragma once

#include "dsv4/attention_window.h"
#include "dsv4/head_tile_mmad.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// P: HEADS, HEAD_DIM, WINDOW, SEQ, BLOCK_SIZE, UNION_ROWS (union entries rounded up to
// 16), HEAD_TILE (query rows per cube tile), KV_TILE (union rows per tile), D_TILE
// (head-dim columns per tile), UNION_BUFFERS (1 or 2), O_HALF_COLS (OutRows; the values
// product's only), and the L1 and L0 sizes the plan decided (`*_BYTES`, each at least what
// its use below needs).
template <class P>
class AttentionCube {
public:
    static constexpr uint32_t FRACTAL = 16;                // rows and bf16 columns of a fractal
    static constexpr uint32_t ROWS = P::SEQ * P::HEADS;    // query rows of a request
    static constexpr uint32_t TILES = ROWS / P::HEAD_TILE;  // query tiles of a request
    static constexpr uint32_t M_PAD = AlignUp(P::HEAD_TILE, FRACTAL);
    static constexpr uint32_t UNION_BLOCKS = P::UNION_ROWS / FRACTAL;
    static constexpr uint32_t A_COLS = P::HEAD_DIM > P::UNION_ROWS ? P::HEAD_DIM : P::UNION_ROWS;
    static constexpr uint32_t L0_K = P::D_TILE > P::KV_TILE ? P::D_TILE : P::KV_TILE;
    static_assert(P::UNION_ROWS % FRACTAL == 0 && P::UNION_ROWS >= P::WINDOW + P::SEQ - 1,
                  "UNION_ROWS holds the union in whole fractals");
    static_assert(P::HEAD_DIM % P::D_TILE == 0 && P::D_TILE % FRACTAL == 0, "D_TILE: whole fractals dividing HEAD_DIM");
    static_assert(P::KV_TILE % FRACTAL == 0, "KV_TILE: whole fractals");
    static_assert(P::HEADS % P::HEAD_TILE == 0, "HEAD_TILE divides HEADS");
    static_assert(P::HEAD_DIM <= 65535 && P::UNION_ROWS <= 16384 && M_PAD <= 16384,
                  "ND2NZ: a 16-bit source row, at most 16384 rows and NZ row stride");
    static constexpr uint32_t UNIONS = P::UNION_BUFFERS;
    static constexpr uint32_t UNION_ELEMS = P::UNION_ROWS * P::HEAD_DIM;
    static_assert(UNIONS == 1 || UNIONS == 2, "one union, or this item's and the next's");
    static_assert(P::UNION_BYTES >= UNIONS * UNION_ELEMS * sizeof(bfloat16_t), "union holds the union rows");
    static_assert(P::A_TILE_BYTES >= M_PAD * A_COLS * sizeof(bfloat16_t), "a_tile holds a tile of q or probs rows");
    static_assert(P::A_L0_BYTES >= M_PAD * L0_K * sizeof(bfloat16_t) &&
                      P::B_L0_BYTES >= P::D_TILE * P::KV_TILE * sizeof(bfloat16_t) &&
                      P::C_L0_BYTES >= M_PAD * L0_K * sizeof(float),
                  "L0 tiles of HeadTileMmad");

    __aicore__ inline void Init(GM_ADDR kvCache, GM_ADDR swaIndices, GM_ADDR swaLens, uint32_t tokens)
    {
        kv_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(kvCache));
        indices_.Init(swaIndices, static_cast<uint64_t>(tokens) * P::WINDOW);
        lens_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(swaLens));
        pipe_.InitBuffer(union_, P::UNION_BYTES);
        pipe_.InitBuffer(aTile_, 2, P::A_TILE_BYTES);
        pipe_.InitBuffer(aL0_, 2, P::A_L0_BYTES);
        pipe_.InitBuffer(bL0_, 2, P::B_L0_BYTES);
        pipe_.InitBuffer(cL0_, HEAD_TILE_C_BUFFERS, P::C_L0_BYTES);
    }

    // Gathers request b's union rows into L1: each union row r lands in row r of the NZ
    // matrix [UNION_ROWS, HEAD_DIM] (16-column blocks of UNION_ROWS rows).
    __aicore__ inline void LoadUnion(uint32_t b, uint32_t poolBlocks)
    {
        BeginUnion(b, poolBlocks);
        UseUnion();
    }

    // Starts gathering request b's union into the next buffer: its rows read and checked,
    // the rows past it zeroed (they take part in whole fractals, so 0 x garbage cannot
    // occur); its row runs go out with FillUnion and UseUnion.
    __aicore__ inline void BeginUnion(uint32_t b, uint32_t poolBlocks)
    {
        fill_ = (fill_ + 1) % UNIONS;
        WindowUnion<P>::AskRows(indices_, b);
        next_.ReadLens(lens_, b);
        next_.ReadRows(indices_, b, poolBlocks);
        AscendC::Fill(Union(fill_)[next_.count * FRACTAL],
                      AscendC::InitConstValueParams<bfloat16_t>(P::HEAD_DIM / FRACTAL, P::UNION_ROWS - next_.count,
                                                                next_.count, bfloat16_t(0.0f)));
        at_ = 0;
    }

    // Issues up to `runs` more row runs of the union BeginUnion started.
    __aicore__ inline void FillUnion(uint32_t runs)
    {
        for (; runs > 0 && at_ < next_.count; --runs) {
            const uint32_t run = next_.RunAt(at_);
            AscendC::DataCopy(Union(fill_)[at_ * FRACTAL], kv_[static_cast<uint64_t>(next_.rows[at_]) * P::HEAD_DIM],
                              AscendC::Nd2NzParams(1, run, P::HEAD_DIM, 0, P::HEAD_DIM, P::UNION_ROWS, 1, 0));
            at_ += run;
        }
    }

    // The union BeginUnion started, all its runs issued, becomes the tiles' B operand.
    __aicore__ inline void UseUnion()
    {
        FillUnion(P::UNION_ROWS);
        Handshake<AscendC::HardEvent::MTE2_MTE1>();
        use_ = fill_;
    }

    // The union may be overwritten once every load from it has been issued.
    __aicore__ inline void ReleaseUnion()
    {
        Handshake<AscendC::HardEvent::MTE1_MTE2>();
    }

    // HEAD_TILE rows of a row-major bf16 matrix with `cols` columns (from `src`) into an
    // NZ tile of M_PAD-row column blocks.
    __aicore__ inline AscendC::LocalTensor<bfloat16_t> LoadRows(const AscendC::GlobalTensor<bfloat16_t>& src,
                                                                uint32_t cols)
    {
        AscendC::LocalTensor<bfloat16_t> a = aTile_.AllocTensor<bfloat16_t>();
        AscendC::DataCopy(a, src, AscendC::Nd2NzParams(1, P::HEAD_TILE, cols, 0, cols, M_PAD, 1, 0));
        aTile_.EnQue(a);
        return aTile_.DeQue<bfloat16_t>();
    }

    __aicore__ inline void FreeRows(AscendC::LocalTensor<bfloat16_t>& a) { aTile_.FreeTensor(a); }

    // scores rows [row, row + HEAD_TILE) of the request's query rows = q rows · unionᵀ.
    __aicore__ inline void ScoresTile(const AscendC::GlobalTensor<bfloat16_t>& q,
                                      const AscendC::GlobalTensor<float>& scores, uint64_t row)
    {
        AscendC::LocalTensor<bfloat16_t> a = LoadRows(q[row * P::HEAD_DIM], P::HEAD_DIM);
        // k = head dims in D_TILE chunks, n = union rows in KV_TILE tiles, B = unionᵀ (its
        // fractals are already L0B's)
        for (uint32_t n0 = 0; n0 < P::UNION_ROWS; n0 += P::KV_TILE) {
            HeadTileMmad<P::HEAD_TILE, P::D_TILE, UNION_BLOCKS, false>(
                aL0_, bL0_, cL0_, a, Union(use_), P::HEAD_DIM, n0, Min(P::KV_TILE, P::UNION_ROWS - n0),
                scores[row * P::UNION_ROWS + n0], P::UNION_ROWS);
        }
        FreeRows(a);
    }

    // o rows [row, row + HEAD_TILE) = probs rows · union: k = union rows in KV_TILE chunks,
    // n = head dims in D_TILE tiles, B = union (fractals transposed on the way to L0B).
    __aicore__ inline void ValuesTile(const AscendC::GlobalTensor<bfloat16_t>& probs, const OutRows<P>& o,
                                      uint64_t row)
    {
        constexpr uint32_t K = P::UNION_ROWS;
        AscendC::LocalTensor<bfloat16_t> a = LoadRows(probs[row * P::UNION_ROWS], P::UNION_ROWS);
        for (uint32_t n0 = 0; n0 < P::HEAD_DIM; n0 += P::D_TILE) {
            HeadTileMmadTo<P::HEAD_TILE, P::KV_TILE, UNION_BLOCKS, true>(
                aL0_, bL0_, cL0_, a, Union(use_), K, n0, P::D_TILE,
                [&](const AscendC::LocalTensor<float>& c) { o.template Write<P::HEAD_TILE>(c, row, n0, P::D_TILE); });
        }
        FreeRows(a);
    }

private:
    __aicore__ inline AscendC::LocalTensor<bfloat16_t> Union(uint32_t i) { return union_.Get<bfloat16_t>()[i * UNION_ELEMS]; }

    AscendC::TPipe pipe_;
    AscendC::TBuf<AscendC::TPosition::B1> union_;
    WindowUnion<P> next_;  // the union being gathered
    uint32_t at_ = 0;      // its first union entry not yet issued
    uint32_t fill_ = UNIONS - 1, use_ = 0;
    AscendC::TQue<AscendC::TPosition::A1, 1> aTile_;
    AscendC::TQue<AscendC::TPosition::A2, 1> aL0_;
    AscendC::TQue<AscendC::TPosition::B2, 1> bL0_;
    AscendC::TQue<AscendC::TPosition::CO1, 1> cL0_;
    AscendC::GlobalTensor<bfloat16_t> kv_;
    ScalarStream<int32_t> indices_;
    AscendC::GlobalTensor<int32_t> lens_;
};

// scores = q · unionᵀ per request, unscaled f32 (the softmax kernel scales and masks).
// GM: q [t, HEADS, HEAD_DIM] bf16, kv_cache, swa_indices, swa_lens, scores [t, HEADS, UNION_ROWS] f32.
template <class P>
class AttentionScores {
public:
    __aicore__ inline static void Run(GM_ADDR q, GM_ADDR kvCache, GM_ADDR swaIndices, GM_ADDR swaLens,
                                      GM_ADDR scores, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        using Cube = AttentionCube<P>;
        AscendC::GlobalTensor<bfloat16_t> qG;
        AscendC::GlobalTensor<float> scoresG;
        qG.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(q));
        scoresG.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(scores));
        Cube cube;
        cube.Init(kvCache, swaIndices, swaLens, td.t);
        for (UnitParts it(td.b, Cube::TILES); it.Next();) {
            const Share tiles = it.Range(Cube::TILES);
            cube.LoadUnion(it.unit, td.nb);
            for (uint32_t m0 = tiles.begin * P::HEAD_TILE; m0 < tiles.end * P::HEAD_TILE; m0 += P::HEAD_TILE) {
                cube.ScoresTile(qG, scoresG, static_cast<uint64_t>(it.unit) * Cube::ROWS + m0);
            }
            cube.ReleaseUnion();
        }
    }
};

// o = probs · union per request (OutRows; the finish kernel divides by the denominator).
// GM: probs [t, HEADS, UNION_ROWS] bf16, kv_cache, swa_indices, swa_lens, o.
template <class P>
class AttentionValues {
public:
    __aicore__ inline static void Run(GM_ADDR probs, GM_ADDR kvCache, GM_ADDR swaIndices, GM_ADDR swaLens, GM_ADDR o,
                                      GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        using Cube = AttentionCube<P>;
        AscendC::GlobalTensor<bfloat16_t> probsG;
        OutRows<P> oG;
        probsG.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(probs));
        oG.Init(o);
        Cube cube;
        cube.Init(kvCache, swaIndices, swaLens, td.t);
        for (UnitParts it(td.b, Cube::TILES); it.Next();) {
            const Share tiles = it.Range(Cube::TILES);
            cube.LoadUnion(it.unit, td.nb);
            for (uint32_t m0 = tiles.begin * P::HEAD_TILE; m0 < tiles.end * P::HEAD_TILE; m0 += P::HEAD_TILE) {
                cube.ValuesTile(probsG, oG, static_cast<uint64_t>(it.unit) * Cube::ROWS + m0);
            }
            cube.ReleaseUnion();
        }
    }
};

}  // namespace dsv4
