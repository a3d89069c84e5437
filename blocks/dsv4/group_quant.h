// Per-(group, token) int8 quantisation of the grouped o_proj latent (swa.md §3.7 step 2):
// each valid row u < group_t of the GROUPS slabs of ROWS capacity rows (row width K, f32)
// goes through dsv4/quant.h's QuantizeRows, a tile of rows at once (int8 values and the
// dequant scale 1/sq, the golden's formula at TP 1 too). Rows ≥ group_t are neither read
// nor written.
//
// With SLICES > 1 the latent is not in GM: x holds the k slices' partial products of the
// split-K wo_a, [SLICES][GROUPS][PART_ROWS][K] f32 (dsv4/k_slice_sum.h's layout), and a tile
// is their sum in slice order, ((P0 + P1) + P2) + ..., as k_slice_sum.h adds them, so the
// result is the same bits without the latent's round trip through GM and a launch.
//
// Params: GROUPS, ROWS, K, TILE_ROWS (rows per UB tile; a divisor of 8, so the runtime row
// count, a multiple of 8, is always whole tiles), SLICES and PART_ROWS (the partials' rows
// per group; with SLICES 1 x is the latent, [GROUPS][ROWS][K]), and the UB sizes the plan
// decided (X_IN, Q_OUT, SCALES, WORK, F16, SLOT, REDUCE_TMP `_BYTES`, PARTS_IN with slices,
// each at least what its use below needs). Work is split over blocks by 8-row unit.
#pragma once

#include "kernel_operator.h"
#include "dsv4/quant.h"
#include "dsv4/tiling_data.h"

namespace dsv4 {
using namespace AscendC;

template <class P>
class GroupQuant {
    static constexpr uint32_t K = P::K;
    static constexpr uint32_t TILE_ROWS = P::TILE_ROWS;
    static constexpr uint32_t TILE = TILE_ROWS * K;
    // ReduceMax scratch as the ReduceMax doc sizes it: value and index per 64-lane repeat.
    static constexpr uint32_t REDUCE_TMP = (2 * K / 64 + 7) / 8 * 8;
    static_assert(8 % TILE_ROWS == 0, "row tiles must divide the runtime row granularity 8");
    static_assert(K % 64 == 0, "rows are whole 256-byte repeats of f32 (and whole int8 blocks)");
    static_assert(P::X_IN_BYTES >= TILE * sizeof(float), "x_in holds a tile of rows");
    static_assert(P::Q_OUT_BYTES >= TILE * sizeof(int8_t), "q_out holds a tile of rows");
    static_assert(P::SCALES_BYTES >= (TILE_ROWS + 7) / 8 * 32, "scales holds a tile's scales in whole blocks");
    static_assert(P::WORK_BYTES >= TILE * sizeof(float) && P::F16_BYTES >= TILE * sizeof(half), "a tile's scratch");
    static_assert(P::SLOT_BYTES >= TILE_ROWS * 32, "a block of scalars per row");
    static_assert(P::REDUCE_TMP_BYTES >= REDUCE_TMP * sizeof(float), "ReduceMax scratch of a row");
    static_assert(P::SLICES >= 1 && (P::SLICES > 1 || P::PART_ROWS == P::ROWS) && P::PART_ROWS >= 8,
                  "a latent (one slice of ROWS rows per group) or its k slices' partials");
    static constexpr uint64_t SLICE = uint64_t(P::GROUPS) * P::PART_ROWS * K;  // one slice's partials
    // The slices after the first, two in flight: a tile's next rows load while it is added.
    static constexpr uint32_t PARTS_AHEAD = P::SLICES > 2 ? 2 : P::SLICES - 1;

public:
    __aicore__ inline static void Run(GM_ADDR x, GM_ADDR q, GM_ADDR scale, GM_ADDR, GM_ADDR tiling)
    {
        GroupQuant op;
        op.Init(x, q, scale, LoadTiling(tiling).group_t);
        op.Process();
    }

private:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR q, GM_ADDR scale, uint32_t rows)
    {
        rows_ = rows;
        xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(x), P::SLICES * SLICE);
        qGm_.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t*>(q), uint64_t(P::GROUPS) * P::ROWS * K);
        scaleGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(scale), uint64_t(P::GROUPS) * P::ROWS);
        pipe_.InitBuffer(inQ_, 2, P::X_IN_BYTES);
        if constexpr (P::SLICES > 1) {
            static_assert(P::PARTS_IN_BYTES >= TILE * sizeof(float), "parts_in holds a tile of rows");
            pipe_.InitBuffer(partQ_, PARTS_AHEAD, P::PARTS_IN_BYTES);
        }
        pipe_.InitBuffer(qQ_, 2, P::Q_OUT_BYTES);
        pipe_.InitBuffer(scaleQ_, 2, P::SCALES_BYTES);
        pipe_.InitBuffer(work_, P::WORK_BYTES);
        pipe_.InitBuffer(half_, P::F16_BYTES);
        pipe_.InitBuffer(slot_, P::SLOT_BYTES);
        pipe_.InitBuffer(reduceTmp_, P::REDUCE_TMP_BYTES);
    }

    // Blocks take whole 8-row units (the runtime row granularity) and walk each in passes of
    // TILE_ROWS, the next pass's rows in flight under this one's work: what a block writes
    // of o_scale (8 f32 a unit) then starts and ends on a 32-byte boundary, so no two cores
    // write parts of one GM block.
    __aicore__ inline void Process()
    {
        const uint32_t unitsPerGroup = rows_ / 8;
        const uint32_t units = P::GROUPS * unitsPerGroup;
        // Row offset of unit i in the [GROUPS · ROWS] row space.
        auto unitRow = [&](uint32_t i) { return (i / unitsPerGroup) * P::ROWS + (i % unitsPerGroup) * 8; };
        uint32_t i = GetBlockIdx();
        if (i >= units) {
            return;
        }
        uint32_t unit = unitRow(i), row = unit;
        CopyIn(row);
        for (;;) {
            uint32_t nextI = i, nextUnit = unit, nextRow = row + TILE_ROWS;
            if (nextRow == unit + 8) {
                nextI += GetBlockNum();
                nextUnit = nextRow = unitRow(nextI);
            }
            const bool more = nextI < units;
            LocalTensor<float> x = inQ_.DeQue<float>();
            AddSlices(x, row);
            if (more) {
                CopyIn(nextRow);
            }
            Compute(x);
            CopyOut(row, row != unit);
            if (!more) {
                break;
            }
            i = nextI;
            unit = nextUnit;
            row = nextRow;
        }
    }

    // A tile from `row` of the [GROUPS · ROWS] rows: the latent, or its first slice and the
    // next slices' first PARTS_AHEAD.
    __aicore__ inline void CopyIn(uint32_t row)
    {
        LocalTensor<float> x = inQ_.AllocTensor<float>();
        DataCopy(x, xGm_[Source(0, row)], TILE);
        inQ_.EnQue(x);
        for (uint32_t ks = 1; ks <= PARTS_AHEAD; ++ks) {
            LoadPart(ks, row);
        }
    }

    // Where slice ks (with SLICES 1: the latent) holds `row`'s values.
    __aicore__ inline static uint64_t Source(uint32_t ks, uint32_t row)
    {
        return ks * SLICE + (uint64_t(row / P::ROWS) * P::PART_ROWS + row % P::ROWS) * K;
    }

    __aicore__ inline void LoadPart(uint32_t ks, uint32_t row)
    {
        LocalTensor<float> part = partQ_.AllocTensor<float>();
        DataCopy(part, xGm_[Source(ks, row)], TILE);
        partQ_.EnQue(part);
    }

    // x (slice 0 of `row`'s tile) += the later slices, in slice order.
    __aicore__ inline void AddSlices(LocalTensor<float>& x, uint32_t row)
    {
        for (uint32_t ks = 1; ks < P::SLICES; ++ks) {
            LocalTensor<float> part = partQ_.DeQue<float>();
            Add(x, x, part, TILE);
            partQ_.FreeTensor(part);
            if (ks + PARTS_AHEAD < P::SLICES) {
                LoadPart(ks + PARTS_AHEAD, row);
            }
        }
    }

    __aicore__ inline void Compute(LocalTensor<float>& x)
    {
        LocalTensor<int8_t> q = qQ_.AllocTensor<int8_t>();
        LocalTensor<float> scale = scaleQ_.AllocTensor<float>();
        float s[TILE_ROWS];
        QuantizeRows<TILE_ROWS>(q, x, TILE_ROWS, K, work_.Get<float>(), half_.Get<half>(), slot_.Get<float>(),
                                reduceTmp_.Get<float>(), s);
        // the dequant scales are per-row scalars
        for (uint32_t r = 0; r < TILE_ROWS; ++r) {
            scale.SetValue(r, s[r]);
        }
        inQ_.FreeTensor(x);
        qQ_.EnQue(q);
        scaleQ_.EnQue(scale);
    }

    __aicore__ inline void CopyOut(uint32_t row, bool sharesBlock)
    {
        LocalTensor<int8_t> q = qQ_.DeQue<int8_t>();
        DataCopy(qGm_[uint64_t(row) * K], q, TILE);
        qQ_.FreeTensor(q);
        LocalTensor<float> scale = scaleQ_.DeQue<float>();
        // The scales were written by the scalar unit.
        Handshake<HardEvent::S_MTE3>();
        BeforeContinuedBlock<TILE_ROWS * sizeof(float)>(sharesBlock);
        DataCopyPad(scaleGm_[row], scale, DataCopyExtParams(1, TILE_ROWS * sizeof(float), 0, 0, 0));
        // The next tile's scalar writes must not overtake this copy.
        Handshake<HardEvent::MTE3_S>();
        scaleQ_.FreeTensor(scale);
    }

    TPipe pipe_;
    TQue<TPosition::VECIN, 1> inQ_;
    TQue<TPosition::VECIN, 2> partQ_;  // slices after the first (SLICES > 1)
    TQue<TPosition::VECOUT, 1> qQ_;
    TQue<TPosition::VECOUT, 1> scaleQ_;
    TBuf<TPosition::VECCALC> work_;
    TBuf<TPosition::VECCALC> half_;
    TBuf<TPosition::VECCALC> slot_;
    TBuf<TPosition::VECCALC> reduceTmp_;
    GlobalTensor<float> xGm_;
    GlobalTensor<int8_t> qGm_;
    GlobalTensor<float> scaleGm_;
    uint32_t rows_ = 0;
};

}  // namespace dsv4
