// Several cube matmuls that share their A operand (the projections of one input) in one
// launch, side by side: part i runs on blocks [FIRST_i, FIRST_i + P_i::BLOCKS) exactly the
// work its own Matmul launch would run on P_i::BLOCKS blocks (dsv4/matmul.h), so A rows
// are read by every part as before while the parts' weights stream on all their cores at
// once. Arguments: A, then B and C of each part in order, then workspace and tiling.
//
// Params contract: each P_i is a Matmul Params (see matmul.h) with BLOCKS, its block
// count; all parts read the same A (same element type, K, LDA, row count and batch 1).
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
        Dispatch<0, 0, Ps...>(static_cast<uint32_t>(AscendC::GetBlockIdx()), a, addr, addr[sizeof...(Addr) - 1]);
    }

private:
    template <uint32_t I, uint32_t FIRST, typename P, typename... More>
    __aicore__ static inline void Dispatch(uint32_t block, GM_ADDR a, GM_ADDR* addr, GM_ADDR tiling)
    {
        using P0 = typename FirstOf<Ps...>::Type;
        static_assert(P::INT8 == P0::INT8 && P::K == P0::K && P::LDA == P0::LDA && P::GROUP_ROWS == P0::GROUP_ROWS &&
                          P::ROWS_PER_TOKEN == P0::ROWS_PER_TOKEN && P::BATCH == 1,
                      "the parts share one A");
        static_assert(P::BLOCKS > 0, "every part has blocks");
        if (block < FIRST + P::BLOCKS) {
            Matmul<P>::RunOn(a, addr[2 * I], addr[2 * I + 1], tiling, block - FIRST, P::BLOCKS);
        } else if constexpr (sizeof...(More) > 0) {
            Dispatch<I + 1, FIRST + P::BLOCKS, More...>(block, a, addr, tiling);
        }
    }

    template <typename Head, typename... Tail>
    struct FirstOf {
        using Type = Head;
    };
};

}  // namespace dsv4
