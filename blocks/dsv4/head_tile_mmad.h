// One head tile's product on the cube, and the rows a values product leaves in GM: the
// attention kernels' cube side.
#pragma once

#include "kernel_operator.h"
#include "dsv4/pipe_sync.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// C tiles in L0C for HeadTileMmad's callers (their cL0 queue): the cube's products run up to
// four Fixpipes ahead, so a later product's loads and Mmads overlap a tile's f32 writes.
constexpr uint32_t HEAD_TILE_C_BUFFERS = 4;

// Columns [col0, col0 + cols) (col0 a multiple of 16) of a HEAD_TILE-row C tile in L0C to
// dst (row stride dstStride): float, or half (Fixpipe F322F16, rounding to nearest even,
// saturating).
template <uint32_t HEAD_TILE, class Dst>
__aicore__ inline void FixpipeColumns(const AscendC::GlobalTensor<Dst>& dst, const AscendC::LocalTensor<float>& c,
                                      uint32_t col0, uint32_t cols, uint32_t dstStride)
{
    static_assert(AscendC::IsSameType<Dst, float>::value || AscendC::IsSameType<Dst, half>::value, "f32 or half C");
    constexpr uint32_t M_PAD = AlignUp(HEAD_TILE, 16);
    AscendC::FixpipeParamsV220 fp(cols, HEAD_TILE, M_PAD, dstStride, false);
    if constexpr (AscendC::IsSameType<Dst, half>::value) {
        fp.quantPre = QuantMode_t::F322F16;
    }
    AscendC::Fixpipe(dst, c[col0 / 16 * M_PAD * 16], fp);
}

// Rows of HEAD_DIM columns as a values product (o, or a part of it) leaves them in GM, with
// P::O_HALF_COLS of a row's columns in half: each row holds its first O_HALF_COLS columns in
// half, then the others in f32 (O_HALF_COLS 0: f32 rows). Half halves the Fixpipe's bytes,
// the launch's largest write, where the product is scaled into its range (the probabilities
// by 2^-O_SHIFT: attention_softmax.h); the columns a later rotation mixes
// (attention_finish.h) stay f32, as cancellation there would show half's rounding.
template <class P>
struct OutRows {
    static constexpr uint32_t HALVES = P::O_HALF_COLS + 2 * (P::HEAD_DIM - P::O_HALF_COLS);  // a row in halves
    static constexpr uint32_t FLOATS = HALVES / 2;                                             // a row in floats
    static constexpr uint32_t BLOCKS = BlocksOf<half>(HALVES);                                 // a row in blocks
    // Probabilities scaled by 2^-O_SHIFT keep a product over at most `lanes` of them (each at
    // most 1) within max |v|, so in half's range.
    __aicore__ static constexpr inline bool Fits(uint32_t lanes)
    {
        return P::O_SHIFT <= 15 && (uint32_t(1) << P::O_SHIFT) >= lanes;
    }
    AscendC::GlobalTensor<half> lead;   // the row's first O_HALF_COLS columns, from each row's start
    AscendC::GlobalTensor<float> rest;  // the others, from column O_HALF_COLS of row 0

    __aicore__ inline void Init(GM_ADDR o)
    {
        lead.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(o));
        rest.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(o + P::O_HALF_COLS * sizeof(half)));
    }

    // Rows from `row` as they are kept, for the vector side to load or store whole (halves,
    // HALVES a row).
    __aicore__ inline AscendC::GlobalTensor<half> From(uint64_t row) const { return lead[row * HALVES]; }

    // On the vector side, rows loaded as they are (`src`, halves, BLOCKS apart): dst's f32 rows
    // (dstRow blocks apart) = their columns [c0, c0 + cols) in f32, each row times its
    // factor in `spread` (a block per row), a row per repeat.
    __aicore__ static inline void Widen(const AscendC::LocalTensor<float>& dst, const AscendC::LocalTensor<half>& src,
                                        const AscendC::LocalTensor<float>& spread, uint32_t rows, uint32_t c0,
                                        uint32_t cols, uint32_t dstRow)
    {
        const uint32_t halves = c0 < P::O_HALF_COLS ? Min(P::O_HALF_COLS - c0, cols) : 0;
        if (halves > 0) {
            WidenRows(dst, src[c0], rows, halves, dstRow, BLOCKS);
            MulRows(dst, dst, spread, rows, halves, dstRow, dstRow);
        }
        if (halves < cols) {
            // the f32 columns start at half O_HALF_COLS of a row
            const uint32_t at = P::O_HALF_COLS / 2 + (c0 + halves - P::O_HALF_COLS);
            MulRows(dst[halves], src.template ReinterpretCast<float>()[at], spread, rows, cols - halves, dstRow,
                    BLOCKS);
        }
    }

    // dst's f32 rows (dstRow blocks apart) += the rows `src` (as loaded) widened, each times
    // its factor in `spread`, a repeat of columns at a time through `chunk` (rows x F32_REPEAT
    // f32): the merge of a part (or of o) into f32 rows.
    __aicore__ static inline void AddWidened(const AscendC::LocalTensor<float>& dst,
                                             const AscendC::LocalTensor<half>& src,
                                             const AscendC::LocalTensor<float>& spread, uint32_t rows, uint32_t dstRow,
                                             const AscendC::LocalTensor<float>& chunk)
    {
        constexpr uint32_t CHUNK_BLOCKS = BlocksOf<float>(F32_REPEAT);
        for (uint32_t c = 0; c < P::HEAD_DIM; c += F32_REPEAT) {
            const uint32_t n = Min(F32_REPEAT, P::HEAD_DIM - c);
            Widen(chunk, src, spread, rows, c, n, CHUNK_BLOCKS);
            AscendC::Add(dst[c], dst[c], chunk, n, rows,
                         AscendC::BinaryRepeatParams(1, 1, 1, dstRow, dstRow, CHUNK_BLOCKS));
        }
    }

    // Widen's whole rows with no factor: dst's f32 rows (dstRow blocks apart) = src's.
    __aicore__ static inline void Widen(const AscendC::LocalTensor<float>& dst, const AscendC::LocalTensor<half>& src,
                                        uint32_t rows, uint32_t dstRow)
    {
        WidenRows(dst, src, rows, P::O_HALF_COLS, dstRow, BLOCKS);
        CopyRows(dst[P::O_HALF_COLS], src.template ReinterpretCast<float>()[P::O_HALF_COLS / 2], rows,
                 P::HEAD_DIM - P::O_HALF_COLS, dstRow, BLOCKS);
    }

    // The reverse of Widen (HEAD_DIM columns, no factor): f32 rows `src` (srcRow blocks
    // apart) as rows are kept (`dst`, halves, BLOCKS apart), the half columns rounded to
    // nearest, a row per repeat.
    __aicore__ static inline void Narrow(const AscendC::LocalTensor<half>& dst, const AscendC::LocalTensor<float>& src,
                                         uint32_t rows, uint32_t srcRow)
    {
        NarrowRows(dst, src, rows, P::O_HALF_COLS, BLOCKS, srcRow);
        CopyRows(dst.template ReinterpretCast<float>()[P::O_HALF_COLS / 2], src[P::O_HALF_COLS], rows,
                 P::HEAD_DIM - P::O_HALF_COLS, BLOCKS, srcRow);
    }

    // C's `cols` columns (a tile's, from column n0) of HEAD_TILE rows from `row` out of L0C:
    // those before O_HALF_COLS in half, the others in f32.
    template <uint32_t HEAD_TILE>
    __aicore__ inline void Write(const AscendC::LocalTensor<float>& c, uint64_t row, uint32_t n0, uint32_t cols) const
    {
        static_assert(P::O_HALF_COLS % 16 == 0 && P::O_HALF_COLS <= P::HEAD_DIM, "half columns: whole fractals");
        const uint32_t halves = n0 < P::O_HALF_COLS ? Min(P::O_HALF_COLS - n0, cols) : 0;
        if (halves > 0) {
            FixpipeColumns<HEAD_TILE>(lead[row * HALVES + n0], c, 0, halves, HALVES);
        }
        if (halves < cols) {
            FixpipeColumns<HEAD_TILE>(rest[row * FLOATS + n0 + halves - P::O_HALF_COLS], c, halves, cols - halves,
                                      FLOATS);
        }
    }
};

// C[HEAD_TILE, nLen] = a · B[:, n0 : n0 + nLen], summed over k (a multiple of 16) in K_CHUNK
// chunks through L0A/L0B and one L0C tile, then `write(c)` takes C out of L0C (its
// Fixpipes). `a` is the head tile in L1 (NZ, its fractals column-major); `rows` holds the KV
// rows in L1 with ROW_BLOCKS row fractals per column block. Scores (VALUES false): k = head
// dims, B = rowsᵀ (its fractals are already L0B's). Values (VALUES true): k = rows, B = rows
// (fractals transposed on the way to L0B).
template <uint32_t HEAD_TILE, uint32_t K_CHUNK, uint32_t ROW_BLOCKS, bool VALUES, class QueA, class QueB, class QueC,
          class Write>
__aicore__ inline void HeadTileMmadTo(QueA& aL0, QueB& bL0, QueC& cL0, const AscendC::LocalTensor<bfloat16_t>& a,
                                      const AscendC::LocalTensor<bfloat16_t>& rows, uint32_t k, uint32_t n0,
                                      uint32_t nLen, const Write& write)
{
    constexpr uint32_t FRACTAL = 16;
    constexpr uint32_t FRACTAL_ELEMS = FRACTAL * FRACTAL;
    constexpr uint32_t M_PAD = AlignUp(HEAD_TILE, FRACTAL);
    constexpr uint32_t M_BLOCKS = M_PAD / FRACTAL;
    const uint32_t nb0 = n0 / FRACTAL, nBlocks = CeilDiv(nLen, FRACTAL);
    AscendC::LocalTensor<float> c = cL0.template AllocTensor<float>();
    for (uint32_t k0 = 0; k0 < k; k0 += K_CHUNK) {
        const uint32_t kLen = Min(K_CHUNK, k - k0);
        const uint32_t kb0 = k0 / FRACTAL, kBlocks = kLen / FRACTAL;
        AscendC::LocalTensor<bfloat16_t> a2 = aL0.template AllocTensor<bfloat16_t>();
        AscendC::LocalTensor<bfloat16_t> b2 = bL0.template AllocTensor<bfloat16_t>();
        // L0A: fractals (m block, k block) row-major; the L1 tile holds them column-major.
        for (uint32_t mb = 0; mb < M_BLOCKS; ++mb) {
            AscendC::LoadData(a2[mb * kBlocks * FRACTAL_ELEMS], a,
                              AscendC::LoadData2DParams(kb0 * M_BLOCKS + mb, kBlocks, M_BLOCKS, 0, 0, false, 0));
        }
        // L0B: fractals (k block, n block) row-major, each 16 n-rows of 16 k-values. The
        // rows' fractal (row block r, column block d) sits at d * ROW_BLOCKS + r. Loaded in
        // as few LoadData calls as the layout allows (each costs a head): one for a scores
        // chunk over all row blocks (contiguous in L1), else one per k block or one per n
        // block (dstGap leaving the other n blocks' places), whichever are fewer.
        if (!VALUES && nBlocks == ROW_BLOCKS && kBlocks * nBlocks <= 255) {
            AscendC::LoadData(b2, rows, AscendC::LoadData2DParams(kb0 * ROW_BLOCKS, kBlocks * nBlocks, 1, 0, 0, false, 0));
        } else if (kBlocks <= nBlocks) {
            for (uint32_t kb = 0; kb < kBlocks; ++kb) {
                const uint32_t start = VALUES ? nb0 * ROW_BLOCKS + kb0 + kb : (kb0 + kb) * ROW_BLOCKS + nb0;
                AscendC::LoadData(b2[kb * nBlocks * FRACTAL_ELEMS], rows,
                                  AscendC::LoadData2DParams(start, nBlocks, VALUES ? ROW_BLOCKS : 1, 0, 0, VALUES, 0));
            }
        } else {
            for (uint32_t nb = 0; nb < nBlocks; ++nb) {
                const uint32_t start = VALUES ? (nb0 + nb) * ROW_BLOCKS + kb0 : kb0 * ROW_BLOCKS + nb0 + nb;
                AscendC::LoadData(b2[nb * FRACTAL_ELEMS], rows,
                                  AscendC::LoadData2DParams(start, kBlocks, VALUES ? 1 : ROW_BLOCKS, 0, nBlocks - 1,
                                                            VALUES, 0));
            }
        }
        aL0.EnQue(a2);
        bL0.EnQue(b2);
        a2 = aL0.template DeQue<bfloat16_t>();
        b2 = bL0.template DeQue<bfloat16_t>();
        if (k0 > 0) {
            BeforeAccumulatingMmad(HEAD_TILE, nLen);
        }
        AscendC::Mmad(c, a2, b2, AscendC::MmadParams(HEAD_TILE, nLen, kLen, 0, false, k0 == 0));
        aL0.FreeTensor(a2);
        bL0.FreeTensor(b2);
    }
    cL0.EnQue(c);
    c = cL0.template DeQue<float>();
    write(c);
    cL0.FreeTensor(c);
}

// HeadTileMmadTo with C written whole to dst[HEAD_TILE, nLen] (row stride dstStride), f32.
template <uint32_t HEAD_TILE, uint32_t K_CHUNK, uint32_t ROW_BLOCKS, bool VALUES, class QueA, class QueB, class QueC>
__aicore__ inline void HeadTileMmad(QueA& aL0, QueB& bL0, QueC& cL0, const AscendC::LocalTensor<bfloat16_t>& a,
                                    const AscendC::LocalTensor<bfloat16_t>& rows, uint32_t k, uint32_t n0,
                                    uint32_t nLen, const AscendC::GlobalTensor<float>& dst, uint32_t dstStride)
{
    HeadTileMmadTo<HEAD_TILE, K_CHUNK, ROW_BLOCKS, VALUES>(
        aL0, bL0, cL0, a, rows, k, n0, nLen,
        [&](const AscendC::LocalTensor<float>& c) { FixpipeColumns<HEAD_TILE>(dst, c, 0, nLen, dstStride); });
}

} // namespace dsv4
