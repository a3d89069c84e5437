// DataCopy / DataCopyPad / ND2NZ of the model (semantics in include/sim/data_copy.h).
#include "kernel_operator.h"

namespace AscendC {
namespace sim {

namespace {
template <typename T>
void AddInto(uint8_t* dst, const uint8_t* src, uint64_t n)
{
    for (uint64_t i = 0; i < n; ++i) {
        T a, b;
        std::memcpy(&a, dst + i * sizeof(T), sizeof(T));
        std::memcpy(&b, src + i * sizeof(T), sizeof(T));
        T r;
        if constexpr (std::is_integral_v<T>) {
            // integer atomics saturate on the chip
            int64_t s = int64_t(a) + int64_t(b);
            s = std::min<int64_t>(std::max<int64_t>(s, std::numeric_limits<T>::min()), std::numeric_limits<T>::max());
            r = static_cast<T>(s);
        } else {
            r = T(static_cast<float>(a) + static_cast<float>(b));
        }
        std::memcpy(dst + i * sizeof(T), &r, sizeof(T));
    }
}

const BufDesc& LocalOn(const char* api, const char* role, const TensorRef& t, Mem want)
{
    const BufDesc& b = AliveRef(t, api, role);
    if (b.mem != want) {
        Trap(api, std::string(role) + ": this path needs a " + kMemName[static_cast<int>(want)] + " tensor, buffer " +
                      DescribeBuf(b) + " is in " + kMemName[static_cast<int>(b.mem)]);
    }
    return b;
}

// DataCopyParams ranges: blockCount [0, 4095]; blockLen, srcGap and dstGap [0, 65535] are
// their uint16_t fields (docs 基础API/Memory矢量计算/数据搬运/DataCopy（GM与UB高维切分数据搬运）.md,
// DataCopy（UBToUB高维切分数据搬运）.md, 基础API/矩阵计算（ISASI）/矩阵计算的搬入/
// DataCopy（GMToL1高维切分数据搬运）.md). 0 blocks is a documented NOP.
void CheckCopyParams(const char* api, const DataCopyParams& p) { InRange(api, "blockCount", p.blockCount, 0, 4095); }

// DataCopyExtParams ranges for DataCopyPad: blockCount [0, 4095], blockLen [0, 2097151]
// bytes; the strides span their uint32_t fields (docs 基础API/Memory矢量计算/数据搬运/
// DataCopyPad（GMToUB非对齐数据搬运）.md, DataCopyPad（UBToGM非对齐数据搬运）.md).
void CheckPadParams(const char* api, uint16_t blockCount, uint32_t blockLen)
{
    InRange(api, "blockCount", blockCount, 0, 4095);
    InRange(api, "blockLen", blockLen, 0, 2097151);
}
} // namespace

void GmStore(const char* api, ElemKind kind, int gm, uint8_t* dst, const uint8_t* src, uint64_t bytes)
{
    Core& c = CurCore();
    c.counters.gmWriteBytes += bytes;
    NoteGmWrite(gm, dst, bytes, c.atomicOp != AtomicOp::None);
    if (c.atomicOp == AtomicOp::None) {
        std::memcpy(dst, src, bytes);
        return;
    }
    if (kind != c.atomicType) {
        Trap(api, "SetAtomicAdd type does not match the element type of the copy");
    }
    AtomicLock();
    switch (kind) {
        case ElemKind::F32: AddInto<float>(dst, src, bytes / 4); break;
        case ElemKind::F16: AddInto<half>(dst, src, bytes / 2); break;
        case ElemKind::BF16: AddInto<bfloat16_t>(dst, src, bytes / 2); break;
        case ElemKind::I32: AddInto<int32_t>(dst, src, bytes / 4); break;
        case ElemKind::I16: AddInto<int16_t>(dst, src, bytes / 2); break;
        case ElemKind::I8: AddInto<int8_t>(dst, src, bytes); break;
        default: AtomicUnlock(); Trap(api, "SetAtomicAdd is not supported for this element type");
    }
    AtomicUnlock();
}

DataCopyParams CountParams(const char* api, uint32_t count, uint32_t elemSize, const TensorRef& local)
{
    uint64_t bytes = uint64_t(count) * elemSize;
    if (bytes % 32 != 0) {
        Trap(api, "misaligned DataCopy: count " + std::to_string(count) + " x " + std::to_string(elemSize) +
                      " bytes is not a multiple of 32 bytes (use DataCopyPad); local buffer " +
                      DescribeBuf(AliveRef(local, api, "local")));
    }
    if (bytes / 32 > 0xffff) {
        Trap(api, "count " + std::to_string(count) + " too large for one DataCopy");
    }
    return DataCopyParams(1, static_cast<uint16_t>(bytes / 32), 0, 0);
}

void CopyGmToLocal(const char* api, const TensorRef& dst, const void* gm, int gmIdx, const DataCopyParams& p)
{
    Op op(api, Pipe::MTE2);
    const BufDesc& b = AliveRef(dst, api, "dst");
    if (b.mem == Mem::UB) {
        RequireCoreKind(api, CoreKind::AIV);
    } else if (b.mem == Mem::L1) {
        RequireCoreKind(api, CoreKind::AIC);
    } else {
        Trap(api, std::string("unsupported path GM -> ") + kMemName[static_cast<int>(b.mem)]);
    }
    CheckCopyParams(api, p);
    if (p.blockCount == 0 || p.blockLen == 0) {
        return;
    }
    uint64_t burst = uint64_t(p.blockLen) * 32;
    uint64_t srcStep = burst + uint64_t(p.srcStride) * 32, dstStep = burst + uint64_t(p.dstStride) * 32;
    const uint8_t* s = GmAccessRef(gm, gmIdx, api, "src", 0, (p.blockCount - 1) * srcStep + burst);
    uint8_t* d = AccessRef(dst, api, "dst", 0, (p.blockCount - 1) * dstStep + burst, Acc::None, 32);
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        std::memcpy(d + i * dstStep, s + i * srcStep, burst);
        WriteLocal(b.mem, dst.off + static_cast<uint32_t>(i * dstStep), static_cast<uint32_t>(burst));
        NoteGmRead(gmIdx, s + i * srcStep, burst);
    }
    CurCore().counters.gmReadBytes += burst * p.blockCount;
}

void CopyLocalToGm(const char* api, ElemKind kind, void* gm, int gmIdx, const TensorRef& src, const DataCopyParams& p)
{
    Op op(api, Pipe::MTE3);
    const BufDesc& b = LocalOn(api, "src", src, Mem::UB);
    RequireCoreKind(api, CoreKind::AIV);
    CheckCopyParams(api, p);
    if (p.blockCount == 0 || p.blockLen == 0) {
        return;
    }
    uint64_t burst = uint64_t(p.blockLen) * 32;
    uint64_t srcStep = burst + uint64_t(p.srcStride) * 32, dstStep = burst + uint64_t(p.dstStride) * 32;
    uint8_t* d = GmAccessRef(gm, gmIdx, api, "dst", 0, (p.blockCount - 1) * dstStep + burst);
    AccessRef(src, api, "src", 0, (p.blockCount - 1) * srcStep + burst, Acc::None, 32);
    (void)b;
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        const uint8_t* s = AccessRef(src, api, "src", i * srcStep, burst, Acc::Read, 32);
        GmStore(api, kind, gmIdx, d + i * dstStep, s, burst);
    }
}

void CopyUbToUb(const char* api, const TensorRef& dst, const TensorRef& src, const DataCopyParams& p)
{
    Op op(api, Pipe::V); // copy_ubuf_to_ubuf runs on the vector unit
    LocalOn(api, "dst", dst, Mem::UB);
    LocalOn(api, "src", src, Mem::UB);
    CheckCopyParams(api, p);
    if (p.blockCount == 0 || p.blockLen == 0) {
        return;
    }
    uint64_t burst = uint64_t(p.blockLen) * 32;
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        const uint8_t* s = AccessRef(src, api, "src", i * (burst + uint64_t(p.srcStride) * 32), burst, Acc::Read, 32);
        uint8_t* d = AccessRef(dst, api, "dst", i * (burst + uint64_t(p.dstStride) * 32), burst, Acc::Write, 32);
        std::memmove(d, s, burst);
    }
}

void CopyNd2Nz(const TensorRef& dst, const void* gm, int gmIdx, uint32_t es, const Nd2NzParams& p)
{
    const char* api = "DataCopy(Nd2Nz)";
    Op op(api, Pipe::MTE2);
    RequireCoreKind(api, CoreKind::AIC);
    LocalOn(api, "dst", dst, Mem::L1);
    // Nd2NzParams ranges (docs 基础API/矩阵计算（ISASI）/矩阵计算的搬入/DataCopy（GMToL1随路转换-ND2NZ搬运）.md);
    // dValue and srcNdMatrixStride [0, 65535] are their uint16_t fields. A zero ndNum,
    // nValue or dValue is a documented NOP.
    InRange(api, "ndNum", p.ndNum, 0, 4095);
    InRange(api, "nValue", p.nValue, 0, 16384);
    InRange(api, "srcDValue", p.srcDValue, 1, 65535);
    InRange(api, "dstNzC0Stride", p.dstNzC0Stride, 1, 16384);
    InRange(api, "dstNzNStride", p.dstNzNStride, 1, 16384);
    InRange(api, "dstNzMatrixStride", p.dstNzMatrixStride, 0, 16384);
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) {
        return;
    }
    const uint32_t c0 = 32 / es;
    const uint32_t colBlocks = (p.dValue + c0 - 1) / c0;
    uint64_t srcSpan = (uint64_t(p.ndNum - 1) * p.srcNdMatrixStride + uint64_t(p.nValue - 1) * p.srcDValue + p.dValue) * es;
    uint64_t dstSpan = uint64_t(p.ndNum - 1) * p.dstNzMatrixStride * es +
                       (uint64_t(colBlocks - 1) * p.dstNzC0Stride + uint64_t(p.nValue - 1) * p.dstNzNStride) * 32 + 32;
    const uint8_t* s = GmAccessRef(gm, gmIdx, api, "src", 0, srcSpan);
    uint8_t* d = AccessRef(dst, api, "dst", 0, dstSpan, Acc::None, 32);
    for (uint32_t i = 0; i < p.ndNum; ++i) {
        for (uint32_t r = 0; r < p.nValue; ++r) {
            const uint8_t* srow = s + (uint64_t(i) * p.srcNdMatrixStride + uint64_t(r) * p.srcDValue) * es;
            NoteGmRead(gmIdx, srow, uint64_t(p.dValue) * es);
            for (uint32_t j = 0; j < colBlocks; ++j) {
                uint64_t dof = uint64_t(i) * p.dstNzMatrixStride * es +
                               (uint64_t(j) * p.dstNzC0Stride + uint64_t(r) * p.dstNzNStride) * 32;
                uint32_t n = std::min<uint32_t>(c0, p.dValue - j * c0);
                std::memcpy(d + dof, srow + uint64_t(j) * c0 * es, n * es);
                std::memset(d + dof + n * es, 0, (c0 - n) * es); // dValue tail: zeros to 32 bytes
                WriteLocal(Mem::L1, dst.off + static_cast<uint32_t>(dof), 32);
            }
        }
    }
    CurCore().counters.gmReadBytes += uint64_t(p.ndNum) * p.nValue * p.dValue * es;
}

void PadGmToUb(const char* api, const TensorRef& dst, const void* gm, int gmIdx, uint32_t es, uint16_t blockCount,
               uint32_t blockLen, uint64_t srcStride, uint64_t dstStride, const PadSpec& pad)
{
    Op op(api, Pipe::MTE2);
    RequireCoreKind(api, CoreKind::AIV);
    LocalOn(api, "dst", dst, Mem::UB);
    CheckPadParams(api, blockCount, blockLen);
    if (blockLen % es != 0) {
        Trap(api, "blockLen " + std::to_string(blockLen) + " is not a multiple of the element size " +
                      std::to_string(es));
    }
    if (pad.left * es > 32 || pad.right * es > 32) {
        Trap(api, "leftPadding/rightPadding exceed 32 bytes");
    }
    if (blockCount == 0 || blockLen == 0) {
        return;
    }
    uint64_t rowBlocks = (pad.left * es + blockLen + pad.right * es + 31) / 32;
    uint64_t srcSpan = (blockCount - 1) * (uint64_t(blockLen) + srcStride) + blockLen;
    uint64_t dstSpan = ((blockCount - 1) * (rowBlocks + dstStride) + rowBlocks) * 32;
    const uint8_t* s = GmAccessRef(gm, gmIdx, api, "src", 0, srcSpan);
    uint8_t* d = AccessRef(dst, api, "dst", 0, dstSpan, Acc::None, 32);
    // Padding and dummy lanes (doc 参数解释): paddingValue when isPad; the row's first
    // element when no padding is requested; unspecified otherwise (poison pattern).
    const bool defined = pad.isPad || (pad.left == 0 && pad.right == 0);
    const uint64_t lanes = rowBlocks * 32 / es;
    for (uint32_t i = 0; i < blockCount; ++i) {
        const uint8_t* srow = s + i * (uint64_t(blockLen) + srcStride);
        NoteGmRead(gmIdx, srow, blockLen);
        uint64_t dof = i * (rowBlocks + dstStride) * 32;
        const uint8_t* fill = pad.isPad ? static_cast<const uint8_t*>(pad.padValue) : srow;
        for (uint64_t l = 0; l < lanes; ++l) {
            uint8_t* lane = d + dof + l * es;
            if (l >= pad.left && l < pad.left + blockLen / es) {
                std::memcpy(lane, srow + (l - pad.left) * es, es);
            } else if (defined) {
                std::memcpy(lane, fill, es);
            } else {
                std::memset(lane, kPoisonByte, es);
            }
        }
        WriteLocal(Mem::UB, dst.off + static_cast<uint32_t>(dof), static_cast<uint32_t>(rowBlocks * 32));
    }
    CurCore().counters.gmReadBytes += uint64_t(blockCount) * blockLen;
}

void PadUbToGm(const char* api, ElemKind kind, uint32_t es, void* gm, int gmIdx, const TensorRef& src,
               uint16_t blockCount, uint32_t blockLen, uint64_t srcStride, uint64_t dstStride)
{
    Op op(api, Pipe::MTE3);
    RequireCoreKind(api, CoreKind::AIV);
    LocalOn(api, "src", src, Mem::UB);
    CheckPadParams(api, blockCount, blockLen);
    if (blockLen % es != 0) {
        Trap(api, "blockLen " + std::to_string(blockLen) + " is not a multiple of the element size " +
                      std::to_string(es));
    }
    if (blockCount == 0 || blockLen == 0) {
        return;
    }
    uint64_t rowBlocks = (uint64_t(blockLen) + 31) / 32;
    uint64_t srcSpan = (blockCount - 1) * (rowBlocks + srcStride) * 32 + blockLen;
    uint64_t dstSpan = (blockCount - 1) * (uint64_t(blockLen) + dstStride) + blockLen;
    uint8_t* d = GmAccessRef(gm, gmIdx, api, "dst", 0, dstSpan);
    AccessRef(src, api, "src", 0, srcSpan, Acc::None, 32);
    for (uint32_t i = 0; i < blockCount; ++i) {
        const uint8_t* s = AccessRef(src, api, "src", i * (rowBlocks + srcStride) * 32, blockLen, Acc::Read, 32);
        GmStore(api, kind, gmIdx, d + i * (uint64_t(blockLen) + dstStride), s, blockLen);
    }
}

} // namespace sim
} // namespace AscendC
