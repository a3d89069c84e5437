// The cube matmul every projection shares (AIC only): for BATCH independent problems
//   C[m, n] = sum_k A[m, k] * B[k, n]     bf16 x bf16 -> f32, or int8 x int8 -> int32
// (exact), or with DEQ_SHIFT > 0 that int32 written as half C[m, n] * 2^-DEQ_SHIFT
// (Fixpipe DEQF16: half the bytes; DEQ_SHIFT keeps |C| <= 128 * 128 * K in half's range,
// and a power of two scales exactly, so one rounding to half's 11 bits is all it loses),
// A row-major with leading dimension LDA; B row-major [K, N] (B_NK false: weights stored
// in x out) or [N, K] (B_NK true: out x in), leading dimension LDB; C row-major, LDC.
// M is the runtime row count (ProductRows in dsv4/tiling_data.h: t, or group_t when
// GROUP_ROWS, x ROWS_PER_TOKEN); rows >= M are never read (ND2NZ moves only valid rows)
// and never written.
//
// Work split (chosen by generator/src/kernel_plan/gemm from the capacity, see there for the
// GM traffic it implies): the rows split into ranges of RANGE_M, K into slices of SLICE_K,
// N into ranges of RANGE_N. One work item = (batch, m range, n range, k slice), or with
// CHAIN all k slices of (batch, m range, n range) one after another; items are dealt over
// the blocks back and forth (`BackAndForth`) or, with RUNS, in runs of consecutive items
// (`Runs`) ordered with the m range innermost, so a block's items that read the same B
// columns follow each other and the later ones find them in L2, or with COLUMNS_INNER
// too the n range innermost, so a block's items of one A panel follow each other and
// share one copy of it (a group's parts too, with RunPanels: dsv4/matmul_group.h):
//   - the item's A panel (RANGE_M x SLICE_K) is copied GM -> L1 once and stays resident
//     (with COLUMNS_INNER, over the block's consecutive items of that panel);
//     with TAIL_K > 0 its last TAIL_K columns (one Mmad k step) stay in L0A instead, beside
//     the Mmad A tiles, so a panel one L1 cannot hold with the B tiles still fits on chip
//     (the tail is staged through the panel's L1 buffer before the panel arrives);
//   - B streams through L1 in TILE_K x TILE_N tiles, each read from GM once per item;
//   - C for all rows of the range and one TILE_N column strip accumulates in L0C over the
//     slice (Mmad tiles TILE_M x TILE_N x A_TILE_K: a B tile's k in steps of the A tile's,
//     A_TILE_K = TILE_K or less for tall A tiles, which load in fewer LoadData calls),
//     then Fixpipe writes it out. A bf16 product's k slices either each write their
//     partial product SLICE_STRIDE_C elements after the previous one's (KSliceSum adds
//     them up in order), or, with CHAIN, the first writes C and the later ones add theirs
//     with SetAtomicAdd: one core's Fixpipe writes in program order, so C = ((P0 + P1) +
//     P2) + ... on every run. An int8 product is one k slice (a half C could not add k
//     slices exactly; its rows split into ranges instead).
// Layouts (see the sim's cube.h): L1 holds NZ column blocks (ND2NZ); L0A wants (m block,
// k block) fractals; L0B (k block, n block) fractals of n rows: B [N, K] is already in that
// order, bf16 B [K, N] is transposed per fractal by LoadData, int8 B [K, N] per 32x32
// square by LoadDataWithTranspose.
// GATED (dsv4/matmul_prefetch.h): the block's vector cores read each item's B into L2
// ahead of it; before a strip whose B the block has not read yet, the cube waits for it.
// Buffers: the plan decides each InitBuffer size and passes it as `*_BYTES` (A_PANEL,
// B_L1, A_L0, A_TAIL when TAIL_K > 0, B_L0, C_STRIP), each at least what its use below needs,
// and how many B tiles stream through L1 (B_L1_BUFFERS: more hide the GM latency of a load
// behind the ones in flight) and C strips alternate in L0C (C_STRIP_BUFFERS: with two, a
// strip's Fixpipe runs under the next strip's Mmads).
#pragma once

#include "dsv4/pipe_sync.h"
#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// Operand and accumulator (L0C) types of the two cube paths.
template <bool INT8>
struct CubeTypes {
    using In = bfloat16_t;
    using Acc = float;
};
template <>
struct CubeTypes<true> {
    using In = int8_t;
    using Acc = int32_t;
};


// C in GM: the accumulator's type, or with DEQ_SHIFT > 0 (int8 only) half, acc *
// 2^-DEQ_SHIFT as Fixpipe DEQF16 writes it, whose QUANT_PRE is the scale's float bits (a
// power of two: sign and mantissa 0, exponent 127 - DEQ_SHIFT).
template <typename P>
struct CubeOut {
    static constexpr bool HALF = P::DEQ_SHIFT > 0;
    using T = typename Either<HALF, typename CubeTypes<P::INT8>::Acc, half>::T;
    static_assert(!HALF || (P::INT8 && P::DEQ_SHIFT <= 24 &&
                            uint64_t(P::K) * 128 * 128 <= (uint64_t(65504) << P::DEQ_SHIFT)),
                  "int8 only: |acc| <= 128 * 128 * K scaled into half's range, 2^-DEQ_SHIFT still a half");
    static constexpr uint64_t QUANT_PRE = uint64_t(127 - P::DEQ_SHIFT) << 23;
};

// Which block runs item g of a launch's work items (a MatmulGroup's parts one after
// another): they are dealt in rounds over the blocks, every other round backwards, so
// with the heaviest items first the blocks that took one take the last light ones.
struct BackAndForth {
    uint32_t block, blocks;

    __aicore__ inline bool Mine(uint32_t g) const
    {
        const uint32_t at = g % blocks;
        return ((g / blocks) % 2 == 0 ? at : blocks - 1 - at) == block;
    }
};

// Which block runs item g of a launch of `items` items, RUNS: each block a run of
// consecutive items, the runs within one item of each other.
struct Runs {
    uint32_t first, end;

    __aicore__ inline Runs(uint32_t block, uint32_t blocks, uint32_t items)
        : first(static_cast<uint32_t>(uint64_t(block) * items / blocks)),
          end(static_cast<uint32_t>(uint64_t(block + 1) * items / blocks))
    {
    }

    __aicore__ inline bool Mine(uint32_t g) const { return g >= first && g < end; }
};

// Cross-core flags (mode 2) of a GATED matmul and its vector cores' B reads.
struct BFlags {
    static constexpr uint16_t READY = 3;  // AIVs -> AIC: a strip's B is in L2
    static constexpr uint16_t TAKEN = 4;  // AIC -> AIVs: a strip's B was waited for (a credit)
};

template <typename P, bool GATED = false>
class Matmul {
    using In = typename CubeTypes<P::INT8>::In;
    using Acc = typename CubeTypes<P::INT8>::Acc;
    using Out = typename CubeOut<P>::T;
    static constexpr uint32_t C0 = 32 / sizeof(In);        // elements of a fractal row
    static constexpr uint32_t FRAC = 512 / sizeof(In);     // elements of a fractal
    static constexpr uint32_t RANGE_M_PAD = (P::RANGE_M + 15) / 16 * 16;
    static constexpr uint32_t STRIPS_M = (P::RANGE_M + P::TILE_M - 1) / P::TILE_M;
    // Columns of a k slice in the L1 panel; the rest (at most TAIL_K) are the L0A tail.
    static constexpr uint32_t PANEL_K = P::SLICE_K - P::TAIL_K;
    static constexpr uint32_t MAX_ND2NZ_STRIDE = 65535;  // Nd2NzParams' 16-bit srcDValue
    static_assert(P::LDA <= MAX_ND2NZ_STRIDE && (P::LDB <= MAX_ND2NZ_STRIDE || !P::B_NK),
                  "a leading dimension past 16 bits only for B [K, N] (copied row by row)");
    static_assert(RANGE_M_PAD <= 16384 && P::TILE_K <= 16384 && P::TILE_N <= 16384,
                  "ND2NZ: at most 16384 rows and NZ row stride");
    static_assert(P::K % C0 == 0 && P::TILE_K % C0 == 0 && P::SLICE_K % C0 == 0 && P::TAIL_K % C0 == 0,
                  "K tiles are whole fractals");
    static_assert(P::TAIL_K <= P::TILE_K && P::TAIL_K <= PANEL_K,
                  "the tail is one Mmad k step and is staged through the panel's buffer");
    static_assert(P::N % 16 == 0 && P::TILE_N % 16 == 0 && P::RANGE_N % P::TILE_N == 0,
                  "N tiles are whole fractals");
    // Cores write disjoint row ranges and column strips of C: each starts on a 32-byte block,
    // so no two write parts of one block (a partial block is a read-modify-write).
    static constexpr uint32_t C_BLOCK = 32 / sizeof(Out);
    static_assert(P::LDC % C_BLOCK == 0 && P::STRIDE_C % C_BLOCK == 0 && P::SLICE_STRIDE_C % C_BLOCK == 0,
                  "C rows, batches and k slices start on 32-byte blocks");
    static_assert(P::B_NK || !P::INT8 || (P::N % 32 == 0 && P::TILE_N % 32 == 0),
                  "int8 B stored [K, N] is transposed in whole 32x32 squares");
    static_assert(!P::COLUMNS_INNER || (P::RUNS && !P::CHAIN),
                  "columns innermost: runs of items, each panel's k slice an item of its own");
    static_assert(P::SLICE_K >= P::K || (!P::INT8 && int(P::CHAIN) + int(P::SLICE_STRIDE_C > 0) == 1),
                  "bf16 k slices chain on one core or write their partial products apart; int8 is one slice");
    static_assert(P::A_PANEL_BYTES >= RANGE_M_PAD * PANEL_K * sizeof(In), "a_panel holds the item's A panel");
    static_assert(P::B_L1_BYTES >= P::TILE_K * P::TILE_N * sizeof(In) &&
                      P::B_L0_BYTES >= P::TILE_K * P::TILE_N * sizeof(In),
                  "b_l1 and b_l0 hold a B tile");
    static_assert(P::A_TILE_K % C0 == 0 && P::A_TILE_K <= P::TILE_K, "A tiles of whole k blocks within a B tile");
    static_assert(P::A_L0_BYTES >= P::TILE_M * P::A_TILE_K * sizeof(In), "a_l0 holds an A tile");
    static_assert(P::B_L1_BUFFERS >= 2 && P::B_L1_BUFFERS <= 4 && P::C_STRIP_BUFFERS >= 1 && P::C_STRIP_BUFFERS <= 2,
                  "2 to 4 B tiles in flight in L1, 1 or 2 C strips");
    static_assert(P::C_STRIP_BYTES >= STRIPS_M * P::TILE_M * P::TILE_N * sizeof(Acc),
                  "c_strip holds the range's Mmad tiles of one column tile");
    static_assert(!GATED || !P::COLUMNS_INNER, "gated B: items one (m range, n range, k slice) each");

public:
    __aicore__ static inline void Run(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        Matmul op;
        op.Init(a, b, c, tiling);
        WithDeal(static_cast<uint32_t>(AscendC::GetBlockIdx()), static_cast<uint32_t>(AscendC::GetBlockNum()),
                 op.m_, [&](const auto& deal) { op.Process(deal, 0); });
    }

    // f(the deal of a launch's items at `rows` rows to block `block` of `blocks`).
    template <class F>
    __aicore__ static inline void WithDeal(uint32_t block, uint32_t blocks, uint32_t rows, F f)
    {
        if constexpr (P::RUNS) {
            f(Runs(block, blocks, Items(rows)));
        } else {
            f(BackAndForth{block, blocks});
        }
    }

    // Work items at `rows` runtime rows: (batch, m range, n range, k slice), the k slices
    // one item with CHAIN.
    __aicore__ static inline uint32_t Items(uint32_t rows)
    {
        return P::BATCH * ((rows + P::RANGE_M - 1) / P::RANGE_M) * ((P::N + P::RANGE_N - 1) / P::RANGE_N) *
               SliceItems();
    }

    // The items `deal` (BackAndForth, or Runs with RUNS) gives this block, item i being the
    // launch's item `before` + i.
    template <class Deal>
    __aicore__ static inline void RunOn(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR tiling, const Deal& deal,
                                        uint32_t before)
    {
        Matmul op;
        op.Init(a, b, c, tiling);
        op.Process(deal, before);
    }

    // A group's parts P, Qs... (dsv4/matmul_group.h) sharing their A panels: one A split
    // (tiles, RANGE_M, SLICE_K, TAIL_K, buffers), items (k slice, m range, part, n range)
    // dealt by `deal`; a block loads each panel it has items of once and runs its column
    // ranges of every part under it. `addr` holds B and C of each part in order.
    template <typename... Qs, class Deal>
    __aicore__ static inline void RunPanels(GM_ADDR a, GM_ADDR* addr, GM_ADDR tiling, const Deal& deal)
    {
        static_assert((SharesPanels<Qs>() && ...), "the parts share P's A split and buffers");
        static_assert(P::COLUMNS_INNER && P::BATCH == 1, "panels shared with the column ranges innermost");
        Matmul op;
        op.Init(a, addr[0], addr[1], tiling);
        const uint32_t mRanges = (op.m_ + P::RANGE_M - 1) / P::RANGE_M;
        const uint32_t kSlices = (P::K + P::SLICE_K - 1) / P::SLICE_K;
        constexpr uint32_t perPanel = (NRanges<P>() + ... + NRanges<Qs>());
        for (uint32_t panel = 0; panel < mRanges * kSlices; ++panel) {
            const uint32_t first = panel * perPanel;
            const Share mine = MineOf(deal, first, perPanel);
            if (mine.begin == mine.end) {
                continue;
            }
            const uint32_t ks = panel / mRanges;
            op.UnderPanel(op.ItemOf(0, panel % mRanges, ks), [&](const Item& it, const auto& l1, const auto& tail) {
                op.template PartsColumns<0, P, Qs...>(it, l1, tail, addr, deal, first, ks);
            });
        }
    }

    // This block's items (batch, m range, n range, k slice) in the order it runs them (the
    // k slices of an item with CHAIN in turn), each with whether its B differs from the
    // block's item before (with RUNS a run's m ranges of one B slice follow each other).
    template <class Deal, class F>
    __aicore__ static inline void ForItems(uint32_t rows, const Deal& deal, uint32_t before, F f)
    {
        const uint32_t mRanges = (rows + P::RANGE_M - 1) / P::RANGE_M;
        const uint32_t nRanges = (P::N + P::RANGE_N - 1) / P::RANGE_N;
        const uint32_t kSlices = (P::K + P::SLICE_K - 1) / P::SLICE_K;
        const uint32_t items = Items(rows);
        uint32_t lastB = ~0u;
        for (uint32_t item = 0; item < items; ++item) {
            if (!deal.Mine(before + item)) {
                continue;
            }
            // (batch, m range, n range, slice), or with RUNS (batch, n range, slice, m range)
            uint32_t rest = item;
            uint32_t mr = 0;
            if constexpr (P::RUNS) {
                mr = rest % mRanges;
                rest /= mRanges;
            }
            const uint32_t slice = rest % SliceItems();
            rest /= SliceItems();
            const uint32_t nr = rest % nRanges;
            rest /= nRanges;
            if constexpr (!P::RUNS) {
                mr = rest % mRanges;
                rest /= mRanges;
            }
            const uint32_t batch = rest;
            const uint32_t kEnd = P::CHAIN ? kSlices : slice + 1;
            for (uint32_t ks = P::CHAIN ? 0 : slice; ks < kEnd; ++ks) {
                const uint32_t b = (batch * nRanges + nr) * kSlices + ks;
                f(batch, mr, nr, ks, b != lastB);
                lastB = b;
            }
        }
    }

    // The B of C columns [n, n + nLen) over k slice ks of batch `batch`: `rows` rows of
    // `width` elements, LDB apart, from element `at` of B.
    struct BRows {
        uint64_t at;
        uint32_t rows, width;
    };
    __aicore__ static inline BRows StripB(uint32_t batch, uint32_t ks, uint32_t n, uint32_t nLen)
    {
        const uint32_t k0 = ks * P::SLICE_K;
        const uint32_t kLen = Min(P::SLICE_K, P::K - k0);
        const uint64_t at = uint64_t(batch) * P::STRIDE_B;
        if constexpr (P::B_NK) {
            return BRows{at + uint64_t(n) * P::LDB + k0, nLen, kLen};
        } else {
            return BRows{at + uint64_t(k0) * P::LDB + n, kLen, nLen};
        }
    }

    // Calls f(n, nLen) for the column strips of n ranges [nr, nrEnd).
    template <class F>
    __aicore__ static inline void ForStrips(uint32_t nr, uint32_t nrEnd, F f)
    {
        const uint32_t nEnd = Min(P::N, nrEnd * P::RANGE_N);
        for (uint32_t n = nr * P::RANGE_N; n < nEnd; n += P::TILE_N) {
            f(n, Min(P::TILE_N, nEnd - n));
        }
    }

private:
    // One k slice of a (batch, m range)'s panel and the B and C its column ranges use.
    struct Item {
        uint32_t m0, mLen, k0, kLen, panelLen;
        bool add;  // adds into C atomically instead of writing it
        AscendC::GlobalTensor<In> a, b;
        AscendC::GlobalTensor<Out> c;
    };

    template <typename Q>
    __aicore__ static constexpr uint32_t NRanges()
    {
        return (Q::N + Q::RANGE_N - 1) / Q::RANGE_N;
    }

    // Whether part Q reads A as P does and fits P's buffers.
    template <typename Q>
    __aicore__ static constexpr bool SharesPanels()
    {
        return Q::INT8 == P::INT8 && Q::DEQ_SHIFT == P::DEQ_SHIFT && Q::K == P::K && Q::LDA == P::LDA &&
               Q::GROUP_ROWS == P::GROUP_ROWS && Q::ROWS_PER_TOKEN == P::ROWS_PER_TOKEN && Q::BATCH == 1 &&
               Q::TILE_M == P::TILE_M && Q::TILE_N == P::TILE_N && Q::TILE_K == P::TILE_K &&
               Q::A_TILE_K == P::A_TILE_K && Q::RANGE_M == P::RANGE_M && Q::SLICE_K == P::SLICE_K &&
               Q::TAIL_K == P::TAIL_K && Q::B_L1_BUFFERS == P::B_L1_BUFFERS &&
               Q::C_STRIP_BUFFERS == P::C_STRIP_BUFFERS && !Q::CHAIN && Q::COLUMNS_INNER &&
               Q::A_PANEL_BYTES <= P::A_PANEL_BYTES && Q::B_L1_BYTES <= P::B_L1_BYTES &&
               Q::A_L0_BYTES <= P::A_L0_BYTES && Q::B_L0_BYTES <= P::B_L0_BYTES &&
               Q::C_STRIP_BYTES <= P::C_STRIP_BYTES;
    }

    // The items among [first, first + count) `deal` gives this block, as offsets from
    // first: consecutive, as a run's items are.
    template <class Deal>
    __aicore__ static inline Share MineOf(const Deal& deal, uint32_t first, uint32_t count)
    {
        uint32_t begin = 0;
        while (begin < count && !deal.Mine(first + begin)) {
            ++begin;
        }
        uint32_t end = begin;
        while (end < count && deal.Mine(first + end)) {
            ++end;
        }
        return Share{begin, end};
    }

    // Part I (Q, then More...) of a shared panel whose items start at `first`: this
    // block's n ranges of it, B and C part I's.
    template <uint32_t I, typename Q, typename... More, class Deal>
    __aicore__ inline void PartsColumns(Item it, const AscendC::LocalTensor<In>& panel,
                                        const AscendC::LocalTensor<In>& tail, GM_ADDR* addr, const Deal& deal,
                                        uint32_t first, uint32_t ks)
    {
        constexpr uint32_t nRanges = NRanges<Q>();
        const Share mine = MineOf(deal, first, nRanges);
        if (mine.begin < mine.end) {
            AscendC::GlobalTensor<Out> c;
            it.b.SetGlobalBuffer(reinterpret_cast<__gm__ In*>(addr[2 * I]));
            c.SetGlobalBuffer(reinterpret_cast<__gm__ Out*>(addr[2 * I + 1]));
            it.c = c[ks * Q::SLICE_STRIDE_C + it.m0 * Q::LDC];
            const uint32_t nEnd = Min(Q::N, mine.end * Q::RANGE_N);
            for (uint32_t n = mine.begin * Q::RANGE_N; n < nEnd; n += P::TILE_N) {
                Strip<Q>(it, panel, tail, n, Min(P::TILE_N, nEnd - n));
            }
        }
        if constexpr (sizeof...(More) > 0) {
            PartsColumns<I + 1, More...>(it, panel, tail, addr, deal, first + nRanges, ks);
        }
    }

    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR tiling)
    {
        TilingData td = LoadTiling(tiling);
        m_ = ProductRows<P>(td);
        a_.SetGlobalBuffer(reinterpret_cast<__gm__ In*>(a));
        b_.SetGlobalBuffer(reinterpret_cast<__gm__ In*>(b));
        c_.SetGlobalBuffer(reinterpret_cast<__gm__ Out*>(c));
        pipe_.InitBuffer(aL1_, 1, P::A_PANEL_BYTES);
        pipe_.InitBuffer(bL1_, P::B_L1_BUFFERS, P::B_L1_BYTES);
        pipe_.InitBuffer(aL0_, 2, P::A_L0_BYTES);
        if constexpr (P::TAIL_K > 0) {
            static_assert(P::A_TAIL_BYTES >= RANGE_M_PAD * P::TAIL_K * sizeof(In), "a_tail holds the slice's tail");
            pipe_.InitBuffer(tailL0_, 1, P::A_TAIL_BYTES);
        }
        pipe_.InitBuffer(bL0_, 2, P::B_L0_BYTES);
        pipe_.InitBuffer(cL0_, P::C_STRIP_BUFFERS, P::C_STRIP_BYTES);
    }

    // Work items per (batch, m range, n range): one per k slice, or one for all with CHAIN.
    __aicore__ static inline uint32_t SliceItems() { return P::CHAIN ? 1 : (P::K + P::SLICE_K - 1) / P::SLICE_K; }

    template <class Deal>
    __aicore__ inline void Process(const Deal& deal, uint32_t before)
    {
        if constexpr (P::COLUMNS_INNER) {
            const uint32_t mRanges = (m_ + P::RANGE_M - 1) / P::RANGE_M;
            const uint32_t nRanges = (P::N + P::RANGE_N - 1) / P::RANGE_N;
            const uint32_t kSlices = (P::K + P::SLICE_K - 1) / P::SLICE_K;
            const uint32_t items = Items(m_);
            // (batch, slice, m range, n range): the block's n ranges of each panel (a run's
            // items are consecutive, so they are too) under one copy of it
            for (uint32_t first = 0; first < items; first += nRanges) {
                const Share mine = MineOf(deal, before + first, nRanges);
                if (mine.begin < mine.end) {
                    const uint32_t panel = first / nRanges;
                    Slice(panel / mRanges / kSlices, panel % mRanges, mine.begin, mine.end, panel / mRanges % kSlices);
                }
            }
            return;
        }
        ForItems(m_, deal, before, [&](uint32_t batch, uint32_t mr, uint32_t nr, uint32_t ks, bool freshB) {
            Slice(batch, mr, nr, nr + 1, ks, freshB);
        });
    }

    // k slice ks of the work items (batch, m range mr, n ranges nr .. nrEnd).
    // With GATED and freshB, each strip first waits for its B in L2.
    __aicore__ inline void Slice(uint32_t batch, uint32_t mr, uint32_t nr, uint32_t nrEnd, uint32_t ks,
                                 bool freshB = false)
    {
        const Item it = ItemOf(batch, mr, ks);
        if (P::CHAIN && ks > 0) {
            // the previous slice's C writes land before this slice adds to them
            AscendC::PipeBarrier<PIPE_FIX>();
        }
        UnderPanel(it, [&](const Item& item, const auto& panel, const auto& tail) {
            ForStrips(nr, nrEnd, [&](uint32_t n, uint32_t nLen) {
                if constexpr (GATED) {
                    if (freshB) {
                        AscendC::CrossCoreWaitFlag(BFlags::READY);
                        AscendC::CrossCoreSetFlag<2, PIPE_MTE2>(BFlags::TAKEN);
                    }
                }
                Strip(item, panel, tail, n, nLen);
            });
        });
    }

    // body(it, panel, tail) with the item's A panel in L1 (and its tail in L0A), freed after.
    template <class Body>
    __aicore__ inline void UnderPanel(const Item& it, Body body)
    {
        AscendC::LocalTensor<In> tail;
        if (HasTail(it)) {
            tail = LoadTail(it);
        }
        AscendC::LocalTensor<In> panel = LoadPanel(it);
        body(it, panel, tail);
        aL1_.FreeTensor(panel);
        if (HasTail(it)) {
            tailL0_.FreeTensor(tail);
        }
    }

    // The panel (batch, m range mr, k slice ks) as an item of P's B and C.
    __aicore__ inline Item ItemOf(uint32_t batch, uint32_t mr, uint32_t ks) const
    {
        Item it;
        it.m0 = mr * P::RANGE_M;
        it.mLen = Min(P::RANGE_M, m_ - it.m0);
        it.k0 = ks * P::SLICE_K;
        it.kLen = Min(P::SLICE_K, P::K - it.k0);
        it.panelLen = Min(PANEL_K, it.kLen);
        it.a = a_[batch * P::STRIDE_A + it.m0 * P::LDA + it.k0];
        it.b = b_[batch * P::STRIDE_B];
        it.c = c_[ks * P::SLICE_STRIDE_C + batch * P::STRIDE_C + it.m0 * P::LDC];
        it.add = P::CHAIN && ks > 0;
        return it;
    }

    __aicore__ static inline uint32_t Pad16(uint32_t x) { return (x + 15) / 16 * 16; }
    // The item's slice reaches past the panel (never for TAIL_K == 0).
    __aicore__ static inline bool HasTail(const Item& it) { return P::TAIL_K > 0 && it.kLen > it.panelLen; }

    // The item's A panel: mLen valid rows (ND2NZ leaves the pad rows of the last fractal
    // row undefined; they only feed C rows that are never written) x panelLen columns, in
    // column blocks of Pad16(mLen) rows.
    __aicore__ inline AscendC::LocalTensor<In> LoadPanel(const Item& it)
    {
        AscendC::LocalTensor<In> panel = aL1_.AllocTensor<In>();
        AscendC::DataCopy(panel, it.a,
                          AscendC::Nd2NzParams(1, it.mLen, it.panelLen, 0, P::LDA, Pad16(it.mLen), 1, 0));
        aL1_.EnQue(panel);
        return aL1_.DeQue<In>();
    }

    // The slice's columns past the panel, all mLen rows, as L0A (m block, k block) fractals
    // that stay for the whole item: GM -> L1 through the panel's buffer (freed again before
    // LoadPanel takes it) -> L0A.
    __aicore__ inline AscendC::LocalTensor<In> LoadTail(const Item& it)
    {
        const uint32_t tailLen = it.kLen - it.panelLen;
        AscendC::LocalTensor<In> staged = aL1_.AllocTensor<In>();
        AscendC::DataCopy(staged, it.a[it.panelLen],
                          AscendC::Nd2NzParams(1, it.mLen, tailLen, 0, P::LDA, Pad16(it.mLen), 1, 0));
        aL1_.EnQue(staged);
        staged = aL1_.DeQue<In>();
        AscendC::LocalTensor<In> tail = tailL0_.AllocTensor<In>();
        ToL0A(tail, staged, Pad16(it.mLen) / 16, 0, it.mLen, 0, tailLen);
        aL1_.FreeTensor(staged);
        tailL0_.EnQue(tail);
        return tailL0_.DeQue<In>();
    }

    // C[rows of the item, n .. n + nLen) over the item's k slice (panel, then tail), then
    // out to GM; B and C laid out as part Q's (P, or a part sharing P's panels).
    template <typename Q = P>
    __aicore__ inline void Strip(const Item& it, const AscendC::LocalTensor<In>& panel,
                                 const AscendC::LocalTensor<In>& tail, uint32_t n, uint32_t nLen)
    {
        AscendC::LocalTensor<Acc> acc = cL0_.AllocTensor<Acc>();
        for (uint32_t kt = 0; kt < it.panelLen; kt += P::TILE_K) {
            const uint32_t kLen = Min(P::TILE_K, it.panelLen - kt);
            AscendC::LocalTensor<In> b = LoadB<Q>(it.b, it.k0 + kt, kLen, n, nLen);
            for (uint32_t mt = 0; mt < it.mLen; mt += P::TILE_M) {
                const uint32_t rows = Min(P::TILE_M, it.mLen - mt);
                // A tiles of A_TILE_K columns against the B tile's k blocks from ka on
                for (uint32_t ka = 0; ka < kLen; ka += P::A_TILE_K) {
                    const uint32_t aLen = Min(P::A_TILE_K, kLen - ka);
                    AscendC::LocalTensor<In> a = LoadA(panel, Pad16(it.mLen) / 16, mt, rows, kt + ka, aLen);
                    MmadTile(acc, a, b[ka / C0 * (nLen / 16) * FRAC], mt, rows, nLen, aLen, kt + ka == 0);
                    aL0_.FreeTensor(a);
                }
            }
            bL0_.FreeTensor(b);
        }
        if (HasTail(it)) {
            const uint32_t kLen = it.kLen - it.panelLen;
            AscendC::LocalTensor<In> b = LoadB<Q>(it.b, it.k0 + it.panelLen, kLen, n, nLen);
            for (uint32_t mt = 0; mt < it.mLen; mt += P::TILE_M) {
                // the tail's m blocks of this tile, each kLen / C0 fractals
                MmadTile(acc, tail[mt / 16 * (kLen / C0) * FRAC], b, mt, Min(P::TILE_M, it.mLen - mt), nLen, kLen,
                         false);
            }
            bL0_.FreeTensor(b);
        }
        cL0_.EnQue(acc);
        acc = cL0_.DeQue<Acc>();
        if (it.add) {
            AscendC::SetAtomicAdd<Out>();
        }
        for (uint32_t mt = 0; mt < it.mLen; mt += P::TILE_M) {
            const uint32_t rows = Min(P::TILE_M, it.mLen - mt);
            AscendC::FixpipeParamsV220 fp(nLen, rows, Pad16(rows), Q::LDC, false);
            if constexpr (CubeOut<P>::HALF) {
                fp.quantPre = QuantMode_t::DEQF16;
                fp.deqScalar = CubeOut<P>::QUANT_PRE;
            }
            AscendC::Fixpipe(it.c[mt * Q::LDC + n], acc[mt / P::TILE_M * P::TILE_M * P::TILE_N], fp);
        }
        if (it.add) {
            AscendC::SetAtomicNone();
        }
        cL0_.FreeTensor(acc);
    }

    // One Mmad of `rows` C rows from row mt of the strip (the accumulator holds TILE_M-row
    // tiles of TILE_N columns); `first` starts the sum, else it adds to it.
    __aicore__ inline void MmadTile(const AscendC::LocalTensor<Acc>& acc, const AscendC::LocalTensor<In>& a,
                                    const AscendC::LocalTensor<In>& b, uint32_t mt, uint32_t rows, uint32_t nLen,
                                    uint32_t kLen, bool first)
    {
        const AscendC::MmadParams mp(rows, nLen, kLen, 0, false, first);
        if (!first) {
            BeforeAccumulatingMmad(rows, nLen);
        }
        AscendC::Mmad(acc[mt / P::TILE_M * P::TILE_M * P::TILE_N], a, b, mp);
    }

    // Rows [mt, mt + rows) x columns [kt, kt + kLen) of the panel as an L0A tile.
    __aicore__ inline AscendC::LocalTensor<In> LoadA(const AscendC::LocalTensor<In>& panel, uint32_t rowBlocks,
                                                     uint32_t mt, uint32_t rows, uint32_t kt, uint32_t kLen)
    {
        AscendC::LocalTensor<In> a = aL0_.AllocTensor<In>();
        ToL0A(a, panel, rowBlocks, mt, rows, kt, kLen);
        aL0_.EnQue(a);
        return aL0_.DeQue<In>();
    }

    // Rows [mt, mt + rows) x columns [kt, kt + kLen) of an L1 NZ block (rowBlocks fractal
    // rows per column block) into dst as L0A (m block, k block) fractals, in as few
    // LoadData calls as the shape allows (each costs a head): one per 16-row fractal row
    // (its k blocks rowBlocks apart), or for a tile taller than deep one per k block (its
    // m blocks adjacent in the column block; dstGap leaves each m block's other k blocks).
    __aicore__ inline void ToL0A(const AscendC::LocalTensor<In>& dst, const AscendC::LocalTensor<In>& src,
                                 uint32_t rowBlocks, uint32_t mt, uint32_t rows, uint32_t kt, uint32_t kLen)
    {
        const uint32_t kBlocks = kLen / C0, mBlocks = Pad16(rows) / 16;
        if (mBlocks > kBlocks && mBlocks <= 255) {  // repeatTimes is 8 bits
            for (uint32_t kb = 0; kb < kBlocks; ++kb) {
                const uint32_t first = (kt / C0 + kb) * rowBlocks + mt / 16;
                AscendC::LoadData(dst[kb * FRAC], src,
                                  AscendC::LoadData2DParams(first, mBlocks, 1, 0, kBlocks - 1, false, 0));
            }
            return;
        }
        for (uint32_t mb = 0; mb < mBlocks; ++mb) {
            const uint32_t first = kt / C0 * rowBlocks + mt / 16 + mb;
            AscendC::LoadData(dst[mb * kBlocks * FRAC], src,
                              AscendC::LoadData2DParams(first, kBlocks, rowBlocks, 0, 0, false, 0));
        }
    }

    // B[k0 .. k0 + kLen, n .. n + nLen) GM -> L1 -> L0B (k block, n block) fractals, B
    // laid out as part Q's.
    template <typename Q>
    __aicore__ inline AscendC::LocalTensor<In> LoadB(const AscendC::GlobalTensor<In>& gb, uint32_t k0, uint32_t kLen,
                                                     uint32_t n, uint32_t nLen)
    {
        const uint32_t kBlocks = kLen / C0, nBlocks = nLen / 16;
        AscendC::LocalTensor<In> l1 = bL1_.AllocTensor<In>();
        if constexpr (Q::B_NK) {
            AscendC::DataCopy(l1, gb[n * Q::LDB + k0], AscendC::Nd2NzParams(1, nLen, kLen, 0, Q::LDB, nLen, 1, 0));
        } else if constexpr (Q::LDB <= MAX_ND2NZ_STRIDE) {
            AscendC::DataCopy(l1, gb[k0 * Q::LDB + n], AscendC::Nd2NzParams(1, kLen, nLen, 0, Q::LDB, kLen, 1, 0));
        } else {
            // A leading dimension past the 16-bit srcDValue: one ND2NZ copy per row of B
            // (row i lands as row i of every NZ column block), the same bytes in kLen copies.
            for (uint32_t i = 0; i < kLen; ++i) {
                AscendC::DataCopy(l1[i * C0], gb[uint64_t(k0 + i) * Q::LDB + n],
                                  AscendC::Nd2NzParams(1, 1, nLen, 0, nLen, kLen, 1, 0));
            }
        }
        bL1_.EnQue(l1);
        l1 = bL1_.DeQue<In>();
        AscendC::LocalTensor<In> b = bL0_.AllocTensor<In>();
        for (uint32_t kb = 0; kb < kBlocks; ++kb) {
            AscendC::LocalTensor<In> dst = b[kb * nBlocks * FRAC];
            if constexpr (Q::B_NK) {
                // L1 column block kb holds the nLen rows of k block kb: already (k, n) order
                AscendC::LoadData(dst, l1, AscendC::LoadData2DParams(kb * nBlocks, nBlocks, 1, 0, 0, false, 0));
            } else if constexpr (Q::INT8) {
                // squares of 32 k x 32 n: column block j (32 n) holds kBlocks squares
                AscendC::LoadDataWithTranspose(dst, l1,
                                               AscendC::LoadData2dTransposeParams(kb, nBlocks / 2, kBlocks, 1, 0));
            } else {
                // 16 x 16 fractals: column block j (16 n) holds kBlocks fractals
                AscendC::LoadData(dst, l1, AscendC::LoadData2DParams(kb, nBlocks, kBlocks, 0, 0, true, 0));
            }
        }
        bL1_.FreeTensor(l1);
        bL0_.EnQue(b);
        return bL0_.DeQue<In>();
    }

    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::TPosition::A1, 1> aL1_;
    AscendC::TQue<AscendC::TPosition::B1, 1> bL1_;
    AscendC::TQue<AscendC::TPosition::A2, 1> aL0_;
    AscendC::TQue<AscendC::TPosition::A2, 1> tailL0_;
    AscendC::TQue<AscendC::TPosition::B2, 1> bL0_;
    AscendC::TQue<AscendC::TPosition::CO1, 1> cL0_;
    AscendC::GlobalTensor<In> a_, b_;
    AscendC::GlobalTensor<Out> c_;
    uint32_t m_ = 0;
};

// Matmul on the columns [COL0, COL0 + N) of a wider product (LDB and LDC the product's): B
// [K, N] from its column COL0, B [N, K] from its row COL0, C from its column COL0. A column
// range of a product in a launch of its own, the cube part of a mixed launch beside the
// vector kernel consuming the range before (dsv4/together.h; generator gemm::overlap).
template <typename P>
class MatmulAt {
    using In = typename CubeTypes<P::INT8>::In;
    using Out = typename CubeOut<P>::T;
    static_assert(P::COL0 % (32 / sizeof(Out)) == 0, "the range's C columns start on a 32-byte block");

public:
    __aicore__ static inline void Run(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
    {
        const uint64_t bAt = uint64_t(P::COL0) * (P::B_NK ? P::LDB : 1) * sizeof(In);
        Matmul<P>::Run(a, b + bAt, c + uint64_t(P::COL0) * sizeof(Out), workspace, tiling);
    }
};

}  // namespace dsv4
