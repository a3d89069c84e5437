// KV-cache insert (swa.md §3.4): for every token t < tiling.t with slot = slots[t] >= 0,
// kv[t] (bf16 [HEAD_DIM]) overwrites row `slot` of the flat paged pool
// [nb * BLOCK_SIZE, HEAD_DIM]. A negative slot skips the token, and rows no token maps to
// are never touched. Tokens are split over the blocks; a block stages up to TOKENS kv rows
// in UB with one DMA and writes each one to its pool row. The slots are scalar metadata
// reads. It is its own launch, so every write lands before the attention gathers.
#pragma once

#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// P: HEAD_DIM (row width), BLOCK_SIZE (pool rows per page), TOKENS (rows per DMA tile), and
// the UB size the plan decided (KV_ROWS_BYTES, at least what its use below needs). Its
// blocks: OwnBlocks<P> (optional BLOCK_BASE, BLOCKS: a range of the launch's,
// dsv4/together.h).
template <class P>
class CacheInsert {
    static_assert(P::HEAD_DIM * sizeof(bfloat16_t) % BLOCK_BYTES == 0, "kv rows are whole 32-byte blocks");
    static_assert(P::KV_ROWS_BYTES >= P::TOKENS * P::HEAD_DIM * sizeof(bfloat16_t), "kv_rows holds a tile of rows");

public:
    __aicore__ inline static void Run(GM_ADDR kv, GM_ADDR slots, GM_ADDR kvCache, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        const Share share = OwnBlocks<P>::Of(td.t);
        if (share.begin >= share.end) {
            return;
        }
        // Slots outside the pool break the mapping contract; they are skipped, never written.
        const int64_t poolRows = int64_t(td.nb) * P::BLOCK_SIZE;
        AscendC::GlobalTensor<bfloat16_t> rowsIn;
        AscendC::GlobalTensor<int64_t> slotOf;
        AscendC::GlobalTensor<bfloat16_t> pool;
        rowsIn.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(kv));
        slotOf.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(slots));
        pool.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(kvCache));

        AscendC::TPipe pipe;
        // GM -> UB -> GM with no vector work: one queue bound from VECIN to VECOUT.
        AscendC::TQueBind<AscendC::TPosition::VECIN, AscendC::TPosition::VECOUT, 1> staged;
        pipe.InitBuffer(staged, 2, P::KV_ROWS_BYTES);
        for (uint32_t t0 = share.begin; t0 < share.end; t0 += P::TOKENS) {
            const uint32_t n = Min(P::TOKENS, share.end - t0);
            AscendC::LocalTensor<bfloat16_t> rows = staged.AllocTensor<bfloat16_t>();
            AscendC::DataCopy(rows, rowsIn[uint64_t(t0) * P::HEAD_DIM], n * P::HEAD_DIM);
            staged.EnQue(rows);
            rows = staged.DeQue<bfloat16_t>();
            for (uint32_t r = 0; r < n; ++r) {
                const int64_t slot = slotOf.GetValue(t0 + r);
                if (slot >= 0 && slot < poolRows) {
                    AscendC::DataCopy(pool[uint64_t(slot) * P::HEAD_DIM], rows[r * P::HEAD_DIM], P::HEAD_DIM);
                }
            }
            staged.FreeTensor(rows);
        }
    }
};

}  // namespace dsv4
