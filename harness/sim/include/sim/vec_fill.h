// Duplicate (数据填充/Duplicate.md) and Brcb (数据填充/Brcb.md): Brcb takes 8 source
// elements per repeat and fills one 32-byte block with each (dstBlkStride 0 acts as 1,
// as the doc's reference code says).
#pragma once

#include "vec_common.h"

namespace AscendC {

struct BrcbRepeatParams {
    __aicore__ BrcbRepeatParams() {}
    __aicore__ BrcbRepeatParams(const sim::Wide dstBlkStrideIn, const sim::Wide dstRepStrideIn)
        : dstRepStride(sim::Fit<uint16_t>("BrcbRepeatParams", "dstRepStride", dstRepStrideIn)),
          dstBlkStride(sim::Fit<uint16_t>("BrcbRepeatParams", "dstBlkStride", dstBlkStrideIn))
    {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

namespace sim {
template <typename T>
constexpr bool kDupTypes = OneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;

template <typename T>
void Duplicate0(const char* api, const LocalTensor<T>& dst, T v, const LanePlan& p, uint32_t blk, uint32_t rep)
{
    if (p.repeats == 0) {
        return;
    }
    VecOperand d = Operand(api, "dst", dst, blk, rep, p);
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint32_t l = 0; l < p.lanes; ++l) {
            if (p.Active(r, l)) {
                uint32_t o = d.LaneOff(r, l);
                d.Store<T>(o, v);
                MarkLane(o, sizeof(T));
            }
        }
    }
    CurCore().counters.vecElemOps += p.ActiveCount();
    WorkVector(p.repeats, p.lanes);
}
} // namespace sim

template <typename T>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count)
{
    sim::Op op_("Duplicate", sim::Pipe::V);
    static_assert(sim::kDupTypes<T>, "Duplicate: element type not supported on dav-c220");
    if (count <= 0) {
        return;
    }
    if (sim::MemOfTensor(dst, "Duplicate", "dst") != sim::Mem::UB) {
        sim::Trap("Duplicate", "vector operands must be in UB");
    }
    T* d = reinterpret_cast<T*>(sim::Access(dst, "Duplicate", "dst", 0, uint64_t(count) * sizeof(T), sim::Acc::Write));
    for (int32_t i = 0; i < count; ++i) {
        d[i] = scalarValue;
    }
    sim::CurCore().counters.vecElemOps += count;
    sim::CountFormDone();
}
template <typename T, bool isSetMask = true>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask,
                                 const sim::Wide repeatTime, const sim::Wide dstBlockStride,
                                 const sim::Wide dstRepeatStride)
{
    sim::Op op_("Duplicate", sim::Pipe::V);
    static_assert(sim::kDupTypes<T>, "Duplicate: element type not supported on dav-c220");
    sim::LanePlan p = sim::PlanFromCount("Duplicate", mask, repeatTime, sim::LanesOf<T>(), isSetMask);
    sim::Duplicate0("Duplicate", dst, scalarValue, p, sim::Fit<uint16_t>("Duplicate", "dstBlockStride", dstBlockStride),
                    sim::Fit<uint8_t>("Duplicate", "dstRepeatStride", dstRepeatStride));
}
template <typename T, bool isSetMask = true>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const uint64_t mask[],
                                 const sim::Wide repeatTime, const sim::Wide dstBlockStride,
                                 const sim::Wide dstRepeatStride)
{
    sim::Op op_("Duplicate", sim::Pipe::V);
    static_assert(sim::kDupTypes<T>, "Duplicate: element type not supported on dav-c220");
    sim::LanePlan p = sim::PlanFromBits("Duplicate", mask, repeatTime, sim::LanesOf<T>(), isSetMask);
    sim::Duplicate0("Duplicate", dst, scalarValue, p, sim::Fit<uint16_t>("Duplicate", "dstBlockStride", dstBlockStride),
                    sim::Fit<uint8_t>("Duplicate", "dstRepeatStride", dstRepeatStride));
}

template <typename T>
__aicore__ inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const sim::Wide repeatTimeIn,
                            const BrcbRepeatParams& repeatParams)
{
    // repeatTime [0, 255] (docs 基础API/Memory矢量计算/数据填充/Brcb.md), a uint8_t parameter widened
    const uint8_t repeatTime = sim::Fit<uint8_t>("Brcb", "repeatTime", repeatTimeIn);
    sim::Op op_("Brcb", sim::Pipe::V);
    static_assert(sim::kDupTypes<T>, "Brcb: element type not supported on dav-c220");
    const char* api = "Brcb";
    ResetMask(); // the A2 implementation resets the mask before the instruction
    if (repeatTime == 0) {
        return;
    }
    if (sim::MemOfTensor(dst, api, "dst") != sim::Mem::UB || sim::MemOfTensor(src, api, "src") != sim::Mem::UB) {
        sim::Trap(api, "vector operands must be in UB");
    }
    uint32_t blk = repeatParams.dstBlkStride == 0 ? 1 : repeatParams.dstBlkStride;
    uint32_t rep = repeatParams.dstRepStride;
    const T* s = reinterpret_cast<const T*>(
        sim::Access(src, api, "src", 0, uint64_t(repeatTime) * 8 * sizeof(T), sim::Acc::Read));
    uint64_t span = (uint64_t(repeatTime - 1) * rep + 7ull * blk) * 32 + 32;
    uint8_t* d = sim::Access(dst, api, "dst", 0, span, sim::Acc::None);
    constexpr uint32_t perBlock = 32 / sizeof(T);
    for (uint32_t i = 0; i < repeatTime; ++i) {
        for (uint32_t j = 0; j < 8; ++j) {
            uint64_t o = (uint64_t(i) * rep + uint64_t(j) * blk) * 32;
            T v = s[i * 8 + j];
            for (uint32_t e = 0; e < perBlock; ++e) {
                std::memcpy(d + o + e * sizeof(T), &v, sizeof(T));
            }
            sim::WriteLocal(sim::Mem::UB, dst.off_ + static_cast<uint32_t>(o), 32);
        }
    }
    sim::CurCore().counters.vecElemOps += uint64_t(repeatTime) * 8 * perBlock;
}

} // namespace AscendC
