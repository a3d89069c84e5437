// The index-key compressor's cache write (hca_csa.md §5.3), after its pooling
// (dsv4/compressor.h CompressorFinishToToken: the normalised, rotated bf16 row at row b·SEQ) and
// the Hadamard product on the cube (kf = row · hadamard_idx, f32 [t, HD]). Per request, at
// its first boundary token s* (the first with (p+1) mod RATIO == 0) whose idx_slot_mapping
// entry is >= 0: v = f32(bf16_RNE(kf[b·SEQ])), quantised per row to int8 (dsv4/quant.h:
// amax = max(max|v|, 1e-4), sq = 127/amax, RNE(v·sq), scale 1/sq) into idx_kv_cache row
// `slot` and its scale into idx_kv_scale[slot]. Rows of kf of requests without such a row
// were never written and are not read. P::RING (CSA at 1M, csa_1m.md §4.5): every boundary
// token's row of kf, at its own idx slot.
#pragma once

#include "dsv4/quant.h"
#include "dsv4/scalar_stream.h"
#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// P: HD (key width), RATIO, SEQ (tokens per request), RING, and the UB sizes the plan decided
// (`*_BYTES`, each at least what its use below needs); its blocks: OwnBlocks<P> (optional
// BLOCK_BASE, BLOCKS: a range of the launch's, dsv4/together.h). A block takes the requests whose
// scale lands in its 32-byte block of idx_kv_scale ((slot / 8) mod blocks == block): two
// cores never write one block (requests may share a cache page), and each key row is
// whole blocks of its own.
template <class P>
class IndexKeyWrite {
    static constexpr uint32_t HD = P::HD;
    static constexpr uint32_t SEQ = P::SEQ;
    static constexpr uint32_t LANES = BLOCK_BYTES / sizeof(float);  // scales per block
    static_assert(HD % BLOCK_BYTES == 0, "an int8 key row is whole 32-byte blocks");
    static_assert(P::KF_BYTES >= HD * sizeof(float) && P::WORK_BYTES >= HD * sizeof(float), "kf row and scratch");
    static_assert(P::KF_BF16_BYTES >= HD * sizeof(bfloat16_t) && P::F16_BYTES >= HD * sizeof(half),
                  "the bf16 rounding and the f16 staging of a row");
    static_assert(P::KEY_OUT_BYTES >= HD * sizeof(int8_t), "the int8 row out");
    static_assert(P::SLOT_BYTES >= LANES * sizeof(float) && P::SCALE_OUT_BYTES >= LANES * sizeof(float),
                  "ReduceMax's result and the scale out, a block each");
    static_assert(P::REDUCE_TMP_BYTES >= ReduceTmpElems(HD) * sizeof(float), "ReduceMax scratch of a row");

public:
    __aicore__ inline static void Run(GM_ADDR kf, GM_ADDR positions, GM_ADDR idxSlots, GM_ADDR keys,
                                      GM_ADDR scales, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        IndexKeyWrite op;
        op.Init(kf, positions, idxSlots, keys, scales, td.t);
        const uint64_t blocks = OwnBlocks<P>::Num();
        const uint64_t idx = OwnBlocks<P>::Idx();
        for (uint32_t b = 0; b < td.b; ++b) {
            if constexpr (P::RING) {
                for (uint32_t t = b * SEQ; t < (b + 1) * SEQ; ++t) {
                    const int64_t slot = op.BoundarySlot(t);
                    if (slot >= 0 && uint64_t(slot) / LANES % blocks == idx) {
                        op.Write(t, uint64_t(slot));
                    }
                }
                continue;
            }
            const int64_t slot = op.Slot(b);
            if (slot >= 0 && uint64_t(slot) / LANES % blocks == idx) {
                op.Write(b * SEQ, uint64_t(slot));
            }
        }
    }

private:
    // Every block reads every token's position and slot, in token order.
    __aicore__ inline void Init(GM_ADDR kf, GM_ADDR positions, GM_ADDR idxSlots, GM_ADDR keys, GM_ADDR scales,
                                uint32_t tokens)
    {
        kf_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(kf));
        positions_.Init(positions, tokens);
        slots_.Init(idxSlots, tokens);
        positions_.Warm(0);
        keys_.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t*>(keys));
        scales_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(scales));
        pipe_.InitBuffer(kfIn_, P::KF_BYTES);
        pipe_.InitBuffer(rounded_, P::KF_BF16_BYTES);
        pipe_.InitBuffer(work_, P::WORK_BYTES);
        pipe_.InitBuffer(half_, P::F16_BYTES);
        pipe_.InitBuffer(slot_, P::SLOT_BYTES);
        pipe_.InitBuffer(tmp_, P::REDUCE_TMP_BYTES);
        pipe_.InitBuffer(keyOut_, P::KEY_OUT_BYTES);
        pipe_.InitBuffer(scaleOut_, P::SCALE_OUT_BYTES);
    }

    // The idx slot of request b's first boundary token, or -1 (no boundary, or not written).
    __aicore__ inline int64_t Slot(uint32_t b)
    {
        const uint32_t tok0 = b * SEQ;
        for (uint32_t s = 0; s < SEQ; ++s) {
            if ((static_cast<uint32_t>(positions_.Get(tok0 + s)) + 1) % P::RATIO == 0) {
                return slots_.Get(tok0 + s);
            }
        }
        return -1;
    }

    // Token t's idx slot if it is a boundary, or -1.
    __aicore__ inline int64_t BoundarySlot(uint32_t t)
    {
        const bool boundary = (static_cast<uint32_t>(positions_.Get(t)) + 1) % P::RATIO == 0;
        return boundary ? slots_.Get(t) : -1;
    }

    // kf row `row` -> bf16 -> f32 -> int8 key row and scale at `slot`.
    __aicore__ inline void Write(uint32_t row, uint64_t slot)
    {
        AscendC::LocalTensor<float> v = kfIn_.Get<float>();
        AscendC::LocalTensor<bfloat16_t> rounded = rounded_.Get<bfloat16_t>();
        AscendC::LocalTensor<int8_t> key = keyOut_.Get<int8_t>();
        AscendC::LocalTensor<float> scale = scaleOut_.Get<float>();
        AscendC::DataCopy(v, kf_[uint64_t(row) * HD], HD);
        Handshake<AscendC::HardEvent::MTE2_V>();
        AscendC::Cast(rounded, v, AscendC::RoundMode::CAST_RINT, HD);
        AscendC::Cast(v, rounded, AscendC::RoundMode::CAST_NONE, HD);
        const float s = QuantizeRow(key, v, work_.Get<float>(), half_.Get<half>(), slot_.Get<float>(),
                                    tmp_.Get<float>(), HD);
        scale.SetValue(0, s);
        Handshake<AscendC::HardEvent::V_MTE3>();
        Handshake<AscendC::HardEvent::S_MTE3>();
        AscendC::DataCopy(keys_[slot * HD], key, HD);
        AscendC::DataCopyPad(scales_[slot], scale, AscendC::DataCopyExtParams(1, sizeof(float), 0, 0, 0));
        // The next request's load, vector work and scale reuse these buffers.
        Handshake<AscendC::HardEvent::V_MTE2>();
        Handshake<AscendC::HardEvent::MTE3_V>();
        Handshake<AscendC::HardEvent::MTE3_S>();
    }

    AscendC::TPipe pipe_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> kfIn_, rounded_, work_, half_, slot_, tmp_, keyOut_, scaleOut_;
    AscendC::GlobalTensor<float> kf_, scales_;
    ScalarStream<int32_t> positions_;
    ScalarStream<int64_t> slots_;
    AscendC::GlobalTensor<int8_t> keys_;
};

}  // namespace dsv4
