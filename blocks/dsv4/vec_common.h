// Small helpers shared by the vector (AIV) building blocks: integer arithmetic on sizes and
// splitting work items over the launched blocks (plus, through pipe_sync.h, the hand-offs).
#pragma once

#include "kernel_operator.h"
#include "dsv4/pipe_sync.h"

namespace dsv4 {

// A UB block: the unit of DataCopy lengths and of vector block strides.
constexpr uint32_t BLOCK_BYTES = 32;

// f32 lanes of a vector repeat (8 blocks).
constexpr uint32_t F32_REPEAT = 64;

// Runtime token counts are multiples of this (swa.md §7.1).
constexpr uint32_t TOKEN_GROUP = 8;

__aicore__ constexpr inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ constexpr inline uint32_t AlignUp(uint32_t a, uint32_t b) { return CeilDiv(a, b) * b; }
__aicore__ constexpr inline uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }

// Either<C, A, B>::T: B where C holds, else A (a type chosen by a knob).
template <bool C, typename A, typename B>
struct Either {
    using T = A;
};
template <typename A, typename B>
struct Either<true, A, B> {
    using T = B;
};

// Whole 32-byte blocks spanned by n elements of T (n * sizeof(T) must be a multiple of 32).
template <typename T>
__aicore__ constexpr inline uint32_t BlocksOf(uint32_t n)
{
    return n * static_cast<uint32_t>(sizeof(T)) / BLOCK_BYTES;
}

// This block's contiguous share [begin, end) of `total` work items; shares differ by at
// most one item, and blocks beyond the work get an empty share.
struct Share {
    uint32_t begin;
    uint32_t end;
};

// Share idx of num sharers (BlockShare: this block of the launch).
__aicore__ inline Share ShareOf(uint32_t total, uint32_t idx, uint32_t num)
{
    const uint32_t base = total / num;
    const uint32_t extra = total % num;
    const uint32_t begin = idx * base + Min(idx, extra);
    return Share{begin, begin + base + (idx < extra ? 1u : 0u)};
}

// Sharer idx of num's contiguous run of `count` items of about equal total weight: item u
// goes to sharer floor((W(u) + w(u) / 2) · num / total), w(u) its weight (`weight(u)`, at
// least 1) and W(u) the items' before it, so every item goes to exactly one sharer, in
// order, by its midpoint (a heavy item straddling a boundary goes to the side that holds
// most of it).
template <class Weight>
__aicore__ inline Share WeightedShare(uint32_t count, uint32_t idx, uint32_t num, Weight weight)
{
    uint64_t total = 0;
    for (uint32_t u = 0; u < count; ++u) {
        total += weight(u);
    }
    Share share{count, count};
    uint64_t before = 0;
    for (uint32_t u = 0; u < count; ++u) {
        const uint64_t w = weight(u);
        const uint64_t at = (2 * before + w) * num;  // twice its midpoint, in shares
        if (share.begin == count && at >= 2 * idx * total) {
            share.begin = u;
        }
        if (at >= 2 * (idx + 1) * total) {
            share.end = u;
            break;
        }
        before += w;
    }
    return share;
}

__aicore__ inline Share BlockShare(uint32_t total)
{
    return ShareOf(total, static_cast<uint32_t>(AscendC::GetBlockIdx()), static_cast<uint32_t>(AscendC::GetBlockNum()));
}

// The blocks a kernel with Params P runs on: the launch's, or, where P names BLOCK_BASE and
// BLOCKS, that range of them (a part side by side with others, dsv4/together.h); Idx() is
// the block's place in it.
template <typename P>
struct OwnBlocks {
    template <typename Q>
    static constexpr bool Has(decltype(&Q::BLOCKS)) { return true; }
    template <typename Q>
    static constexpr bool Has(...) { return false; }
    static constexpr bool RANGED = Has<P>(nullptr);

    __aicore__ static inline uint32_t Idx()
    {
        const uint32_t idx = static_cast<uint32_t>(AscendC::GetBlockIdx());
        if constexpr (RANGED) {
            return idx - P::BLOCK_BASE;
        } else {
            return idx;
        }
    }

    __aicore__ static inline uint32_t Num()
    {
        if constexpr (RANGED) {
            return P::BLOCKS;
        } else {
            return static_cast<uint32_t>(AscendC::GetBlockNum());
        }
    }

    __aicore__ static inline bool Mine()
    {
        if constexpr (RANGED) {
            const uint32_t idx = static_cast<uint32_t>(AscendC::GetBlockIdx());
            return idx >= P::BLOCK_BASE && idx - P::BLOCK_BASE < P::BLOCKS;
        } else {
            return true;
        }
    }

    // This block's share of `total` items over the kernel's blocks (BlockShare's).
    __aicore__ static inline Share Of(uint32_t total) { return ShareOf(total, Idx(), Num()); }
};

// The columns of a product's N a consumer with Params P finishes: all of them, or, where P
// names COL0 and NCOLS, [COL0, COL0 + NCOLS) (the consumer of a range beside the product of
// the next range, generator gemm::overlap).
template <typename P, uint32_t N>
struct OwnColumns {
    template <typename Q>
    static constexpr uint32_t First(decltype(&Q::COL0)) { return Q::COL0; }
    template <typename Q>
    static constexpr uint32_t First(...) { return 0; }
    template <typename Q>
    static constexpr uint32_t Count(decltype(&Q::NCOLS)) { return Q::NCOLS; }
    template <typename Q>
    static constexpr uint32_t Count(...) { return N; }
    static constexpr uint32_t FIRST = First<P>(nullptr);
    static constexpr uint32_t COUNT = Count<P>(nullptr);
    static_assert(COUNT > 0 && FIRST + COUNT <= N, "a range of the product's columns");
};

// How many parts each of `units` units is cut into so that `blocks` blocks all get work
// when units are fewer: blocks / units, at least 1, at most `most` (the unit's pieces).
// Work item i is then part i % parts of unit i / parts.
__aicore__ inline uint32_t PartsPerUnit(uint32_t units, uint32_t blocks, uint32_t most)
{
    const uint32_t parts = units == 0 ? 1 : blocks / units;
    return parts < 1 ? 1 : Min(parts, most);
}

// Part `part` of `parts` of a unit's `pieces` pieces (empty when pieces < parts).
__aicore__ inline Share PartRange(uint32_t part, uint32_t parts, uint32_t pieces)
{
    return Share{part * pieces / parts, (part + 1) * pieces / parts};
}

// This block's work items over `units` units of `most` pieces each:
//   for (UnitParts it(units, most); it.Next();) { it.unit, it.Range(most) }
// Units fewer than the blocks are each cut into PartsPerUnit(units, blocks, most) parts, the
// (unit, part) items in contiguous shares of the blocks; else each block takes a contiguous
// run of all units' pieces (ShareOf: within one piece of any other block's), an item per unit
// it touches, so that units not a multiple of the blocks still leave none a unit more.
class UnitParts {
public:
    __aicore__ inline UnitParts(uint32_t units, uint32_t most)
        : UnitParts(units, most, static_cast<uint32_t>(AscendC::GetBlockIdx()),
                    static_cast<uint32_t>(AscendC::GetBlockNum()))
    {
    }

    // Sharer `idx` of `num` (a mixed kernel's groups: GroupIdx() of GetBlockNum()).
    __aicore__ inline UnitParts(uint32_t units, uint32_t most, uint32_t idx, uint32_t num)
    {
        run_ = units >= num;
        parts_ = run_ ? most : PartsPerUnit(units, num, most);
        share_ = ShareOf(units * parts_, idx, num);
        next_ = share_.begin;
    }

    __aicore__ inline bool Empty() const { return share_.begin >= share_.end; }

    __aicore__ inline bool Next()
    {
        if (next_ >= share_.end) {
            return false;
        }
        unit = next_ / parts_;
        if (run_) {  // the run's pieces of this unit
            const uint32_t end = Min((unit + 1) * parts_, share_.end);
            run0_ = next_ - unit * parts_;
            run1_ = end - unit * parts_;
            next_ = end;
        } else {
            part_ = next_ % parts_;
            ++next_;
        }
        return true;
    }

    // This item's part of its unit's `pieces` pieces (`most`: a run is in pieces).
    __aicore__ inline Share Range(uint32_t pieces) const
    {
        return run_ ? Share{run0_, run1_} : PartRange(part_, parts_, pieces);
    }

    uint32_t unit = 0;

private:
    bool run_ = false;
    uint32_t parts_ = 1, part_ = 0, next_ = 0, run0_ = 0, run1_ = 0;
    Share share_{0, 0};
};

// Row-wise calls over `rows` rows of f32 (or half) columns, a row per repeat: dst's rows
// dstRow and src's srcRow 32-byte blocks apart (8-bit repeat strides), in 64-lane chunks.
// MulRows: dst = src * the row's factor over `cols` columns, `spread` holding each row's
// factor over a block (Brcb).
__aicore__ inline void MulRows(const AscendC::LocalTensor<float>& dst, const AscendC::LocalTensor<float>& src,
                               const AscendC::LocalTensor<float>& spread, uint32_t rows, uint32_t cols,
                               uint32_t dstRow, uint32_t srcRow)
{
    for (uint32_t c = 0; c < cols; c += F32_REPEAT) {
        AscendC::Mul(dst[c], src[c], spread, Min(F32_REPEAT, cols - c), rows,
                     AscendC::BinaryRepeatParams(1, 1, 0, dstRow, srcRow, 1));
    }
}

// AddRows: dst = a + b over `cols` columns, b's rows bRow blocks apart (dst's and a's as
// dstRow and srcRow).
__aicore__ inline void AddRows(const AscendC::LocalTensor<float>& dst, const AscendC::LocalTensor<float>& a,
                               const AscendC::LocalTensor<float>& b, uint32_t rows, uint32_t cols, uint32_t dstRow,
                               uint32_t srcRow, uint32_t bRow)
{
    for (uint32_t c = 0; c < cols; c += F32_REPEAT) {
        AscendC::Add(dst[c], a[c], b[c], Min(F32_REPEAT, cols - c), rows,
                     AscendC::BinaryRepeatParams(1, 1, 1, dstRow, srcRow, bRow));
    }
}

// WidenRows: dst = f32 of the first `cols` half columns of src's rows.
__aicore__ inline void WidenRows(const AscendC::LocalTensor<float>& dst, const AscendC::LocalTensor<half>& src,
                                 uint32_t rows, uint32_t cols, uint32_t dstRow, uint32_t srcRow)
{
    for (uint32_t c = 0; c < cols; c += F32_REPEAT) {
        AscendC::Cast(dst[c], src[c], AscendC::RoundMode::CAST_NONE, Min(F32_REPEAT, cols - c), rows,
                      AscendC::UnaryRepeatParams(1, 1, dstRow, srcRow));
    }
}

// NarrowRows: dst = the first `cols` f32 columns of src's rows in half (to nearest even).
__aicore__ inline void NarrowRows(const AscendC::LocalTensor<half>& dst, const AscendC::LocalTensor<float>& src,
                                  uint32_t rows, uint32_t cols, uint32_t dstRow, uint32_t srcRow)
{
    for (uint32_t c = 0; c < cols; c += F32_REPEAT) {
        AscendC::Cast(dst[c], src[c], AscendC::RoundMode::CAST_RINT, Min(F32_REPEAT, cols - c), rows,
                      AscendC::UnaryRepeatParams(1, 1, dstRow, srcRow));
    }
}

// CopyRows: dst = src over `cols` f32 columns (times one: the vector unit's strided copy).
__aicore__ inline void CopyRows(const AscendC::LocalTensor<float>& dst, const AscendC::LocalTensor<float>& src,
                                uint32_t rows, uint32_t cols, uint32_t dstRow, uint32_t srcRow)
{
    for (uint32_t c = 0; c < cols; c += F32_REPEAT) {
        AscendC::Muls(dst[c], src[c], 1.0f, Min(F32_REPEAT, cols - c), rows,
                      AscendC::UnaryRepeatParams(1, 1, dstRow, srcRow));
    }
}

// dst[i] = the sum of src[8i .. 8i + 8) for i < n / 8 (n a multiple of 8): BlockReduceSum
// in calls of at most 248 repeats, a partial repeat for the rest.
__aicore__ inline void BlockSums(const AscendC::LocalTensor<float>& dst, const AscendC::LocalTensor<float>& src,
                                 uint32_t n)
{
    constexpr uint32_t MOST = 248;
    const uint32_t full = n / F32_REPEAT;
    for (uint32_t r0 = 0; r0 < full; r0 += MOST) {
        const uint32_t repeats = full - r0 < MOST ? full - r0 : MOST;
        AscendC::BlockReduceSum(dst[r0 * 8], src[r0 * F32_REPEAT], repeats, F32_REPEAT, 1, 1, 8);
    }
    if (n % F32_REPEAT != 0) {
        AscendC::BlockReduceSum(dst[full * 8], src[full * F32_REPEAT], 1, n % F32_REPEAT, 1, 1, 8);
    }
}

// This core's group in a mixed kernel (1 AIC + 2 AIV): an AIV's GetBlockIdx() is group * 2
// + sub-block, an AIC's the group.
__aicore__ inline uint32_t GroupIdx()
{
    uint32_t group = static_cast<uint32_t>(AscendC::GetBlockIdx());
    if ASCEND_IS_AIV {
        group /= 2;
    }
    return group;
}

// BlockShare in a mixed kernel, per group, which both AIVs of a group share.
__aicore__ inline Share GroupShare(uint32_t total)
{
    return ShareOf(total, GroupIdx(), static_cast<uint32_t>(AscendC::GetBlockNum()));
}

// A block's share of batches x m rows (`share`, e.g. OwnBlocks<P>::Of(batches * m)), as runs
// of at most maxRows consecutive rows that stay inside one batch:
//   for (RowRuns run(m, maxRows, share); run.Next();) { run.batch, run.row, run.rows }
class RowRuns {
public:
    __aicore__ inline RowRuns(uint32_t m, uint32_t maxRows, const Share& share)
        : m_(m), maxRows_(maxRows), share_(share), next_(share_.begin)
    {
    }

    __aicore__ inline bool Next()
    {
        if (next_ >= share_.end) {
            return false;
        }
        batch = next_ / m_;
        row = next_ % m_;
        rows = Min(Min(share_.end - next_, m_ - row), maxRows_);
        next_ += rows;
        return true;
    }

    uint32_t batch = 0, row = 0, rows = 0;

private:
    uint32_t m_, maxRows_;
    Share share_;
    uint32_t next_;
};

}  // namespace dsv4
