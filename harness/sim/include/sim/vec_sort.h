// Sorting and gather-mask vector APIs of dav-c220 (Atlas A2 / 910B), from the asc-devkit docs
// 基础API/Memory矢量计算/排序组合（ISASI）/Sort32.md, MrgSort.md, GetMrgSortResult.md and
// 比较与选择/GatherMask.md (headers kernel_operator_proposal_intf.h,
// kernel_operator_vec_gather_mask_intf.h, kernel_struct_proposal.h, kernel_struct_gather.h).
//
// Sorted-struct layout (Sort32.md, "排布方式一" of the high-level Sort.md, used by A2): one
// 8-byte (score, index) element; index (uint32_t) in the high 4 bytes, score in the low 4
// bytes (float) or the low 2 bytes (half; bytes 2..3 reserved, the sim writes 0 there).
//  - Sort32: repeatTime ∈ [0, 255] (0 is a NOP on A2) sorts 32 elements per repeat,
//    descending; src0 advances 32 scores, src1 128 bytes, dst 256 bytes per repeat; repeats
//    are not sorted against each other. Equal scores keep their input order ("score[i] ==
//    score[j] 且 i > j, 将优先选取 score[j]"). Alignment: every tensor start is 32-byte aligned
//    and, as the constraint section states per iteration, src0 128 B (float) / 64 B (half),
//    src1 128 B and dst 256 B: the sim requires the starts to be aligned to those sizes.
//  - MrgSort: merges 2..4 sorted lists (validBit 3, 7, 15) of elementLengths[i] ∈ [0, 4095]
//    elements into dst, descending. Ties: the doc's rule on input order, read as the order of
//    the concatenation src1 ‖ src2 ‖ src3 ‖ src4 (MrgSort-93.md: "index的顺序与输入顺序一致"),
//    i.e. a stable merge: an earlier list wins ties. ifExhaustedSuspension stops as soon as
//    one valid list is exhausted; GetMrgSortResult then gives the elements taken from each
//    list. repeatTimes ∈ [0, 255] (0: NOP on A2); more than 1 repeat needs 4 equal, contiguous
//    lists, validBit 15 and no suspension (doc), each repeat moving by 4 lists. dst 32-byte
//    aligned, sources 8-byte aligned, no source may overlap dst. A source list that is not
//    sorted (descending) traps: the doc requires sorted input.
//  - NaN: the docs do not say where a NaN score sorts; Sort32 and MrgSort trap on one (sim
//    decision, harness/sim/README.md). -inf and +inf sort as the extreme values; -0 == +0 (a
//    tie, input order).
//  - GatherMask: dst receives, packed from its start, the src0 elements whose mask bit is 1;
//    rsvdCnt is their number. Built-in patterns 1..7 (A2 supports all seven): 1 even lanes,
//    2 odd lanes, 3..6 lane 4k+0..3, 7 all, the same in every repeat. A user pattern tensor
//    (uint16_t for 2-byte T, uint32_t for 4-byte T) is read bit by bit (bit b of byte b/8,
//    LSB first: 0x99999999 takes lanes 0 and 3 of each 4), consumed continuously inside a
//    repeat, src1RepeatStride blocks between repeats. reduceMode false (Normal): each repeat is
//    256 bytes, mask ignored. reduceMode true (Counter, A2 "配置方式一"): each repeat takes
//    `mask` elements (mask ∈ [1, 2^32 - 1]), repeatTimes × mask in all. src0 lane j of repeat
//    r: r·src0RepeatStride + (j·sizeof(T)/32)·src0BlockStride blocks, + the byte inside the
//    block. repeatTimes ≤ 255. dst may be src0 itself (the doc's in-place example); any other
//    overlap of dst with what the call reads traps. The call leaves the mask register in
//    normal mode holding an internal value (A2 implementation), like Gather.
#pragma once

#include <algorithm>

#include "vec_common.h"

namespace AscendC {

constexpr int32_t MRG_SORT_ELEMENT_LEN = 4;

struct MrgSort4Info {
    __aicore__ MrgSort4Info() {}
    __aicore__ MrgSort4Info(const uint16_t elementLengthsIn[MRG_SORT_ELEMENT_LEN], const bool ifExhaustedSuspensionIn,
                            const sim::Wide validBitIn, const sim::Wide repeatTimesIn)
        : ifExhaustedSuspension(ifExhaustedSuspensionIn),
          validBit(sim::Fit<uint16_t>("MrgSort4Info", "validBit", validBitIn)),
          repeatTimes(sim::Fit<uint8_t>("MrgSort4Info", "repeatTimes", repeatTimesIn))
    {
        for (int32_t i = 0; i < MRG_SORT_ELEMENT_LEN; ++i) {
            elementLengths[i] = elementLengthsIn[i];
        }
    }
    uint16_t elementLengths[MRG_SORT_ELEMENT_LEN] = {0};
    bool ifExhaustedSuspension = false;
    uint16_t validBit = 0;
    uint8_t repeatTimes = 1;
};

template <typename T>
struct MrgSortSrcList {
    __aicore__ MrgSortSrcList() {}
    __aicore__ MrgSortSrcList(const LocalTensor<T>& src1In, const LocalTensor<T>& src2In, const LocalTensor<T>& src3In,
                              const LocalTensor<T>& src4In)
    {
        src1 = src1In[0];
        src2 = src2In[0];
        src3 = src3In[0];
        src4 = src4In[0];
    }
    LocalTensor<T> src1;
    LocalTensor<T> src2;
    LocalTensor<T> src3;
    LocalTensor<T> src4;
};

enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
// __NPU_ARCH__ 2201 (dav-c220) selects VERSION_V2 in kernel_struct_gather.h.
const GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V2;

struct GatherMaskParams {
    __aicore__ GatherMaskParams() {}
    __aicore__ GatherMaskParams(const sim::Wide src0BlockStrideIn, const sim::Wide repeatTimesIn,
                                const sim::Wide src0RepeatStrideIn, const sim::Wide src1RepeatStrideIn)
        : src0BlockStride(sim::Fit<uint8_t>("GatherMaskParams", "src0BlockStride", src0BlockStrideIn)),
          repeatTimes(sim::Fit<uint16_t>("GatherMaskParams", "repeatTimes", repeatTimesIn)),
          src0RepeatStride(sim::Fit<uint16_t>("GatherMaskParams", "src0RepeatStride", src0RepeatStrideIn)),
          src1RepeatStride(sim::Fit<uint8_t>("GatherMaskParams", "src1RepeatStride", src1RepeatStrideIn))
    {}
    uint8_t src0BlockStride = DEFAULT_BLK_STRIDE;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepeatStride = DEFAULT_REPEAT_STRIDE;
};

namespace sim {

// The score of a sorted-struct element (8 bytes at p).
template <typename T>
inline float SortScore(const uint8_t* p)
{
    T v;
    std::memcpy(&v, p, sizeof(T));
    return static_cast<float>(v);
}

inline void RequireNoNan(const char* api, const char* role, float s, uint64_t at)
{
    if (std::isnan(s)) {
        Trap(api, std::string(role) + "[" + std::to_string(at) +
                      "] is NaN: the docs leave the order of NaN scores unspecified (the sim traps, see "
                      "harness/sim/README.md)");
    }
}

inline void RequireStartAligned(const char* api, const char* role, uint32_t off, uint32_t align, const char* why)
{
    if (off % align != 0) {
        Trap(api, std::string(role) + ": misaligned address: UB offset " + std::to_string(off) + " is not " +
                      std::to_string(align) + "-byte aligned (" + why + ")");
    }
}

template <typename T, typename U>
inline bool Overlap(const LocalTensor<T>& a, uint64_t aLen, const LocalTensor<U>& b, uint64_t bLen)
{
    if (aLen == 0 || bLen == 0 || Alive(a, "", "").mem != Alive(b, "", "").mem) {
        return false;
    }
    uint64_t a0 = a.off_, b0 = b.off_;
    return a0 < b0 + bLen && b0 < a0 + aLen;
}

} // namespace sim

template <typename T>
__aicore__ inline void Sort32(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<uint32_t>& src1,
                              const int32_t repeatTime)
{
    sim::Op op_("Sort32", sim::Pipe::V);
    static_assert(sim::OneOf<T, half, float>, "Sort32: element type not supported on dav-c220 (half, float)");
    const char* api = "Sort32";
    if (repeatTime < 0 || repeatTime > 255) {
        sim::Trap(api, "repeatTime " + std::to_string(repeatTime) + " outside [0, 255] (Sort32.md)");
    }
    if (sim::Alive(dst, api, "dst").mem != sim::Mem::UB || sim::Alive(src0, api, "src0").mem != sim::Mem::UB ||
        sim::Alive(src1, api, "src1").mem != sim::Mem::UB) {
        sim::Trap(api, "vector operands must be in UB");
    }
    sim::RequireStartAligned(api, "src0", src0.off_, 32 * sizeof(T),
                             "Sort32.md: each iteration's src0 must be 128 B (float) / 64 B (half) aligned");
    sim::RequireStartAligned(api, "src1", src1.off_, 128, "Sort32.md: each iteration's src1 must be 128 B aligned");
    sim::RequireStartAligned(api, "dst", dst.off_, 256, "Sort32.md: each iteration's dst must be 256 B aligned");
    if (repeatTime == 0) {
        return; // A2: NOP, dst not written
    }
    const uint32_t n = 32u * static_cast<uint32_t>(repeatTime);
    if (sim::Overlap(dst, uint64_t(n) * 8, src0, uint64_t(n) * sizeof(T)) ||
        sim::Overlap(dst, uint64_t(n) * 8, src1, uint64_t(n) * 4)) {
        sim::Trap(api, "dst overlaps a source (address overlap is not supported)");
    }
    const uint8_t* s = sim::Access(src0, api, "src0", 0, uint64_t(n) * sizeof(T), sim::Acc::Read);
    const uint8_t* ix = sim::Access(src1, api, "src1", 0, uint64_t(n) * 4, sim::Acc::Read);
    std::vector<uint8_t> out(uint64_t(n) * 8, 0);
    std::vector<float> score(n);
    for (uint32_t i = 0; i < n; ++i) {
        score[i] = sim::SortScore<T>(s + uint64_t(i) * sizeof(T));
        sim::RequireNoNan(api, "src0", score[i], i);
    }
    uint32_t order[32];
    for (uint32_t r = 0; r < static_cast<uint32_t>(repeatTime); ++r) {
        for (uint32_t i = 0; i < 32; ++i) {
            order[i] = r * 32 + i;
        }
        std::stable_sort(order, order + 32, [&](uint32_t a, uint32_t b) { return score[a] > score[b]; });
        for (uint32_t i = 0; i < 32; ++i) {
            uint8_t* o = out.data() + (uint64_t(r) * 32 + i) * 8;
            std::memcpy(o, s + uint64_t(order[i]) * sizeof(T), sizeof(T));
            std::memcpy(o + 4, ix + uint64_t(order[i]) * 4, 4);
        }
    }
    std::memcpy(sim::Access(dst, api, "dst", 0, out.size(), sim::Acc::Write), out.data(), out.size());
    sim::CurCore().counters.vecElemOps += n;
}

template <typename T>
__aicore__ inline void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& src, const MrgSort4Info& params)
{
    sim::Op op_("MrgSort", sim::Pipe::V);
    static_assert(sim::OneOf<T, half, float>, "MrgSort: element type not supported on dav-c220 (half, float)");
    const char* api = "MrgSort";
    uint32_t lists = 0;
    switch (params.validBit) {
        case 3: lists = 2; break;
        case 7: lists = 3; break;
        case 15: lists = 4; break;
        default:
            sim::Trap(api, "validBit " + std::to_string(params.validBit) + " is not 3, 7 or 15 (MrgSort.md)");
    }
    const LocalTensor<T>* srcs[4] = {&src.src1, &src.src2, &src.src3, &src.src4};
    const char* roles[4] = {"src.src1", "src.src2", "src.src3", "src.src4"};
    for (uint32_t q = 0; q < lists; ++q) {
        if (params.elementLengths[q] > 4095) {
            sim::Trap(api, std::string("elementLengths[") + std::to_string(q) + "] = " +
                               std::to_string(params.elementLengths[q]) + " outside [0, 4095] (MrgSort.md)");
        }
        if (sim::Alive(*srcs[q], api, roles[q]).mem != sim::Mem::UB) {
            sim::Trap(api, std::string(roles[q]) + ": vector operands must be in UB");
        }
        sim::RequireStartAligned(api, roles[q], srcs[q]->off_, 8, "MrgSort.md: sources 8-byte aligned");
    }
    if (sim::Alive(dst, api, "dst").mem != sim::Mem::UB) {
        sim::Trap(api, "dst: vector operands must be in UB");
    }
    sim::RequireStartAligned(api, "dst", dst.off_, 32, "MrgSort.md: dst 32-byte aligned");
    const uint32_t reps = params.repeatTimes;
    if (reps > 1) {
        const uint16_t* len = params.elementLengths;
        bool contiguous = true;
        for (uint32_t q = 1; q < 4; ++q) {
            contiguous = contiguous && srcs[q]->buf_ == srcs[0]->buf_ &&
                         srcs[q]->off_ == srcs[0]->off_ + q * uint32_t(len[0]) * 8u;
        }
        if (lists != 4 || len[1] != len[0] || len[2] != len[0] || len[3] != len[0] || !contiguous ||
            params.ifExhaustedSuspension) {
            sim::Trap(api, "repeatTimes " + std::to_string(reps) +
                               " > 1 needs 4 lists of equal length stored contiguously, validBit 15 and "
                               "ifExhaustedSuspension = false (MrgSort.md)");
        }
    }
    if (reps == 0) {
        return; // A2: NOP, dst not written
    }
    uint64_t total = 0;
    for (uint32_t q = 0; q < lists; ++q) {
        total += params.elementLengths[q];
    }
    // Every source's span over all repeats (repeat r of list q starts r·total elements on).
    const uint64_t span = (uint64_t(reps) - 1) * total * 8;
    for (uint32_t q = 0; q < lists; ++q) {
        if (sim::Overlap(dst, uint64_t(reps) * total * 8, *srcs[q], span + uint64_t(params.elementLengths[q]) * 8)) {
            sim::Trap(api, std::string("dst overlaps ") + roles[q] +
                               " (MrgSort.md: source and destination must not overlap)");
        }
    }
    sim::Core& core = sim::CurCore();
    std::vector<uint8_t> out;
    out.reserve(reps * total * 8);
    uint16_t taken[4] = {0, 0, 0, 0};
    for (uint32_t r = 0; r < reps; ++r) {
        const uint8_t* p[4] = {nullptr, nullptr, nullptr, nullptr};
        uint32_t len[4] = {0, 0, 0, 0};
        for (uint32_t q = 0; q < lists; ++q) {
            len[q] = params.elementLengths[q];
            if (len[q] == 0) {
                sim::Alive(*srcs[q], api, roles[q]);
                continue;
            }
            p[q] = sim::Access(*srcs[q], api, roles[q], uint64_t(r) * total * 8, uint64_t(len[q]) * 8, sim::Acc::Read,
                               8);
            for (uint32_t i = 0; i < len[q]; ++i) {
                float s = sim::SortScore<T>(p[q] + uint64_t(i) * 8);
                sim::RequireNoNan(api, roles[q], s, i);
                if (i > 0 && s > sim::SortScore<T>(p[q] + uint64_t(i - 1) * 8)) {
                    sim::Trap(api, std::string(roles[q]) + " is not sorted in descending order: element " +
                                       std::to_string(i) + " has a higher score than element " +
                                       std::to_string(i - 1) + " (MrgSort.md merges sorted lists)");
                }
            }
        }
        uint32_t head[4] = {0, 0, 0, 0};
        for (;;) {
            int best = -1;
            float bestScore = 0;
            bool exhausted = false;
            for (uint32_t q = 0; q < lists; ++q) {
                if (head[q] == len[q]) {
                    exhausted = true;
                    continue;
                }
                float s = sim::SortScore<T>(p[q] + uint64_t(head[q]) * 8);
                if (best < 0 || s > bestScore) { // strict: an earlier list wins ties
                    best = static_cast<int>(q);
                    bestScore = s;
                }
            }
            if (best < 0 || (exhausted && params.ifExhaustedSuspension)) {
                break;
            }
            const uint8_t* e = p[best] + uint64_t(head[best]) * 8;
            out.insert(out.end(), e, e + 8);
            ++head[best];
        }
        for (uint32_t q = 0; q < 4; ++q) {
            taken[q] = static_cast<uint16_t>(head[q]);
        }
    }
    if (!out.empty()) {
        std::memcpy(sim::Access(dst, api, "dst", 0, out.size(), sim::Acc::Write), out.data(), out.size());
    }
    core.counters.vecElemOps += out.size() / 8;
    core.mrgSortValid = params.ifExhaustedSuspension;
    std::copy(taken, taken + 4, core.mrgSortTaken);
}

// The elements MrgSort took from each list before it stopped (ifExhaustedSuspension = true).
__aicore__ inline void GetMrgSortResult(uint16_t& mrgSortList1, uint16_t& mrgSortList2, uint16_t& mrgSortList3,
                                        uint16_t& mrgSortList4)
{
    sim::Op op_("GetMrgSortResult", sim::Pipe::S);
    const sim::Core& c = sim::CurCore();
    if (!c.mrgSortValid) {
        sim::Trap("GetMrgSortResult",
                  "no MrgSort with ifExhaustedSuspension = true ran before (GetMrgSortResult.md requires one)");
    }
    mrgSortList1 = c.mrgSortTaken[0];
    mrgSortList2 = c.mrgSortTaken[1];
    mrgSortList3 = c.mrgSortTaken[2];
    mrgSortList4 = c.mrgSortTaken[3];
}

namespace sim {

// GatherMask's common body; `bit(r, j)` is the mask bit of element j of repeat r.
template <typename T, typename Bit>
void GatherMaskImpl(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src0, const bool reduceMode,
                    const uint32_t mask, const GatherMaskParams& p, uint64_t& rsvdCnt, Bit bit)
{
    if (Alive(dst, api, "dst").mem != Mem::UB || Alive(src0, api, "src0").mem != Mem::UB) {
        Trap(api, "vector operands must be in UB");
    }
    RequireStartAligned(api, "dst", dst.off_, ONE_BLK_SIZE, "GatherMask.md: 32-byte aligned");
    RequireStartAligned(api, "src0", src0.off_, ONE_BLK_SIZE, "GatherMask.md: 32-byte aligned");
    if (p.repeatTimes > 255) {
        Trap(api, "repeatTimes " + std::to_string(p.repeatTimes) + " outside [0, 255]");
    }
    if (reduceMode && mask == 0) {
        Trap(api, "mask 0 in Counter mode (reduceMode = true): mask must be in [1, 2^32 - 1] (GatherMask.md)");
    }
    const uint32_t perRep = reduceMode ? mask : LanesOf<T>();
    constexpr uint32_t es = sizeof(T);
    std::vector<T> out;
    uint64_t srcLo = UINT64_MAX, srcHi = 0;
    for (uint32_t r = 0; r < p.repeatTimes; ++r) {
        // src0 lanes of this repeat, read block by block (one Access per 32-byte block run)
        const uint64_t base = uint64_t(r) * p.src0RepeatStride * 32;
        for (uint64_t j0 = 0; j0 < perRep;) {
            uint64_t blkIdx = j0 * es / 32;
            uint64_t inBlk = std::min<uint64_t>(perRep - j0, (32 - (j0 * es) % 32) / es);
            uint64_t off = base + blkIdx * p.src0BlockStride * 32 + (j0 * es) % 32;
            const uint8_t* s = Access(src0, api, "src0", off, inBlk * es, Acc::Read);
            srcLo = std::min(srcLo, off);
            srcHi = std::max(srcHi, off + inBlk * es);
            for (uint64_t j = 0; j < inBlk; ++j) {
                if (bit(r, static_cast<uint32_t>(j0 + j))) {
                    T v;
                    std::memcpy(&v, s + j * es, es);
                    out.push_back(v);
                }
            }
            j0 += inBlk;
        }
    }
    rsvdCnt = out.size();
    if (!out.empty()) {
        const uint64_t bytes = out.size() * es;
        const bool inPlace = Alive(dst, api, "dst").mem == Alive(src0, api, "src0").mem && dst.off_ == src0.off_;
        if (!inPlace && dst.buf_ == src0.buf_ && dst.off_ < src0.off_ + srcHi && src0.off_ + srcLo < dst.off_ + bytes) {
            Trap(api, "dst overlaps src0 (only dst == src0, the documented in-place use, is supported)");
        }
        std::memcpy(Access(dst, api, "dst", 0, bytes, Acc::Write), out.data(), bytes);
    }
    CurCore().counters.vecElemOps += uint64_t(p.repeatTimes) * perRep;
    MaskLeftBy(api); // A2 implementation: normal mode, the mask register holds the call's value
}

} // namespace sim

// User-defined pattern: bit j of the pattern tensor (LSB first) selects element j.
template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
__aicore__ inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1Pattern,
                                  const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                                  uint64_t& rsvdCnt)
{
    sim::Op op_("GatherMask", sim::Pipe::V);
    static_assert(sim::OneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>,
                  "GatherMask: element type not supported on dav-c220");
    static_assert(sizeof(U) == sizeof(T) && sim::OneOf<U, uint16_t, uint32_t>,
                  "GatherMask: src1Pattern must be uint16_t for 2-byte and uint32_t for 4-byte elements");
    const char* api = "GatherMask";
    if (sim::Alive(src1Pattern, api, "src1Pattern").mem != sim::Mem::UB) {
        sim::Trap(api, "src1Pattern: vector operands must be in UB");
    }
    sim::RequireStartAligned(api, "src1Pattern", src1Pattern.off_, ONE_BLK_SIZE, "GatherMask.md: 32-byte aligned");
    if (gatherMaskParams.repeatTimes > 255) {
        sim::Trap(api, "repeatTimes " + std::to_string(gatherMaskParams.repeatTimes) + " outside [0, 255]");
    }
    const uint32_t perRep = reduceMode ? mask : sim::LanesOf<T>();
    const uint64_t patBytes = (uint64_t(perRep) + 7) / 8;
    std::vector<const uint8_t*> pat(gatherMaskParams.repeatTimes);
    uint64_t patLo = UINT64_MAX, patHi = 0;
    if (!(reduceMode && mask == 0)) {
        for (uint32_t r = 0; r < gatherMaskParams.repeatTimes; ++r) {
            uint64_t off = uint64_t(r) * gatherMaskParams.src1RepeatStride * 32;
            pat[r] = sim::Access(src1Pattern, api, "src1Pattern", off, patBytes, sim::Acc::Read);
            patLo = std::min(patLo, off);
            patHi = std::max(patHi, off + patBytes);
        }
    }
    if (patHi > 0 && dst.buf_ == src1Pattern.buf_ && dst.off_ < src1Pattern.off_ + patHi &&
        src1Pattern.off_ + patLo < dst.off_ + uint64_t(gatherMaskParams.repeatTimes) * perRep * sizeof(T)) {
        sim::Trap(api, "dst overlaps src1Pattern (address overlap is not supported)");
    }
    sim::GatherMaskImpl(api, dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt,
                        [&](uint32_t r, uint32_t j) { return ((pat[r][j / 8] >> (j % 8)) & 1) != 0; });
}

// Built-in pattern 1..7 (GatherMask.md 内置固定模式).
template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
__aicore__ inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t src1Pattern,
                                  const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                                  uint64_t& rsvdCnt)
{
    sim::Op op_("GatherMask", sim::Pipe::V);
    static_assert(sim::OneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>,
                  "GatherMask: element type not supported on dav-c220");
    const char* api = "GatherMask";
    if (src1Pattern < 1 || src1Pattern > 7) {
        sim::Trap(api, "src1Pattern " + std::to_string(src1Pattern) + " outside the built-in modes [1, 7] (GatherMask.md)");
    }
    const uint8_t m = src1Pattern;
    sim::GatherMaskImpl(api, dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt, [m](uint32_t, uint32_t j) {
        switch (m) {
            case 1: return j % 2 == 0;
            case 2: return j % 2 == 1;
            case 7: return true;
            default: return j % 4 == uint32_t(m - 3);
        }
    });
}

} // namespace AscendC
