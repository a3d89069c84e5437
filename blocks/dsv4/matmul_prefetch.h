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
// Beside a vector part (dsv4/matmul_group.h: one cube part, its last columns on the vector
// cores) the reader reads EIGHTHS / 8 of each strip's B rows, the cube loading the rest
// itself, and the group spreads the reader's DMAs among the vector part's slices (`pace`).
//
// Params contract: the products are Matmul Params (not COLUMNS_INNER); PV names DEPTH, the strips the
// vector cores run ahead (1 .. 15, a cross-core flag's counter), EIGHTHS (1 .. 8) of each
// strip's B rows they read, and their scratch: SLOTS (even) of CHUNK_BYTES (a B row of a
// strip at least), one DMA each. DMAs complete out of order, so a slot is written again
// only after the DMA that last wrote it landed: the slots are two halves, a round of DMAs
// fills one, and before a half is filled again MTE2 waits for the round that last filled
// it (carried MTE2 -> MTE3 -> MTE2: the vector cores' MTE3 is idle but for C's stores), so
// MTE2 waits only where a round took less than a GM read's latency. The scratch and the
// events are the caller's TPipe's.
#pragma once

#include "dsv4/matmul.h"

namespace dsv4 {

template <typename PV>
class BReader {
    static_assert(PV::DEPTH >= 1 && PV::DEPTH <= 15, "a cross-core flag counts up to 15 sets");
    static_assert(PV::EIGHTHS >= 1 && PV::EIGHTHS <= 8, "some of each strip's rows, at most all");
    static_assert(PV::CHUNK_BYTES % 32 == 0 && PV::SLOTS >= 2 && PV::SLOTS % 2 == 0,
                  "two halves of slots of whole 32-byte blocks");
    static constexpr uint32_t HALF = PV::SLOTS / 2;

public:
    __aicore__ inline explicit BReader(AscendC::TPipe& pipe) : free_{Freed(pipe), Freed(pipe)}
    {
        pipe.InitBuffer(chunk_, PV::SLOTS * PV::CHUNK_BYTES);
    }

    // The strips of product P (B at `b`, `rows` rows) whose B this block's cube reads first,
    // its items from the launch's item `before` on dealt by `deal`; pace() before each DMA.
    template <typename P, class Deal, class Pace>
    __aicore__ inline void Product(GM_ADDR b, uint32_t rows, const Deal& deal, uint32_t before, Pace pace)
    {
        using In = typename CubeTypes<P::INT8>::In;
        static_assert((P::B_NK ? P::SLICE_K : P::TILE_N) * sizeof(In) <= PV::CHUNK_BYTES,
                      "each slot holds a strip's B row");
        static_assert(P::LDB * sizeof(In) % 32 == 0 && P::STRIDE_B * sizeof(In) % 32 == 0,
                      "B rows start on 32-byte blocks");
        static_assert(P::LDB * sizeof(In) / 32 <= 65535, "DataCopyParams' srcStride is 16 bits");
        AscendC::GlobalTensor<In> gb;
        gb.SetGlobalBuffer(reinterpret_cast<__gm__ In*>(b));
        EachStrip<P>(rows, deal, before, [&](const typename Matmul<P>::BRows& r) {
            if (strips_ >= PV::DEPTH) {
                AscendC::CrossCoreWaitFlag(BFlags::TAKEN);
            }
            Read<P>(gb, r, pace);
            AscendC::CrossCoreSetFlag<2, PIPE_MTE2>(BFlags::READY);
            ++strips_;
        });
    }

    template <typename P, class Deal>
    __aicore__ inline void Product(GM_ADDR b, uint32_t rows, const Deal& deal, uint32_t before)
    {
        Product<P>(b, rows, deal, before, [] {});
    }

    // What Product<P> reads: its strips and this vector core's DMAs.
    struct Reads {
        uint32_t strips, dmas;
    };
    template <typename P, class Deal>
    __aicore__ static inline Reads Count(uint32_t rows, const Deal& deal, uint32_t before)
    {
        Reads n{0, 0};
        EachStrip<P>(rows, deal, before, [&](const typename Matmul<P>::BRows& r) {
            const Rows mine = MineOf<P>(r);
            n.strips += 1;
            n.dmas += (mine.end - mine.first + mine.perCopy - 1) / mine.perCopy;
        });
        return n;
    }

    // Waits for the last rounds and takes back the credits still out (one per strip the
    // cube waited for).
    __aicore__ inline void End()
    {
        if (used_ > 0) {
            CloseRound();
        }
        for (uint32_t r = round_ > 2 ? round_ - 2 : 0; r < round_; ++r) {
            free_[r % 2].Wait();
        }
        for (Freed& f : free_) {
            f.Release();
        }
        for (uint32_t i = 0; i < Min(strips_, PV::DEPTH); ++i) {
            AscendC::CrossCoreWaitFlag(BFlags::TAKEN);
        }
    }

private:
    // f(B rows) for each strip of P whose B this block's cube reads first.
    template <typename P, class Deal, class F>
    __aicore__ static inline void EachStrip(uint32_t rows, const Deal& deal, uint32_t before, F f)
    {
        Matmul<P>::ForItems(rows, deal, before, [&](uint32_t batch, uint32_t, uint32_t nr, uint32_t ks, bool freshB) {
            if (freshB) {
                Matmul<P>::ForStrips(nr, nr + 1,
                                     [&](uint32_t n, uint32_t nLen) { f(Matmul<P>::StripB(batch, ks, n, nLen)); });
            }
        });
    }

    // This vector core's rows of a strip's B: its half of the strip's first EIGHTHS / 8,
    // perCopy of them a DMA.
    struct Rows {
        uint32_t first, end, perCopy;
    };
    template <typename P>
    __aicore__ static inline Rows MineOf(const typename Matmul<P>::BRows& r)
    {
        using In = typename CubeTypes<P::INT8>::In;
        const uint32_t read = (r.rows * PV::EIGHTHS + 7) / 8;
        const uint32_t half = (read + 1) / 2;
        const bool second = AscendC::GetSubBlockIdx() != 0;
        return Rows{second ? half : 0, second ? read : half, PV::CHUNK_BYTES / (r.width * uint32_t(sizeof(In)))};
    }

    // This vector core's rows of the strip, a slot at a time.
    template <typename P, typename In, class Pace>
    __aicore__ inline void Read(const AscendC::GlobalTensor<In>& gb, const typename Matmul<P>::BRows& r, Pace& pace)
    {
        const Rows mine = MineOf<P>(r);
        const uint32_t rowBytes = r.width * sizeof(In);
        AscendC::LocalTensor<In> scratch = chunk_.template Get<In>();
        for (uint32_t row = mine.first; row < mine.end; row += mine.perCopy) {
            pace();
            const uint32_t half = round_ % 2;
            if (used_ == 0 && round_ >= 2) {
                free_[half].Wait();
            }
            const uint32_t count = Min(mine.perCopy, mine.end - row);
            AscendC::DataCopy(scratch[(half * HALF + used_) * PV::CHUNK_BYTES / sizeof(In)],
                              gb[r.at + uint64_t(row) * P::LDB],
                              AscendC::DataCopyParams(count, rowBytes / 32, (P::LDB * sizeof(In) - rowBytes) / 32, 0));
            if (++used_ == HALF) {
                CloseRound();
            }
        }
    }

    // The round's DMAs landed (MTE3 waits for them), then its half is free (MTE2 waits for
    // that before filling it again).
    __aicore__ inline void CloseRound()
    {
        Handshake<AscendC::HardEvent::MTE2_MTE3>();
        free_[round_ % 2].Set();
        ++round_;
        used_ = 0;
    }

    using Freed = LaterHandoff<AscendC::HardEvent::MTE3_MTE2>;

    AscendC::TBuf<AscendC::TPosition::VECCALC> chunk_;
    Freed free_[2];  // per half of the slots: the round that last filled it landed
    uint32_t strips_ = 0;  // strips read so far
    uint32_t round_ = 0;  // rounds of DMAs closed (the current one's number)
    uint32_t used_ = 0;   // slots of the current round filled
};

}  // namespace dsv4
