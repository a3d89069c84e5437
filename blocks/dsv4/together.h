// Independent kernels in one launch (the fusion pass's `together` launches, generator
// kernel_plan::together): a launch and its gap fewer per part but the first.
// Vector parts whose blocks fit the vector cores together run side by side, each on a range
// of blocks of its own (its Params name it: BLOCK_BASE, BLOCKS; `OwnBlocks` in
// dsv4/vec_common.h gives the part its place in it), so the launch takes as long as its
// longest part; otherwise they run in turn on every block, each spreading its work over
// all of them as over its own launch's. A launch may also lead with a cube part (its Params
// name ON_CUBE): the launch is then mixed (each block 1 AIC + 2 AIV), the cube part runs on
// the cube cores and the vector parts side by side on the vector cores, all at once (the
// vector cores' work under the cube's stream, every core's DMA loading). Either way each
// part builds and destroys its own TPipe (so every pipe has drained before the next part's
// is made) and binds no tensor another part writes, so the parts need no ordering between
// them. Arguments: each part's GM arguments in part order, then workspace and tiling, which
// every part receives.
//
// Params contract: each P_i names ARGS, its GM argument count, and Block, the class whose
// static Run(its arguments..., workspace, tiling) runs it; side by side, also BLOCK_BASE
// and BLOCKS, and Block takes its block index and count from OwnBlocks<P_i>; a cube part,
// ON_CUBE (it runs on the launch's cube cores, dealing its work over GetBlockNum()).
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

// Whether Params P is a cube part's (names ON_CUBE).
template <typename P>
struct OnCube {
    template <typename Q>
    static constexpr bool Has(decltype(&Q::ON_CUBE)) { return true; }
    template <typename Q>
    static constexpr bool Has(...) { return false; }
    static constexpr bool VALUE = Has<P>(nullptr);
};

template <typename... Ps>
class Together {
    static constexpr uint32_t ARGS = (0u + ... + Ps::ARGS);
    static_assert(sizeof...(Ps) >= 2, "together are at least two parts");
    static_assert((0u + ... + uint32_t(OnCube<Ps>::VALUE)) <= 1, "one cube part at most");

public:
    template <typename... Addr>
    __aicore__ static inline void Run(Addr... addr)
    {
        static_assert(sizeof...(Addr) == ARGS + 2, "every part's arguments, then workspace and tiling");
        GM_ADDR a[] = {addr...};
        Each<0, Ps...>(a, a[ARGS], a[ARGS + 1]);
    }

private:
    // Part P, whose arguments start at a[AT], where this block is one of its own; then the
    // parts after it.
    template <uint32_t AT, typename P, typename... More>
    __aicore__ static inline void Each(GM_ADDR* a, GM_ADDR workspace, GM_ADDR tiling)
    {
        if constexpr (OnCube<P>::VALUE) {
            if ASCEND_IS_AIC {
                Call<P>(a + AT, workspace, tiling, typename MakeIndices<P::ARGS>::Type{});
            }
        } else {
            if ASCEND_IS_AIV {
                if (OwnBlocks<P>::Mine()) {
                    Call<P>(a + AT, workspace, tiling, typename MakeIndices<P::ARGS>::Type{});
                }
            }
        }
        if constexpr (sizeof...(More) > 0) {
            Each<AT + P::ARGS, More...>(a, workspace, tiling);
        }
    }

    template <typename P, uint32_t... I>
    __aicore__ static inline void Call(GM_ADDR* a, GM_ADDR workspace, GM_ADDR tiling, Indices<I...>)
    {
        P::Block::Run(a[I]..., workspace, tiling);
    }
};

}  // namespace dsv4
