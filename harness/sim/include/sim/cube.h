// Cube path: LoadData (L1 -> L0A/L0B) and Mmad (kernel_operator_mm_intf.h).
// Layouts (docs 矩阵计算（ISASI）/LoadData_2D.md and Mmad.md, dav-c220; C0 = 32 B / sizeof(T),
// a fractal is 512 bytes: 16 x C0 in L0A, C0 x 16 in L0B):
//  - L0A holds A (m x k) "Zz": fractals ordered row-major over (m/16, k/C0), each fractal
//    row-major 16 rows x C0:  A[i][k] at ((i/16)*kB + k/C0)*16*C0 + (i%16)*C0 + k%C0.
//  - L0B holds B (k x n) "Zn": fractals ordered row-major over (k/C0, n/16), each fractal
//    stores 16 n-rows of C0 k-values:  B[k][n] at ((k/C0)*nB + n/16)*16*C0 + (n%16)*C0 + k%C0.
//  - L0C holds C (m x n) "Nz": 16-column blocks of mPad = 16*ceil(m/16) rows, each row 16
//    values:  C[i][n] at ((n/16)*mPad + i)*16 + n%16.
// LoadData2D copies `repeatTimes` 512-byte fractals, source index startIndex + r*srcStride,
// destination r*(dstGap+1) fractals apart; ifTranspose (b16 only) transposes each 16x16
// fractal (the doc's load2d.py reference). The cube reads whole fractals: ceil(k/C0)
// fractals along k (fp32 with kDirectionAlign: ceil(k/16)*2), so the k tail must hold
// zeros (ND2NZ zero-fills a dValue tail); rows >= m and columns >= n are computed but
// are not checked for definedness.
// Accumulation order (the sim's choice): every C element adds its products in ascending
// k in fp32 (bf16/fp16 products are exact in fp32; fp32 inputs use a fused multiply-add
// where the host has FMA) or int32 (int8).
#pragma once

#include "tensor.h"

namespace AscendC {

using LoadData2dParams = struct LoadData2DParams;
struct LoadData2DParams {
    __aicore__ LoadData2DParams() {}
    __aicore__ LoadData2DParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                                const uint8_t sidIn, const uint16_t dstGapIn, const bool ifTransposeIn,
                                const uint8_t addrModeIn)
        : startIndex(startIndexIn),
          dstGap(dstGapIn),
          srcStride(srcStrideIn),
          ifTranspose(ifTransposeIn),
          repeatTimes(repeatTimesIn),
          sid(sidIn),
          addrMode(addrModeIn)
    {}
    uint16_t startIndex = 0;
    uint16_t dstGap = 0;
    uint16_t srcStride = 0;
    bool ifTranspose = 0;
    uint8_t repeatTimes = 0;
    uint8_t sid = 0;
    uint8_t addrMode = 0;
};

struct MmadParams {
    __aicore__ MmadParams() {}
    __aicore__ MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const bool isBiasIn,
                          const int32_t fmOffsetIn, const bool enSsparseIn, const bool enWinogradAIn,
                          const bool enWinogradBIn)
        : m(mIn),
          n(nIn),
          k(kIn),
          isBias(isBiasIn),
          fmOffset(fmOffsetIn),
          enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn),
          enWinogradB(enWinogradBIn)
    {}
    __aicore__ MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const uint8_t unitFlagIn,
                          const bool cmatrixSourceIn, const bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn), cmatrixInitVal(cmatrixInitValIn)
    {}
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;
};

namespace sim {
// Implemented in harness/sim/src/cube.cpp.
void LoadData2D(const TensorRef& dst, const TensorRef& src, uint32_t elemSize, const LoadData2DParams& p);
void MmadRun(ElemKind in, const TensorRef& dst, const TensorRef& fm, const TensorRef& filter, const MmadParams& p);

template <typename T, typename U, typename S>
constexpr bool MmadTypesOk()
{
    return (std::is_same_v<T, float> && std::is_same_v<U, half> && std::is_same_v<S, half>) ||
           (std::is_same_v<T, float> && std::is_same_v<U, bfloat16_t> && std::is_same_v<S, bfloat16_t>) ||
           (std::is_same_v<T, float> && std::is_same_v<U, float> && std::is_same_v<S, float>) ||
           (std::is_same_v<T, int32_t> && std::is_same_v<U, int8_t> && std::is_same_v<S, int8_t>);
}
} // namespace sim

template <typename T>
__aicore__ inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p)
{
    sim::LoadData2D(sim::Ref(dst), sim::Ref(src), sizeof(T), p);
}

template <typename T, typename U, typename S>
__aicore__ inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                            const MmadParams& mmadParams)
{
    static_assert(sim::MmadTypesOk<T, U, S>(),
                  "Mmad: supported (dst, fm, filter) types on dav-c220 are (float, half, half), "
                  "(float, bfloat16_t, bfloat16_t), (float, float, float), (int32_t, int8_t, int8_t)");
    sim::MmadRun(sim::KindOf<U>(), sim::Ref(dst), sim::Ref(fm), sim::Ref(filter), mmadParams);
}

} // namespace AscendC
