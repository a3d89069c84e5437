// Runtime extents of one launch. The host (harness runtime, or the ACL launcher on NPU) fills
// this struct with the same layout and passes it to every kernel as its `tiling` argument;
// everything static is a compile-time parameter of the kernel instead.
#pragma once

#include "kernel_operator.h"

namespace dsv4 {

struct TilingData {
    uint32_t t;               // tokens on this rank (a multiple of decode_seq)
    uint32_t b;               // requests on this rank: t / decode_seq
    uint32_t nb;              // raw KV pool blocks
    uint32_t group_t;         // tokens of the whole TP group: tp · t
    uint32_t state_nb;        // compressor state pool blocks (0 without a compressor)
    uint32_t cmp_nb;          // compressed KV pool blocks
    uint32_t cmp_tw;          // compressed KV block-table width
    uint32_t inner_state_nb;  // index-key compressor state pool blocks (0 without an indexer)
    uint32_t idx_nb;          // index-key cache pool blocks
    uint32_t idx_tw;          // index-key cache block-table width
    uint32_t reserved[6];
};

constexpr uint32_t TILING_WORDS = sizeof(TilingData) / sizeof(uint32_t);
static_assert(TILING_WORDS == 16, "the host writes 16 little-endian u32 words");

// Reads the tiling through the GM API (scalar metadata reads, counted as such by the model).
__aicore__ inline TilingData LoadTiling(GM_ADDR tiling)
{
    AscendC::GlobalTensor<uint32_t> g;
    g.SetGlobalBuffer(reinterpret_cast<__gm__ uint32_t*>(tiling), TILING_WORDS);
    uint32_t w[TILING_WORDS];
    for (uint32_t i = 0; i < TILING_WORDS; ++i) {
        w[i] = g.GetValue(i);
    }
    TilingData d;
    d.t = w[0];
    d.b = w[1];
    d.nb = w[2];
    d.group_t = w[3];
    d.state_nb = w[4];
    d.cmp_nb = w[5];
    d.cmp_tw = w[6];
    d.inner_state_nb = w[7];
    d.idx_nb = w[8];
    d.idx_tw = w[9];
    for (uint32_t i = 0; i < 6; ++i) {
        d.reserved[i] = w[10 + i];
    }
    return d;
}

// The runtime rows M of a product and the launches around it (matmul.h, k_slice_sum.h,
// zero_rows.h), from their knobs GROUP_ROWS and ROWS_PER_TOKEN: the rank's tokens t, or
// the TP group's group_t, times the rows per token (a token-major [t, r, w] operand read as
// [t x r, w]).
template <typename P>
__aicore__ inline uint32_t ProductRows(const TilingData& td)
{
    static_assert(P::ROWS_PER_TOKEN >= 1 && P::ROWS_PER_TOKEN <= 65535,
                  "t x ROWS_PER_TOKEN fits 32 bits (gen bounds the row capacity to 16 bits)");
    return (P::GROUP_ROWS ? td.group_t : td.t) * P::ROWS_PER_TOKEN;
}

}  // namespace dsv4
