// Last step of the attention (swa.md §3.6 steps 5-7, hca_csa.md §6.1), per token t and head h:
//   o = o_acc * (1 / denom)                              (f32: a head's reciprocal once)
//   o_acc as the values product leaves it (attention_cube.h OutRows): f32 rows, or rows of
//   O_HALF_COLS half columns and f32 rope columns holding o_acc * 2^-O_SHIFT, read as
//   o = f32(o_acc) * (2^O_SHIFT / denom)
//   nope dims: bf16(o);  rope pair i of the last ROPE_DIM dims, with c, s = column i of the
//   token's freqs row (RopeRow: row t of token-local tables, or row position_ids[t] of the
//   full [max_positions, ROPE_DIM] tables when the kernel takes positions, CSA):
//   u[2i] = o[2i]*c + o[2i+1]*s,  u[2i+1] = o[2i+1]*c - o[2i]*s,  then bf16
// and the packing: head h = g*HEADS_PER_GROUP + hh of token t goes to row g*T_PAD + t,
// columns hh*HEAD_DIM .. of o_packed_heads [O_GROUPS*T_PAD, HEADS_PER_GROUP*HEAD_DIM].
// Rows >= t of each group slab are never written. The rotation works on whole tiles:
// gathers pick the rope dims and their pair partners, and tables of cos and of +-sin
// interleaved per pair ((x*cos) + (x_partner*(+-sin)) is the formula above exactly).
// A work item is a range of a token's head tiles: whole tokens when there are as many tokens
// as blocks, else each token's tiles in as many ranges as blocks per token. Fused, the last
// launch of the attention finishes its heads instead (`Heads`, on that launch's TPipe): the
// window attention's where the window is the only source (attention_window_fused.h), else the
// further source's combine (attention_combine.h).
#pragma once

#include "dsv4/rope.h"
#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// The finish parameters of a kernel that does not finish (its o is what the launch leaves,
// for a further source, a combine or the finish launch).
struct NoFinish {};
template <class PF>
struct Finishes {
    static constexpr bool VALUE = true;
};
template <>
struct Finishes<NoFinish> {
    static constexpr bool VALUE = false;
};

// P: HEADS, HEAD_DIM, ROPE_DIM, HEADS_PER_GROUP, T_PAD, HEAD_TILE, POSITIONS (RoPE rows by
// position_ids), O_SHIFT and O_HALF_COLS (o_acc's rows: both 0, or both set), and the UB
// sizes the plan decided (`*_BYTES`, each at least what its use below needs; O_F32_BYTES
// only with half columns).
template <class P>
class AttentionFinish {
    static constexpr bool MIXED = P::O_HALF_COLS > 0;
    using O = typename Either<MIXED, float, half>::T;  // o_acc's elements as loaded (halves where mixed)
    static constexpr uint32_t HD = P::HEAD_DIM;
    static constexpr uint32_t ROPE = P::ROPE_DIM;
    static constexpr uint32_t HALF = ROPE / 2;
    static constexpr uint32_t NOPE = HD - ROPE;
    static constexpr uint32_t TILE = P::HEAD_TILE * HD;
    static constexpr uint32_t ROPE_TILE = P::HEAD_TILE * ROPE;
    static constexpr uint32_t GROUP_IN = P::HEADS_PER_GROUP * HD;
    static_assert(HD % 16 == 0 && NOPE % 16 == 0 && ROPE % 16 == 0, "bf16 head parts in whole 32-byte blocks");
    static_assert(P::HEADS % P::HEAD_TILE == 0 && P::HEAD_TILE % 8 == 0, "HEAD_TILE: whole blocks dividing HEADS");
    // o_acc's row in loaded elements (halves where mixed: HEAD_DIM f32 otherwise)
    static constexpr uint32_t ROW = MIXED ? P::O_HALF_COLS + 2 * (HD - P::O_HALF_COLS) : HD;
    static_assert(P::O_BYTES >= P::HEAD_TILE * ROW * sizeof(O) && P::OUT_BYTES >= TILE * sizeof(bfloat16_t),
                  "a tile of head rows in and out");
    static_assert(MIXED == (P::O_SHIFT > 0) && P::O_SHIFT <= 15 && P::O_HALF_COLS % 16 == 0 && P::O_HALF_COLS <= NOPE,
                  "half columns only scaled, in whole blocks, never the rope columns the rotation mixes");
    static_assert(P::DENOM_BYTES >= P::HEADS * sizeof(float), "a token's denominators");
    static_assert(P::COS_ROW_BYTES >= HALF * sizeof(bfloat16_t) && P::SIN_ROW_BYTES >= HALF * sizeof(bfloat16_t),
                  "freqs half-rows");
    static_assert(P::TRIG_BYTES >= 3 * HALF * sizeof(float), "cos, sin and -sin of a token");
    static_assert(P::COS_TABLE_BYTES >= ROPE_TILE * sizeof(float) && P::SIN_TABLE_BYTES >= ROPE_TILE * sizeof(float) &&
                      P::ROPE_BYTES >= ROPE_TILE * sizeof(float) && P::PARTNER_BYTES >= ROPE_TILE * sizeof(float),
                  "f32 over the rope dims of a tile");
    static_assert(P::ROPE_OFFSETS_BYTES >= ROPE_TILE * sizeof(int32_t) &&
                      P::PARTNER_OFFSETS_BYTES >= ROPE_TILE * sizeof(int32_t) &&
                      P::COS_OFFSETS_BYTES >= ROPE_TILE * sizeof(int32_t) &&
                      P::SIN_OFFSETS_BYTES >= ROPE_TILE * sizeof(int32_t),
                  "gather offsets over the rope dims of a tile");

public:
    __aicore__ inline static void Run(GM_ADDR o, GM_ADDR denom, GM_ADDR freqsCos, GM_ADDR freqsSin, GM_ADDR packed,
                                      GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        static_assert(!P::POSITIONS, "a kernel without position_ids reads token-local RoPE rows");
        const TilingData td = LoadTiling(tiling);
        AscendC::TPipe pipe;
        AttentionFinish op;
        op.Init(pipe, o, denom, freqsCos, freqsSin, nullptr, packed);
        op.AllItems(td.t);
    }

    // The full tables: token t reads row position_ids[t].
    __aicore__ inline static void Run(GM_ADDR o, GM_ADDR denom, GM_ADDR freqsCos, GM_ADDR freqsSin, GM_ADDR positions,
                                      GM_ADDR packed, GM_ADDR workspace, GM_ADDR tiling)
    {
        static_assert(P::POSITIONS, "a kernel taking position_ids reads the full RoPE table");
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        AscendC::TPipe pipe;
        AttentionFinish op;
        op.Init(pipe, o, denom, freqsCos, freqsSin, positions, packed);
        op.AllItems(td.t);
    }

    // The buffers from `pipe` (the finish launch's, or that of a kernel that finishes heads
    // as their attention completes, beside its own), `positions` (null without POSITIONS)
    // the position_ids the RoPE rows follow.
    __aicore__ inline void Init(AscendC::TPipe& pipe, GM_ADDR o, GM_ADDR denom, GM_ADDR freqsCos, GM_ADDR freqsSin,
                                GM_ADDR positions, GM_ADDR packed)
    {
        o_.SetGlobalBuffer(reinterpret_cast<__gm__ O*>(o));
        denom_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(denom));
        cos_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(freqsCos));
        sin_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(freqsSin));
        packed_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(packed));
        if (positions != nullptr) {
            positions_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(positions));
        }
        InitBuffers(pipe);
    }

    // Heads [h0, h1) of token t (whole tiles), once their o and denominators are in GM.
    __aicore__ inline void Heads(uint32_t t, uint32_t h0, uint32_t h1)
    {
        Token(t, RopeRow<P::POSITIONS>(positions_, t), h0 / P::HEAD_TILE, h1 / P::HEAD_TILE);
    }

    // Heads' one tile [h0, h0 + HEAD_TILE) of token t in two halves, so that a caller can
    // run other vector work while the tile loads: Ask starts its loads (once its o and
    // denominators are in GM), Finish does the rest. One tile between the two at a time.
    __aicore__ inline void Ask(uint32_t t, uint32_t h0)
    {
        AskRows(t, RopeRow<P::POSITIONS>(positions_, t), h0, P::HEAD_TILE);
        Load(t, h0);
    }

    __aicore__ inline void Finish(uint32_t t, uint32_t h0)
    {
        Handshake<AscendC::HardEvent::MTE2_V>();
        Tables();
        Handshake<AscendC::HardEvent::MTE2_S>();
        Tile(t, h0, denomRow_.Get<float>());
    }

    // This block's items of all `tokens` tokens: each token's head tiles in `parts` ranges
    // (blocks per token, at least 1, at most the tiles), the items in contiguous shares of the
    // blocks.
    __aicore__ inline void AllItems(uint32_t tokens)
    {
        constexpr uint32_t TILES = P::HEADS / P::HEAD_TILE;
        for (UnitParts it(tokens, TILES); it.Next();) {
            const Share tiles = it.Range(TILES);
            Token(it.unit, RopeRow<P::POSITIONS>(positions_, it.unit), tiles.begin, tiles.end);
        }
    }

private:
    __aicore__ inline void InitBuffers(AscendC::TPipe& pipe)
    {
        pipe.InitBuffer(oQ_, 2, P::O_BYTES);
        if constexpr (MIXED) {
            static_assert(P::O_F32_BYTES >= TILE * sizeof(float), "a tile of head rows in f32");
            pipe.InitBuffer(oF32_, P::O_F32_BYTES);
        }
        pipe.InitBuffer(outQ_, 2, P::OUT_BYTES);
        pipe.InitBuffer(denomRow_, P::DENOM_BYTES);
        pipe.InitBuffer(cosRow_, P::COS_ROW_BYTES);
        pipe.InitBuffer(sinRow_, P::SIN_ROW_BYTES);
        pipe.InitBuffer(trig_, P::TRIG_BYTES);
        pipe.InitBuffer(cosTable_, P::COS_TABLE_BYTES);
        pipe.InitBuffer(sinTable_, P::SIN_TABLE_BYTES);
        pipe.InitBuffer(rope_, P::ROPE_BYTES);
        pipe.InitBuffer(partner_, P::PARTNER_BYTES);
        pipe.InitBuffer(ropeOffsets_, P::ROPE_OFFSETS_BYTES);
        pipe.InitBuffer(partnerOffsets_, P::PARTNER_OFFSETS_BYTES);
        pipe.InitBuffer(cosOffsets_, P::COS_OFFSETS_BYTES);
        pipe.InitBuffer(sinOffsets_, P::SIN_OFFSETS_BYTES);
        // Byte offsets for the gathers. Head 0's row is written element by element, the
        // other heads add their start: rope dim j of head h is tile element h*HD + NOPE + j,
        // its partner is dim j^1; trig holds [cos | sin | -sin] of the token's frequencies.
        AscendC::LocalTensor<int32_t> ropeOff = ropeOffsets_.Get<int32_t>();
        AscendC::LocalTensor<int32_t> partnerOff = partnerOffsets_.Get<int32_t>();
        AscendC::LocalTensor<int32_t> cosOff = cosOffsets_.Get<int32_t>();
        AscendC::LocalTensor<int32_t> sinOff = sinOffsets_.Get<int32_t>();
        constexpr int32_t F = sizeof(float);
        for (uint32_t j = 0; j < ROPE; ++j) {
            const int32_t pair = static_cast<int32_t>(j / 2);
            ropeOff.SetValue(j, static_cast<int32_t>(NOPE + j) * F);
            partnerOff.SetValue(j, static_cast<int32_t>(NOPE + (j ^ 1u)) * F);
            cosOff.SetValue(j, pair * F);
            sinOff.SetValue(j, static_cast<int32_t>((j % 2 == 0 ? HALF : 2 * HALF) + pair) * F);
        }
        ScalarToVector();
        for (uint32_t h = 1; h < P::HEAD_TILE; ++h) {
            const int32_t head = static_cast<int32_t>(h * HD) * F;
            AscendC::Adds(ropeOff[h * ROPE], ropeOff, head, ROPE);
            AscendC::Adds(partnerOff[h * ROPE], partnerOff, head, ROPE);
            AscendC::Adds(cosOff[h * ROPE], cosOff, 0, ROPE);
            AscendC::Adds(sinOff[h * ROPE], sinOff, 0, ROPE);
        }
    }

    // Head tiles [tile0, tile1) of token t, rotating with row `row` of the freqs tables.
    __aicore__ inline void Token(uint32_t t, uint32_t row, uint32_t tile0, uint32_t tile1)
    {
        AscendC::LocalTensor<float> den = denomRow_.Get<float>();
        const uint32_t h0 = tile0 * P::HEAD_TILE;
        AskRows(t, row, h0, (tile1 - tile0) * P::HEAD_TILE);
        Handshake<AscendC::HardEvent::MTE2_V>();
        Load(t, h0);  // the first tile's o loads while the tables are built
        Tables();
        Handshake<AscendC::HardEvent::MTE2_S>();
        for (uint32_t i = tile0; i < tile1; ++i) {
            if (i + 1 < tile1) {
                Load(t, (i + 1) * P::HEAD_TILE);  // the next tile's o loads under this one
            }
            Tile(t, i * P::HEAD_TILE, den);
        }
    }

    // Starts loading token t's denominators of heads [h0, h0 + n) and row `row` of the freqs
    // tables. The rows are overwritten once the previous token's vector reads of them are
    // done; only these heads' denominators are read (others may still be being written).
    __aicore__ inline void AskRows(uint32_t t, uint32_t row, uint32_t h0, uint32_t n)
    {
        const AscendC::DataCopyExtParams half(1, HALF * sizeof(bfloat16_t), 0, 0, 0);
        const AscendC::DataCopyPadExtParams<bfloat16_t> noPad(false, 0, 0, bfloat16_t(0.0f));
        Handshake<AscendC::HardEvent::V_MTE2>();
        AscendC::DataCopy(denomRow_.Get<float>()[h0], denom_[static_cast<uint64_t>(t) * P::HEADS + h0], n);
        // Only the first ROPE/2 columns of a freqs row are read (the rest repeat them).
        AscendC::DataCopyPad(cosRow_.Get<bfloat16_t>(), cos_[static_cast<uint64_t>(row) * ROPE], half, noPad);
        AscendC::DataCopyPad(sinRow_.Get<bfloat16_t>(), sin_[static_cast<uint64_t>(row) * ROPE], half, noPad);
    }

    // The token's cos and ±sin tables over a tile's rope dims, from the rows AskRows loaded
    // (the caller orders those loads first).
    __aicore__ inline void Tables()
    {
        AscendC::LocalTensor<float> trig = trig_.Get<float>();
        AscendC::Cast(trig, cosRow_.Get<bfloat16_t>(), AscendC::RoundMode::CAST_NONE, HALF);
        AscendC::Cast(trig[HALF], sinRow_.Get<bfloat16_t>(), AscendC::RoundMode::CAST_NONE, HALF);
        AscendC::Muls(trig[2 * HALF], trig[HALF], -1.0f, HALF);
        AscendC::Gather(cosTable_.Get<float>(), trig, cosOffsets_.Get<uint32_t>(), 0, ROPE_TILE);
        AscendC::Gather(sinTable_.Get<float>(), trig, sinOffsets_.Get<uint32_t>(), 0, ROPE_TILE);
    }

    // Starts loading the o rows of heads [h0, h0 + HEAD_TILE) of token t into the queue.
    __aicore__ inline void Load(uint32_t t, uint32_t h0)
    {
        AscendC::LocalTensor<O> o = oQ_.AllocTensor<O>();
        AscendC::DataCopy(o, o_[(static_cast<uint64_t>(t) * P::HEADS + h0) * ROW], P::HEAD_TILE * ROW);
        oQ_.EnQue(o);
    }

    // The tile Load queued first: heads [h0, h0 + HEAD_TILE) of token t.
    __aicore__ inline void Tile(uint32_t t, uint32_t h0, const AscendC::LocalTensor<float>& den)
    {
        AscendC::LocalTensor<O> in = oQ_.DeQue<O>();
        AscendC::LocalTensor<float> o;
        if constexpr (MIXED) {
            // widened into f32 rows, scaled back by 2^O_SHIFT with the reciprocal
            constexpr uint32_t HALF_COLS = P::O_HALF_COLS;
            constexpr float UNSCALE = static_cast<float>(1u << P::O_SHIFT);
            o = oF32_.Get<float>();
            const AscendC::LocalTensor<float> rest = in.template ReinterpretCast<float>();
            for (uint32_t h = 0; h < P::HEAD_TILE; ++h) {
                AscendC::Cast(o[h * HD], in[h * ROW], AscendC::RoundMode::CAST_NONE, HALF_COLS);
            }
            for (uint32_t h = 0; h < P::HEAD_TILE; ++h) {
                const float r = UNSCALE / den.GetValue(h0 + h);
                AscendC::Muls(o[h * HD], o[h * HD], r, HALF_COLS);
                AscendC::Muls(o[h * HD + HALF_COLS], rest[(h * ROW + HALF_COLS) / 2], r, HD - HALF_COLS);
            }
            oQ_.FreeTensor(in);
        } else {
            o = in;
            for (uint32_t h = 0; h < P::HEAD_TILE; ++h) {
                AscendC::Muls(o[h * HD], o[h * HD], 1.0f / den.GetValue(h0 + h), HD);
            }
        }
        AscendC::LocalTensor<float> rope = rope_.Get<float>();
        AscendC::LocalTensor<float> partner = partner_.Get<float>();
        AscendC::Gather(rope, o, ropeOffsets_.Get<uint32_t>(), 0, ROPE_TILE);
        AscendC::Gather(partner, o, partnerOffsets_.Get<uint32_t>(), 0, ROPE_TILE);
        AscendC::Mul(rope, rope, cosTable_.Get<float>(), ROPE_TILE);
        AscendC::Mul(partner, partner, sinTable_.Get<float>(), ROPE_TILE);
        for (uint32_t h = 0; h < P::HEAD_TILE; ++h) {
            AscendC::Add(o[h * HD + NOPE], rope[h * ROPE], partner[h * ROPE], ROPE);
        }
        AscendC::LocalTensor<bfloat16_t> out = outQ_.AllocTensor<bfloat16_t>();
        AscendC::Cast(out, o, AscendC::RoundMode::CAST_RINT, TILE);
        if constexpr (!MIXED) {
            oQ_.FreeTensor(in);
        }
        outQ_.EnQue(out);
        out = outQ_.DeQue<bfloat16_t>();
        // Consecutive heads of one group are contiguous in their packed row.
        for (uint32_t h = 0; h < P::HEAD_TILE;) {
            const uint32_t g = (h0 + h) / P::HEADS_PER_GROUP, hh = (h0 + h) % P::HEADS_PER_GROUP;
            const uint32_t heads = Min(P::HEAD_TILE - h, P::HEADS_PER_GROUP - hh);
            const uint64_t dst = (static_cast<uint64_t>(g) * P::T_PAD + t) * GROUP_IN + hh * HD;
            AscendC::DataCopy(packed_[dst], out[h * HD], heads * HD);
            h += heads;
        }
        outQ_.FreeTensor(out);
    }

    AscendC::TQue<AscendC::TPosition::VECIN, 2> oQ_;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQ_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> oF32_, denomRow_, cosRow_, sinRow_, trig_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> cosTable_, sinTable_, rope_, partner_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> ropeOffsets_, partnerOffsets_, cosOffsets_, sinOffsets_;
    AscendC::GlobalTensor<O> o_;
    AscendC::GlobalTensor<float> denom_;
    AscendC::GlobalTensor<bfloat16_t> cos_;
    AscendC::GlobalTensor<bfloat16_t> sin_;
    AscendC::GlobalTensor<bfloat16_t> packed_;
    AscendC::GlobalTensor<int32_t> positions_;
};

// What a kernel holds to finish with PF: the finish, or nothing.
template <class PF>
struct FinisherOf {
    using Type = AttentionFinish<PF>;
};
template <>
struct FinisherOf<NoFinish> {
    struct Type {};
};

}  // namespace dsv4
