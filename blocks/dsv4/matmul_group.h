// Several matmuls that share their A operand (the projections of one input) in one
// launch: each part's work items are exactly those its own Matmul launch would run
// (dsv4/matmul.h), one sequence over the parts in order (part i's item j is item j plus
// the items of parts 0..i-1) dealt over all the launch's blocks as `BackAndForth` says, or
// in `Runs` where the parts' RUNS say so (all alike: each part's items then have the row
// range innermost, so a block's row ranges of one B slice follow each other), so a part
// of few items shares its cores with the others instead of holding some alone. A block
// runs its items of each part in part order, each part on a TPipe of its own (destroyed,
// and so every pipe drained, before the next part's is made); a part with no item on the
// block is not set up. The plan lists the parts with the heaviest items first.
//
// Parts dealt COLUMNS_INNER share their A panels (Matmul::RunPanels): one A split for all
// (tiles, RANGE_M, SLICE_K, TAIL_K, buffers; each part its own N, RANGE_N and B layout),
// the items ordered (k slice, m range, part, n range) on one TPipe, so a block loads each
// panel it has items of once and runs its column ranges of every part under it.
//
// Arguments: A, then B and C of each part in order, then workspace and tiling.
//
// A mixed launch (1 AIC + 2 AIV a block) adds vector parts after the cube parts: the last
// columns of a cube part's product on the vector cores (dsv4/vector_matmul.h; one product so
// shared is a group of its cube part and its vector part). Their units are one sequence over
// the vector parts in order, dealt in contiguous shares over the launch's vector cores while
// the cube cores run the cube parts' items; C columns apart, so neither waits for the other.
//
// Or the vector cores read the cube parts' B into L2 ahead of the cube (a last part naming
// DEPTH: dsv4/matmul_prefetch.h's BReader over each cube part in turn, the cube GATED), for
// cube parts dealt one panel's columns an item; one product so read ahead is a group of one
// cube part and the reader (a batched product too: the parts-share-one-A rules are between
// parts). Both at once for one product: its cube part, its vector part and a reader of
// some of each strip's B, the reader's DMAs spread among the vector part's K slices
// (ReadBeside): the vector cores multiply slower than they load, so their MTE2 has room.
//
// Params contract: each cube part P_i is a Matmul Params (see matmul.h); all parts read
// the same A (same element type, K, LDA, row count and batch 1). A vector part is a
// VectorMatmul Params with PART, the index of the cube part whose B and C it shares (its
// N_FIRST that part's N). A reader part names DEPTH, SLOTS and CHUNK_BYTES (BReader's).
#pragma once

#include "dsv4/matmul.h"
#include "dsv4/matmul_prefetch.h"
#include "dsv4/vector_matmul.h"

namespace dsv4 {

// Whether a group's part is a vector part (its Params name the cube PART it shares).
template <typename P>
struct IsVectorPart {
    template <typename Q>
    static constexpr bool Has(decltype(&Q::PART)) { return true; }
    template <typename Q>
    static constexpr bool Has(...) { return false; }
    static constexpr bool VALUE = Has<P>(nullptr);
};

// Whether a group's part reads the cube parts' B ahead (its Params name DEPTH).
template <typename P>
struct IsReaderPart {
    template <typename Q>
    static constexpr bool Has(decltype(&Q::DEPTH)) { return true; }
    template <typename Q>
    static constexpr bool Has(...) { return false; }
    static constexpr bool VALUE = Has<P>(nullptr);
};

// The last of a pack of types.
template <typename Head, typename... Tail>
struct LastOf {
    using Type = typename LastOf<Tail...>::Type;
};
template <typename Head>
struct LastOf<Head> {
    using Type = Head;
};

template <typename P>
struct IsCubePart {
    static constexpr bool VALUE = !IsVectorPart<P>::VALUE && !IsReaderPart<P>::VALUE;
};

template <typename... Ps>
class MatmulGroup {
    static constexpr uint32_t VECTOR_PARTS = (0u + ... + uint32_t(IsVectorPart<Ps>::VALUE));
    static constexpr uint32_t READERS = (0u + ... + uint32_t(IsReaderPart<Ps>::VALUE));
    static constexpr uint32_t CUBE_PARTS = sizeof...(Ps) - VECTOR_PARTS - READERS;
    static constexpr bool GATED = READERS > 0;
    static_assert(CUBE_PARTS >= 2 || (CUBE_PARTS == 1 && VECTOR_PARTS + READERS >= 1),
                  "a group: two products, or one beside vector parts or a reader");
    static_assert(READERS <= 1 && (READERS == 0 || VECTOR_PARTS == 0 || (VECTOR_PARTS == 1 && CUBE_PARTS == 1)),
                  "one reader, beside one product's vector part at most");

public:
    template <typename... Addr>
    __aicore__ static inline void Run(GM_ADDR a, Addr... rest)
    {
        static_assert(sizeof...(Addr) == 2 * CUBE_PARTS + 2, "B and C per cube part, then workspace and tiling");
        GM_ADDR addr[] = {rest...};
        GM_ADDR tiling = addr[sizeof...(Addr) - 1];
        if constexpr (GATED) {
            if ASCEND_IS_AIC {
                RunCube(a, addr, tiling);
            }
            if ASCEND_IS_AIV {
                if constexpr (VECTOR_PARTS > 0) {
                    ReadBeside<Ps...>(a, addr, tiling);
                } else {
                    ReadAhead(addr, tiling);
                }
            }
        } else if constexpr (VECTOR_PARTS == 0) {
            RunCube(a, addr, tiling);
        } else {
            if ASCEND_IS_AIC {
                RunCube(a, addr, tiling);
            }
            if ASCEND_IS_AIV {
                const Share share = ShareOf((0u + ... + VectorUnits<Ps>()), static_cast<uint32_t>(AscendC::GetBlockIdx()),
                                            static_cast<uint32_t>(AscendC::GetBlockNum() * AscendC::GetSubBlockNum()));
                EachVector<Ps...>(share, 0, a, addr, tiling);
            }
        }
    }

private:
    __aicore__ static inline void RunCube(GM_ADDR a, GM_ADDR* addr, GM_ADDR tiling)
    {
        using P0 = typename FirstOf<Ps...>::Type;
        const uint32_t rows = ProductRows<P0>(LoadTiling(tiling));
        WithDeal(static_cast<uint32_t>(AscendC::GetBlockIdx()), static_cast<uint32_t>(AscendC::GetBlockNum()), rows,
                 [&](const auto& deal) {
                     if constexpr (P0::COLUMNS_INNER) {
                         static_assert(VECTOR_PARTS == 0 && !GATED, "shared panels: cube parts only, B not read ahead");
                         RunPanels<Ps...>(a, addr, tiling, deal);
                     } else {
                         Each<0, Ps...>(deal, rows, 0, a, addr, tiling);
                     }
                 });
    }

    // f(the deal of the cube parts' items at `rows` rows to block `block` of `blocks`): in
    // runs where the parts' RUNS say so, else back and forth (Matmul::WithDeal's, over the
    // parts' items in turn).
    template <class F>
    __aicore__ static inline void WithDeal(uint32_t block, uint32_t blocks, uint32_t rows, F f)
    {
        if constexpr (FirstOf<Ps...>::Type::RUNS) {
            f(Runs(block, blocks, CubeItems<Ps...>(rows)));
        } else {
            f(BackAndForth{block, blocks});
        }
    }

    // The vector cores of block i (2i and 2i + 1) read B of the block's items of every cube
    // part, dealt as RunCube deals them, ahead of its cube core.
    template <typename Reader = typename LastOf<Ps...>::Type>
    __aicore__ static inline void ReadAhead(GM_ADDR* addr, GM_ADDR tiling)
    {
        using P0 = typename FirstOf<Ps...>::Type;
        const uint32_t rows = ProductRows<P0>(LoadTiling(tiling));
        AscendC::TPipe pipe;
        BReader<Reader> reader(pipe);
        WithDeal(static_cast<uint32_t>(AscendC::GetBlockIdx()) / 2, static_cast<uint32_t>(AscendC::GetBlockNum()),
                 rows, [&](const auto& deal) { EachRead<0, Ps...>(reader, deal, rows, 0, addr); });
        reader.End();
    }

    // The vector part's units with the reader's DMAs spread among their K slices: before
    // each DMA the units run to the same fraction of their slices as the DMAs read (the
    // first strip's DMAs at once), so the vector cores' MTE2 loads the cube's B under their
    // V work, and the cube, waiting for each strip, keeps pace with them.
    template <typename PC, typename PV, typename Reader>
    __aicore__ static inline void ReadBeside(GM_ADDR a, GM_ADDR* addr, GM_ADDR tiling)
    {
        static_assert(PV::PART == 0, "the vector part shares the cube part's B and C");
        const uint32_t rows = ProductRows<PC>(LoadTiling(tiling));
        const uint32_t block = static_cast<uint32_t>(AscendC::GetBlockIdx());
        const Share share = ShareOf(VectorMatmul<PV>::Units(), block,
                                    static_cast<uint32_t>(AscendC::GetBlockNum() * AscendC::GetSubBlockNum()));
        AscendC::TPipe pipe;
        VectorMatmul<PV> units(pipe, a, addr[0], addr[1], tiling, share.begin, share.end);
        BReader<Reader> reader(pipe);
        const uint64_t steps = units.Steps();
        WithDeal(block / 2, static_cast<uint32_t>(AscendC::GetBlockNum()), rows, [&](const auto& deal) {
            const auto reads = BReader<Reader>::template Count<PC>(rows, deal, 0);
            const uint32_t lead = reads.strips > 0 ? reads.dmas / reads.strips : 0;
            uint32_t dma = 0;
            reader.template Product<PC>(addr[0], rows, deal, 0, [&] {
                if (dma >= lead) {
                    units.RunTo(static_cast<uint32_t>(steps * (dma - lead) / (reads.dmas - lead)));
                }
                ++dma;
            });
        });
        units.RunTo(units.Steps());
        reader.End();
    }

    // Cube part I's B as Each<I> runs it.
    template <uint32_t I, typename P, typename... More, class Reader, class Deal>
    __aicore__ static inline void EachRead(Reader& reader, const Deal& deal, uint32_t rows, uint32_t before,
                                           GM_ADDR* addr)
    {
        if constexpr (IsCubePart<P>::VALUE) {
            reader.template Product<P>(addr[2 * I], rows, deal, before);
            if constexpr (sizeof...(More) > 0) {
                EachRead<I + 1, More...>(reader, deal, rows, before + Matmul<P>::Items(rows), addr);
            }
        }
    }

    template <typename First, typename... Rest>
    __aicore__ static inline void RunPanels(GM_ADDR a, GM_ADDR* addr, GM_ADDR tiling, const Runs& deal)
    {
        Matmul<First>::template RunPanels<Rest...>(a, addr, tiling, deal);
    }

    // The items of the cube parts among P, More... at `rows` rows.
    template <typename P, typename... More>
    __aicore__ static inline uint32_t CubeItems(uint32_t rows)
    {
        uint32_t items = 0;
        if constexpr (IsCubePart<P>::VALUE) {
            items = Matmul<P>::Items(rows);
        }
        if constexpr (sizeof...(More) > 0) {
            items += CubeItems<More...>(rows);
        }
        return items;
    }

    // Cube part I, whose first item follows the `before` items of the parts ahead of it.
    template <uint32_t I, typename P, typename... More, class Deal>
    __aicore__ static inline void Each(const Deal& deal, uint32_t rows, uint32_t before, GM_ADDR a, GM_ADDR* addr,
                                       GM_ADDR tiling)
    {
        if constexpr (IsCubePart<P>::VALUE) {
            using P0 = typename FirstOf<Ps...>::Type;
            static_assert(P::INT8 == P0::INT8 && P::K == P0::K && P::LDA == P0::LDA &&
                              P::GROUP_ROWS == P0::GROUP_ROWS && P::ROWS_PER_TOKEN == P0::ROWS_PER_TOKEN &&
                              (CUBE_PARTS == 1 || P::BATCH == 1),
                          "the parts share one A");
            static_assert(P::RUNS == P0::RUNS, "the parts are dealt alike");
            static_assert(I < CUBE_PARTS, "vector parts follow the cube parts");
            const uint32_t items = Matmul<P>::Items(rows);
            bool mine = false;
            for (uint32_t i = 0; i < items && !mine; ++i) {
                mine = deal.Mine(before + i);
            }
            if (mine) {
                Matmul<P, GATED>::RunOn(a, addr[2 * I], addr[2 * I + 1], tiling, deal, before);
            }
            if constexpr (sizeof...(More) > 0) {
                Each<I + 1, More...>(deal, rows, before + items, a, addr, tiling);
            }
        }
    }

    template <typename P>
    __aicore__ static constexpr uint32_t VectorUnits()
    {
        if constexpr (IsVectorPart<P>::VALUE) {
            return VectorMatmul<P>::Units();
        } else {
            return 0;
        }
    }

    // The vector parts among P, More..., whose first unit follows `before` units of the
    // vector parts ahead: each runs the units of `share` that are its own.
    template <typename P, typename... More>
    __aicore__ static inline void EachVector(const Share& share, uint32_t before, GM_ADDR a, GM_ADDR* addr,
                                             GM_ADDR tiling)
    {
        if constexpr (IsVectorPart<P>::VALUE) {
            static_assert(P::PART < CUBE_PARTS, "a vector part shares a cube part's B and C");
            const uint32_t units = VectorMatmul<P>::Units();
            const uint32_t begin = share.begin > before ? share.begin : before;
            const uint32_t end = Min(share.end, before + units);
            if (begin < end) {
                VectorMatmul<P>::RunUnits(a, addr[2 * P::PART], addr[2 * P::PART + 1], tiling, begin - before,
                                          end - before);
            }
            before += units;
        }
        if constexpr (sizeof...(More) > 0) {
            EachVector<More...>(share, before, a, addr, tiling);
        }
    }

    template <typename Head, typename... Tail>
    struct FirstOf {
        using Type = Head;
    };
};

}  // namespace dsv4
