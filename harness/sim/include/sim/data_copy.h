// DataCopy / DataCopyPad / ND2NZ (include/basic_api/kernel_operator_data_copy_intf.h).
// Semantics from the asc-devkit docs (基础API/Memory矢量计算/数据搬运 and
// 矩阵计算（ISASI）/矩阵计算的搬入):
//  - DataCopy moves whole 32-byte blocks: DataCopyParams.blockLen, srcStride and dstStride
//    count 32-byte blocks on both sides; the count form needs count*sizeof(T) % 32 == 0.
//  - DataCopyPad GM->UB: blockLen in bytes; srcStride (GM) in bytes, dstStride (UB) in
//    32-byte blocks; each UB row is leftPadding + data + rightPadding rounded up to 32 B.
//    Dummy bytes up to 32 B hold the row's first element when no padding is requested,
//    paddingValue when isPad, otherwise unspecified (the sim leaves the poison pattern).
//  - DataCopyPad UB->GM: srcStride (UB) in blocks, dstStride (GM) in bytes; each UB row
//    occupies ceil(blockLen/32) blocks.
//  - ND2NZ (GM->L1): C0 = 32 B / sizeof(T); column block j of row r of matrix i lands at
//    i*dstNzMatrixStride (elements) + (j*dstNzC0Stride + r*dstNzNStride) * 32 B; a
//    dValue tail shorter than C0 is zero-filled to 32 B; rows beyond nValue untouched.
// GM writes honour SetAtomicAdd. The work happens in harness/sim/src/data_copy.cpp.
#pragma once

#include "tensor.h"

namespace AscendC {

struct DataCopyParams {
    __aicore__ DataCopyParams() {}
    __aicore__ DataCopyParams(const sim::Wide count, const sim::Wide len, const sim::Wide srcStrideIn,
                              const sim::Wide dstStrideIn)
        : blockCount(sim::Fit<uint16_t>("DataCopyParams", "blockCount", count)),
          blockLen(sim::Fit<uint16_t>("DataCopyParams", "blockLen", len)),
          srcStride(sim::Fit<uint16_t>("DataCopyParams", "srcStride", srcStrideIn)),
          dstStride(sim::Fit<uint16_t>("DataCopyParams", "dstStride", dstStrideIn))
    {}
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    union {
        uint16_t srcGap = 0;
        uint16_t srcStride;
    };
    union {
        uint16_t dstGap = 0;
        uint16_t dstStride;
    };
};

struct DataCopyExtParams {
    __aicore__ DataCopyExtParams() {}
    __aicore__ DataCopyExtParams(const sim::Wide count, const sim::Wide len, const sim::Wide srcStrideIn,
                                 const sim::Wide dstStrideIn, const sim::Wide rsvIn)
        : blockCount(sim::Fit<uint16_t>("DataCopyExtParams", "blockCount", count)),
          blockLen(sim::Fit<uint32_t>("DataCopyExtParams", "blockLen", len)),
          srcStride(sim::Fit<uint32_t>("DataCopyExtParams", "srcStride", srcStrideIn)),
          dstStride(sim::Fit<uint32_t>("DataCopyExtParams", "dstStride", dstStrideIn)),
          rsv(sim::Fit<uint32_t>("DataCopyExtParams", "rsv", rsvIn))
    {}
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
    __aicore__ DataCopyPadExtParams() {}
    __aicore__ DataCopyPadExtParams(const bool isPadValue, const sim::Wide leftPadValue,
                                    const sim::Wide rightPadValue, T padValue)
        : isPad(isPadValue),
          leftPadding(sim::Fit<uint8_t>("DataCopyPadExtParams", "leftPadding", leftPadValue)),
          rightPadding(sim::Fit<uint8_t>("DataCopyPadExtParams", "rightPadding", rightPadValue)),
          paddingValue(padValue)
    {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = T(0);
};

struct DataCopyPadParams {
    __aicore__ DataCopyPadParams() {}
    __aicore__ DataCopyPadParams(const bool isPadValue, const sim::Wide leftPadValue, const sim::Wide rightPadValue,
                                 const uint64_t padValue)
        : isPad(isPadValue),
          leftPadding(sim::Fit<uint8_t>("DataCopyPadParams", "leftPadding", leftPadValue)),
          rightPadding(sim::Fit<uint8_t>("DataCopyPadParams", "rightPadding", rightPadValue)),
          paddingValue(padValue)
    {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
};

struct Nd2NzParams {
    __aicore__ Nd2NzParams() {}
    __aicore__ Nd2NzParams(const sim::Wide ndNumIn, const sim::Wide nValueIn, const sim::Wide dValueIn,
                           const sim::Wide srcNdMatrixStrideIn, const sim::Wide srcDValueIn,
                           const sim::Wide dstNzC0StrideIn, const sim::Wide dstNzNStrideIn,
                           const sim::Wide dstNzMatrixStrideIn)
        : ndNum(sim::Fit<uint16_t>("Nd2NzParams", "ndNum", ndNumIn)),
          nValue(sim::Fit<uint16_t>("Nd2NzParams", "nValue", nValueIn)),
          dValue(sim::Fit<uint16_t>("Nd2NzParams", "dValue", dValueIn)),
          srcNdMatrixStride(sim::Fit<uint16_t>("Nd2NzParams", "srcNdMatrixStride", srcNdMatrixStrideIn)),
          srcDValue(sim::Fit<uint16_t>("Nd2NzParams", "srcDValue", srcDValueIn)),
          dstNzC0Stride(sim::Fit<uint16_t>("Nd2NzParams", "dstNzC0Stride", dstNzC0StrideIn)),
          dstNzNStride(sim::Fit<uint16_t>("Nd2NzParams", "dstNzNStride", dstNzNStrideIn)),
          dstNzMatrixStride(sim::Fit<uint16_t>("Nd2NzParams", "dstNzMatrixStride", dstNzMatrixStrideIn))
    {}
    uint16_t ndNum = 0;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
};

namespace sim {
// Implemented in harness/sim/src/data_copy.cpp (type-erased by element size / kind).

// Stores `bytes` from `src` to GM at `dst` (inside registered buffer `gm`): a plain
// store, or under SetAtomicAdd an element-wise add of `kind` (which must match the
// atomic type).
void GmStore(const char* api, ElemKind kind, int gm, uint8_t* dst, const uint8_t* src, uint64_t bytes);
// The count form moves whole 32-byte blocks only; `local` names the buffer in the trap.
DataCopyParams CountParams(const char* api, uint32_t count, uint32_t elemSize, const TensorRef& local);
void CopyGmToLocal(const char* api, const TensorRef& dst, const void* gm, int gmIdx, const DataCopyParams& p);
void CopyLocalToGm(const char* api, ElemKind kind, void* gm, int gmIdx, const TensorRef& src, const DataCopyParams& p);
void CopyUbToUb(const char* api, const TensorRef& dst, const TensorRef& src, const DataCopyParams& p);
void CopyNd2Nz(const TensorRef& dst, const void* gm, int gmIdx, uint32_t elemSize, const Nd2NzParams& p);
struct PadSpec {
    bool isPad;
    uint8_t left;
    uint8_t right;
    const void* padValue; // one element
};
void PadGmToUb(const char* api, const TensorRef& dst, const void* gm, int gmIdx, uint32_t elemSize, uint16_t blockCount,
               uint32_t blockLen, uint64_t srcStride, uint64_t dstStride, const PadSpec& pad);
void PadUbToGm(const char* api, ElemKind kind, uint32_t elemSize, void* gm, int gmIdx, const TensorRef& src,
               uint16_t blockCount, uint32_t blockLen, uint64_t srcStride, uint64_t dstStride);
} // namespace sim

template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& params)
{
    sim::CopyGmToLocal("DataCopy", sim::Ref(dst), src.addr_, src.gm_, params);
}
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count)
{
    sim::CopyGmToLocal("DataCopy", sim::Ref(dst), src.addr_, src.gm_,
                       sim::CountParams("DataCopy", count, sizeof(T), sim::Ref(dst)));
}
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& params)
{
    sim::CopyLocalToGm("DataCopy", sim::KindOf<T>(), dst.addr_, dst.gm_, sim::Ref(src), params);
}
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count)
{
    sim::CopyLocalToGm("DataCopy", sim::KindOf<T>(), dst.addr_, dst.gm_, sim::Ref(src),
                       sim::CountParams("DataCopy", count, sizeof(T), sim::Ref(src)));
}
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& params)
{
    sim::CopyUbToUb("DataCopy", sim::Ref(dst), sim::Ref(src), params);
}
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count)
{
    sim::CopyUbToUb("DataCopy", sim::Ref(dst), sim::Ref(src),
                    sim::CountParams("DataCopy", count, sizeof(T), sim::Ref(src)));
}

// GM -> L1 with ND -> NZ conversion.
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p)
{
    sim::CopyNd2Nz(sim::Ref(dst), src.addr_, src.gm_, sizeof(T), p);
}

template <typename T>
__aicore__ inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                                   const DataCopyExtParams& dataCopyParams, const DataCopyPadExtParams<T>& padParams)
{
    sim::PadGmToUb("DataCopyPad", sim::Ref(dst), src.addr_, src.gm_, sizeof(T), dataCopyParams.blockCount,
                   dataCopyParams.blockLen, dataCopyParams.srcStride, dataCopyParams.dstStride,
                   sim::PadSpec{padParams.isPad, padParams.leftPadding, padParams.rightPadding, &padParams.paddingValue});
}
template <typename T>
__aicore__ inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                                   const DataCopyParams& dataCopyParams, const DataCopyPadParams& padParams)
{
    // the legacy struct carries the pad value in the low bytes of a uint64_t
    sim::PadGmToUb("DataCopyPad", sim::Ref(dst), src.addr_, src.gm_, sizeof(T), dataCopyParams.blockCount,
                   dataCopyParams.blockLen, dataCopyParams.srcStride, dataCopyParams.dstStride,
                   sim::PadSpec{padParams.isPad, padParams.leftPadding, padParams.rightPadding, &padParams.paddingValue});
}
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                                   const DataCopyExtParams& dataCopyParams)
{
    sim::PadUbToGm("DataCopyPad", sim::KindOf<T>(), sizeof(T), dst.addr_, dst.gm_, sim::Ref(src),
                   dataCopyParams.blockCount, dataCopyParams.blockLen, dataCopyParams.srcStride,
                   dataCopyParams.dstStride);
}
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                                   const DataCopyParams& dataCopyParams)
{
    sim::PadUbToGm("DataCopyPad", sim::KindOf<T>(), sizeof(T), dst.addr_, dst.gm_, sim::Ref(src),
                   dataCopyParams.blockCount, dataCopyParams.blockLen, dataCopyParams.srcStride,
                   dataCopyParams.dstStride);
}

} // namespace AscendC
