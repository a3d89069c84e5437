// Splitting a further attention source over KV (flash-decoding) and merging the splits:
// when there are fewer units (requests of the compressed source, tokens of the indexed) than
// core groups, each unit's KV pieces (chunks, tiles) are dealt to S splits, one work item
// (unit, split) per group. A split starts from nothing (m = -1e20, denom = 0, o = 0) and leaves
// its partial (o_s, m_s, denom_s) in its slot; `AttentionCombine` then merges, for every head
// row of every unit, the window's state (max, denom, o) and the splits in split order:
//   m* = max of all m, w = exp(m - m*), denom = sum w * denom, o = sum w * o
// so results do not depend on timing. With S = 1 an item is a whole unit and continues the
// window's state in place; the combine does nothing.
#pragma once

#include "dsv4/attention_finish.h"
#include "dsv4/head_tile_mmad.h"
#include "dsv4/tiling_data.h"
#include "dsv4/pipe_sync.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// S for `units` units on GROUPS groups, at most MAX_SPLITS (the unit's pieces at most), and
// split s's pieces [First(s), First(s + 1)) of a unit with n pieces (empty when n < S).
template <uint32_t GROUPS, uint32_t MAX_SPLITS>
struct KvSplits {
    __aicore__ static inline uint32_t Of(uint32_t units) { return PartsPerUnit(units, GROUPS, MAX_SPLITS); }

    __aicore__ static inline uint32_t First(uint32_t split, uint32_t splits, uint32_t pieces)
    {
        return PartRange(split, splits, pieces).begin;
    }

    // Of(units) in the mixed kernel of the split source, which must run on GROUPS groups.
    __aicore__ static inline uint32_t OnGroups(uint32_t units)
    {
        const uint32_t groups = static_cast<uint32_t>(AscendC::GetBlockNum());
        ascendc_assert(groups == GROUPS, "a split-KV kernel launched on %u groups, planned for %u", groups, GROUPS);
        return Of(units);
    }
};

// Where a split source keeps its GM scratch, UNIT_ROWS head rows of HEAD_DIM per unit: per
// group the piece's PARTS parts (f32 rows; two where tiles alternate), then, where units can
// split (SPLITS), the item's o; per item its m, then its denom (UNIT_ROWS f32 each). With
// S > 1 item i runs on group i.
template <uint32_t UNIT_ROWS, uint32_t HEAD_DIM, bool SPLITS, uint32_t PARTS = 1>
struct SplitSlots {
    static constexpr uint64_t ROWS = UNIT_ROWS;
    static constexpr uint64_t PER_GROUP = PARTS + (SPLITS ? 1 : 0);

    __aicore__ static inline uint64_t Part(uint32_t group, uint32_t k = 0)
    {
        return (static_cast<uint64_t>(group) * PER_GROUP + k) * ROWS * HEAD_DIM;
    }
    __aicore__ static inline uint64_t SplitO(uint32_t item) { return Part(item, PARTS); }
    __aicore__ static inline uint64_t SplitMax(uint32_t item) { return static_cast<uint64_t>(item) * 2 * ROWS; }
    __aicore__ static inline uint64_t SplitDenom(uint32_t item) { return SplitMax(item) + ROWS; }
};

// The merge (vector). Work units are (unit, VH heads) of every unit, dealt to the AIVs in
// contiguous shares. A split whose denominators are all zero on a unit's VH heads adds
// nothing there (no row of its pieces was visible, or it had no pieces and its o was never
// written), so its o is not read. With PF (the finish's parameters, attention_finish.h) the
// work units are the finish's tiles (whole VH tiles of a token's heads): each is merged and
// then finished (or, S = 1, finished as the source left it), so the attention needs no finish
// launch. The window's o is as its cube left it (head_tile_mmad.h's OutRows: O_HALF_COLS half
// columns, scaled by 2^-O_SHIFT), the splits' f32 and unscaled (their weights times
// 2^-O_SHIFT); the merged rows leave as the window's.
// P: HEADS, HEAD_DIM, UNIT_ROWS (head rows of a unit: a multiple of HEADS), PER_TOKEN (units
// are tokens, else requests), GROUPS, MAX_SPLITS, PARTS (the source's part slabs per group),
// O_SHIFT and O_HALF_COLS (o's rows), and the UB sizes (`*_BYTES`).
template <class P, class PF = NoFinish>
class AttentionCombine {
    static constexpr uint32_t HD = P::HEAD_DIM;
    static constexpr uint32_t VH = BLOCK_BYTES / sizeof(float);
    static constexpr uint32_t TILES = P::UNIT_ROWS / VH;  // per unit
    static constexpr uint32_t CAP = Min(P::MAX_SPLITS, P::GROUPS);  // splits at most
    static constexpr uint32_t SOURCES = CAP + 1;                     // the window and the splits
    using Splits = KvSplits<P::GROUPS, P::MAX_SPLITS>;
    using Slots = SplitSlots<P::UNIT_ROWS, P::HEAD_DIM, true, P::PARTS>;
    using Rows = OutRows<P>;  // the window's (and the merged) o rows
    static constexpr uint32_t HD_BLOCKS = BlocksOf<float>(HD);
    static_assert(P::UNIT_ROWS % P::HEADS == 0 && P::HEADS % VH == 0, "whole head tiles");
    static_assert(P::ACC_BYTES >= VH * HD * sizeof(float) && P::PART_BYTES >= VH * HD * sizeof(float),
                  "VH head rows");
    static_assert(P::O_HALF_COLS > 0 && P::ROWS_BYTES >= VH * Rows::HALVES * sizeof(half) &&
                      P::SPREAD_BYTES >= VH * BLOCK_BYTES && HD_BLOCKS <= 255 && Rows::BLOCKS <= 255,
                  "VH rows of o as the window leaves them, a block per head's weight");
    static_assert(P::MAXES_BYTES >= SOURCES * VH * sizeof(float) && P::DENOMS_BYTES >= SOURCES * VH * sizeof(float) &&
                      P::WEIGHTS_BYTES >= SOURCES * VH * sizeof(float) && P::MAX_BYTES >= VH * sizeof(float),
                  "VH values per source");

public:
    __aicore__ inline static void Run(GM_ADDR rowMax, GM_ADDR part, GM_ADDR stats, GM_ADDR o, GM_ADDR denom,
                                      GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        AttentionCombine op;
        op.Init();  // its buffers whether or not there is work: the plan's budget either way
        const uint32_t units = P::PER_TOKEN ? td.t : td.b;
        const uint32_t splits = Splits::Of(units);
        if (splits == 1) {
            return;  // every item continued the window in place
        }
        op.template Units<VH>(rowMax, part, stats, o, denom, units, splits, [](uint32_t) {});
    }

    // Merged and finished into `packed` (PF), with token-local RoPE rows.
    __aicore__ inline static void Run(GM_ADDR rowMax, GM_ADDR part, GM_ADDR stats, GM_ADDR o, GM_ADDR denom,
                                      GM_ADDR freqsCos, GM_ADDR freqsSin, GM_ADDR packed, GM_ADDR workspace,
                                      GM_ADDR tiling)
    {
        static_assert(FINISH && !PF::POSITIONS, "a finishing combine with token-local RoPE rows");
        RunFinished(rowMax, part, stats, o, denom, freqsCos, freqsSin, nullptr, packed, tiling);
        (void)workspace;
    }

    // Merged and finished into `packed` (PF), with RoPE rows by position_ids.
    __aicore__ inline static void Run(GM_ADDR rowMax, GM_ADDR part, GM_ADDR stats, GM_ADDR o, GM_ADDR denom,
                                      GM_ADDR freqsCos, GM_ADDR freqsSin, GM_ADDR positions, GM_ADDR packed,
                                      GM_ADDR workspace, GM_ADDR tiling)
    {
        static_assert(FINISH && PF::POSITIONS, "a finishing combine with RoPE rows by position");
        RunFinished(rowMax, part, stats, o, denom, freqsCos, freqsSin, positions, packed, tiling);
        (void)workspace;
    }

private:
    static constexpr bool FINISH = Finishes<PF>::VALUE;

    __aicore__ inline static void RunFinished(GM_ADDR rowMax, GM_ADDR part, GM_ADDR stats, GM_ADDR o, GM_ADDR denom,
                                              GM_ADDR freqsCos, GM_ADDR freqsSin, GM_ADDR positions, GM_ADDR packed,
                                              GM_ADDR tiling)
    {
        static_assert(PF::HEADS == P::HEADS && PF::HEAD_DIM == HD && PF::HEAD_TILE % VH == 0 &&
                          P::HEADS % PF::HEAD_TILE == 0,
                      "the finish takes whole VH-head tiles of a token");
        const TilingData td = LoadTiling(tiling);
        AttentionCombine op;
        op.Init();
        AttentionFinish<PF> finish;
        finish.Init(op.pipe_, o, denom, freqsCos, freqsSin, positions, packed);
        const uint32_t units = P::PER_TOKEN ? td.t : td.b;
        const uint32_t splits = Splits::Of(units);
        if (splits == 1) {
            finish.AllItems(td.t);  // nothing to merge: the finish launch's own items
            return;
        }
        // Rows are token-major ([t, HEADS]), so a work unit's rows are one token's heads.
        op.template Units<PF::HEAD_TILE>(rowMax, part, stats, o, denom, units, splits, [&finish](uint32_t row) {
            // the merged rows (this core's MTE3) are in GM before the finish reads them
            Handshake<AscendC::HardEvent::MTE3_MTE2>();
            finish.Heads(row / P::HEADS, row % P::HEADS, row % P::HEADS + PF::HEAD_TILE);
        });
    }

    // This block's work units of ROWS head rows (whole VH tiles; there are splits), each
    // merged VH rows at a time, then `after(row)` with its first head row.
    template <uint32_t ROWS, class After>
    __aicore__ inline void Units(GM_ADDR rowMax, GM_ADDR part, GM_ADDR stats, GM_ADDR o, GM_ADDR denom,
                                 uint32_t units, uint32_t splits, const After& after)
    {
        static_assert(ROWS % VH == 0 && P::UNIT_ROWS % ROWS == 0, "work units of whole VH tiles");
        constexpr uint32_t PER_UNIT = P::UNIT_ROWS / ROWS;
        const Share share = BlockShare(units * PER_UNIT);
        if (share.begin >= share.end) {
            return;
        }
        Bind(rowMax, part, stats, o, denom);
        for (uint32_t u = share.begin; u < share.end; ++u) {
            const uint32_t unit = u / PER_UNIT, r0 = (u % PER_UNIT) * ROWS;
            for (uint32_t r = r0; r < r0 + ROWS; r += VH) {
                Unit(unit, r, splits);
            }
            after(unit * P::UNIT_ROWS + r0);
        }
    }

    __aicore__ inline void Bind(GM_ADDR rowMax, GM_ADDR part, GM_ADDR stats, GM_ADDR o, GM_ADDR denom)
    {
        rowMax_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(rowMax));
        slots_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(part));
        stats_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(stats));
        o_.Init(o);
        denom_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(denom));
    }

    __aicore__ inline void Init()
    {
        pipe_.InitBuffer(acc_, P::ACC_BYTES);
        pipe_.InitBuffer(partQ_, 2, P::PART_BYTES);
        pipe_.InitBuffer(maxes_, P::MAXES_BYTES);
        pipe_.InitBuffer(denoms_, P::DENOMS_BYTES);
        pipe_.InitBuffer(weights_, P::WEIGHTS_BYTES);
        pipe_.InitBuffer(max_, P::MAX_BYTES);
        pipe_.InitBuffer(rows_, P::ROWS_BYTES);
        pipe_.InitBuffer(spread_, P::SPREAD_BYTES);
    }

    // Rows [r0, r0 + VH) of unit `unit`.
    __aicore__ inline void Unit(uint32_t unit, uint32_t r0, uint32_t splits)
    {
        const uint64_t head = static_cast<uint64_t>(unit) * P::UNIT_ROWS + r0;  // the window's row
        AscendC::LocalTensor<float> maxes = maxes_.Get<float>();
        AscendC::LocalTensor<float> denoms = denoms_.Get<float>();
        AscendC::LocalTensor<float> w = weights_.Get<float>();
        AscendC::LocalTensor<float> mx = max_.Get<float>();
        AscendC::LocalTensor<float> acc = acc_.Get<float>();
        AscendC::LocalTensor<half> rows = rows_.Get<half>();
        AscendC::LocalTensor<float> spread = spread_.Get<float>();
        // The previous unit's results have left before its buffers are refilled.
        Handshake<AscendC::HardEvent::MTE3_MTE2>();
        AscendC::DataCopy(maxes, rowMax_[head], VH);
        AscendC::DataCopy(denoms, denom_[head], VH);
        AscendC::DataCopy(rows, o_.From(head), VH * Rows::HALVES);
        for (uint32_t s = 0; s < splits; ++s) {
            const uint32_t item = unit * splits + s;
            AscendC::DataCopy(maxes[(s + 1) * VH], stats_[Slots::SplitMax(item) + r0], VH);
            AscendC::DataCopy(denoms[(s + 1) * VH], stats_[Slots::SplitDenom(item) + r0], VH);
        }
        Handshake<AscendC::HardEvent::MTE2_V>();
        // m* over the sources, then each source's weight exp(m - m*) and the denominator
        const uint32_t n = splits + 1;
        AscendC::Adds(mx, maxes, 0.0f, VH);
        for (uint32_t k = 1; k < n; ++k) {
            AscendC::Max(mx, mx, maxes[k * VH], VH);
        }
        for (uint32_t k = 0; k < n; ++k) {
            AscendC::Sub(w[k * VH], maxes[k * VH], mx, VH);
        }
        AscendC::Exp(w, w, n * VH);
        VectorToScalar();
        // the splits that add something here (the denominators before weighting)
        uint32_t adding[CAP];
        uint32_t used = 0;
        for (uint32_t s = 0; s < splits; ++s) {
            bool any = false;
            for (uint32_t h = 0; h < VH; ++h) {
                any = any || denoms.GetValue((s + 1) * VH + h) != 0.0f;
            }
            if (any) {
                adding[used++] = s;
            }
        }
        ScalarToVector();
        AscendC::Mul(denoms, denoms, w, n * VH);
        for (uint32_t k = 1; k < n; ++k) {
            AscendC::Add(denoms, denoms, denoms[k * VH], VH);
        }
        if (used > 0) {
            Load(unit * splits + adding[0], r0);
        }
        AscendC::Brcb(spread, w, 1, AscendC::BrcbRepeatParams(1, 8));
        Rows::Widen(acc, rows, spread, VH, 0, HD, HD_BLOCKS);
        VectorToScalar();
        constexpr float SCALE = 1.0f / static_cast<float>(1u << P::O_SHIFT);  // into the window's scale
        for (uint32_t k = 0; k < used; ++k) {
            if (k + 1 < used) {
                Load(unit * splits + adding[k + 1], r0);  // the next split's rows load under this one's sums
            }
            AscendC::LocalTensor<float> part = partQ_.DeQue<float>();
            for (uint32_t h = 0; h < VH; ++h) {
                AscendC::Muls(part[h * HD], part[h * HD], w.GetValue((adding[k] + 1) * VH + h) * SCALE, HD);
                AscendC::Add(acc[h * HD], acc[h * HD], part[h * HD], HD);
            }
            partQ_.FreeTensor(part);
        }
        Rows::Narrow(rows, acc, VH, HD_BLOCKS);
        Handshake<AscendC::HardEvent::V_MTE3>();
        AscendC::DataCopy(o_.From(head), rows, VH * Rows::HALVES);
        AscendC::DataCopy(denom_[head], denoms, VH);
    }

    // Split `item`'s o rows from r0 into the queue.
    __aicore__ inline void Load(uint32_t item, uint32_t r0)
    {
        AscendC::LocalTensor<float> part = partQ_.AllocTensor<float>();
        AscendC::DataCopy(part, slots_[Slots::SplitO(item) + static_cast<uint64_t>(r0) * HD], VH * HD);
        partQ_.EnQue(part);
    }

    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::TPosition::VECIN, 2> partQ_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> acc_, maxes_, denoms_, weights_, max_, rows_, spread_;
    AscendC::GlobalTensor<float> rowMax_, slots_, stats_, denom_;
    Rows o_;
};

}  // namespace dsv4
