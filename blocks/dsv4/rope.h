// Interleaved RoPE on the rope slice of a row (swa.md §3.3): pair i is (x[2i], x[2i+1]),
// rotated by the token's angle i with c = freqs_cos[row, i], s = freqs_sin[row, i] (only
// columns 0 .. RD/2 of the bf16 tables are used); RopeRow says which row a token reads.
//   forward: y[2i] = x[2i]·c − x[2i+1]·s,   y[2i+1] = x[2i]·s + x[2i+1]·c
//   inverse: y[2i] = x[2i]·c + x[2i+1]·s,   y[2i+1] = x[2i+1]·c − x[2i]·s
// Evaluated as y = x·cos_il + x_swapped·sin_signed with per-token tables cos_il (c_i at 2i
// and 2i+1) and sin_signed (∓s_i at 2i, ±s_i at 2i+1) and a pair-swapped copy of x, all
// built with Gather (byte offsets). Bit-identical to the formulas: the sign flip is exact
// and the sum commutes.
#pragma once

#include "kernel_operator.h"
#include "dsv4/pipe_sync.h"

namespace dsv4 {

// The row of the [*, RD] cos / sin tables token t rotates with. `table: per_token`: the
// host's token-local tables [t, RD], row t. `table: positions` (POSITIONS, CSA: hca_csa.md
// §2.3, §3): the full table [max_positions, RD], row position_ids[t], gathered here.
// position_ids is an input no kernel writes, so this scalar GM read needs no flag before
// the DataCopy that reads the row; a position outside the table breaks the ABI contract
// (0 <= p < max_positions). `positions` is not const: with CANN's super-kernel GM
// get/set cache maintenance, GlobalTensor::GetValue is a non-const member.
template <bool POSITIONS>
__aicore__ inline uint32_t RopeRow(AscendC::GlobalTensor<int32_t>& positions, uint32_t t)
{
    if constexpr (POSITIONS) {
        return static_cast<uint32_t>(positions.GetValue(t));
    } else {
        (void)positions;
        return t;
    }
}

// The rotation of RD values by one row's tables, built from trig = [cos | sin | −sin] in
// UB, each part TRIG values wide (its first RD/2 used). P: RD, and the UB sizes the plan
// decided (ROPE_OFFSETS_BYTES, ROPE_TABLES_BYTES, ROPE_SWAP_BYTES), each at least what
// its use below needs.
template <class P, uint32_t TRIG>
class Rotation {
    static constexpr uint32_t RD = P::RD;
    static_assert(TRIG >= RD / 2, "trig parts hold the RD / 2 angles");
    static_assert(P::ROPE_OFFSETS_BYTES >= 3 * RD * sizeof(uint32_t), "rope_offsets holds three gathers");
    static_assert(P::ROPE_TABLES_BYTES >= 2 * RD * sizeof(float), "rope_tables holds the two tables");
    static_assert(P::ROPE_SWAP_BYTES >= RD * sizeof(float), "rope_swap holds the swapped slice");

public:
    // Carves the buffers from `pipe` and writes the gather offsets (scalar writes, once per
    // kernel; the first Tables reads them).
    __aicore__ inline void Init(AscendC::TPipe& pipe, bool inverse)
    {
        Carve(pipe);
        Offsets(inverse);
    }

    // Init in two steps, so a caller can start its GM loads before the scalar writes.
    __aicore__ inline void Carve(AscendC::TPipe& pipe)
    {
        pipe.InitBuffer(offsets_, P::ROPE_OFFSETS_BYTES);
        pipe.InitBuffer(tables_, P::ROPE_TABLES_BYTES);
        pipe.InitBuffer(swap_, P::ROPE_SWAP_BYTES);
    }
    __aicore__ inline void Offsets(bool inverse)
    {
        AscendC::LocalTensor<uint32_t> off = offsets_.Get<uint32_t>();
        const uint32_t plus = TRIG, minus = 2 * TRIG;
        for (uint32_t j = 0; j < RD; ++j) {
            const uint32_t pair = j / 2;
            const bool even = j % 2 == 0;
            off.SetValue(j, pair * sizeof(float));
            off.SetValue(RD + j, ((even != inverse ? minus : plus) + pair) * sizeof(float));
            off.SetValue(2 * RD + j, (j ^ 1u) * sizeof(float));
        }
    }

    // Builds the tables of the row whose [cos | sin | −sin] `trig` holds.
    __aicore__ inline void Tables(const AscendC::LocalTensor<float>& trig)
    {
        AscendC::LocalTensor<uint32_t> off = offsets_.Get<uint32_t>();
        AscendC::LocalTensor<float> tables = tables_.Get<float>();
        AscendC::Gather(tables, trig, off, 0, RD);
        AscendC::Gather(tables[RD], trig, off[RD], 0, RD);
    }

    // Rotates x[0 .. RD) in place (x 32-byte aligned).
    __aicore__ inline void Apply(const AscendC::LocalTensor<float>& x)
    {
        AscendC::LocalTensor<uint32_t> off = offsets_.Get<uint32_t>();
        AscendC::LocalTensor<float> tables = tables_.Get<float>();
        AscendC::LocalTensor<float> swap = swap_.Get<float>();
        AscendC::Gather(swap, x, off[2 * RD], 0, RD);
        AscendC::Mul(swap, swap, tables[RD], RD);
        AscendC::Mul(x, x, tables, RD);
        AscendC::Add(x, x, swap, RD);
    }

    // Rotates `heads` slices x[h * STRIDE .. + RD) in four calls (RD at most one f32
    // repeat: a repeat per slice, the tables reused by each), where `partners` holds the
    // heads' pair-swap gather offsets (Partners) and `swap` heads * RD values.
    template <uint32_t STRIDE>
    __aicore__ inline void ApplyHeads(const AscendC::LocalTensor<float>& x, uint32_t heads,
                                      const AscendC::LocalTensor<uint32_t>& partners,
                                      const AscendC::LocalTensor<float>& swap)
    {
        static_assert(RD <= 64 && RD % 8 == 0 && STRIDE % 8 == 0 && STRIDE / 8 <= 255,
                      "a slice is one repeat of whole blocks, slices an 8-bit repeat stride apart");
        AscendC::LocalTensor<float> tables = tables_.Get<float>();
        AscendC::Gather(swap, x, partners, 0, heads * RD);
        AscendC::Mul(swap, swap, tables[RD], RD, heads, AscendC::BinaryRepeatParams(1, 1, 1, RD / 8, RD / 8, 0));
        AscendC::Mul(x, x, tables, RD, heads, AscendC::BinaryRepeatParams(1, 1, 1, STRIDE / 8, STRIDE / 8, 0));
        AscendC::Add(x, x, swap, RD, heads, AscendC::BinaryRepeatParams(1, 1, 1, STRIDE / 8, STRIDE / 8, RD / 8));
    }

    // ApplyHeads' gather offsets for `heads` slices STRIDE apart (once): the first slice's by
    // the scalar unit, the rest by the vector unit, doubling the slices written per call.
    template <uint32_t STRIDE>
    __aicore__ static inline void Partners(const AscendC::LocalTensor<uint32_t>& partners, uint32_t heads)
    {
        for (uint32_t j = 0; j < RD; ++j) {
            partners.SetValue(j, (j ^ 1u) * sizeof(float));
        }
        ScalarToVector();
        const AscendC::LocalTensor<int32_t> offsets = partners.template ReinterpretCast<int32_t>();
        for (uint32_t done = 1; done < heads; done *= 2) {
            const uint32_t more = heads - done < done ? heads - done : done;
            AscendC::Adds(offsets[done * RD], offsets, static_cast<int32_t>(done * STRIDE * sizeof(float)), more * RD);
        }
    }

private:
    AscendC::TBuf<AscendC::TPosition::VECCALC> offsets_, tables_, swap_;
};

// RoPE from rows of the [*, RD] bf16 cos / sin tables in GM. P: RD, and the UB sizes the
// plan decided (ROPE_ROWS_BYTES, ROPE_TRIG_BYTES, and Rotation's), each at least what its
// use below needs. rope_rows holds SLOTS tokens' rows, so a caller can fetch the rows of
// the tokens ahead while it works (one GM latency for them all), then build each in turn.
template <class P>
class Rope {
    static constexpr uint32_t RD = P::RD;
    static constexpr uint32_t ROWS = 2 * RD;  // a slot: the cos row, then the sin row
    static_assert(RD % 16 == 0, "a bf16 table row of RD values is whole 32-byte blocks");
    static_assert(P::ROPE_ROWS_BYTES >= ROWS * sizeof(bfloat16_t), "rope_rows holds the cos and sin rows");
    static_assert(P::ROPE_TRIG_BYTES >= 3 * RD * sizeof(float), "rope_trig holds [cos | sin | -sin]");

public:
    static constexpr uint32_t SLOTS = P::ROPE_ROWS_BYTES / (ROWS * sizeof(bfloat16_t));

    // Carves the buffers from `pipe` and writes the gather offsets (once per kernel).
    __aicore__ inline void Init(AscendC::TPipe& pipe, bool inverse)
    {
        Carve(pipe);
        Offsets(inverse);
    }

    // Init in two steps, so a caller can start its GM loads before the scalar writes.
    __aicore__ inline void Carve(AscendC::TPipe& pipe)
    {
        pipe.InitBuffer(rows_, P::ROPE_ROWS_BYTES);
        pipe.InitBuffer(trig_, P::ROPE_TRIG_BYTES);
        rot_.Carve(pipe);
    }
    __aicore__ inline void Offsets(bool inverse) { rot_.Offsets(inverse); }

    // Starts copying row `row` of the [*, RD] bf16 cos / sin tables (RopeRow) into `slot`
    // (< SLOTS; a slot is fetched again only after its Build).
    __aicore__ inline void Fetch(const AscendC::GlobalTensor<bfloat16_t>& cos,
                                 const AscendC::GlobalTensor<bfloat16_t>& sin, uint32_t row, uint32_t slot)
    {
        AscendC::LocalTensor<bfloat16_t> rows = rows_.Get<bfloat16_t>()[slot * ROWS];
        AscendC::DataCopy(rows, cos[uint64_t(row) * RD], RD);
        AscendC::DataCopy(rows[RD], sin[uint64_t(row) * RD], RD);
    }

    // Fetch for tokens [t0, t0 + n) (their RopeRow) into slots [slot0, slot0 + n): a block
    // of tokens ahead, while the block before works.
    template <bool POSITIONS>
    __aicore__ inline void FetchTokens(const AscendC::GlobalTensor<bfloat16_t>& cos,
                                       const AscendC::GlobalTensor<bfloat16_t>& sin,
                                       AscendC::GlobalTensor<int32_t>& positions, uint32_t t0, uint32_t n,
                                       uint32_t slot0)
    {
        for (uint32_t i = 0; i < n; ++i) {
            Fetch(cos, sin, RopeRow<POSITIONS>(positions, t0 + i), slot0 + i);
        }
    }

    // Builds the tables from the rows fetched into `slot`, once the caller has made V wait
    // for the Fetch (an MTE2 → V flag).
    __aicore__ inline void Build(uint32_t slot)
    {
        AscendC::LocalTensor<float> trig = trig_.Get<float>();
        AscendC::Cast(trig, rows_.Get<bfloat16_t>()[slot * ROWS], AscendC::RoundMode::CAST_NONE, ROWS);
        AscendC::Muls(trig[2 * RD], trig[RD], -1.0f, RD);
        rot_.Tables(trig);
        // the next Fetch may overwrite the slot: the casts above must have read it
        Handshake<AscendC::HardEvent::V_MTE2>();
    }

    // Builds the tables for row `row` of the tables (RopeRow).
    __aicore__ inline void Load(const AscendC::GlobalTensor<bfloat16_t>& cos,
                                const AscendC::GlobalTensor<bfloat16_t>& sin, uint32_t row)
    {
        Fetch(cos, sin, row, 0);
        Handshake<AscendC::HardEvent::MTE2_V>();
        Build(0);
    }

    // Rotates x[0 .. RD) in place (x 32-byte aligned).
    __aicore__ inline void Apply(const AscendC::LocalTensor<float>& x) { rot_.Apply(x); }

    // Rotation::ApplyHeads with this row's tables.
    template <uint32_t STRIDE>
    __aicore__ inline void ApplyHeads(const AscendC::LocalTensor<float>& x, uint32_t heads,
                                      const AscendC::LocalTensor<uint32_t>& partners,
                                      const AscendC::LocalTensor<float>& swap)
    {
        rot_.template ApplyHeads<STRIDE>(x, heads, partners, swap);
    }

private:
    AscendC::TBuf<AscendC::TPosition::VECCALC> rows_, trig_;
    Rotation<P, RD> rot_;
};

// A row's HEADS rope slices, STRIDE apart, rotated at once (Rotation::ApplyHeads, RD at most
// one f32 repeat) with their own buffers: the pair-swap gather offsets (written once) and the
// swapped slices. P: RD and, where Init is called, ROPE_PARTNERS_BYTES, ROPE_SWAP_HEADS_BYTES.
template <class P, uint32_t HEADS, uint32_t STRIDE>
class RopeHeads {
public:
    __aicore__ inline void Init(AscendC::TPipe& pipe)
    {
        static_assert(P::ROPE_PARTNERS_BYTES >= HEADS * P::RD * sizeof(uint32_t) &&
                          P::ROPE_SWAP_HEADS_BYTES >= HEADS * P::RD * sizeof(float),
                      "the heads' pair-swap offsets and swapped slices");
        pipe.InitBuffer(partners_, P::ROPE_PARTNERS_BYTES);
        pipe.InitBuffer(swap_, P::ROPE_SWAP_HEADS_BYTES);
        Rotation<P, P::RD>::template Partners<STRIDE>(partners_.Get<uint32_t>(), HEADS);
    }

    // Rotates x[h * STRIDE .. + RD) for every head h with `rope`'s current row.
    __aicore__ inline void Apply(Rope<P>& rope, const AscendC::LocalTensor<float>& x)
    {
        rope.template ApplyHeads<STRIDE>(x, HEADS, partners_.Get<uint32_t>(), swap_.Get<float>());
    }

private:
    AscendC::TBuf<AscendC::TPosition::VECCALC> partners_, swap_;
};

}  // namespace dsv4
