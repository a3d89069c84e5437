// One head tile's product on the cube, shared by the window and compressed attention kernels.
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
