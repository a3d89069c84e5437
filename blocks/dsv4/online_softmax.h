// The softmax steps the attention sources share (swa.md §3.5, hca_csa.md §6.1-6.3): the
// exponentials of a tile of score rows, and the online merge of a further source's tile
// statistics into the running ones.
#pragma once

#include "kernel_operator.h"
#include "dsv4/pipe_sync.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// ROWS score rows of `lanes` lanes each in z: z = z * scale + bias (one bias row for all),
// m = the row's max (to maxOut[at + h]), z = exp(z - m), and the row's sum l into
// stats[h * SLOT] (a 32-byte slot per row; RowSums takes them out). tmp: reduction scratch
// over a row.
template <uint32_t ROWS>
__aicore__ inline void ExpRows(const AscendC::LocalTensor<float>& z, const AscendC::LocalTensor<float>& bias,
                               float scale, uint32_t lanes, const AscendC::LocalTensor<float>& stats,
                               const AscendC::LocalTensor<float>& tmp, const AscendC::LocalTensor<float>& maxOut,
                               uint32_t at)
{
    constexpr uint32_t SLOT = BLOCK_BYTES / sizeof(float);
    AscendC::Muls(z, z, scale, ROWS * lanes);
    for (uint32_t h = 0; h < ROWS; ++h) {
        AscendC::Add(z[h * lanes], z[h * lanes], bias, lanes);
        AscendC::ReduceMax(stats[h * SLOT], z[h * lanes], tmp, lanes);
    }
    VectorToScalar();
    for (uint32_t h = 0; h < ROWS; ++h) {
        const float m = stats.GetValue(h * SLOT);
        maxOut.SetValue(at + h, m);
        AscendC::Adds(z[h * lanes], z[h * lanes], -m, lanes);
    }
    AscendC::Exp(z, z, ROWS * lanes);
    for (uint32_t h = 0; h < ROWS; ++h) {
        AscendC::ReduceSum(stats[h * SLOT], z[h * lanes], tmp, lanes);
    }
}

// The ROWS row sums ExpRows left in stats, to sumOut[at + h], once the vector unit is done.
template <uint32_t ROWS>
__aicore__ inline void RowSums(const AscendC::LocalTensor<float>& stats, const AscendC::LocalTensor<float>& sumOut,
                               uint32_t at)
{
    constexpr uint32_t SLOT = BLOCK_BYTES / sizeof(float);
    VectorToScalar();
    for (uint32_t h = 0; h < ROWS; ++h) {
        sumOut.SetValue(at + h, stats.GetValue(h * SLOT));
    }
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
