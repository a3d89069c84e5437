// The softmax steps the attention sources share (swa.md §3.5, hca_csa.md §6.1-6.3): the
// exponentials of a tile of score rows, and the online merge of a further source's tile
// statistics into the running ones.
#pragma once

#include "kernel_operator.h"
#include "dsv4/pipe_sync.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// The f32 scratch ExpRows folds ROWS rows of `lanes` lanes into (none where a row is one repeat).
__aicore__ constexpr inline uint32_t FoldFloats(uint32_t rows, uint32_t lanes)
{
    return lanes > F32_REPEAT ? rows * F32_REPEAT : 0;
}

// The 64-lane chunks of ROWS rows of `lanes` lanes in z folded into one chunk per row in
// fold (rows 8 blocks apart) by max (MAX) or sum; nothing where a row is one chunk.
template <uint32_t ROWS, bool MAX>
__aicore__ inline void FoldRows(const AscendC::LocalTensor<float>& fold, const AscendC::LocalTensor<float>& z,
                                uint32_t lanes)
{
    if (lanes <= F32_REPEAT) {
        return;
    }
    const uint8_t row = static_cast<uint8_t>(lanes / 8);
    uint32_t c = F32_REPEAT;
    if (lanes >= 2 * F32_REPEAT) {
        const AscendC::BinaryRepeatParams pair(1, 1, 1, 8, row, row);
        if constexpr (MAX) {
            AscendC::Max(fold, z, z[c], F32_REPEAT, ROWS, pair);
        } else {
            AscendC::Add(fold, z, z[c], F32_REPEAT, ROWS, pair);
        }
        c += F32_REPEAT;
    } else {
        AscendC::DataCopy(fold, z, AscendC::DataCopyParams(ROWS, 8, row - 8, 0));
    }
    for (; c < lanes; c += F32_REPEAT) {
        const AscendC::BinaryRepeatParams more(1, 1, 1, 8, 8, row);
        if constexpr (MAX) {
            AscendC::Max(fold, fold, z[c], Min(F32_REPEAT, lanes - c), ROWS, more);
        } else {
            AscendC::Add(fold, fold, z[c], Min(F32_REPEAT, lanes - c), ROWS, more);
        }
    }
}

// ROWS score rows of `lanes` lanes each in z (lanes a multiple of 8: rows of whole blocks, at
// most 255 blocks apart):
//   z = z * scale + bias (one bias row for all), m = each row's max into maxOut[at + h],
//   z = exp(z - m), l = each row's sum into sumOut[at + h]   (at a multiple of 8)
// The rows are the repeats of level-0 calls over each 64-lane chunk of a row, so a tile takes
// a dozen calls whatever ROWS (a call per row would pay a call's head per row): the chunks
// fold into one per row in `fold` (FoldFloats(ROWS, lanes), by max, then by sum) and one
// whole-repeat reduction per row finishes; `spread` (ROWS blocks) holds each max over a block
// for the subtraction.
template <uint32_t ROWS>
__aicore__ inline void ExpRows(const AscendC::LocalTensor<float>& z, const AscendC::LocalTensor<float>& bias,
                               float scale, uint32_t lanes, const AscendC::LocalTensor<float>& fold,
                               const AscendC::LocalTensor<float>& spread, const AscendC::LocalTensor<float>& maxOut,
                               const AscendC::LocalTensor<float>& sumOut, uint32_t at)
{
    static_assert(ROWS % 8 == 0 && ROWS <= 255, "a row per repeat, the maxima spread eight per repeat");
    const uint8_t row = static_cast<uint8_t>(lanes / 8);  // the rows' repeat stride in blocks
    AscendC::Muls(z, z, scale, ROWS * lanes);
    for (uint32_t c = 0; c < lanes; c += F32_REPEAT) {
        AscendC::Add(z[c], z[c], bias[c], Min(F32_REPEAT, lanes - c), ROWS,
                     AscendC::BinaryRepeatParams(1, 1, 1, row, row, 0));
    }
    FoldRows<ROWS, true>(fold, z, lanes);
    const bool folded = lanes > F32_REPEAT;
    const AscendC::LocalTensor<float>& rows = folded ? fold : z;
    const int32_t mask = static_cast<int32_t>(folded ? F32_REPEAT : lanes);
    const int32_t rowRep = folded ? 8 : row;
    AscendC::WholeReduceMax(maxOut[at], rows, mask, ROWS, 1, 1, rowRep, AscendC::ReduceOrder::ORDER_ONLY_VALUE);
    AscendC::Brcb(spread, maxOut[at], ROWS / 8, AscendC::BrcbRepeatParams(1, 8));
    for (uint32_t c = 0; c < lanes; c += F32_REPEAT) {
        AscendC::Sub(z[c], z[c], spread, Min(F32_REPEAT, lanes - c), ROWS,
                     AscendC::BinaryRepeatParams(1, 1, 0, row, row, 1));
    }
    AscendC::Exp(z, z, ROWS * lanes);
    FoldRows<ROWS, false>(fold, z, lanes);
    AscendC::WholeReduceSum(sumOut[at], rows, mask, ROWS, 1, 1, rowRep);
}

// n heads' running (m, denom) merged with a tile's (m_i, l_i), written by the scalar unit:
// m' = max(m, m_i), alpha = exp(m - m'), beta = exp(m_i - m'), denom' = alpha * denom +
// beta * l_i. m and denom become m' and denom'; mi and li are used up. alpha and beta are
// left for the scalar unit (o' = alpha * o + beta * part).
__aicore__ inline void OnlineRescale(const AscendC::LocalTensor<float>& m, const AscendC::LocalTensor<float>& den,
                                     const AscendC::LocalTensor<float>& mi, const AscendC::LocalTensor<float>& li,
                                     const AscendC::LocalTensor<float>& alpha, const AscendC::LocalTensor<float>& beta,
                                     uint32_t n)
{
    ScalarToVector();
    AscendC::Max(alpha, m, mi, n);  // m'
    AscendC::Sub(beta, mi, alpha, n);
    AscendC::Exp(beta, beta, n);
    AscendC::Sub(mi, m, alpha, n);
    AscendC::Adds(m, alpha, 0.0f, n);
    AscendC::Exp(alpha, mi, n);
    AscendC::Mul(den, den, alpha, n);
    AscendC::Mul(li, li, beta, n);
    AscendC::Add(den, den, li, n);
    VectorToScalar();
}

}  // namespace dsv4
