// Fixpipe L0C -> GM (kernel_operator_fixpipe_intf.h; docs 矩阵计算的搬出/Fixpipe（L0C到GM数据搬运）).
// FixpipeParamsV220: the source is the L0C "Nz" layout (see cube.h) with srcStride = the
// distance between 16-column blocks in units of 16 elements (normally ceil(m/16)*16).
//  - CFG_ROW_MAJOR (NZ2ND): out[nd*dstNdStride + i*dstStride + j] = C[i][j] for i < mSize,
//    j < nSize; dstStride counts elements; srcNdStride counts source fractals (16 x 16
//    elements, "16*C0_Size").
//  - CFG_NZ: nSize must be a multiple of 16; column block j/16 starts dstStride * 32 bytes
//    after the previous one, each row holds 16 output elements.
// quantPre: NoQuant (float -> float, int32 -> int32), F322F16, F322BF16 (CAST_RINT per the
// doc; finite overflow saturates like Cast, inf/NaN propagate), DEQF16 (int32 -> float,
// times deqScalar's bits 13..31 read as a float, then half as F322F16; the mode control bit
// 36 traps). reluEn clamps at 0 before the conversion. Other quantisation modes trap.
#pragma once

#include "data_copy.h"
#include "vec_cast.h"

namespace AscendC {

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };

struct FixpipeConfig {
    CO2Layout format;
    __aicore__ constexpr FixpipeConfig(CO2Layout f) : format(f) {}
};
inline constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
inline constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};
inline constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR};

struct FixpipeParamsV220 {
    __aicore__ FixpipeParamsV220() {}
    __aicore__ FixpipeParamsV220(const sim::Wide nSizeIn, const sim::Wide mSizeIn, const sim::Wide srcStrideIn,
                                 const sim::Wide dstStrideIn, const bool reluEnIn)
        : nSize(sim::Fit<uint16_t>("FixpipeParamsV220", "nSize", nSizeIn)),
          mSize(sim::Fit<uint16_t>("FixpipeParamsV220", "mSize", mSizeIn)),
          srcStride(sim::Fit<uint16_t>("FixpipeParamsV220", "srcStride", srcStrideIn)),
          dstStride(sim::Fit<uint32_t>("FixpipeParamsV220", "dstStride", dstStrideIn)),
          reluEn(reluEnIn)
    {}
    __aicore__ FixpipeParamsV220(const sim::Wide nSizeIn, const sim::Wide mSizeIn, const sim::Wide srcStrideIn,
                                 const sim::Wide dstStrideIn, const bool reluEnIn, const QuantMode_t quantPreIn,
                                 const int64_t deqScalarIn, const sim::Wide ndNumIn, const sim::Wide srcNdStrideIn,
                                 const sim::Wide dstNdStrideIn, const sim::Wide unitFlagIn)
        : FixpipeParamsV220(nSizeIn, mSizeIn, srcStrideIn, dstStrideIn, reluEnIn)
    {
        quantPre = quantPreIn;
        deqScalar = deqScalarIn;
        ndNum = sim::Fit<uint16_t>("FixpipeParamsV220", "ndNum", ndNumIn);
        srcNdStride = sim::Fit<uint16_t>("FixpipeParamsV220", "srcNdStride", srcNdStrideIn);
        dstNdStride = sim::Fit<uint16_t>("FixpipeParamsV220", "dstNdStride", dstNdStrideIn);
        unitFlag = sim::Fit<uint8_t>("FixpipeParamsV220", "unitFlag", unitFlagIn);
    }
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
};
using FixpipeParamsM300 = FixpipeParamsV220;

namespace sim {
// Implemented in harness/sim/src/cube.cpp.
void FixpipeRun(ElemKind out, ElemKind in, bool nd, void* dstAddr, int dstGm, const TensorRef& src,
                const FixpipeParamsV220& p);
} // namespace sim

template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
__aicore__ inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src,
                               const FixpipeParamsV220& intriParams)
{
    static_assert(config.format != CO2Layout::COLUMN_MAJOR, "Fixpipe: CFG_COLUMN_MAJOR is not available on dav-c220");
    sim::FixpipeRun(sim::KindOf<T>(), sim::KindOf<U>(), config.format == CO2Layout::ROW_MAJOR, dst.addr_, dst.gm_,
                    sim::Ref(src), intriParams);
}

} // namespace AscendC
