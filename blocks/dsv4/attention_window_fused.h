// The window attention's scores, softmax and values (attention_cube.h, attention_softmax.h)
// in one mixed launch: the same work items, GM tensors and results as the three launches,
// the cube and the vector cores of a group (1 AIC + 2 AIV) working on consecutive query
// tiles at once instead of one after the other. Per work item (a request's range of
// HEAD_TILE-row query tiles, `UnitParts` over the groups) the AIC gathers the request's
// union once; per tile
//   AIC: scores = q_tile · unionᵀ into attn_scores, then SCORES_READY
//   AIV k: its half of the tile's heads (PV::HEAD_TILE = HEAD_TILE / 2): mask, softmax,
//        probabilities into attn_probs, denominators (and maxima), then PROBS_READY
//   AIC: o = probs_tile · union into attn_o
// and the AIC issues tile i + 1's scores before it waits for tile i's probabilities, so the
// vector cores' softmax runs under the cube's next product. AIV 0 checks the item's
// metadata contract (attention_window.h) as the softmax launch does. Every tile's rows are
// its own in the GM tensors, so the hand-offs need only the flags.
// Where the window is the layer's only source the launch can also finish (PF other than
// NoFinish): the AIC raises O_READY once a tile's o is out, and each vector core finishes its
// half of the tile's heads (attention_finish.h `Ask`/`Finish`: o / denom, inverse RoPE, bf16,
// packed) two tiles later, its loads under that tile's softmax, so the finish runs under the
// cube's products too and o_packed needs no launch of its own.
//
// Params contract: PC is the cube kernels' Params (attention_cube.h), PV the softmax's
// (attention_softmax.h) for the same HEADS, WINDOW, SEQ and UNION_ROWS with half the
// HEAD_TILE; PF (or NoFinish) the finish's (attention_finish.h) for the same HEADS and
// half the HEAD_TILE, with POSITIONS.
#pragma once

#include "dsv4/attention_cube.h"
#include "dsv4/attention_finish.h"
#include "dsv4/attention_softmax.h"

namespace dsv4 {

template <class PC, class PV, class PF = NoFinish>
class AttentionWindowFused {
    using Cube = AttentionCube<PC>;
    static constexpr uint32_t HALF = PV::HEAD_TILE;
    static constexpr bool FINISH = Finishes<PF>::VALUE;
    static constexpr uint16_t SCORES_READY = 1, PROBS_READY = 2, O_READY = 3;
    static_assert(PC::HEADS == PV::HEADS && PC::WINDOW == PV::WINDOW && PC::SEQ == PV::SEQ &&
                      PC::UNION_ROWS == PV::UNION_ROWS && PC::HEAD_TILE == 2 * HALF && (PC::O_HALF_COLS > 0) == (PV::O_SHIFT > 0),
                  "one window: each vector core takes half of a query tile's heads; o in half only as scaled");

public:
    __aicore__ inline static void Run(GM_ADDR q, GM_ADDR kvCache, GM_ADDR swaIndices, GM_ADDR swaLens, GM_ADDR scores,
                                      GM_ADDR attnSink, GM_ADDR probs, GM_ADDR denom, GM_ADDR o, GM_ADDR workspace,
                                      GM_ADDR tiling)
    {
        RunWith(q, kvCache, swaIndices, swaLens, scores, attnSink, probs, denom, nullptr, o, {}, workspace, tiling);
    }

    // As above, and each head's max to `rowMax` (a further source continues the softmax).
    __aicore__ inline static void Run(GM_ADDR q, GM_ADDR kvCache, GM_ADDR swaIndices, GM_ADDR swaLens, GM_ADDR scores,
                                      GM_ADDR attnSink, GM_ADDR probs, GM_ADDR denom, GM_ADDR rowMax, GM_ADDR o,
                                      GM_ADDR workspace, GM_ADDR tiling)
    {
        RunWith(q, kvCache, swaIndices, swaLens, scores, attnSink, probs, denom, rowMax, o, {}, workspace, tiling);
    }

    // The window alone, finished into `packed` with token-local RoPE rows.
    __aicore__ inline static void Run(GM_ADDR q, GM_ADDR kvCache, GM_ADDR swaIndices, GM_ADDR swaLens, GM_ADDR scores,
                                      GM_ADDR attnSink, GM_ADDR probs, GM_ADDR denom, GM_ADDR o, GM_ADDR freqsCos,
                                      GM_ADDR freqsSin, GM_ADDR packed, GM_ADDR workspace, GM_ADDR tiling)
    {
        static_assert(FINISH && !PF::POSITIONS, "a finishing kernel with token-local RoPE rows");
        RunWith(q, kvCache, swaIndices, swaLens, scores, attnSink, probs, denom, nullptr, o,
                {freqsCos, freqsSin, nullptr, packed}, workspace, tiling);
    }

    // The window alone, finished into `packed` with RoPE rows by position_ids.
    __aicore__ inline static void Run(GM_ADDR q, GM_ADDR kvCache, GM_ADDR swaIndices, GM_ADDR swaLens, GM_ADDR scores,
                                      GM_ADDR attnSink, GM_ADDR probs, GM_ADDR denom, GM_ADDR o, GM_ADDR freqsCos,
                                      GM_ADDR freqsSin, GM_ADDR positions, GM_ADDR packed, GM_ADDR workspace,
                                      GM_ADDR tiling)
    {
        static_assert(FINISH && PF::POSITIONS, "a finishing kernel with RoPE rows by position");
        RunWith(q, kvCache, swaIndices, swaLens, scores, attnSink, probs, denom, nullptr, o,
                {freqsCos, freqsSin, positions, packed}, workspace, tiling);
    }

private:
    // The finish's GM tensors (all null without one).
    struct FinishArgs {
        GM_ADDR cos = nullptr;
        GM_ADDR sin = nullptr;
        GM_ADDR positions = nullptr;
        GM_ADDR packed = nullptr;
    };

    __aicore__ inline static void RunWith(GM_ADDR q, GM_ADDR kvCache, GM_ADDR swaIndices, GM_ADDR swaLens,
                                          GM_ADDR scores, GM_ADDR attnSink, GM_ADDR probs, GM_ADDR denom,
                                          GM_ADDR rowMax, GM_ADDR o, const FinishArgs& f, GM_ADDR workspace,
                                          GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        const uint32_t groups = static_cast<uint32_t>(AscendC::GetBlockNum());
        if ASCEND_IS_AIC {
            AscendC::GlobalTensor<bfloat16_t> qG, probsG;
            AscendC::GlobalTensor<float> scoresG;
            OutRows<PC> oG;
            qG.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(q));
            probsG.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(probs));
            scoresG.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(scores));
            oG.Init(o);
            Cube cube;
            cube.Init(kvCache, swaIndices, swaLens, td.t);
            UnitParts it(td.b, Cube::TILES, GroupIdx(), groups);
            bool more = it.Next();
            if (more) {
                cube.LoadUnion(it.unit, td.nb);
            }
            while (more) {
                const Share tiles = it.Range(Cube::TILES);
                const uint64_t first = static_cast<uint64_t>(it.unit) * Cube::ROWS;
                UnitParts next = it;
                more = next.Next();
                // each tile's scores, then SCORES_READY; tile i + 1's go ahead of tile i's values
                cube.ScoresTile(qG, scoresG, first + tiles.begin * PC::HEAD_TILE);
                AscendC::CrossCoreSetFlag<2, PIPE_FIX>(SCORES_READY);
                for (uint32_t i = tiles.begin; i < tiles.end; ++i) {
                    if (i + 1 < tiles.end) {
                        cube.ScoresTile(qG, scoresG, first + (i + 1) * PC::HEAD_TILE);
                        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(SCORES_READY);
                    }
                    // with two union buffers the next item's union gathers a run per tile
                    if (Cube::UNIONS == 2 && more) {
                        if (i == tiles.begin) {
                            cube.BeginUnion(next.unit, td.nb);
                        }
                        cube.FillUnion(1);
                    }
                    AscendC::CrossCoreWaitFlag(PROBS_READY);
                    cube.ValuesTile(probsG, oG, first + i * PC::HEAD_TILE);
                    if constexpr (FINISH) {
                        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(O_READY);
                    }
                }
                cube.ReleaseUnion();
                if (more) {
                    if (Cube::UNIONS == 1) {
                        cube.BeginUnion(next.unit, td.nb);
                    }
                    cube.UseUnion();
                }
                it = next;
            }
        }
        if ASCEND_IS_AIV {
            AttentionSoftmax<PV> op;
            op.Init(scores, swaIndices, swaLens, attnSink, probs, denom);
            if (rowMax != nullptr) {
                op.maxOut_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(rowMax));
                op.writeMax_ = true;
            }
            if constexpr (FINISH) {
                static_assert(PF::HEADS == PV::HEADS && PF::HEAD_TILE == HALF && PF::O_SHIFT == PV::O_SHIFT &&
                                  PF::O_HALF_COLS == PC::O_HALF_COLS,
                              "the finish takes a vector core's heads, and o as the cube leaves it");
                AttentionFinish<PF> finish;
                finish.Init(op.pipe_, o, denom, f.cos, f.sin, f.positions, f.packed);
                Vector(
                    op, td, groups,
                    [&finish](uint32_t t, uint32_t h0) {
                        AscendC::CrossCoreWaitFlag(O_READY);
                        finish.Ask(t, h0);
                    },
                    [&finish](uint32_t t, uint32_t h0) { finish.Finish(t, h0); });
            } else {
                (void)f;
                Vector(op, td, groups, [](uint32_t, uint32_t) {}, [](uint32_t, uint32_t) {});
            }
        }
    }

    // The vector cores' items: each tile's softmax on this core's half of its heads, and the
    // finish of this core's heads of the tile two before, in two halves (`ask(t, h0)` starts
    // its loads, `done(t, h0)` the rest): the loads queue behind the tile's scores and land
    // while the softmax runs. That tile's o is out by then (the cube raised its O_READY
    // before the scores this tile waited for); the last two tiles finish after the items.
    template <class Ask, class Done>
    __aicore__ inline static void Vector(AttentionSoftmax<PV>& op, const TilingData& td, uint32_t groups,
                                         const Ask& ask, const Done& done)
    {
        constexpr uint32_t LAG = 2;
        const uint32_t sub = static_cast<uint32_t>(AscendC::GetSubBlockIdx());
        uint32_t lagT[LAG] = {}, lagH0[LAG] = {};  // the tiles not yet finished, oldest at `oldest`
        uint32_t lagging = 0, oldest = 0;
        for (UnitParts it(td.b, Cube::TILES, GroupIdx(), groups); it.Next();) {
            const Share tiles = it.Range(Cube::TILES);
            WindowUnion<PV> w;
            w.ReadLens(op.lens_, it.unit);
            if (sub == 0) {
                op.CheckContract(w, it.unit, (tiles.end * PC::HEAD_TILE - 1) / PC::HEADS + 1);
            }
            uint32_t biasFor = PC::SEQ;  // the token whose lanes the bias holds: none yet
            for (uint32_t i = tiles.begin; i < tiles.end; ++i) {
                const uint32_t s = i * PC::HEAD_TILE / PC::HEADS;
                const uint32_t h0 = i * PC::HEAD_TILE % PC::HEADS + sub * HALF;
                const uint32_t t = it.unit * PC::SEQ + s;
                if (s != biasFor) {
                    op.Bias(w.Begin(s), w.End(s));
                    biasFor = s;
                }
                AscendC::CrossCoreWaitFlag(SCORES_READY);
                op.LoadTile(t, h0);
                const bool due = lagging == LAG;
                if (due) {
                    ask(lagT[oldest], lagH0[oldest]);
                }
                op.ComputeTile(t, h0);
                op.Denominators(t, h0, HALF);
                AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(PROBS_READY);
                if (due) {
                    done(lagT[oldest], lagH0[oldest]);
                    oldest = (oldest + 1) % LAG;
                    --lagging;
                }
                lagT[(oldest + lagging) % LAG] = t;
                lagH0[(oldest + lagging) % LAG] = h0;
                ++lagging;
            }
        }
        for (; lagging > 0; --lagging, oldest = (oldest + 1) % LAG) {
            ask(lagT[oldest], lagH0[oldest]);
            done(lagT[oldest], lagH0[oldest]);
        }
    }
};

}  // namespace dsv4
