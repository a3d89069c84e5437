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
// LoadDataWithTranspose (doc LoadDataWithTranspose.md and its load_data_with_transpose.py
// reference) works on square blocks: b16 one 16x16 fractal, b8 two consecutive 16x32
// fractals read as one 32x32 byte square. Repeat r transposes the square at
// startIndex + r*srcStride (in squares; addrMode 1 counts down) and writes its fractals
// (dstFracGap+1) fractals apart, starting (dstGap+1)*r fractals from dst. A transposed
// row is defined only if every source row of its square is. b32 is not modelled.
// Accumulation order (the sim's choice): every C element adds its products in ascending
// k in fp32 (bf16/fp16 products are exact in fp32; fp32 inputs use a fused multiply-add
// where the host has FMA) or int32 (int8).
#pragma once

#include "tensor.h"

namespace AscendC {

using LoadData2dParams = struct LoadData2DParams;
struct LoadData2DParams {
    __aicore__ LoadData2DParams() {}
    __aicore__ LoadData2DParams(const sim::Wide startIndexIn, const sim::Wide repeatTimesIn,
                                const sim::Wide srcStrideIn, const sim::Wide sidIn, const sim::Wide dstGapIn,
                                const bool ifTransposeIn, const sim::Wide addrModeIn)
        : startIndex(sim::Fit<uint16_t>("LoadData2DParams", "startIndex", startIndexIn)),
          dstGap(sim::Fit<uint16_t>("LoadData2DParams", "dstGap", dstGapIn)),
          srcStride(sim::Fit<uint16_t>("LoadData2DParams", "srcStride", srcStrideIn)),
          ifTranspose(ifTransposeIn),
          repeatTimes(sim::Fit<uint8_t>("LoadData2DParams", "repeatTimes", repeatTimesIn)),
          sid(sim::Fit<uint8_t>("LoadData2DParams", "sid", sidIn)),
          addrMode(sim::Fit<uint8_t>("LoadData2DParams", "addrMode", addrModeIn))
    {}
    uint16_t startIndex = 0;
    uint16_t dstGap = 0;
    uint16_t srcStride = 0;
    bool ifTranspose = 0;
    uint8_t repeatTimes = 0;
    uint8_t sid = 0;
    uint8_t addrMode = 0;
};

struct LoadData2dTransposeParams {
    __aicore__ LoadData2dTransposeParams() {}
    __aicore__ LoadData2dTransposeParams(const sim::Wide startIndexIn, const sim::Wide repeatTimesIn,
                                         const sim::Wide srcStrideIn, const sim::Wide dstGapIn,
                                         const sim::Wide dstfracGapIn, const sim::Wide addrModeIn)
        : LoadData2dTransposeParams(startIndexIn, repeatTimesIn, srcStrideIn, dstGapIn, dstfracGapIn)
    {
        addrMode = sim::Fit<uint8_t>("LoadData2dTransposeParams", "addrMode", addrModeIn);
    }
    __aicore__ LoadData2dTransposeParams(const sim::Wide startIndexIn, const sim::Wide repeatTimesIn,
                                         const sim::Wide srcStrideIn, const sim::Wide dstGapIn,
                                         const sim::Wide dstfracGapIn)
        : startIndex(sim::Fit<uint16_t>("LoadData2dTransposeParams", "startIndex", startIndexIn)),
          repeatTimes(sim::Fit<uint8_t>("LoadData2dTransposeParams", "repeatTimes", repeatTimesIn)),
          srcStride(sim::Fit<uint16_t>("LoadData2dTransposeParams", "srcStride", srcStrideIn)),
          dstGap(sim::Fit<uint16_t>("LoadData2dTransposeParams", "dstGap", dstGapIn)),
          dstFracGap(sim::Fit<uint16_t>("LoadData2dTransposeParams", "dstFracGap", dstfracGapIn))
    {}
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint8_t addrMode = 0;
};

struct MmadParams {
    __aicore__ MmadParams() {}
    __aicore__ MmadParams(const sim::Wide mIn, const sim::Wide nIn, const sim::Wide kIn, const bool isBiasIn,
                          const int32_t fmOffsetIn, const bool enSsparseIn, const bool enWinogradAIn,
                          const bool enWinogradBIn)
        : m(sim::Fit<uint16_t>("MmadParams", "m", mIn)),
          n(sim::Fit<uint16_t>("MmadParams", "n", nIn)),
          k(sim::Fit<uint16_t>("MmadParams", "k", kIn)),
          isBias(isBiasIn),
          fmOffset(fmOffsetIn),
          enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn),
          enWinogradB(enWinogradBIn)
    {}
    __aicore__ MmadParams(const sim::Wide mIn, const sim::Wide nIn, const sim::Wide kIn, const sim::Wide unitFlagIn,
                          const bool cmatrixSourceIn, const bool cmatrixInitValIn)
        : m(sim::Fit<uint16_t>("MmadParams", "m", mIn)),
          n(sim::Fit<uint16_t>("MmadParams", "n", nIn)),
          k(sim::Fit<uint16_t>("MmadParams", "k", kIn)),
          unitFlag(sim::Fit<uint8_t>("MmadParams", "unitFlag", unitFlagIn)),
          cmatrixSource(cmatrixSourceIn),
          cmatrixInitVal(cmatrixInitValIn)
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
void LoadData2DTranspose(const TensorRef& dst, const TensorRef& src, uint32_t elemSize,
                         const LoadData2dTransposeParams& p);
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

// Fill (矩阵搬入辅助配置接口/Fill.md; formerly InitConstValue): sets `repeatTimes` runs of
// `blockNum` blocks to initValue, runs `dstGap` blocks apart; a block is 32 bytes in L1
// (A1/B1, 32-byte aligned start) and one 512-byte fractal in L0A/L0B (512-byte aligned).
template <typename T>
struct InitConstValueParams {
    __aicore__ InitConstValueParams() {}
    __aicore__ InitConstValueParams(const sim::Wide repeatTimesIn, const sim::Wide blockNumIn,
                                    const sim::Wide dstGapIn, const T initValueIn)
        : repeatTimes(sim::Fit<uint16_t>("InitConstValueParams", "repeatTimes", repeatTimesIn)),
          blockNum(sim::Fit<uint16_t>("InitConstValueParams", "blockNum", blockNumIn)),
          dstGap(sim::Fit<uint16_t>("InitConstValueParams", "dstGap", dstGapIn)),
          initValue(initValueIn)
    {}
    __aicore__ InitConstValueParams(const sim::Wide repeatTimesIn, const T initValueIn)
        : repeatTimes(sim::Fit<uint16_t>("InitConstValueParams", "repeatTimes", repeatTimesIn)), initValue(initValueIn)
    {}
    uint16_t repeatTimes = 0;
    uint16_t blockNum = 0;
    uint16_t dstGap = 0;
    T initValue = T(0);
};

template <typename T, typename U = T>
__aicore__ inline void Fill(const LocalTensor<T>& dst, const InitConstValueParams<U>& p)
{
    static_assert(std::is_same_v<T, U>, "Fill: the init value type must be the tensor's element type");
    static_assert(sim::OneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>,
                  "Fill: element type not supported on dav-c220");
    const char* api = "Fill";
    sim::RequireCoreKind(api, sim::CoreKind::AIC);
    sim::Mem m = sim::MemOfTensor(dst, api, "dst");
    if (m != sim::Mem::L1 && m != sim::Mem::L0A && m != sim::Mem::L0B) {
        sim::Trap(api, "Fill initialises L1 (A1/B1), L0A (A2) or L0B (B2) only");
    }
    // Fill.md: PIPE_MTE2 into L1, PIPE_MTE1 into L0A / L0B
    sim::Op op_(api, m == sim::Mem::L1 ? sim::Pipe::MTE2 : sim::Pipe::MTE1);
    // ranges [0, 32767] (docs 基础API/矩阵计算（ISASI）/矩阵搬入辅助配置接口/Fill.md); 0 repeats or blocks is a NOP
    sim::InRange(api, "repeatTimes", p.repeatTimes, 0, 32767);
    sim::InRange(api, "blockNum", p.blockNum, 0, 32767);
    sim::InRange(api, "dstGap", p.dstGap, 0, 32767);
    if (p.repeatTimes == 0 || p.blockNum == 0) {
        return;
    }
    const uint32_t block = m == sim::Mem::L1 ? 32 : 512;
    for (uint32_t r = 0; r < p.repeatTimes; ++r) {
        uint64_t off = uint64_t(r) * (uint64_t(p.blockNum) + p.dstGap) * block;
        uint64_t len = uint64_t(p.blockNum) * block;
        uint8_t* d = sim::Access(dst, api, "dst", off, len, sim::Acc::Write, block);
        for (uint64_t i = 0; i < len; i += sizeof(T)) {
            std::memcpy(d + i, &p.initValue, sizeof(T));
        }
    }
}

template <typename T>
__aicore__ inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p)
{
    sim::LoadData2D(sim::Ref(dst), sim::Ref(src), sizeof(T), p);
}

template <typename T>
__aicore__ inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                             const LoadData2dTransposeParams& loadDataParams)
{
    sim::LoadData2DTranspose(sim::Ref(dst), sim::Ref(src), sizeof(T), loadDataParams);
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
