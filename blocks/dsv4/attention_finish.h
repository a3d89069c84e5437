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
// Rows >= t of each group slab are never written. A tile's heads are the repeats of its
// calls (each head's scale spread over a block), and the rotation is rope.h's over the
// tile's heads (bit-identical to the formula above).
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

// P: HEADS, HEAD_DIM, RD (the rope dims), HEADS_PER_GROUP, T_PAD, HEAD_TILE, POSITIONS (RoPE
// rows by position_ids), O_SHIFT and O_HALF_COLS (o_acc's rows: both 0, or both set), and the
// UB sizes the plan decided (`*_BYTES`, each at least what its use below needs; O_F32_BYTES
// only with half columns; Rotation's own).
template <class P>
class AttentionFinish {
    static constexpr bool MIXED = P::O_HALF_COLS > 0;
    using O = typename Either<MIXED, float, half>::T;  // o_acc's elements as loaded (halves where mixed)
    static constexpr uint32_t HD = P::HEAD_DIM;
    static constexpr uint32_t ROPE = P::RD;
    static constexpr uint32_t HALF = ROPE / 2;
    static constexpr uint32_t NOPE = HD - ROPE;
    static constexpr uint32_t TILE = P::HEAD_TILE * HD;
    static constexpr uint32_t GROUP_IN = P::HEADS_PER_GROUP * HD;
    static_assert(HD % 16 == 0 && NOPE % 16 == 0 && ROPE % 16 == 0, "bf16 head parts in whole 32-byte blocks");
    static_assert(P::HEADS % P::HEAD_TILE == 0 && P::HEAD_TILE % 8 == 0 && P::HEAD_TILE <= 255,
                  "HEAD_TILE: whole blocks dividing HEADS, a head per repeat");
    // o_acc's row in loaded elements (halves where mixed: HEAD_DIM f32 otherwise)
    static constexpr uint32_t ROW = MIXED ? P::O_HALF_COLS + 2 * (HD - P::O_HALF_COLS) : HD;
    static_assert(P::O_BYTES >= P::HEAD_TILE * ROW * sizeof(O) && P::OUT_BYTES >= TILE * sizeof(bfloat16_t),
                  "a tile of head rows in and out");
    static_assert(MIXED == (P::O_SHIFT > 0) && P::O_SHIFT <= 15 && P::O_HALF_COLS % 16 == 0 && P::O_HALF_COLS <= NOPE,
                  "half columns only scaled, in whole blocks, never the rope columns the rotation mixes");
    // the rows' repeat strides in blocks: f32 rows of o, and the rows as loaded
    static constexpr uint32_t O_ROW_BLOCKS = BlocksOf<float>(HD), IN_ROW_BLOCKS = BlocksOf<O>(ROW);
    static_assert(O_ROW_BLOCKS <= 255 && IN_ROW_BLOCKS <= 255, "head rows an 8-bit repeat stride apart");
    static_assert(P::DENOM_BYTES >= P::HEADS * sizeof(float), "a token's denominators");
    static_assert(P::COS_ROW_BYTES >= HALF * sizeof(bfloat16_t) && P::SIN_ROW_BYTES >= HALF * sizeof(bfloat16_t),
                  "freqs half-rows");
    static_assert(P::TRIG_BYTES >= 3 * HALF * sizeof(float), "cos, sin and -sin of a token");
    static_assert(P::SCALES_BYTES >= P::HEAD_TILE * sizeof(float) &&
                      P::SPREAD_BYTES >= P::HEAD_TILE * BLOCK_BYTES,
                  "a tile's scales, each spread over a block");
    static_assert(P::PARTNERS_BYTES >= P::HEAD_TILE * ROPE * sizeof(uint32_t) &&
                      P::SWAPPED_BYTES >= P::HEAD_TILE * ROPE * sizeof(float),
                  "the pair-swap gather over the rope dims of a tile");

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
        pipe.InitBuffer(scales_, P::SCALES_BYTES);
        pipe.InitBuffer(spread_, P::SPREAD_BYTES);
        pipe.InitBuffer(partners_, P::PARTNERS_BYTES);
        pipe.InitBuffer(swapped_, P::SWAPPED_BYTES);
        // the rope dims of head h start at tile element h * HD + NOPE; trig holds
        // [cos | sin | -sin] of the token's frequencies (Partners orders the scalar writes
        // before the vector unit)
        rot_.Init(pipe, true);
        Rotation<P, HALF>::template Partners<HD>(partners_.Get<uint32_t>(), P::HEAD_TILE);
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

    // The token's rotation tables, from the rows AskRows loaded (the caller orders those
    // loads first).
    __aicore__ inline void Tables()
    {
        AscendC::LocalTensor<float> trig = trig_.Get<float>();
        AscendC::Cast(trig, cosRow_.Get<bfloat16_t>(), AscendC::RoundMode::CAST_NONE, HALF);
        AscendC::Cast(trig[HALF], sinRow_.Get<bfloat16_t>(), AscendC::RoundMode::CAST_NONE, HALF);
        AscendC::Muls(trig[2 * HALF], trig[HALF], -1.0f, HALF);
        rot_.Tables(trig);
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
        // o_acc is scaled by 2^-O_SHIFT where mixed: each head's scale is 2^O_SHIFT / denom
        constexpr float UNSCALE = static_cast<float>(1u << P::O_SHIFT);
        AscendC::LocalTensor<float> scales = scales_.Get<float>();
        AscendC::LocalTensor<float> spread = spread_.Get<float>();
        AscendC::Duplicate(scales, UNSCALE, P::HEAD_TILE);
        AscendC::Div(scales, scales, den[h0], P::HEAD_TILE);
        AscendC::Brcb(spread, scales, P::HEAD_TILE / 8, AscendC::BrcbRepeatParams(1, 8));
        AscendC::LocalTensor<O> in = oQ_.DeQue<O>();
        AscendC::LocalTensor<float> o;
        if constexpr (MIXED) {
            // widened into f32 rows, then scaled with the f32 columns after the half ones
            constexpr uint32_t HALF_COLS = P::O_HALF_COLS;
            o = oF32_.Get<float>();
            WidenRows(o, in, P::HEAD_TILE, HALF_COLS, O_ROW_BLOCKS, IN_ROW_BLOCKS);
            MulRows(o, o, spread, P::HEAD_TILE, HALF_COLS, O_ROW_BLOCKS, O_ROW_BLOCKS);
            MulRows(o[HALF_COLS], in.template ReinterpretCast<float>()[HALF_COLS / 2], spread, P::HEAD_TILE,
                    HD - HALF_COLS, O_ROW_BLOCKS, IN_ROW_BLOCKS);
            oQ_.FreeTensor(in);
        } else {
            o = in;
            MulRows(o, o, spread, P::HEAD_TILE, HD, O_ROW_BLOCKS, O_ROW_BLOCKS);
        }
        rot_.template ApplyHeads<HD>(o[NOPE], P::HEAD_TILE, partners_.Get<uint32_t>(), swapped_.Get<float>());
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
    AscendC::TBuf<AscendC::TPosition::VECCALC> scales_, spread_, partners_, swapped_;
    Rotation<P, HALF> rot_;
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
