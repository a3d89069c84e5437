// Reductions (归约计算/*.md; kernel_operator_vec_reduce_intf.h and the A2 implementation):
// ReduceMax/ReduceSum (whole count to dst[0]), WholeReduceMax/Sum (one result per repeat),
// BlockReduceMax/Sum (one result per 32-byte block, 8 per repeat). Types: half and float.
//  - Sums use the documented binary tree (ReduceDataBlock 关键特性说明): adjacent pairs,
//    then pairs of pairs; masked-off lanes contribute +0. The ReduceSum count form adds the
//    repeats' trees in order (方式一); the level-0 form puts each repeat's sum in
//    sharedTmpBuffer and applies the tree to those (方式二). Accumulation is fp32; a half
//    result is rounded once per stored value.
//  - ReduceMax writes its per-repeat (max, index) pairs to sharedTmpBuffer, which must hold
//    the documented size (ReduceMax.md); the sim writes the span the A2 implementation
//    writes (ReduceMaxTo), so a scratch that aliases live data corrupts it as on the chip.
//    The ReduceSum count form does not touch it on A2.
//  - Max keeps the first (smallest) index among equal maxima (ReduceRepeat 约束说明) and
//    propagates NaN (the sim's choice; the index is then the first NaN's).
//  - Indices are stored in the value's width, as raw integer bits (uint16 for half,
//    uint32 for float), like the hardware.
//  - WholeReduce dstRepStride unit: one result (value, value+index pair or index) as in
//    table 3 of ReduceRepeat.md; BlockReduce dstRepStride unit: 8 results. Mask 0 is a NOP;
//    a BlockReduce block with no active lane writes nothing.
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

// The tree sum of each repeat of `vals` (`lanes` values each, zero padded), rounded to T.
template <typename T>
std::vector<float> RepeatSums(const std::vector<float>& vals, uint32_t lanes)
{
    std::vector<float> sums;
    float buf[128];
    for (size_t i = 0; i < vals.size(); i += lanes) {
        uint32_t n = static_cast<uint32_t>(std::min<size_t>(lanes, vals.size() - i));
        std::copy(vals.begin() + i, vals.begin() + i + n, buf);
        sums.push_back(static_cast<float>(T(TreeSum(buf, n))));
    }
    return sums;
}

template <typename T>
void StoreValue(const char* api, const LocalTensor<T>& t, const char* role, uint32_t index, float v)
{
    T r = T(v);
    std::memcpy(Access(t, api, role, uint64_t(index) * sizeof(T), sizeof(T), Acc::Write, 1), &r, sizeof(T));
}

// The sharedTmpBuffer a ReduceMax / ReduceSum call writes must hold `need` elements (the
// documented formula); the trap states it.
template <typename T>
void RequireTmp(const char* api, const LocalTensor<T>& tmp, uint32_t need, const char* formula)
{
    Alive(tmp, api, "sharedTmpBuffer");
    if (tmp.GetSize() < need) {
        Trap(api, "sharedTmpBuffer holds " + std::to_string(tmp.GetSize()) + " elements, this call needs " +
                      std::to_string(need) + " (" + formula + ")");
    }
}

// ReduceMax over `vals` taken in R repeats of `lanes` (the last one may be partial: the
// count form's tail), as the A2 implementation does it (impl/basic_api/dav_c220
// kernel_operator_vec_reduce_impl.h): round 1 writes each repeat's (max, index) pair to
// tmp[2r], tmp[2r + 1]; with calIndex and R > 1 round 2 writes its pairs to [s2, s2 + c2)
// and, if c2 > 2, round 3 to [s3, s3 + 2) (s2 = alignUp(2R, epb), c2 = 2 ceil(2R / epr),
// s3 = alignUp(s2 + c2, epb)); a tail leaves (body, tail) in tmp[0..1]. Indices are the
// lane's distance from src in elements; ties keep the first. dst gets the value (and index).
// `rep[i]` is the repeat element i belongs to; lane0[r] the lane of repeat r's first element
// (its index inside the repeat).
template <typename T>
void ReduceMaxTo(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& tmp, const std::vector<float>& vals,
                 const std::vector<uint32_t>& idx, const std::vector<uint32_t>& rep, uint32_t repeats, bool tail,
                 bool calIndex, const std::vector<uint32_t>& lane0)
{
    constexpr uint32_t EPB = 32 / sizeof(T), EPR = 256 / sizeof(T);
    const uint32_t R = repeats;
    auto up = [](uint32_t x, uint32_t a) { return (x + a - 1) / a * a; };
    const uint32_t s2 = up(2 * R, EPB), c2 = 2 * ((2 * R + EPR - 1) / EPR), s3 = up(s2 + c2, EPB);
    uint32_t need = up(2 * R, EPB);
    if (calIndex) {
        need = s2 + up(c2, EPB) + (c2 > 2 ? up(2 * ((c2 + EPR - 1) / EPR), EPB) : 0);
    }
    const bool writesTmp = !(calIndex && R == 1 && !tail);
    if (writesTmp) {
        RequireTmp(api, tmp, std::max(need, EPB), "ReduceMax.md: alignUp(2 x repeats, elements per block), more with calIndex");
    } else {
        Alive(tmp, api, "sharedTmpBuffer");
    }
    std::vector<MaxAcc<T>> per(R); // round 1 keeps the index inside the repeat
    MaxAcc<T> all, bodyAcc;
    std::vector<uint32_t> first(R, UINT32_MAX);
    for (size_t i = 0; i < vals.size(); ++i) {
        first[rep[i]] = std::min(first[rep[i]], idx[i]);
    }
    for (size_t i = 0; i < vals.size(); ++i) {
        per[rep[i]].Add(vals[i], idx[i] - first[rep[i]] + lane0[rep[i]]);
        all.Add(vals[i], idx[i]);
        if (rep[i] + 1 < R) {
            bodyAcc.Add(vals[i], idx[i]);
        }
    }
    auto pair = [&](uint32_t at, const MaxAcc<T>& a) {
        StoreValue(api, tmp, "sharedTmpBuffer", at, a.best);
        T v = T(0.0f);
        StoreIndex<T>(reinterpret_cast<uint8_t*>(&v), a.idx);
        std::memcpy(Access(tmp, api, "sharedTmpBuffer", uint64_t(at + 1) * sizeof(T), sizeof(T), Acc::Write, 1), &v,
                    sizeof(T));
    };
    if (writesTmp) {
        for (uint32_t r = 0; r < R; ++r) {
            pair(2 * r, per[r]);
        }
        if (calIndex && R > 1) {
            for (uint32_t i = 0; i < c2; i += 2) {
                pair(s2 + i, all);
            }
            if (c2 > 2) {
                pair(s3, all);
            }
        }
        if (tail) {
            StoreValue(api, tmp, "sharedTmpBuffer", 0, bodyAcc.best);
            StoreValue(api, tmp, "sharedTmpBuffer", 1, per[R - 1].best);
        }
    }
    StoreValue(api, dst, "dst", 0, all.best);
    if (calIndex) {
        T v = T(0.0f);
        StoreIndex<T>(reinterpret_cast<uint8_t*>(&v), all.idx);
        std::memcpy(Access(dst, api, "dst", sizeof(T), sizeof(T), Acc::Write, 1), &v, sizeof(T));
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

// Count form: R = count / lanes repeats (at least one) plus a tail; normal mask mode, and the
// mask register is left holding an internal pattern.
template <typename T>
__aicore__ inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const int32_t count, bool calIndex = 0)
{
    sim::Op op_("ReduceMax", sim::Pipe::V);
    static_assert(sim::kReduceTypes<T>, "ReduceMax: element type not supported on dav-c220");
    const char* api = "ReduceMax";
    if (count <= 0) {
        return;
    }
    constexpr uint32_t EPR = sim::LanesOf<T>();
    const T* s = reinterpret_cast<const T*>(sim::Access(src, api, "src", 0, uint64_t(count) * sizeof(T), sim::Acc::Read));
    std::vector<float> vals(s, s + count);
    std::vector<uint32_t> idx(count), rep(count);
    for (int32_t i = 0; i < count; ++i) {
        idx[i] = static_cast<uint32_t>(i);
        rep[i] = static_cast<uint32_t>(i) / EPR;
    }
    uint32_t body = static_cast<uint32_t>(count) / EPR;
    bool tail = body > 0 && static_cast<uint32_t>(count) % EPR != 0;
    sim::CurCore().counters.vecElemOps += count;
    const uint32_t repeats = body == 0 ? 1 : body + (tail ? 1 : 0);
    sim::ReduceMaxTo(api, dst, sharedTmpBuffer, vals, idx, rep, repeats, tail, calIndex,
                     std::vector<uint32_t>(repeats, 0));
    sim::MaskLeftBy(api);
}

// Count form on A2 (ReduceSum.md 方式一): one counter-mode instruction, a binary tree inside
// each 256-byte repeat and the repeats summed in order (f32); sharedTmpBuffer is not used.
// isSetMask = false takes the count from the mask register (counter mode).
template <typename T, bool isSetMask = true>
__aicore__ inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const int32_t count)
{
    sim::Op op_("ReduceSum", sim::Pipe::V);
    static_assert(sim::kReduceTypes<T>, "ReduceSum: element type not supported on dav-c220");
    const char* api = "ReduceSum";
    sim::Alive(sharedTmpBuffer, api, "sharedTmpBuffer");
    int64_t n = count;
    if (!isSetMask) {
        sim::LanePlan p = sim::PlanFromCount(api, 0, 1, sim::LanesOf<T>(), false);
        if (!p.counter) {
            sim::Trap(api, "the count form with isSetMask = false reads the element count from the mask register: "
                           "it needs counter mode (SetMaskCount)");
        }
        n = static_cast<int64_t>(p.ActiveCount());
    }
    if (n <= 0) {
        return;
    }
    const T* s = reinterpret_cast<const T*>(sim::Access(src, api, "src", 0, uint64_t(n) * sizeof(T), sim::Acc::Read));
    std::vector<float> sums = sim::RepeatSums<T>(std::vector<float>(s, s + n), sim::LanesOf<T>());
    float acc = 0.0f;
    for (float x : sums) {
        acc += x;
    }
    sim::CurCore().counters.vecElemOps += n;
    sim::StoreValue(api, dst, "dst", 0, acc);
    if (isSetMask) {
        sim::CountFormDone();
    }
}

// Level 0: active lanes of all repeats (blocks contiguous, repeats srcRepStride apart).
// The index of a lane is its distance from src in elements. The mask register is left
// holding an internal pattern.
template <typename T>
__aicore__ inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const int32_t mask,
                                 const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = 0)
{
    sim::Op op_("ReduceMax", sim::Pipe::V);
    static_assert(sim::kReduceTypes<T>, "ReduceMax: element type not supported on dav-c220");
    const char* api = "ReduceMax";
    sim::LanePlan p = sim::PlanFromCount(api, uint64_t(mask), repeatTime, sim::LanesOf<T>(), true);
    if (p.repeats == 0 || p.ActiveCount() == 0) {
        return;
    }
    std::vector<float> vals;
    std::vector<uint32_t> idx, rep, lane0(p.repeats, UINT32_MAX);
    sim::ForLanes(api, src, p, 1, srcRepStride, [&](uint32_t r, uint32_t l, float x) {
        vals.push_back(x);
        idx.push_back(r * uint32_t(srcRepStride) * 32 / sizeof(T) + l);
        rep.push_back(r);
        lane0[r] = std::min(lane0[r], l);
    });
    sim::ReduceMaxTo(api, dst, sharedTmpBuffer, vals, idx, rep, p.repeats, false, calIndex, lane0);
    sim::MaskLeftBy(api);
}

// Level 0 (ReduceSum.md 方式二): a tree inside each repeat, each repeat's sum to tmp[r]
// (the buffer needs alignUp(repeats, elements per block) elements), then a tree over those.
// The mask register is left holding an internal pattern.
template <typename T>
__aicore__ inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const int32_t mask,
                                 const int32_t repeatTime, const int32_t srcRepStride)
{
    sim::Op op_("ReduceSum", sim::Pipe::V);
    static_assert(sim::kReduceTypes<T>, "ReduceSum: element type not supported on dav-c220");
    const char* api = "ReduceSum";
    sim::LanePlan p = sim::PlanFromCount(api, uint64_t(mask), repeatTime, sim::LanesOf<T>(), true);
    if (p.repeats == 0 || p.ActiveCount() == 0) {
        return;
    }
    constexpr uint32_t EPB = 32 / sizeof(T);
    sim::RequireTmp(api, sharedTmpBuffer, (p.repeats + EPB - 1) / EPB * EPB,
                    "ReduceSum.md: alignUp(repeats, elements per block)");
    std::vector<float> perRepeat(size_t(p.repeats) * p.lanes, 0.0f);
    sim::ForLanes(api, src, p, 1, srcRepStride,
                  [&](uint32_t r, uint32_t l, float x) { perRepeat[r * p.lanes + l] = x; });
    std::vector<float> vals = sim::RepeatSums<T>(perRepeat, p.lanes);
    for (uint32_t r = 0; r < p.repeats; ++r) {
        sim::StoreValue(api, sharedTmpBuffer, "sharedTmpBuffer", r, vals[r]);
    }
    while (vals.size() > 1) {
        vals = sim::RepeatSums<T>(vals, sim::LanesOf<T>());
    }
    sim::StoreValue(api, dst, "dst", 0, vals[0]);
    sim::MaskLeftBy(api);
}

namespace sim {
template <typename T>
void WholeReduceMax0(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const LanePlan& p,
                     int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride, ReduceOrder order)
{
    if (p.repeats == 0 || p.ActiveCount() == 0) {
        return; // mask or repeatTime 0: a NOP, dst keeps its value (ReduceRepeat.md)
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
        WriteLocal(Mem::UB, dst.off_ + static_cast<uint32_t>(uint64_t(r) * dstRepStride * unit), unit);
    }
}

template <typename T>
void WholeReduceSum0(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const LanePlan& p,
                     int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride)
{
    if (p.repeats == 0 || p.ActiveCount() == 0) {
        return; // mask or repeatTime 0: a NOP, dst keeps its value (ReduceRepeat.md)
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
        WriteLocal(Mem::UB, dst.off_ + static_cast<uint32_t>(o), sizeof(T));
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
            WriteLocal(Mem::UB, dst.off_ + static_cast<uint32_t>(o), sizeof(T));
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
    sim::Op op_("WholeReduceMax", sim::Pipe::V);
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
    sim::Op op_("WholeReduceMax", sim::Pipe::V);
    static_assert(sim::kReduceTypes<T>, "WholeReduceMax: element type not supported on dav-c220");
    sim::LanePlan p = sim::PlanFromBits("WholeReduceMax", mask, repeatTime, sim::LanesOf<T>(), isSetMask);
    sim::WholeReduceMax0("WholeReduceMax", dst, src, p, dstRepStride, srcBlkStride, srcRepStride, order);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                                      const int32_t repeatTime, const int32_t dstRepStride,
                                      const int32_t srcBlkStride, const int32_t srcRepStride)
{
    sim::Op op_("WholeReduceSum", sim::Pipe::V);
    static_assert(sim::kReduceTypes<T>, "WholeReduceSum: element type not supported on dav-c220");
    sim::LanePlan p = sim::PlanFromCount("WholeReduceSum", uint64_t(mask), repeatTime, sim::LanesOf<T>(), isSetMask);
    sim::WholeReduceSum0("WholeReduceSum", dst, src, p, dstRepStride, srcBlkStride, srcRepStride);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],
                                      const int32_t repeatTime, const int32_t dstRepStride,
                                      const int32_t srcBlkStride, const int32_t srcRepStride)
{
    sim::Op op_("WholeReduceSum", sim::Pipe::V);
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
    sim::Op op_(#NAME, sim::Pipe::V);                                                                                 \
        static_assert(sim::kReduceTypes<T>, #NAME ": element type not supported on dav-c220");                       \
        sim::LanePlan p = sim::PlanFromCount(#NAME, uint64_t(mask), repeatTime, sim::LanesOf<T>(), isSetMask);        \
        sim::BlockReduce0<T, ISMAX>(#NAME, dst, src, p, dstRepStride, srcBlkStride, srcRepStride);                    \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,      \
                                const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,       \
                                const int32_t srcRepStride)                                                           \
    {                                                                                                                 \
    sim::Op op_(#NAME, sim::Pipe::V);                                                                                 \
        static_assert(sim::kReduceTypes<T>, #NAME ": element type not supported on dav-c220");                       \
        sim::LanePlan p = sim::PlanFromBits(#NAME, mask, repeatTime, sim::LanesOf<T>(), isSetMask);                   \
        sim::BlockReduce0<T, ISMAX>(#NAME, dst, src, p, dstRepStride, srcBlkStride, srcRepStride);                    \
    }
SIM_BLOCK_REDUCE(BlockReduceMax, true)
SIM_BLOCK_REDUCE(BlockReduceSum, false)
#undef SIM_BLOCK_REDUCE

} // namespace AscendC
