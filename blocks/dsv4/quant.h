// Per-row symmetric int8 quantisation of activations (swa.md §4.5, the golden's
// int8_quant_per_row): amax = max(max_k |x[k]|, 1e-4), sq = 127 / amax (f32),
// q[k] = rne(x[k]·sq) with no clamp (|x·sq| <= 127 by construction), dequant scale 1 / sq
// (not amax / 127). The device path rounds to an integral f32 (CAST_RINT), converts it to
// f16 and then to int8, both exact for values in [-127, 127] (an i32 -> f16 Cast would
// need SetDeqScale on dav-c220; the f32 rint gives the same integer).
#pragma once

#include "kernel_operator.h"
#include "dsv4/pipe_sync.h"

namespace dsv4 {

constexpr float INT8_SCALE_MAX = 127.0f;
constexpr float INT8_AMAX_EPS = 1e-4f;

// Elements of the ReduceMax scratch (no index) for `count` f32 values, as ReduceMax.md sizes
// it: a (value, index) pair per whole 64-lane repeat, at least one, rounded up to a 32-byte
// block. (The ReduceSum count form does not use its scratch on A2.)
__aicore__ constexpr uint32_t ReduceTmpElems(uint32_t count)
{
    return (2 * (count / 64 > 0 ? count / 64 : 1) + 7) / 8 * 8;
}

// Quantises `rows` (≤ MOST) rows of `count` values at once (x, q row-major; x is scaled in
// place), row r's dequant scale into scales[r], in a few vector calls a batch (one Abs,
// three Casts; a ReduceMax and a Muls a row) and one round trip to the scalar unit. work
// (f32) and half_ (f16) hold rows · count values, slots `rows` 32-byte blocks, tmp
// ReduceTmpElems(count) values.
template <uint32_t MOST>
__aicore__ inline void QuantizeRows(const AscendC::LocalTensor<int8_t>& q, const AscendC::LocalTensor<float>& x,
                                    uint32_t rows, uint32_t count, const AscendC::LocalTensor<float>& work,
                                    const AscendC::LocalTensor<half>& half_, const AscendC::LocalTensor<float>& slots,
                                    const AscendC::LocalTensor<float>& tmp, float* scales)
{
    constexpr uint32_t SLOT = 8;  // f32 of a 32-byte block: a row's max
    AscendC::Abs(work, x, rows * count);
    for (uint32_t r = 0; r < rows; ++r) {
        AscendC::ReduceMax(slots[r * SLOT], work[r * count], tmp, count);
    }
    Handshake<AscendC::HardEvent::V_S>();
    float sq[MOST];
    for (uint32_t r = 0; r < rows; ++r) {
        float amax = slots.GetValue(r * SLOT);
        amax = amax > INT8_AMAX_EPS ? amax : INT8_AMAX_EPS;
        sq[r] = INT8_SCALE_MAX / amax;
        scales[r] = 1.0f / sq[r];
    }
    Handshake<AscendC::HardEvent::S_V>();
    for (uint32_t r = 0; r < rows; ++r) {
        AscendC::Muls(x[r * count], x[r * count], sq[r], count);
    }
    AscendC::Cast(work, x, AscendC::RoundMode::CAST_RINT, rows * count);
    AscendC::Cast(half_, work, AscendC::RoundMode::CAST_NONE, rows * count);
    AscendC::Cast(q, half_, AscendC::RoundMode::CAST_TRUNC, rows * count);
}

// One row: QuantizeRows of x[0 .. count), its dequant scale returned (slot one block).
__aicore__ inline float QuantizeRow(const AscendC::LocalTensor<int8_t>& q, const AscendC::LocalTensor<float>& x,
                                    const AscendC::LocalTensor<float>& work, const AscendC::LocalTensor<half>& half_,
                                    const AscendC::LocalTensor<float>& slot, const AscendC::LocalTensor<float>& tmp,
                                    uint32_t count)
{
    float scale;
    QuantizeRows<1>(q, x, 1, count, work, half_, slot, tmp, &scale);
    return scale;
}

}  // namespace dsv4
