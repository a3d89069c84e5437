// Compare, Select (比较与选择/Compare.md, Select.md) and Gather (离散与聚合/Gather.md),
// level-2 forms.
//  - Mask register: Select's count form restores normal mode with all lanes on, Gather's
//    leaves its tail mask, Compare's ignores the mask (A2 implementation).
//  - Compare writes one bit per element (bit i of byte i/8, LSB first); count*sizeof(T)
//    must cover whole 256-byte repeats: elements of a trailing partial repeat are not
//    compared (doc: "未对齐部分元素不参与计算").
//  - Select takes src0 where the mask bit is 1, else src1 (tensor or scalar). In
//    VSEL_CMPMASK_SPR mode every repeat reuses the first 256/sizeof(T) mask bits; in the
//    tensor modes repeats consume consecutive mask bits.
//  - Gather: dst[i] = src[(srcBaseAddr + srcOffset[i]) / sizeof(T)], offsets in bytes;
//    every offset must be element-aligned and inside src's buffer.
#pragma once

#include "vec_common.h"

namespace AscendC {
namespace sim {
template <typename T>
inline bool CmpOne(T a, T b, CMPMODE m)
{
    float x = static_cast<float>(a), y = static_cast<float>(b);
    if constexpr (std::is_integral_v<T>) {
        return a == b;
    }
    switch (m) {
        case CMPMODE::LT: return x < y;
        case CMPMODE::GT: return x > y;
        case CMPMODE::EQ: return x == y;
        case CMPMODE::LE: return x <= y;
        case CMPMODE::GE: return x >= y;
        case CMPMODE::NE: return x != y;
    }
    return false;
}
} // namespace sim

template <typename T, typename U>
__aicore__ inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                               CMPMODE cmpMode, uint32_t count)
{
    sim::Op op_("Compare", sim::Pipe::V);
    static_assert(sim::OneOf<T, half, float, int32_t>, "Compare: element type not supported on dav-c220");
    const char* api = "Compare";
    if constexpr (std::is_same_v<T, int32_t>) {
        if (cmpMode != CMPMODE::EQ) {
            sim::Trap(api, "int32_t only supports CMPMODE::EQ on dav-c220");
        }
    }
    uint32_t n = count / sim::LanesOf<T>() * sim::LanesOf<T>();
    if (n == 0) {
        return;
    }
    const T* a = reinterpret_cast<const T*>(sim::Access(src0, api, "src0", 0, uint64_t(n) * sizeof(T), sim::Acc::Read));
    const T* b = reinterpret_cast<const T*>(sim::Access(src1, api, "src1", 0, uint64_t(n) * sizeof(T), sim::Acc::Read));
    uint8_t* d = sim::Access(dst, api, "dst", 0, n / 8, sim::Acc::Write);
    for (uint32_t i = 0; i < n; i += 8) {
        uint8_t byte = 0;
        for (uint32_t k = 0; k < 8; ++k) {
            byte |= static_cast<uint8_t>(sim::CmpOne(a[i + k], b[i + k], cmpMode)) << k;
        }
        d[i / 8] = byte;
    }
    sim::CurCore().counters.vecElemOps += n;
}

namespace sim {
template <typename T, typename U, typename Pick>
void SelectImpl(const char* api, const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                SELMODE mode, uint32_t count, Pick pick1)
{
    if (count == 0) {
        return;
    }
    constexpr uint32_t lanes = LanesOf<T>();
    uint64_t maskBits = mode == SELMODE::VSEL_CMPMASK_SPR ? lanes : count;
    const uint8_t* m = Access(selMask, api, "selMask", 0, (maskBits + 7) / 8, Acc::Read);
    const T* a = reinterpret_cast<const T*>(Access(src0, api, "src0", 0, uint64_t(count) * sizeof(T), Acc::Read));
    T* d = reinterpret_cast<T*>(Access(dst, api, "dst", 0, uint64_t(count) * sizeof(T), Acc::Write));
    for (uint32_t i = 0; i < count; ++i) {
        uint32_t bit = mode == SELMODE::VSEL_CMPMASK_SPR ? i % lanes : i;
        bool take0 = (m[bit / 8] >> (bit % 8)) & 1;
        d[i] = take0 ? a[i] : pick1(i);
    }
    CurCore().counters.vecElemOps += count;
    CountFormDone();
}
} // namespace sim

template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                              const LocalTensor<T>& src1, SELMODE selMode, uint32_t count)
{
    sim::Op op_("Select", sim::Pipe::V);
    static_assert(sim::OneOf<T, half, float>, "Select: element type not supported on dav-c220");
    const char* api = "Select";
    if (selMode == SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        sim::Trap(api, "VSEL_TENSOR_SCALAR_MODE needs a scalar src1");
    }
    if (count == 0) {
        return;
    }
    const T* b = reinterpret_cast<const T*>(sim::Access(src1, api, "src1", 0, uint64_t(count) * sizeof(T), sim::Acc::Read));
    sim::SelectImpl(api, dst, selMask, src0, selMode, count, [b](uint32_t i) { return b[i]; });
}

template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                              T src1, SELMODE selMode, uint32_t count)
{
    sim::Op op_("Select", sim::Pipe::V);
    static_assert(sim::OneOf<T, half, float>, "Select: element type not supported on dav-c220");
    if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        sim::Trap("Select", "a scalar src1 needs VSEL_TENSOR_SCALAR_MODE");
    }
    sim::SelectImpl("Select", dst, selMask, src0, selMode, count, [src1](uint32_t) { return src1; });
}

template <typename T>
__aicore__ inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                              const LocalTensor<uint32_t>& srcOffset, const uint32_t srcBaseAddr, const uint32_t count)
{
    sim::Op op_("Gather", sim::Pipe::V);
    static_assert(sim::OneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>,
                  "Gather: element type not supported on dav-c220");
    const char* api = "Gather";
    if (count == 0) {
        return;
    }
    const uint32_t* off = reinterpret_cast<const uint32_t*>(
        sim::Access(srcOffset, api, "srcOffset", 0, uint64_t(count) * 4, sim::Acc::Read));
    const uint8_t* arena = sim::ArenaOf(sim::Mem::UB).data;
    std::vector<T> out(count);
    for (uint32_t i = 0; i < count; ++i) {
        uint64_t byte = uint64_t(srcBaseAddr) + off[i];
        if (byte % sizeof(T) != 0) {
            sim::Trap(api, "srcOffset[" + std::to_string(i) + "] = " + std::to_string(off[i]) +
                               " bytes is not aligned to the element size");
        }
        sim::Access(src, api, "src", byte, sizeof(T), sim::Acc::Read, ONE_BLK_SIZE);
        std::memcpy(&out[i], arena + src.off_ + byte, sizeof(T));
    }
    T* d = reinterpret_cast<T*>(sim::Access(dst, api, "dst", 0, uint64_t(count) * sizeof(T), sim::Acc::Write));
    std::memcpy(d, out.data(), uint64_t(count) * sizeof(T));
    sim::CurCore().counters.vecElemOps += count;
    sim::MaskLeftBy(api); // the count form runs level-0 repeats and leaves the tail's mask
}

} // namespace AscendC
