// Reductions (归约计算/*.md; kernel_operator_vec_reduce_intf.h): ReduceMax/ReduceSum
// (whole count to dst[0]), WholeReduceMax/Sum (one result per repeat), BlockReduceMax/Sum
// (one result per 32-byte block, 8 per repeat). Types: half and float.
//  - Sums use the documented binary tree (ReduceDataBlock 关键特性说明): adjacent pairs,
//    then pairs of pairs; masked-off lanes contribute +0. ReduceSum applies the same tree
//    to the per-repeat sums until one value is left. Accumulation is fp32; a half result
//    is rounded once per stored value.
//  - Max keeps the first (smallest) index among equal maxima (ReduceRepeat 约束说明) and
//    propagates NaN (the sim's choice; the index is then the first NaN's).
//  - Indices are stored in the value's width, as raw integer bits (uint16 for half,
//    uint32 for float), like the hardware.
//  - WholeReduce dstRepStride unit: one result (value, value+index pair or index) as in
//    table 3 of ReduceRepeat.md; BlockReduce dstRepStride unit: 8 results.
#pragma once

#include "vec_common.h"

namespace AscendC {
namespace sim {

template <typename T>
constexpr bool kReduceTypes = OneOf<T, half, float>;

// Binary-tree sum of n values (n <= 128), padded with zeros to a power of two.
inline float TreeSum(float* v, uint32_t n)
{
    uint32_t w = 1;
    while (w < n) {
        w <<= 1;
    }
    for (uint32_t i = n; i < w; ++i) {
        v[i] = 0.0f;
    }
    for (uint32_t step = w; step > 1; step >>= 1) {
        for (uint32_t i = 0; i < step / 2; ++i) {
            v[i] = v[2 * i] + v[2 * i + 1];
        }
    }
    return n == 0 ? 0.0f : v[0];
}

template <typename T>
struct MaxAcc {
    float best = 0;
    uint32_t idx = 0;
    bool any = false;
    bool nan = false;
    void Add(float x, uint32_t i)
    {
        if (nan) {
            return;
        }
        if (std::isnan(x)) {
            nan = true;
            best = x;
            idx = i;
            return;
        }
        if (!any || x > best) {
            best = x;
            idx = i;
            any = true;
        }
    }
};

template <typename T>
inline void StoreIndex(uint8_t* p, uint32_t idx)
{
    if constexpr (sizeof(T) == 2) {
        uint16_t v = static_cast<uint16_t>(idx);
        std::memcpy(p, &v, 2);
    } else {
        std::memcpy(p, &idx, 4);
    }
}

template <typename T>
void ReduceSumAll(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& tmp, std::vector<float>& vals)
{
    Alive(tmp, api, "sharedTmpBuffer");
    constexpr uint32_t L = LanesOf<T>();
    float buf[128];
    while (vals.size() > 1) {
        std::vector<float> next;
        for (size_t i = 0; i < vals.size(); i += L) {
            uint32_t n = static_cast<uint32_t>(std::min<size_t>(L, vals.size() - i));
            std::copy(vals.begin() + i, vals.begin() + i + n, buf);
            next.push_back(static_cast<float>(T(TreeSum(buf, n))));
        }
        vals.swap(next);
    }
    T r = T(vals.empty() ? 0.0f : vals[0]);
    std::memcpy(Access(dst, api, "dst", 0, sizeof(T), Acc::Write, sizeof(T)), &r, sizeof(T));
}

template <typename T>
void ReduceMaxAll(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& tmp, const MaxAcc<T>& acc,
                  bool calIndex)
{
    Alive(tmp, api, "sharedTmpBuffer");
    uint8_t* d = Access(dst, api, "dst", 0, calIndex ? 2 * sizeof(T) : sizeof(T), Acc::Write, sizeof(T));
    T v = T(acc.best);
    std::memcpy(d, &v, sizeof(T));
    if (calIndex) {
        StoreIndex<T>(d + sizeof(T), acc.idx);
    }
}

// Collects the active lanes of a level-0 reduce (contiguous blocks, srcRepStride repeats).
template <typename T, typename F>
void ForLanes(const char* api, const LocalTensor<T>& src, const LanePlan& p, uint32_t blk, uint32_t rep, F f)
{
    if (p.repeats == 0) {
        return;
    }
    VecOperand s = Operand(api, "src", src, blk, rep, p);
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint32_t l = 0; l < p.lanes; ++l) {
            if (p.Active(r, l)) {
                uint32_t o = s.LaneOff(r, l);
                CheckLane(api, "src", s, o);
                f(r, l, static_cast<float>(s.Load<T>(o)));
            }
        }
    }
    CurCore().counters.vecElemOps += p.ActiveCount();
}

} // namespace sim

template <typename T>
__aicore__ inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const int32_t count, bool calIndex = 0)
{
    static_assert(sim::kReduceTypes<T>, "ReduceMax: element type not supported on dav-c220");
    const char* api = "ReduceMax";
    if (count <= 0) {
        return;
    }
    const T* s = reinterpret_cast<const T*>(sim::Access(src, api, "src", 0, uint64_t(count) * sizeof(T), sim::Acc::Read));
    sim::MaxAcc<T> acc;
    for (int32_t i = 0; i < count; ++i) {
        acc.Add(static_cast<float>(s[i]), i);
    }
    sim::CurCore().counters.vecElemOps += count;
    sim::ReduceMaxAll(api, dst, sharedTmpBuffer, acc, calIndex);
}

template <typename T, bool isSetMask = true>
__aicore__ inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const int32_t count)
{
    static_assert(sim::kReduceTypes<T>, "ReduceSum: element type not supported on dav-c220");
    const char* api = "ReduceSum";
    if (count <= 0) {
        return;
    }
    const T* s = reinterpret_cast<const T*>(sim::Access(src, api, "src", 0, uint64_t(count) * sizeof(T), sim::Acc::Read));
    std::vector<float> vals(s, s + count);
    sim::CurCore().counters.vecElemOps += count;
    sim::ReduceSumAll(api, dst, sharedTmpBuffer, vals);
}

// Level 0: active lanes of all repeats (blocks contiguous, repeats srcRepStride apart).
// The index of a lane is r * lanesPerRepeat + lane.
template <typename T>
__aicore__ inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const uint64_t mask,
                                 const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = 0)
{
    static_assert(sim::kReduceTypes<T>, "ReduceMax: element type not supported on dav-c220");
    sim::LanePlan p = sim::PlanFromCount("ReduceMax", mask, repeatTime, sim::LanesOf<T>(), true);
    sim::MaxAcc<T> acc;
    sim::ForLanes("ReduceMax", src, p, 1, srcRepStride,
                  [&](uint32_t r, uint32_t l, float x) { acc.Add(x, r * p.lanes + l); });
    sim::ReduceMaxAll("ReduceMax", dst, sharedTmpBuffer, acc, calIndex);
}

template <typename T, bool isSetMask = true>
__aicore__ inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const uint64_t mask,
                                 const int32_t repeatTime, const int32_t srcRepStride)
{
    static_assert(sim::kReduceTypes<T>, "ReduceSum: element type not supported on dav-c220");
    sim::LanePlan p = sim::PlanFromCount("ReduceSum", mask, repeatTime, sim::LanesOf<T>(), isSetMask);
    std::vector<float> perRepeat(p.repeats * p.lanes, 0.0f);
    sim::ForLanes("ReduceSum", src, p, 1, srcRepStride,
                  [&](uint32_t r, uint32_t l, float x) { perRepeat[r * p.lanes + l] = x; });
    std::vector<float> vals;
    float buf[128];
    for (uint32_t r = 0; r < p.repeats; ++r) {
        std::copy(perRepeat.begin() + r * p.lanes, perRepeat.begin() + (r + 1) * p.lanes, buf);
        vals.push_back(static_cast<float>(T(sim::TreeSum(buf, p.lanes))));
    }
    sim::ReduceSumAll("ReduceSum", dst, sharedTmpBuffer, vals);
}

namespace sim {
template <typename T>
void WholeReduceMax0(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const LanePlan& p,
                     int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride, ReduceOrder order)
{
    if (p.repeats == 0) {
        return;
    }
    uint32_t unit = (order == ReduceOrder::ORDER_ONLY_VALUE) ? sizeof(T)
                    : (order == ReduceOrder::ORDER_ONLY_INDEX) ? 4
                                                                : 2 * sizeof(T);
    std::vector<MaxAcc<T>> acc(p.repeats);
    ForLanes(api, src, p, srcBlkStride, srcRepStride,
             [&](uint32_t r, uint32_t l, float x) { acc[r].Add(x, l); });
    uint8_t* d = Access(dst, api, "dst", 0, uint64_t(p.repeats - 1) * dstRepStride * unit + unit, Acc::None, unit);
    for (uint32_t r = 0; r < p.repeats; ++r) {
        uint8_t* o = d + uint64_t(r) * dstRepStride * unit;
        T v = T(acc[r].best);
        switch (order) {
            case ReduceOrder::ORDER_VALUE_INDEX:
                std::memcpy(o, &v, sizeof(T));
                StoreIndex<T>(o + sizeof(T), acc[r].idx);
                break;
            case ReduceOrder::ORDER_INDEX_VALUE:
                StoreIndex<T>(o, acc[r].idx);
                std::memcpy(o + sizeof(T), &v, sizeof(T));
                break;
            case ReduceOrder::ORDER_ONLY_VALUE: std::memcpy(o, &v, sizeof(T)); break;
            case ReduceOrder::ORDER_ONLY_INDEX: std::memcpy(o, &acc[r].idx, 4); break;
        }
        MarkWritten(Mem::UB, dst.off_ + static_cast<uint32_t>(uint64_t(r) * dstRepStride * unit), unit);
    }
}

template <typename T>
void WholeReduceSum0(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const LanePlan& p,
                     int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride)
{
    if (p.repeats == 0) {
        return;
    }
    std::vector<float> lanes(p.repeats * p.lanes, 0.0f);
    ForLanes(api, src, p, srcBlkStride, srcRepStride,
             [&](uint32_t r, uint32_t l, float x) { lanes[r * p.lanes + l] = x; });
    uint8_t* d = Access(dst, api, "dst", 0, uint64_t(p.repeats - 1) * dstRepStride * sizeof(T) + sizeof(T), Acc::None,
                        sizeof(T));
    float buf[128];
    for (uint32_t r = 0; r < p.repeats; ++r) {
        std::copy(lanes.begin() + r * p.lanes, lanes.begin() + (r + 1) * p.lanes, buf);
        T v = T(TreeSum(buf, p.lanes));
        uint64_t o = uint64_t(r) * dstRepStride * sizeof(T);
        std::memcpy(d + o, &v, sizeof(T));
        MarkWritten(Mem::UB, dst.off_ + static_cast<uint32_t>(o), sizeof(T));
    }
}

template <typename T, bool isMax>
void BlockReduce0(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const LanePlan& p,
                  int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride)
{
    if (p.repeats == 0) {
        return;
    }
    constexpr uint32_t perBlock = 32 / sizeof(T);
    std::vector<float> lanes(p.repeats * p.lanes, 0.0f);
    std::vector<uint8_t> active(p.repeats * p.lanes, 0);
    ForLanes(api, src, p, srcBlkStride, srcRepStride, [&](uint32_t r, uint32_t l, float x) {
        lanes[r * p.lanes + l] = x;
        active[r * p.lanes + l] = 1;
    });
    uint64_t unit = 8 * sizeof(T);
    uint8_t* d = Access(dst, api, "dst", 0, uint64_t(p.repeats - 1) * dstRepStride * unit + unit, Acc::None,
                        sizeof(T) == 2 ? 16 : 32);
    float buf[128];
    for (uint32_t r = 0; r < p.repeats; ++r) {
        for (uint32_t b = 0; b < 8; ++b) {
            uint32_t base = r * p.lanes + b * perBlock;
            bool any = false;
            MaxAcc<T> acc;
            for (uint32_t e = 0; e < perBlock; ++e) {
                buf[e] = lanes[base + e];
                if (active[base + e]) {
                    any = true;
                    acc.Add(lanes[base + e], e);
                }
            }
            if (!any) {
                continue; // a block without active lanes produces no result
            }
            T v = isMax ? T(acc.best) : T(TreeSum(buf, perBlock));
            uint64_t o = uint64_t(r) * dstRepStride * unit + b * sizeof(T);
            std::memcpy(d + o, &v, sizeof(T));
            MarkWritten(Mem::UB, dst.off_ + static_cast<uint32_t>(o), sizeof(T));
        }
    }
}
} // namespace sim

template <typename T, bool isSetMask = true>
__aicore__ inline void WholeReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                                      const int32_t repeatTime, const int32_t dstRepStride,
                                      const int32_t srcBlkStride, const int32_t srcRepStride,
                                      ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX)
{
    static_assert(sim::kReduceTypes<T>, "WholeReduceMax: element type not supported on dav-c220");
    sim::LanePlan p = sim::PlanFromCount("WholeReduceMax", uint64_t(mask), repeatTime, sim::LanesOf<T>(), isSetMask);
    sim::WholeReduceMax0("WholeReduceMax", dst, src, p, dstRepStride, srcBlkStride, srcRepStride, order);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void WholeReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],
                                      const int32_t repeatTime, const int32_t dstRepStride,
                                      const int32_t srcBlkStride, const int32_t srcRepStride,
                                      ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX)
{
    static_assert(sim::kReduceTypes<T>, "WholeReduceMax: element type not supported on dav-c220");
    sim::LanePlan p = sim::PlanFromBits("WholeReduceMax", mask, repeatTime, sim::LanesOf<T>(), isSetMask);
    sim::WholeReduceMax0("WholeReduceMax", dst, src, p, dstRepStride, srcBlkStride, srcRepStride, order);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                                      const int32_t repeatTime, const int32_t dstRepStride,
                                      const int32_t srcBlkStride, const int32_t srcRepStride)
{
    static_assert(sim::kReduceTypes<T>, "WholeReduceSum: element type not supported on dav-c220");
    sim::LanePlan p = sim::PlanFromCount("WholeReduceSum", uint64_t(mask), repeatTime, sim::LanesOf<T>(), isSetMask);
    sim::WholeReduceSum0("WholeReduceSum", dst, src, p, dstRepStride, srcBlkStride, srcRepStride);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],
                                      const int32_t repeatTime, const int32_t dstRepStride,
                                      const int32_t srcBlkStride, const int32_t srcRepStride)
{
    static_assert(sim::kReduceTypes<T>, "WholeReduceSum: element type not supported on dav-c220");
    sim::LanePlan p = sim::PlanFromBits("WholeReduceSum", mask, repeatTime, sim::LanesOf<T>(), isSetMask);
    sim::WholeReduceSum0("WholeReduceSum", dst, src, p, dstRepStride, srcBlkStride, srcRepStride);
}

#define SIM_BLOCK_REDUCE(NAME, ISMAX)                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,      \
                                const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,          \
                                const int32_t srcRepStride)                                                           \
    {                                                                                                                 \
        static_assert(sim::kReduceTypes<T>, #NAME ": element type not supported on dav-c220");                       \
        sim::LanePlan p = sim::PlanFromCount(#NAME, uint64_t(mask), repeatTime, sim::LanesOf<T>(), isSetMask);        \
        sim::BlockReduce0<T, ISMAX>(#NAME, dst, src, p, dstRepStride, srcBlkStride, srcRepStride);                    \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,      \
                                const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,       \
                                const int32_t srcRepStride)                                                           \
    {                                                                                                                 \
        static_assert(sim::kReduceTypes<T>, #NAME ": element type not supported on dav-c220");                       \
        sim::LanePlan p = sim::PlanFromBits(#NAME, mask, repeatTime, sim::LanesOf<T>(), isSetMask);                   \
        sim::BlockReduce0<T, ISMAX>(#NAME, dst, src, p, dstRepStride, srcBlkStride, srcRepStride);                    \
    }
SIM_BLOCK_REDUCE(BlockReduceMax, true)
SIM_BLOCK_REDUCE(BlockReduceSum, false)
#undef SIM_BLOCK_REDUCE

} // namespace AscendC
