// A matmul alone on the cube cores whose vector cores read its B into L2 ahead of it (a
// mixed launch, each block 1 AIC + 2 AIV): the cube cores alone load at most their share of
// HBM (hicann/ge's Load fit: 24 cores 457 GB/s), and a weight a block reads for the first
// time is most of what they load. The block's two vector cores walk the block's items in the
// cube's order and read each strip's B (half the rows each) into a scratch they never look
// at, then set READY; the cube waits for READY before a strip whose B the block has not read
// yet (dsv4/matmul.h, GATED), so it finds that B in L2. The vector cores run at most DEPTH
// strips ahead: the cube returns a credit (TAKEN) per strip it waited for, and the vector
// cores take them all back before they end. Nothing but B is read; no value changes.
// BReader is the vector cores' part of a matmul group (dsv4/matmul_group.h: its last part),
// over the group's products in turn; a product read ahead alone is a group of one.
//
// Params contract: the products are Matmul Params (not COLUMNS_INNER); PV names DEPTH, the strips the
// vector cores run ahead (1 .. 15, a cross-core flag's counter), and their scratch: SLOTS
// of CHUNK_BYTES (a B row of a strip at least), one DMA each, filled in turn (DMAs complete
// out of order, so a slot is written again only after a barrier, once per round).
#pragma once

#include "dsv4/matmul.h"

namespace dsv4 {

template <typename PV>
class BReader {
    static_assert(PV::DEPTH >= 1 && PV::DEPTH <= 15, "a cross-core flag counts up to 15 sets");
    static_assert(PV::CHUNK_BYTES % 32 == 0 && PV::SLOTS >= 1, "slots of whole 32-byte blocks");

public:
    __aicore__ inline BReader() { pipe_.InitBuffer(chunk_, PV::SLOTS * PV::CHUNK_BYTES); }

    // The strips of product P (B at `b`, `rows` rows) whose B this block's cube reads first,
    // its items from the launch's item `before` on dealt by `deal`.
    template <typename P, class Deal>
    __aicore__ inline void Product(GM_ADDR b, uint32_t rows, const Deal& deal, uint32_t before)
    {
        using In = typename CubeTypes<P::INT8>::In;
        static_assert((P::B_NK ? P::SLICE_K : P::TILE_N) * sizeof(In) <= PV::CHUNK_BYTES,
                      "each slot holds a strip's B row");
        static_assert(P::LDB * sizeof(In) % 32 == 0 && P::STRIDE_B * sizeof(In) % 32 == 0,
                      "B rows start on 32-byte blocks");
        static_assert(P::LDB * sizeof(In) / 32 <= 65535, "DataCopyParams' srcStride is 16 bits");
        AscendC::GlobalTensor<In> gb;
        gb.SetGlobalBuffer(reinterpret_cast<__gm__ In*>(b));
        Matmul<P>::ForItems(rows, deal, before, [&](uint32_t batch, uint32_t, uint32_t nr, uint32_t ks, bool freshB) {
            if (!freshB) {
                return;
            }
            Matmul<P>::ForStrips(nr, nr + 1, [&](uint32_t n, uint32_t nLen) {
                if (strips_ >= PV::DEPTH) {
                    AscendC::CrossCoreWaitFlag(BFlags::TAKEN);
                }
                Read<P>(gb, Matmul<P>::StripB(batch, ks, n, nLen));
                AscendC::CrossCoreSetFlag<2, PIPE_MTE2>(BFlags::READY);
                ++strips_;
            });
        });
    }

    // Takes back the credits still out (one per strip the cube waited for).
    __aicore__ inline void End()
    {
        for (uint32_t i = 0; i < Min(strips_, PV::DEPTH); ++i) {
            AscendC::CrossCoreWaitFlag(BFlags::TAKEN);
        }
    }

private:
    // This vector core's half of the strip's B rows, a slot at a time.
    template <typename P, typename In>
    __aicore__ inline void Read(const AscendC::GlobalTensor<In>& gb, const typename Matmul<P>::BRows& r)
    {
        const uint32_t half = (r.rows + 1) / 2;
        const uint32_t sub = static_cast<uint32_t>(AscendC::GetSubBlockIdx());
        const uint32_t first = sub == 0 ? 0 : half;
        const uint32_t end = sub == 0 ? half : r.rows;
        const uint32_t rowBytes = r.width * sizeof(In);
        const uint32_t perCopy = PV::CHUNK_BYTES / rowBytes;
        AscendC::LocalTensor<In> scratch = chunk_.template Get<In>();
        for (uint32_t row = first; row < end; row += perCopy) {
            if (slot_ == PV::SLOTS) {
                AscendC::PipeBarrier<PIPE_MTE2>();
                slot_ = 0;
            }
            const uint32_t count = Min(perCopy, end - row);
            AscendC::DataCopy(scratch[slot_ * PV::CHUNK_BYTES / sizeof(In)], gb[r.at + uint64_t(row) * P::LDB],
                              AscendC::DataCopyParams(count, rowBytes / 32, (P::LDB * sizeof(In) - rowBytes) / 32, 0));
            ++slot_;
        }
    }

    AscendC::TPipe pipe_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> chunk_;
    uint32_t strips_ = 0;  // strips read so far
    uint32_t slot_ = 0;    // the next slot of the scratch
};

}  // namespace dsv4
