// A product's column range on the cube cores beside a vector kernel on the vector cores, one
// mixed launch (each block 1 AIC + 2 AIV; generator kernel_plan::gemm::overlap): a product
// whose consumer works range by range of C's columns runs in ranges, range i on the cube
// cores beside the consumer of range i - 1 (which the launch before wrote), so the vector
// work runs under the cube's stream of B and the launch's cores all load at once. Neither
// part waits for the other: the cube writes columns the vector kernel does not read.
//
// Params contract: PC is a Matmul Params (dsv4/matmul.h: N its range's columns, LDB and LDC
// the whole product's) with COL0, the range's first column of B and C. PV names ARGS (its GM
// argument count) and Block (its class, whose static Run takes its arguments, workspace and
// tiling), and its blocks as OwnBlocks reads them (BLOCK_BASE 0, BLOCKS: the launch's vector
// cores that run it). Arguments: a, b, c, then PV's, then workspace and tiling.
#pragma once

#include "dsv4/matmul.h"

namespace dsv4 {

template <typename PC, typename PV>
class MatmulBeside {
    using In = typename CubeTypes<PC::INT8>::In;
    using Out = typename CubeOut<PC>::T;
    static_assert(PC::COL0 % (32 / sizeof(Out)) == 0, "the range's C columns start on a 32-byte block");
    static_assert(PV::BLOCK_BASE == 0, "the vector kernel's blocks are the launch's vector cores");

public:
    template <typename... Addr>
    __aicore__ static inline void Run(GM_ADDR a, GM_ADDR b, GM_ADDR c, Addr... rest)
    {
        static_assert(sizeof...(Addr) == PV::ARGS + 2, "a, b, c, the vector kernel's arguments, workspace, tiling");
        if ASCEND_IS_AIC {
            GM_ADDR tail[] = {rest...};
            // B [K, N] moves to the range's first column, B [N, K] to its first row
            const uint64_t bAt = uint64_t(PC::COL0) * (PC::B_NK ? PC::LDB : 1) * sizeof(In);
            Matmul<PC>::Run(a, b + bAt, c + uint64_t(PC::COL0) * sizeof(Out), tail[PV::ARGS], tail[PV::ARGS + 1]);
        }
        if ASCEND_IS_AIV {
            if (OwnBlocks<PV>::Mine()) {
                PV::Block::Run(rest...);
            }
        }
    }
};

}  // namespace dsv4
