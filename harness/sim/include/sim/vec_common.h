// The vector unit's addressing model shared by all vector ops (docs SIMD计算说明/高维切分,
// 掩码): a level-0 instruction runs `repeatTime` repeats of 256 bytes; lane l of a repeat
// lives in 32-byte block l*sizeof(T)/32 at `blkStride` blocks from the previous block,
// repeats are `repStride` blocks apart. A mask selects lanes: a count (first n lanes) or
// two 64-bit words (bit l = lane l), or, with isSetMask=false, the mask register set by
// SetVectorMask; in counter mode (SetMaskCount) the register holds a total element count
// and repeatTime is ignored. Level-2 ("count") forms process `count` contiguous elements.
// Reads of never-written 32-byte blocks trap; written blocks are marked. Every vector API
// is one instruction of PIPE_V (sim::Op).
#pragma once

#include <utility>

#include "tensor.h"

namespace AscendC {

struct BinaryRepeatParams {
    __aicore__ BinaryRepeatParams() {}
    __aicore__ BinaryRepeatParams(const sim::Wide dstBlkStrideIn, const sim::Wide src0BlkStrideIn,
                                  const sim::Wide src1BlkStrideIn, const sim::Wide dstRepStrideIn,
                                  const sim::Wide src0RepStrideIn, const sim::Wide src1RepStrideIn)
        : dstBlkStride(sim::Fit<uint8_t>("BinaryRepeatParams", "dstBlkStride", dstBlkStrideIn)),
          src0BlkStride(sim::Fit<uint8_t>("BinaryRepeatParams", "src0BlkStride", src0BlkStrideIn)),
          src1BlkStride(sim::Fit<uint8_t>("BinaryRepeatParams", "src1BlkStride", src1BlkStrideIn)),
          dstRepStride(sim::Fit<uint8_t>("BinaryRepeatParams", "dstRepStride", dstRepStrideIn)),
          src0RepStride(sim::Fit<uint8_t>("BinaryRepeatParams", "src0RepStride", src0RepStrideIn)),
          src1RepStride(sim::Fit<uint8_t>("BinaryRepeatParams", "src1RepStride", src1RepStrideIn))
    {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

struct UnaryRepeatParams {
    __aicore__ UnaryRepeatParams() {}
    __aicore__ UnaryRepeatParams(const sim::Wide dstBlkStrideIn, const sim::Wide srcBlkStrideIn,
                                 const sim::Wide dstRepStrideIn, const sim::Wide srcRepStrideIn)
        : dstBlkStride(sim::Fit<uint16_t>("UnaryRepeatParams", "dstBlkStride", dstBlkStrideIn)),
          srcBlkStride(sim::Fit<uint16_t>("UnaryRepeatParams", "srcBlkStride", srcBlkStrideIn)),
          dstRepStride(sim::Fit<uint8_t>("UnaryRepeatParams", "dstRepStride", dstRepStrideIn)),
          srcRepStride(sim::Fit<uint8_t>("UnaryRepeatParams", "srcRepStride", srcRepStrideIn))
    {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint16_t srcBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t srcRepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
    bool halfBlock = false;
};

// Mask register control (掩码操作). These run on the scalar unit; their ordering with the
// vector pipe is the hardware's (docs 关键特性说明, 硬件保证的同步).
template <typename T, MaskMode mode = MaskMode::NORMAL>
__aicore__ inline void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow)
{
    auto& c = sim::CurCore();
    c.maskHigh = maskHigh;
    c.maskLow = maskLow;
    c.maskLeftBy = nullptr;
}
template <typename T, MaskMode mode = MaskMode::NORMAL>
__aicore__ inline void SetVectorMask(int32_t len)
{
    auto& c = sim::CurCore();
    c.maskLeftBy = nullptr;
    if (c.maskMode == MaskMode::COUNTER) {
        c.maskHigh = 0;
        c.maskLow = static_cast<uint64_t>(len);
        return;
    }
    c.maskLow = len >= 64 ? ~0ull : ((1ull << len) - 1);
    c.maskHigh = len >= 128 ? ~0ull : (len > 64 ? ((1ull << (len - 64)) - 1) : 0);
}
__aicore__ inline void SetMaskCount() { sim::CurCore().maskMode = MaskMode::COUNTER; }
__aicore__ inline void SetMaskNorm() { sim::CurCore().maskMode = MaskMode::NORMAL; }
__aicore__ inline void ResetMask()
{
    auto& c = sim::CurCore();
    c.maskHigh = ~0ull;
    c.maskLow = ~0ull;
    c.maskLeftBy = nullptr;
}

namespace sim {

// Which lanes of which repeats an instruction touches.
struct LanePlan {
    uint32_t repeats = 0;
    uint32_t lanes = 0;     // lanes per repeat = 256 / widest element size
    uint64_t lo = 0, hi = 0; // active lanes of every repeat (normal mode)
    uint32_t lastLanes = 0; // counter mode: the last repeat has only this prefix active
    bool counter = false;
    bool Active(uint32_t r, uint32_t l) const
    {
        if (counter) {
            return r + 1 < repeats || l < lastLanes;
        }
        return l < 64 ? ((lo >> l) & 1) : ((hi >> (l - 64)) & 1);
    }
    // Highest active lane of repeat r (-1 if none).
    int HighLane(uint32_t r) const
    {
        if (counter) {
            return r + 1 < repeats ? int(lanes) - 1 : int(lastLanes) - 1;
        }
        uint64_t h = lanes > 64 ? hi & (lanes >= 128 ? ~0ull : ((1ull << (lanes - 64)) - 1)) : 0;
        if (h != 0) {
            return 64 + 63 - __builtin_clzll(h);
        }
        uint64_t l = lanes >= 64 ? lo : lo & ((1ull << lanes) - 1);
        return l == 0 ? -1 : 63 - __builtin_clzll(l);
    }
    // Number of active lanes in repeat r if they form a prefix, else -1.
    int Prefix(uint32_t r) const
    {
        int h = HighLane(r);
        if (counter || h < 0) {
            return h + 1;
        }
        for (int l = 0; l <= h; ++l) {
            if (!Active(r, l)) {
                return -1;
            }
        }
        return h + 1;
    }
    uint64_t ActiveCount() const
    {
        if (counter) {
            return repeats == 0 ? 0 : uint64_t(repeats - 1) * lanes + lastLanes;
        }
        uint64_t l = lanes >= 64 ? lo : lo & ((1ull << lanes) - 1);
        uint64_t h = lanes > 64 ? hi & (lanes >= 128 ? ~0ull : ((1ull << (lanes - 64)) - 1)) : 0;
        return uint64_t(__builtin_popcountll(l) + __builtin_popcountll(h)) * repeats;
    }
};

// What a vector API does to the mask register (impl/basic_api/dav_c220, research in the
// sim README): a level-0 call with isSetMask = true writes its mask there and leaves it; with
// isSetMask = false it uses what is there. A count-form call switches to counter mode and
// restores normal mode with all lanes on (CountFormDone), except ReduceMax, Gather and the
// level-0 ReduceSum, which leave an internal pattern (MaskLeftBy): a later isSetMask =
// false call before the kernel sets the mask again traps.
// Implemented in harness/sim/src/checks.cpp.
LanePlan PlanFromCount(const char* api, uint64_t mask, Wide repeatTime, uint32_t lanes, bool isSetMask);
LanePlan PlanFromBits(const char* api, const uint64_t mask[], Wide repeatTime, uint32_t lanes, bool isSetMask);
inline void CountFormDone()
{
    Core& c = CurCore();
    c.maskMode = MaskMode::NORMAL;
    c.maskHigh = ~0ull;
    c.maskLow = ~0ull;
    c.maskLeftBy = nullptr;
}
inline void MaskLeftBy(const char* api)
{
    Core& c = CurCore();
    c.maskMode = MaskMode::NORMAL;
    c.maskLeftBy = api;
}

// One strided operand of a level-0 instruction, bounds-checked for the whole plan.
struct VecOperand {
    const BufDesc* buf = nullptr;
    uint8_t* arena = nullptr; // arena base
    uint32_t off = 0;         // arena byte offset of the tensor start
    uint32_t es = 0;
    uint32_t blk = 1;
    uint32_t rep = 8;
    uint32_t LaneOff(uint32_t r, uint32_t lane) const
    {
        uint32_t bytes = lane * es;
        return off + r * rep * 32 + (bytes / 32) * blk * 32 + bytes % 32;
    }
    template <typename T>
    T Load(uint32_t o) const
    {
        T v;
        std::memcpy(&v, arena + o, sizeof(T));
        return v;
    }
    template <typename T>
    void Store(uint32_t o, T v) const
    {
        std::memcpy(arena + o, &v, sizeof(T));
    }
};

// Checks a level-0 operand (alive, in UB, aligned, every lane the plan touches inside
// its buffer); implemented in harness/sim/src/checks.cpp.
VecOperand MakeOperand(const char* api, const char* role, const TensorRef& t, uint32_t es, uint32_t blk, uint32_t rep,
                       const LanePlan& p, uint32_t align);
[[noreturn]] void LaneTrap(const char* api, const char* role, const VecOperand& o, uint32_t off);

template <typename T>
inline VecOperand Operand(const char* api, const char* role, const LocalTensor<T>& t, uint32_t blk, uint32_t rep,
                          const LanePlan& p, uint32_t align = ONE_BLK_SIZE)
{
    return MakeOperand(api, role, Ref(t), sizeof(T), blk, rep, p, align);
}

inline void CheckLane(const char* api, const char* role, const VecOperand& o, uint32_t off)
{
    if (ReadLocal(Mem::UB, off, o.es) != UINT32_MAX) {
        LaneTrap(api, role, o, off);
    }
}
inline void MarkLane(uint32_t off, uint32_t es) { WriteLocal(Mem::UB, off, es); }

// Level-0 engine: dst[lane] = f(src[lane]...) over the active lanes, strided.
// Srcs is a pack of (VecOperand, role) pairs read as the given types.
template <typename D, typename... S, typename F, size_t... I>
void RunLanes(const char* api, const LanePlan& p, const VecOperand& dst, const VecOperand (&srcs)[sizeof...(S)],
              const char* const (&roles)[sizeof...(S)], F f, std::index_sequence<I...>)
{
    for (uint32_t r = 0; r < p.repeats; ++r) {
        int pre = p.Prefix(r);
        bool contiguous = pre >= 0 && dst.blk == 1 && ((srcs[I].blk == 1) && ... && true);
        if (contiguous && pre > 0) {
            // fast path: the active lanes are one contiguous run per operand
            uint32_t d0 = dst.LaneOff(r, 0);
            uint32_t s0[sizeof...(S) + 1] = {srcs[I].LaneOff(r, 0)..., 0};
            (void)s0;
            (
                [&] {
                    uint32_t bad = ReadLocal(Mem::UB, s0[I], uint32_t(pre) * srcs[I].es);
                    if (bad != UINT32_MAX) {
                        CheckLane(api, roles[I], srcs[I], bad);
                    }
                }(),
                ...);
            for (int l = 0; l < pre; ++l) {
                dst.Store<D>(d0 + l * sizeof(D), f(srcs[I].template Load<S>(s0[I] + l * sizeof(S))...));
            }
            WriteLocal(Mem::UB, d0, uint32_t(pre) * sizeof(D));
            continue;
        }
        for (uint32_t l = 0; l < p.lanes; ++l) {
            if (!p.Active(r, l)) {
                continue;
            }
            uint32_t so[sizeof...(S) + 1] = {srcs[I].LaneOff(r, l)..., 0};
            (void)so;
            (CheckLane(api, roles[I], srcs[I], so[I]), ...);
            uint32_t d = dst.LaneOff(r, l);
            dst.Store<D>(d, f(srcs[I].template Load<S>(so[I])...));
            MarkLane(d, sizeof(D));
        }
    }
    CurCore().counters.vecElemOps += p.ActiveCount();
    WorkVector(p.repeats, p.lanes);
}

template <typename D, typename S, typename F>
void Unary0(const char* api, const LocalTensor<D>& dst, const LocalTensor<S>& src, const LanePlan& p, uint32_t dblk,
            uint32_t sblk, uint32_t drep, uint32_t srep, F f)
{
    if (p.repeats == 0) {
        return;
    }
    VecOperand d = Operand(api, "dst", dst, dblk, drep, p);
    VecOperand srcs[1] = {Operand(api, "src", src, sblk, srep, p)};
    const char* const roles[1] = {"src"};
    RunLanes<D, S>(api, p, d, srcs, roles, f, std::make_index_sequence<1>{});
}

template <typename D, typename S0, typename S1, typename F>
void Binary0(const char* api, const LocalTensor<D>& dst, const LocalTensor<S0>& src0, const LocalTensor<S1>& src1,
             const LanePlan& p, const BinaryRepeatParams& rp, F f)
{
    if (p.repeats == 0) {
        return;
    }
    VecOperand d = Operand(api, "dst", dst, rp.dstBlkStride, rp.dstRepStride, p);
    VecOperand srcs[2] = {Operand(api, "src0", src0, rp.src0BlkStride, rp.src0RepStride, p),
                          Operand(api, "src1", src1, rp.src1BlkStride, rp.src1RepStride, p)};
    const char* const roles[2] = {"src0", "src1"};
    RunLanes<D, S0, S1>(api, p, d, srcs, roles, f, std::make_index_sequence<2>{});
}

// dst = f(src0, src1, dst): dst is read as a third operand with its own strides.
template <typename D, typename S0, typename S1, typename F>
void Ternary0(const char* api, const LocalTensor<D>& dst, const LocalTensor<S0>& src0, const LocalTensor<S1>& src1,
              const LanePlan& p, const BinaryRepeatParams& rp, F f)
{
    if (p.repeats == 0) {
        return;
    }
    VecOperand d = Operand(api, "dst", dst, rp.dstBlkStride, rp.dstRepStride, p);
    VecOperand srcs[3] = {Operand(api, "src0", src0, rp.src0BlkStride, rp.src0RepStride, p),
                          Operand(api, "src1", src1, rp.src1BlkStride, rp.src1RepStride, p), d};
    const char* const roles[3] = {"src0", "src1", "dst"};
    RunLanes<D, S0, S1, D>(api, p, d, srcs, roles, f, std::make_index_sequence<3>{});
}

// A level-2 call's work: `count` elements of the widest operand, in 256-byte repeats.
inline void WorkCount(int32_t count, size_t widest)
{
    uint32_t lanes = static_cast<uint32_t>(256 / widest);
    WorkVector((uint64_t(count) + lanes - 1) / lanes, lanes);
}

// Level-2 engines: `count` contiguous elements from each tensor start.
template <typename D, typename S, typename F>
void Unary2(const char* api, const LocalTensor<D>& dst, const LocalTensor<S>& src, int32_t count, F f)
{
    if (count <= 0) {
        return;
    }
    if (MemOfTensor(dst, api, "dst") != Mem::UB || MemOfTensor(src, api, "src") != Mem::UB) {
        Trap(api, "vector operands must be in UB");
    }
    const S* s = reinterpret_cast<const S*>(Access(src, api, "src", 0, uint64_t(count) * sizeof(S), Acc::Read));
    D* d = reinterpret_cast<D*>(Access(dst, api, "dst", 0, uint64_t(count) * sizeof(D), Acc::Write));
    for (int32_t i = 0; i < count; ++i) {
        d[i] = f(s[i]);
    }
    CurCore().counters.vecElemOps += count;
    WorkCount(count, std::max(sizeof(D), sizeof(S)));
    CountFormDone();
}

template <typename D, typename S0, typename S1, typename F>
void Binary2(const char* api, const LocalTensor<D>& dst, const LocalTensor<S0>& src0, const LocalTensor<S1>& src1,
             int32_t count, F f)
{
    if (count <= 0) {
        return;
    }
    if (MemOfTensor(dst, api, "dst") != Mem::UB || MemOfTensor(src0, api, "src0") != Mem::UB ||
        MemOfTensor(src1, api, "src1") != Mem::UB) {
        Trap(api, "vector operands must be in UB");
    }
    const S0* a = reinterpret_cast<const S0*>(Access(src0, api, "src0", 0, uint64_t(count) * sizeof(S0), Acc::Read));
    const S1* b = reinterpret_cast<const S1*>(Access(src1, api, "src1", 0, uint64_t(count) * sizeof(S1), Acc::Read));
    D* d = reinterpret_cast<D*>(Access(dst, api, "dst", 0, uint64_t(count) * sizeof(D), Acc::Write));
    for (int32_t i = 0; i < count; ++i) {
        d[i] = f(a[i], b[i]);
    }
    CurCore().counters.vecElemOps += count;
    WorkCount(count, std::max({sizeof(D), sizeof(S0), sizeof(S1)}));
    CountFormDone();
}

template <typename D, typename S0, typename S1, typename F>
void Ternary2(const char* api, const LocalTensor<D>& dst, const LocalTensor<S0>& src0, const LocalTensor<S1>& src1,
              int32_t count, F f)
{
    if (count <= 0) {
        return;
    }
    if (MemOfTensor(dst, api, "dst") != Mem::UB || MemOfTensor(src0, api, "src0") != Mem::UB ||
        MemOfTensor(src1, api, "src1") != Mem::UB) {
        Trap(api, "vector operands must be in UB");
    }
    const S0* a = reinterpret_cast<const S0*>(Access(src0, api, "src0", 0, uint64_t(count) * sizeof(S0), Acc::Read));
    const S1* b = reinterpret_cast<const S1*>(Access(src1, api, "src1", 0, uint64_t(count) * sizeof(S1), Acc::Read));
    D* d = reinterpret_cast<D*>(Access(dst, api, "dst", 0, uint64_t(count) * sizeof(D), Acc::ReadWrite));
    for (int32_t i = 0; i < count; ++i) {
        d[i] = f(a[i], b[i], d[i]);
    }
    CurCore().counters.vecElemOps += count;
    WorkCount(count, std::max({sizeof(D), sizeof(S0), sizeof(S1)}));
    CountFormDone();
}

template <typename T>
constexpr uint32_t LanesOf()
{
    return 256 / sizeof(T);
}

// NaN-propagating max/min: the sim's documented choice for vmax/vmin (a NaN input gives NaN).
template <typename T>
inline T VMax(T a, T b)
{
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>) {
        float x = static_cast<float>(a), y = static_cast<float>(b);
        if (std::isnan(x) || std::isnan(y)) {
            return T(std::numeric_limits<float>::quiet_NaN());
        }
        return x >= y ? a : b;
    } else {
        return a >= b ? a : b;
    }
}
template <typename T>
inline T VMin(T a, T b)
{
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>) {
        float x = static_cast<float>(a), y = static_cast<float>(b);
        if (std::isnan(x) || std::isnan(y)) {
            return T(std::numeric_limits<float>::quiet_NaN());
        }
        return x <= y ? a : b;
    } else {
        return a <= b ? a : b;
    }
}

} // namespace sim
} // namespace AscendC
