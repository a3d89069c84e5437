// A weight-streaming matmul of few rows on every core of the chip (mixed: each block is
// 1 AIC + 2 AIV): the cube cores run dsv4/matmul.h on C's first columns, the vector cores
// dsv4/vector_matmul.h on the rest. Neither waits for the other (their C columns are
// apart, each in whole 32-byte blocks), so both stream their rows of B at once: a product
// of a decode step is bound by how fast cores load B, and the cube cores alone load at
// most their share of HBM.
//
// Params contract: PC is a Matmul Params (N its columns 0 .. N, LDB and LDC the whole
// product's), PV a VectorMatmul Params whose N_FIRST is PC's N, of the same
// operands, rows, batch and strides.
#pragma once

#include "dsv4/matmul.h"
#include "dsv4/vector_matmul.h"

namespace dsv4 {

template <typename PC, typename PV>
class MatmulShared {
    static_assert(PC::B_NK == PV::B_NK && PC::INT8 == PV::INT8 && PC::K == PV::K && PC::BATCH == PV::BATCH &&
                      PC::LDA == PV::LDA && PC::LDB == PV::LDB && PC::LDC == PV::LDC &&
                      PC::STRIDE_A == PV::STRIDE_A && PC::STRIDE_B == PV::STRIDE_B && PC::STRIDE_C == PV::STRIDE_C &&
                      PC::GROUP_ROWS == PV::GROUP_ROWS && PC::ROWS_PER_TOKEN == PV::ROWS_PER_TOKEN,
                  "one product: the parts differ only in their columns");
    static_assert(PV::N_FIRST == PC::N, "the vector cores take the columns after the cube's");

public:
    __aicore__ static inline void Run(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
    {
        if ASCEND_IS_AIC {
            Matmul<PC>::Run(a, b, c, workspace, tiling);
        }
        if ASCEND_IS_AIV {
            VectorMatmul<PV>::Run(a, b, c, workspace, tiling);
        }
    }
};

}  // namespace dsv4
