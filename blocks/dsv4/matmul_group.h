// Several cube matmuls that share their A operand (the projections of one input) in one
// launch: each part's work items are exactly those its own Matmul launch would run
// (dsv4/matmul.h), one sequence over the parts in order (part i's item j is item j plus
// the items of parts 0..i-1) dealt over all the launch's blocks as `BackAndForth` says, so
// a part of few items shares its cores with the others instead of holding some alone, and
// A rows are read by every item as before. The plan lists the parts with the heaviest
// items first. A block runs its items of each part in part order, each part on a TPipe of
// its own (destroyed, and so every pipe drained, before the next part's is made); a part
// with no item on the block is not set up. Arguments: A, then B and C of each part in
// order, then workspace and tiling.
//
// Params contract: each P_i is a Matmul Params (see matmul.h); all parts read the same A
// (same element type, K, LDA, row count and batch 1).
#pragma once

#include "dsv4/matmul.h"

namespace dsv4 {

template <typename... Ps>
class MatmulGroup {
    static_assert(sizeof...(Ps) >= 2, "a group has at least two parts");

public:
    template <typename... Addr>
    __aicore__ static inline void Run(GM_ADDR a, Addr... rest)
    {
        static_assert(sizeof...(Addr) == 2 * sizeof...(Ps) + 2, "B and C per part, then workspace and tiling");
        GM_ADDR addr[] = {rest...};
        GM_ADDR tiling = addr[sizeof...(Addr) - 1];
        using P0 = typename FirstOf<Ps...>::Type;
        const uint32_t rows = ProductRows<P0>(LoadTiling(tiling));
        const BackAndForth deal{static_cast<uint32_t>(AscendC::GetBlockIdx()),
                                static_cast<uint32_t>(AscendC::GetBlockNum())};
        Each<0, Ps...>(deal, rows, 0, a, addr, tiling);
    }

private:
    // Part I, whose first item follows the `before` items of the parts ahead of it.
    template <uint32_t I, typename P, typename... More>
    __aicore__ static inline void Each(const BackAndForth& deal, uint32_t rows, uint32_t before, GM_ADDR a,
                                       GM_ADDR* addr, GM_ADDR tiling)
    {
        using P0 = typename FirstOf<Ps...>::Type;
        static_assert(P::INT8 == P0::INT8 && P::K == P0::K && P::LDA == P0::LDA && P::GROUP_ROWS == P0::GROUP_ROWS &&
                          P::ROWS_PER_TOKEN == P0::ROWS_PER_TOKEN && P::BATCH == 1,
                      "the parts share one A");
        const uint32_t items = Matmul<P>::Items(rows);
        bool mine = false;
        for (uint32_t i = 0; i < items && !mine; ++i) {
            mine = deal.Mine(before + i);
        }
        if (mine) {
            Matmul<P>::RunOn(a, addr[2 * I], addr[2 * I + 1], tiling, deal, before);
        }
        if constexpr (sizeof...(More) > 0) {
            Each<I + 1, More...>(deal, rows, before + items, a, addr, tiling);
        }
    }

    template <typename Head, typename... Tail>
    struct FirstOf {
        using Type = Head;
    };
};

}  // namespace dsv4
