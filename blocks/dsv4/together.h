// Independent kernels in one launch (the fusion pass's `together` launches, generator
// kernel_plan::together): a launch and its gap fewer per part but the first.
// Together: vector parts whose blocks fit the vector cores together run side by side, each on
// a range of blocks of its own (its Params name it: BLOCK_BASE, BLOCKS; `OwnBlocks` in
// dsv4/vec_common.h gives the part its place in it), so the launch takes as long as its
// longest part; otherwise they run in turn on every block, each spreading its work over
// all of them as over its own launch's. CubeBeside: a cube part (a mixed launch, each block
// 1 AIC + 2 AIV) on the cube cores, dealing its work over GetBlockNum(), and vector parts
// side by side on the vector cores, all at once (the vector cores' work under the cube's
// stream, every core's DMA loading). Either way each part builds and destroys its own TPipe
// (so every pipe has drained before the next part's is made) and binds no tensor another
// part writes, so the parts need no ordering between them. Arguments: each part's GM
// arguments in part order, then workspace and tiling, which every part receives.
//
// Params contract: each P_i names ARGS, its GM argument count, and Block, the class whose
// static Run(its arguments..., workspace, tiling) runs it; side by side, also BLOCK_BASE
// and BLOCKS, and Block takes its block index and count from OwnBlocks<P_i>.
#pragma once

#include "dsv4/vec_common.h"

namespace dsv4 {

template <uint32_t... I>
struct Indices {};

template <uint32_t N, uint32_t... I>
struct MakeIndices : MakeIndices<N - 1, N - 1, I...> {};

template <uint32_t... I>
struct MakeIndices<0, I...> {
    using Type = Indices<I...>;
};

// Part P, its GM arguments from a[0].
template <typename P, uint32_t... I>
__aicore__ inline void RunPart(GM_ADDR* a, GM_ADDR workspace, GM_ADDR tiling, Indices<I...>)
{
    P::Block::Run(a[I]..., workspace, tiling);
}

// Parts P, More..., their GM arguments from a[0] in turn, each where this block is one of its
// own.
template <typename P, typename... More>
__aicore__ inline void RunParts(GM_ADDR* a, GM_ADDR workspace, GM_ADDR tiling)
{
    if (OwnBlocks<P>::Mine()) {
        RunPart<P>(a, workspace, tiling, typename MakeIndices<P::ARGS>::Type{});
    }
    if constexpr (sizeof...(More) > 0) {
        RunParts<More...>(a + P::ARGS, workspace, tiling);
    }
}

template <typename... Ps>
class Together {
    static constexpr uint32_t ARGS = (0u + ... + Ps::ARGS);
    static_assert(sizeof...(Ps) >= 2, "together are at least two parts");

public:
    template <typename... Addr>
    __aicore__ static inline void Run(Addr... addr)
    {
        static_assert(sizeof...(Addr) == ARGS + 2, "every part's arguments, then workspace and tiling");
        GM_ADDR a[] = {addr...};
        RunParts<Ps...>(a, a[ARGS], a[ARGS + 1]);
    }
};

template <typename PC, typename... Ps>
class CubeBeside {
    static constexpr uint32_t ARGS = PC::ARGS + (0u + ... + Ps::ARGS);
    static_assert(sizeof...(Ps) >= 1 && (... && OwnBlocks<Ps>::RANGED),
                  "a cube part beside vector parts, each on blocks of its own");

public:
    template <typename... Addr>
    __aicore__ static inline void Run(Addr... addr)
    {
        static_assert(sizeof...(Addr) == ARGS + 2, "every part's arguments, then workspace and tiling");
        GM_ADDR a[] = {addr...};
        if ASCEND_IS_AIC {
            RunPart<PC>(a, a[ARGS], a[ARGS + 1], typename MakeIndices<PC::ARGS>::Type{});
        }
        if ASCEND_IS_AIV {
            RunParts<Ps...>(a + PC::ARGS, a[ARGS], a[ARGS + 1]);
        }
    }
};

}  // namespace dsv4
