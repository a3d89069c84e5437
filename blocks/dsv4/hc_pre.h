// hc_pre (swa.md §3.1) in two launches that hand off through a GM partials workspace, or
// both in one mixed launch (HcPreFused).
//
// HcPreProjection (AIC, split-K): block b owns the columns [b * SPAN, (b + 1) * SPAN) of the
// flattened token rows x_flat (K = HC * HIDDEN columns) and of hc_attn_fn. Its fn slice stays
// in L1 while the x_hc tiles of M_TILE tokens stream through L1 once; per K_CHUNK the cube
// computes, with f32 inputs and f32 accumulation,
//   logits:  x [m, k] * fn^T [k, MIX]
//   squares: x [m, k] * x^T  [k, m]     (its diagonal is each token's sum of squares)
// so x_hc and hc_attn_fn each cross GM once. Token t's partials row holds one PART per block:
//   partials[t, b * PART + j] = x_t . x_(tile row j) for j < M_TILE, logit (j - M_TILE) after.
//
// HcPreMix (AIV): per group of 8 tokens (the runtime token granularity) it adds the parts of
// each token's partials row in ascending order (one repeated Add per part, a repeat per
// token), then gathers the sums of squares and logits into an entry-major table [1 + MIX][8]
// -- one 32-byte block per entry, one lane per token. The rest are vector
// ops over the 8 lanes: inv = 1 / sqrt(ss * (1/K) + RMS_EPS), m = logit * inv, the gates
// (m * scale) + base with pre = sigmoid + HC_EPS and post = 2 * sigmoid. A group's work is
// CHUNKS mix items, x_mixed = bf16((x0 * pre0 + x1 * pre1) + (x2 * pre2 + x3 * pre3)) in
// COLS-wide chunks, and one comb item: Sinkhorn on the comb logits (row softmax + HC_EPS, a
// column step, then ITERS - 1 row and column steps, each 4-term sum as (a + b) + (c + d)),
// then post and comb out. Sinkhorn is a long chain of small calls, so it runs once per group
// and beside the group's mixing, which needs only pre. Items (group, item) are split over
// the blocks in contiguous runs; a run that enters a group computes its gates.
//
// With VSPAN > 0 the vector cores take part of each block's columns (HcPreShare): block b's
// columns are [b * STRIDE, b * STRIDE + SPAN) on its AIC and the VSPAN after them on its two
// AIVs, each for half of a tile's tokens. Per token and 64 columns one MulAddDst over the MIX
// fn rows (x's 64 values shared by every repeat) and one of x by itself, block sums, then the
// part's row [the sum of squares in every dot product's place, the MIX logits] goes to GM
// and a mode-2 flag tells the AIC, which adds its own part on top with an atomic Fixpipe:
// one fixed order, so a run repeats bit for bit, and the partials layout is unchanged. The
// AIC is bound by its x_hc loads; the vector cores load the rest beside it.
//
// HcPreFused: the two as one mixed launch, the mix of a tile's tokens under the projection
// of the next tiles (below).
#pragma once

#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// The partials layout both launches agree on.
template <class P>
struct HcPreShape {
    static constexpr uint32_t K = P::HC * P::HIDDEN;
    static constexpr uint32_t MIX = (2 + P::HC) * P::HC;
    // Floats one block contributes to a token's partials row: M_TILE dot products, MIX logits.
    static constexpr uint32_t PART = P::M_TILE + MIX;
    static constexpr uint32_t ROW = P::PARTS * PART;
    static_assert(P::M_TILE % 16 == 0, "projection tiles are whole 16-row fractals");
    static_assert(PART * sizeof(float) % BLOCK_BYTES == 0, "parts start on 32-byte blocks");
};

// A projection block's columns (P: HcPreProjection's): SPAN on its AIC, then VSPAN on its
// AIVs, every block's vector columns wholly in K or past it.
template <class P>
struct HcPreColumns {
    static constexpr uint32_t K = HcPreShape<P>::K;
    static constexpr uint32_t SPAN = P::SPAN_CHUNKS * P::K_CHUNK;
    static constexpr uint32_t STRIDE = SPAN + P::VSPAN;
    __aicore__ static constexpr bool WholeShares()
    {
        for (uint32_t b = 0; b < P::PARTS; ++b) {
            const uint32_t k0 = b * STRIDE + SPAN;
            if (k0 < K && k0 + P::VSPAN > K) {
                return false;
            }
        }
        return true;
    }
    static_assert(WholeShares(), "a block's vector columns lie wholly in K or past it");
    static constexpr uint16_t SHARE_OUT = 5;     // mode 2: a tile's vector rows are out
    static constexpr uint16_t SHARE_TAKEN = 6;   // mode 2 (launched alone): the cube added a tile's
    static constexpr uint32_t SHARE_AHEAD = 12;  // tiles the share runs ahead (the counter holds 15)
};

template <class P>
class HcPreShare;

// P: HC, HIDDEN, M_TILE (tokens per cube tile), K_CHUNK (k per Mmad), SPAN_CHUNKS (K_CHUNKs
// per block), VSPAN (the block's columns after them on its vector cores, HcPreShare), PARTS
// (launched blocks = parts of a partials row), and the L1/L0 sizes the plan decided
// (`*_BYTES`, each at least what its use below needs).
template <class P>
class HcPreProjection {
    using S = HcPreShape<P>;
    using C = HcPreColumns<P>;
    static constexpr uint32_t C0 = BLOCK_BYTES / sizeof(float);  // k values per fractal row
    static constexpr uint32_t FRACTAL = 16 * C0;                  // floats per 512-byte fractal
    static constexpr uint32_t KF = P::K_CHUNK / C0;               // fractals along k per chunk
    static constexpr uint32_t SPAN = C::SPAN;
    static constexpr uint32_t MIX_PAD = AlignUp(S::MIX, 16);
    static constexpr uint32_t MIX_F = MIX_PAD / 16;  // 16-column fractals of the logits
    static constexpr uint32_t FN_AT = P::M_TILE * P::K_CHUNK;  // fn^T after x^T in an L0B slot
    static_assert(S::K % P::K_CHUNK == 0 && P::K_CHUNK % 16 == 0, "K_CHUNK is whole fractals and divides K");
    static_assert(S::K <= 0xffff, "ND2NZ addresses source rows with 16 bits");
    static_assert(P::M_TILE <= 16384 && MIX_PAD <= 16384, "ND2NZ: at most 16384 rows and NZ row stride");
    static_assert(KF * (P::M_TILE / 16) <= 255 && KF * MIX_F <= 255, "one LoadData per operand and chunk");
    static_assert(P::FN_L1_BYTES >= MIX_PAD * SPAN * sizeof(float), "fn_l1 holds the block's fn slice");
    static_assert(P::X_L1_BYTES >= P::M_TILE * SPAN * sizeof(float), "x_l1 holds a tile over the block's span");
    static_assert(P::X_L0A_BYTES >= P::M_TILE * P::K_CHUNK * sizeof(float), "x_l0a holds a chunk of the tile");
    static_assert(P::X_FN_L0B_BYTES >= (P::M_TILE + MIX_PAD) * P::K_CHUNK * sizeof(float),
                  "x_fn_l0b holds x^T then fn^T of a chunk");
    static_assert(P::LOGITS_L0C_BYTES >= P::M_TILE * MIX_PAD * sizeof(float), "logits of a tile");
    static_assert(P::SQUARES_L0C_BYTES >= P::M_TILE * P::M_TILE * sizeof(float), "dot products of a tile");

public:
    __aicore__ inline static void Run(GM_ADDR xHc, GM_ADDR fn, GM_ADDR partials, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        const uint32_t tiles = Tiles(td.t);
        if ASCEND_IS_AIC {
            HcPreProjection op;
            if (!op.Init(xHc, fn, partials)) {
                return;
            }
            for (uint32_t i = 0; i < tiles; ++i) {
                op.Tile(i, td.t);
                if (op.shared_) {
                    AscendC::CrossCoreSetFlag<2, PIPE_FIX>(C::SHARE_TAKEN);
                }
            }
        }
        if constexpr (P::VSPAN > 0) {
            if ASCEND_IS_AIV {
                // at most SHARE_AHEAD tiles ahead of the cube's adds
                AscendC::TPipe pipe;
                HcPreShare<P> share;
                if (share.Init(pipe, xHc, fn, partials, td.t)) {
                    for (uint32_t i = 0; i < tiles; ++i) {
                        if (i >= C::SHARE_AHEAD) {
                            AscendC::CrossCoreWaitFlag(C::SHARE_TAKEN);
                        }
                        share.Tile(i, tiles);
                    }
                    for (uint32_t i = Min(tiles, C::SHARE_AHEAD); i > 0; --i) {
                        AscendC::CrossCoreWaitFlag(C::SHARE_TAKEN);
                    }
                }
            }
        }
    }

    // This block's columns, its fn slice loading; false if it has none (more blocks than
    // K_CHUNK spans).
    __aicore__ inline bool Init(GM_ADDR xHc, GM_ADDR fn, GM_ADDR partials)
    {
        part_ = static_cast<uint32_t>(AscendC::GetBlockIdx());
        k0_ = part_ * C::STRIDE;
        if (k0_ >= S::K) {
            return false;
        }
        span_ = Min(SPAN, S::K - k0_);
        shared_ = P::VSPAN > 0 && k0_ + span_ < S::K;
        x_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(xHc));
        partials_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(partials));
        AscendC::GlobalTensor<float> w;
        w.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(fn));
        pipe_.InitBuffer(fnL1_, P::FN_L1_BYTES);
        pipe_.InitBuffer(xL1_, 2, P::X_L1_BYTES);
        pipe_.InitBuffer(a_, 2, P::X_L0A_BYTES);
        // x^T and fn^T of a chunk share a slot: every freed L0 slot holds an M_MTE1 event id
        // until it is taken again, and an AIC's TPipe holds three of the eight.
        pipe_.InitBuffer(b_, 2, P::X_FN_L0B_BYTES);
        pipe_.InitBuffer(logits_, 1, P::LOGITS_L0C_BYTES);
        pipe_.InitBuffer(squares_, 1, P::SQUARES_L0C_BYTES);
        // fn [MIX, K] rows are B^T: in NZ they already have L0B's (k, n) fractal order.
        AscendC::DataCopy(fnL1_.Get<float>(), w[k0_], AscendC::Nd2NzParams(1, S::MIX, span_, 0, S::K, MIX_PAD, 1, 0));
        Handshake<AscendC::HardEvent::MTE2_MTE1>();
        return true;
    }

    __aicore__ inline static uint32_t Tiles(uint32_t t) { return (t + P::M_TILE - 1) / P::M_TILE; }

    // Tile i of t tokens: its x_hc columns load (and tile i + 1's, ahead), its partials out.
    __aicore__ inline void Tile(uint32_t i, uint32_t t)
    {
        if (i == 0) {
            Load(0, t);
        }
        if (i + 1 < Tiles(t)) {
            Load(i + 1, t);
        }
        Compute(i * P::M_TILE, Min(P::M_TILE, t - i * P::M_TILE));
    }

private:
    // Tile i's x_hc rows over this block's columns into L1.
    __aicore__ inline void Load(uint32_t i, uint32_t t)
    {
        const uint32_t t0 = i * P::M_TILE;
        const uint32_t m = Min(P::M_TILE, t - t0);
        AscendC::LocalTensor<float> x = xL1_.AllocTensor<float>();
        AscendC::DataCopy(x, x_[uint64_t(t0) * S::K + k0_],
                          AscendC::Nd2NzParams(1, m, span_, 0, S::K, AlignUp(m, 16), 1, 0));
        xL1_.EnQue(x);
    }

    // Tokens [t0, t0 + m) over this block's columns; m <= M_TILE (a multiple of 8).
    __aicore__ inline void Compute(uint32_t t0, uint32_t m)
    {
        const uint32_t mPad = AlignUp(m, 16);
        const uint32_t mF = mPad / 16;
        AscendC::LocalTensor<float> x = xL1_.DeQue<float>();
        AscendC::LocalTensor<float> logits = logits_.AllocTensor<float>();
        AscendC::LocalTensor<float> squares = squares_.AllocTensor<float>();
        const AscendC::LocalTensor<float> fn = fnL1_.Get<float>();
        for (uint32_t c = 0; c < span_ / P::K_CHUNK; ++c) {
            // A: fractal (mf, kf) of L0A is fractal (c * KF + kf, mf) of the NZ tile.
            AscendC::LocalTensor<float> a = a_.AllocTensor<float>();
            for (uint32_t mf = 0; mf < mF; ++mf) {
                AscendC::LoadData(a[mf * KF * FRACTAL], x, AscendC::LoadData2DParams(c * KF * mF + mf, KF, mF, 0, 0, false, 0));
            }
            // x^T, then fn^T: the NZ fractals of the chunk are already in L0B order.
            AscendC::LocalTensor<float> b = b_.AllocTensor<float>();
            AscendC::LoadData(b, x, AscendC::LoadData2DParams(c * KF * mF, KF * mF, 1, 0, 0, false, 0));
            AscendC::LoadData(b[FN_AT], fn, AscendC::LoadData2DParams(c * KF * MIX_F, KF * MIX_F, 1, 0, 0, false, 0));
            a_.EnQue(a);
            b_.EnQue(b);
            a = a_.DeQue<float>();
            b = b_.DeQue<float>();
            if (c > 0) {
                BeforeAccumulatingMmad(m, m);
            }
            AscendC::Mmad(squares, a, b, AscendC::MmadParams(m, m, P::K_CHUNK, 0, false, c == 0));
            if (c > 0) {
                BeforeAccumulatingMmad(m, S::MIX);
            }
            AscendC::Mmad(logits, a, b[FN_AT], AscendC::MmadParams(m, S::MIX, P::K_CHUNK, 0, false, c == 0));
            a_.FreeTensor(a);
            b_.FreeTensor(b);
        }
        xL1_.FreeTensor(x);
        logits_.EnQue(logits);
        squares_.EnQue(squares);
        logits = logits_.DeQue<float>();
        squares = squares_.DeQue<float>();
        const uint64_t at = uint64_t(t0) * S::ROW + part_ * S::PART;
        if (shared_) {
            // the vector cores' rows of this tile are out: add to them
            AscendC::CrossCoreWaitFlag(C::SHARE_OUT);
            AscendC::SetAtomicAdd<float>();
        }
        AscendC::Fixpipe(partials_[at], squares, AscendC::FixpipeParamsV220(m, m, mPad, S::ROW, false));
        AscendC::Fixpipe(partials_[at + P::M_TILE], logits, AscendC::FixpipeParamsV220(S::MIX, m, mPad, S::ROW, false));
        if (shared_) {
            AscendC::SetAtomicNone();
        }
        logits_.FreeTensor(logits);
        squares_.FreeTensor(squares);
    }

    AscendC::TPipe pipe_;
    AscendC::TBuf<AscendC::TPosition::B1> fnL1_;
    AscendC::TQue<AscendC::TPosition::A1, 2> xL1_;
    AscendC::TQue<AscendC::TPosition::A2, 1> a_;
    AscendC::TQue<AscendC::TPosition::B2, 1> b_;
    AscendC::TQue<AscendC::TPosition::CO1, 1> logits_, squares_;
    AscendC::GlobalTensor<float> x_, partials_;
    uint32_t part_ = 0;
    uint32_t k0_ = 0;
    uint32_t span_ = 0;
    bool shared_ = false;  // the block's vector cores have columns (VSPAN > 0 and some left)
};

// The vector cores' share of the projection (VSPAN > 0; AIV, a block's two take halves of a
// tile's tokens): P is HcPreProjection's, with the UB sizes the plan decided (`SHARE_*_BYTES`).
template <class P>
class HcPreShare {
    using S = HcPreShape<P>;
    using C = HcPreColumns<P>;
    static constexpr uint32_t V = P::VSPAN;
    static constexpr uint32_t T = P::M_TILE / 2;  // tokens of a tile per vector core at most
    static constexpr uint32_t PART_BLOCKS = S::PART * sizeof(float) / BLOCK_BYTES;
    static_assert(V % F32_REPEAT == 0 && P::M_TILE % 16 == 0, "whole repeats of columns; two halves of 8-token blocks");
    static_assert(S::MIX <= 255 && S::MIX % 8 == 0 && (S::K - V) * sizeof(float) / BLOCK_BYTES <= 65535 &&
                      (S::ROW - S::PART) * sizeof(float) / BLOCK_BYTES <= 65535,
                  "one call's repeats over the fn rows; 16-bit gaps of the row copies");

public:
    // On `pipe` (the mix's, in the fused launch); false if the block's AIVs have no columns.
    __aicore__ inline bool Init(AscendC::TPipe& pipe, GM_ADDR xHc, GM_ADDR fn, GM_ADDR partials, uint32_t t)
    {
        if constexpr (V == 0) {
            return false;
        } else {
            return Start(pipe, xHc, fn, partials, t);
        }
    }

    // Tile i of `tiles`: this core's rows of its tokens out (tile i + 1's x rows loading), then
    // the flag the AIC waits for before it adds its own.
    __aicore__ inline void Tile(uint32_t i, uint32_t tiles)
    {
        if (i == 0) {
            Load(0);
        }
        if (i + 1 < tiles) {
            Load(i + 1);
        }
        uint32_t a = 0;
        const uint32_t n = Tokens(i, a);
        if (n > 0) {
            Rows(a, n);
        }
        AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(C::SHARE_OUT);
    }

private:
    __aicore__ inline bool Start(AscendC::TPipe& pipe, GM_ADDR xHc, GM_ADDR fn, GM_ADDR partials, uint32_t t)
    {
        static_assert(P::SHARE_FN_BYTES >= S::MIX * V * sizeof(float) && P::SHARE_X_BYTES >= T * V * sizeof(float) &&
                          P::SHARE_ACC_BYTES >= T * (S::MIX + 1) * F32_REPEAT * sizeof(float) &&
                          P::SHARE_SUMS_BYTES >= (T * (S::MIX + 1) * 9 + 8) * sizeof(float) &&
                          P::SHARE_OUT_BYTES >= T * S::PART * sizeof(float),
                      "the share's fn slice, x rows, accumulators, block sums and rows out");
        const uint32_t idx = static_cast<uint32_t>(AscendC::GetBlockIdx());
        part_ = idx / 2;
        sub_ = idx % 2;
        t_ = t;
        k0_ = part_ * C::STRIDE + C::SPAN;
        if (k0_ >= S::K) {
            return false;
        }
        x_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(xHc));
        partials_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(partials));
        AscendC::GlobalTensor<float> w;
        w.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(fn));
        pipe.InitBuffer(fn_, P::SHARE_FN_BYTES);
        pipe.InitBuffer(xQ_, 2, P::SHARE_X_BYTES);
        pipe.InitBuffer(acc_, P::SHARE_ACC_BYTES);
        pipe.InitBuffer(sums_, P::SHARE_SUMS_BYTES);
        pipe.InitBuffer(outQ_, 1, P::SHARE_OUT_BYTES);
        // fn [MIX, K]: the block's VSPAN columns of every row
        AscendC::DataCopy(fn_.Get<float>(), w[k0_],
                          AscendC::DataCopyParams(S::MIX, BlocksOf<float>(V), BlocksOf<float>(S::K - V), 0));
        return true;
    }

    // This core's tokens of tile i: n of them from a.
    __aicore__ inline uint32_t Tokens(uint32_t i, uint32_t& a) const
    {
        const uint32_t t0 = i * P::M_TILE;
        const uint32_t m = Min(P::M_TILE, t_ - t0);
        const uint32_t half = CeilDiv(m, 2);
        a = t0 + sub_ * half;
        return sub_ * half >= m ? 0 : Min(half, m - sub_ * half);
    }

    __aicore__ inline void Load(uint32_t i)
    {
        uint32_t a = 0;
        const uint32_t n = Tokens(i, a);
        if (n > 0) {
            AscendC::LocalTensor<float> x = xQ_.AllocTensor<float>();
            AscendC::DataCopy(x, x_[uint64_t(a) * S::K + k0_],
                              AscendC::DataCopyParams(n, BlocksOf<float>(V), BlocksOf<float>(S::K - V), 0));
            xQ_.EnQue(x);
        }
    }

    // Tokens [a, a + n): per token an accumulator of 64 lanes per fn row (MIX of them), the
    // tokens' squares' after all of those, summed over the VSPAN columns, then block-summed
    // twice.
    __aicore__ inline void Rows(uint32_t a, uint32_t n)
    {
        constexpr uint32_t LOGITS = T * S::MIX;  // the logits' accumulators, then the squares'
        AscendC::LocalTensor<float> x = xQ_.DeQue<float>();
        AscendC::LocalTensor<float> fn = fn_.Get<float>();
        AscendC::LocalTensor<float> acc = acc_.Get<float>();
        const AscendC::BinaryRepeatParams rows(1, 1, 1, 8, BlocksOf<float>(V), 0);
        for (uint32_t r = 0; r < n; ++r) {
            const AscendC::LocalTensor<float> logits = acc[r * S::MIX * F32_REPEAT];
            const AscendC::LocalTensor<float> squares = acc[(LOGITS + r) * F32_REPEAT];
            for (uint32_t c = 0; c < V; c += F32_REPEAT) {
                const AscendC::LocalTensor<float> xc = x[r * V + c];
                if (c == 0) {
                    AscendC::Mul(logits, fn, xc, F32_REPEAT, S::MIX, rows);
                    AscendC::Mul(squares, xc, xc, F32_REPEAT);
                } else {
                    AscendC::MulAddDst(logits, fn[c], xc, F32_REPEAT, S::MIX, rows);
                    AscendC::MulAddDst(squares, xc, xc, F32_REPEAT);
                }
            }
        }
        xQ_.FreeTensor(x);
        // block sums: the logits' (token r's MIX at r * MIX), then the squares' (token r's at
        // LOGITS + r), as their accumulators lie
        AscendC::LocalTensor<float> sums8 = sums_.Get<float>();
        AscendC::LocalTensor<float> sums = sums8[(LOGITS + T) * 8];
        BlockSums(sums8, acc, n * S::MIX * F32_REPEAT);
        BlockSums(sums, sums8, n * S::MIX * 8);
        BlockSums(sums8[LOGITS * 8], acc[LOGITS * F32_REPEAT], n * F32_REPEAT);
        BlockSums(sums[LOGITS], sums8[LOGITS * 8], n * 8);
        // row r: [its sum of squares in all M_TILE places (Brcb: a block each), its logits]
        AscendC::LocalTensor<float> out = outQ_.AllocTensor<float>();
        for (uint32_t b = 0; b < P::M_TILE; b += 8) {
            AscendC::Brcb(out[b], sums[LOGITS], 1, AscendC::BrcbRepeatParams(PART_BLOCKS, 8 * PART_BLOCKS));
        }
        AscendC::Adds(out[P::M_TILE], sums, 0.0f, S::MIX, n,
                      AscendC::UnaryRepeatParams(1, 1, PART_BLOCKS, S::MIX * sizeof(float) / BLOCK_BYTES));
        outQ_.EnQue(out);
        out = outQ_.DeQue<float>();
        AscendC::DataCopy(partials_[uint64_t(a) * S::ROW + part_ * S::PART], out,
                          AscendC::DataCopyParams(n, PART_BLOCKS, 0, BlocksOf<float>(S::ROW - S::PART)));
        outQ_.FreeTensor(out);
    }

    AscendC::TBuf<AscendC::TPosition::VECCALC> fn_, acc_, sums_;
    AscendC::TQue<AscendC::TPosition::VECIN, 2> xQ_;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQ_;
    AscendC::GlobalTensor<float> x_, partials_;
    uint32_t part_ = 0, sub_ = 0, k0_ = 0, t_ = 0;
};

// P: HC, HIDDEN, M_TILE, PARTS (as the projection), COLS (mix chunk), ITERS (Sinkhorn
// iterations), RMS_EPS, HC_EPS, and the UB sizes the plan decided (`*_BYTES`, each at least
// what its use below needs).
template <class P>
class HcPreMix {
    using S = HcPreShape<P>;
    static constexpr uint32_t HC = P::HC;
    static constexpr uint32_t D = P::HIDDEN;
    static constexpr uint32_t COLS = P::COLS;
    static constexpr uint32_t CHUNKS = D / COLS;

public:
    // A group's items: its CHUNKS mix items, then its comb item.
    static constexpr uint32_t ITEMS = CHUNKS + 1;

private:
    // Tokens per group: one f32 lane each in a 32-byte block.
    static constexpr uint32_t G = TOKEN_GROUP;
    static_assert(G * sizeof(float) == BLOCK_BYTES, "a token group fills one block of f32 lanes");
    // Table rows (one block each): the sum of squares, then the MIX logits in order.
    static constexpr uint32_t R_PRE = 1;
    static constexpr uint32_t R_POST = 1 + HC;
    static constexpr uint32_t R_COMB = 1 + 2 * HC;
    static constexpr uint32_t ROWS = 1 + S::MIX;
    // post [G, HC] then comb [G, HC * HC] of a group, token-major as in GM.
    static constexpr uint32_t OUT = G * (HC + HC * HC);
    static constexpr uint32_t LANES_PER_REPEAT = 8 * G;
    static_assert(HC == 4, "hc_pre is specialised to 4 streams: Sinkhorn pairs them (a + b) + (c + d)");
    static_assert(S::MIX % G == 0, "the logits are whole repeats");
    static_assert(P::M_TILE % G == 0, "a token group lies in one projection tile");
    static_assert(D % COLS == 0 && COLS * sizeof(bfloat16_t) % BLOCK_BYTES == 0, "COLS divides HIDDEN in blocks");
    static_assert(HC <= 4095 && (D - COLS) * sizeof(float) / BLOCK_BYTES <= 65535,
                  "a DataCopy of the streams: at most 4095 rows, a 16-bit gap in blocks");
    static_assert(P::PARTIALS_BYTES >= G * S::ROW * sizeof(float), "partials holds a group's partials rows");
    static_assert(P::X_IN_BYTES >= HC * COLS * sizeof(float), "x_in holds a chunk of every stream");
    static_assert(P::X_MIXED_BYTES >= COLS * sizeof(bfloat16_t), "x_mixed holds a mixed chunk");
    static_assert(P::GATES_OUT_BYTES >= OUT * sizeof(float), "gates_out holds a group's post and comb");
    static_assert(P::TABLE_BYTES >= ROWS * G * sizeof(float), "the table");
    // The parts' Adds: a repeat per token, its row ROW floats after the previous one's.
    static constexpr uint32_t ROW_BLOCKS = S::ROW * sizeof(float) / BLOCK_BYTES;
    static_assert(ROW_BLOCKS <= 255, "a token's row stride fits a repeat stride");
    static_assert(P::IN_OFFSETS_BYTES >= ROWS * G * sizeof(uint32_t) && P::DIAG_OFFSETS_BYTES >= G * sizeof(uint32_t) &&
                      P::OUT_OFFSETS_BYTES >= OUT * sizeof(uint32_t),
                  "gather offsets in and out");
    static_assert(P::BASE_ROWS_BYTES >= S::MIX * G * sizeof(float), "hc_attn_base over the token lanes");
    static_assert(P::WEIGHTS_BYTES >= (G + AlignUp(S::MIX, G)) * sizeof(float), "hc_attn_scale, then hc_attn_base");
    static_assert(P::ONES_BYTES >= 2 * HC * G * sizeof(float) && P::PAIRS_BYTES >= 2 * HC * G * sizeof(float) &&
                      P::SUMS_BYTES >= HC * G * sizeof(float),
                  "ones and Sinkhorn's pairs and sums");

public:
    __aicore__ inline static void Run(GM_ADDR xHc, GM_ADDR scale, GM_ADDR base, GM_ADDR partials, GM_ADDR xMixed,
                                      GM_ADDR post, GM_ADDR comb, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        const Share share = BlockShare(td.t / G * ITEMS);
        if (share.begin >= share.end) {
            return;
        }
        HcPreMix op;
        op.Init(xHc, scale, base, partials, xMixed, post, comb);
        uint32_t group = ~0u;
        for (uint32_t item = share.begin; item < share.end; ++item) {
            const bool enters = item / ITEMS != group;
            group = item / ITEMS;
            op.Item(group * G, item % ITEMS, enters);
        }
    }

    // Item i of the group of tokens [t0, t0 + G), after the group's gates where `gates`:
    // i < CHUNKS mixes x_mixed's columns [i * COLS, (i + 1) * COLS) (the partials load
    // first, then the first two tokens' x_hc rows, which land while the gates run); i =
    // CHUNKS runs Sinkhorn and writes post and comb.
    __aicore__ inline void Item(uint32_t t0, uint32_t i, bool gates)
    {
        if (gates) {
            AscendC::LocalTensor<float> parts = partsQ_.AllocTensor<float>();
            AscendC::DataCopy(parts, partials_[uint64_t(t0) * S::ROW], G * S::ROW);
            partsQ_.EnQue(parts);
        }
        if (i < CHUNKS) {
            LoadX(t0, i * COLS);
            LoadX(t0 + 1, i * COLS);
        }
        if (gates) {
            Gates(t0);
        }
        if (i < CHUNKS) {
            Mix(t0, i * COLS);
        } else {
            Combs(t0);
        }
    }

    __aicore__ inline void Init(GM_ADDR xHc, GM_ADDR scale, GM_ADDR base, GM_ADDR partials, GM_ADDR xMixed,
                                GM_ADDR post, GM_ADDR comb)
    {
        x_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(xHc));
        partials_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(partials));
        xMixed_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(xMixed));
        post_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(post));
        comb_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(comb));
        AscendC::GlobalTensor<float> scaleG, baseG;
        scaleG.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(scale));
        baseG.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(base));

        pipe_.InitBuffer(partsQ_, 1, P::PARTIALS_BYTES);
        pipe_.InitBuffer(xQ_, 2, P::X_IN_BYTES);
        pipe_.InitBuffer(yQ_, 2, P::X_MIXED_BYTES);
        pipe_.InitBuffer(outQ_, 1, P::GATES_OUT_BYTES);
        pipe_.InitBuffer(table_, P::TABLE_BYTES);
        pipe_.InitBuffer(inOffsets_, P::IN_OFFSETS_BYTES);
        pipe_.InitBuffer(diagOffsets_, P::DIAG_OFFSETS_BYTES);
        pipe_.InitBuffer(outOffsets_, P::OUT_OFFSETS_BYTES);
        pipe_.InitBuffer(baseRows_, P::BASE_ROWS_BYTES);
        pipe_.InitBuffer(weights_, P::WEIGHTS_BYTES);
        pipe_.InitBuffer(ones_, P::ONES_BYTES);
        pipe_.InitBuffer(pairs_, P::PAIRS_BYTES);
        pipe_.InitBuffer(sums_, P::SUMS_BYTES);

        // hc_attn_scale [3] and hc_attn_base [MIX]: the scales as scalars, every base value
        // broadcast over the 8 token lanes of its row.
        AscendC::LocalTensor<float> w = weights_.Get<float>();
        AscendC::DataCopyPadExtParams<float> noPad;
        AscendC::DataCopyPad(w, scaleG, AscendC::DataCopyExtParams(1, 3 * sizeof(float), 0, 0, 0), noPad);
        AscendC::DataCopyPad(w[G], baseG, AscendC::DataCopyExtParams(1, S::MIX * sizeof(float), 0, 0, 0), noPad);
        Handshake<AscendC::HardEvent::MTE2_V>();
        AscendC::Brcb(baseRows_.Get<float>(), w[G], S::MIX / G, AscendC::BrcbRepeatParams(1, 8));
        AscendC::Duplicate(ones_.Get<float>(), 1.0f, 2 * HC * G);
        Handshake<AscendC::HardEvent::MTE2_S>();
        for (uint32_t i = 0; i < 3; ++i) {
            scale_[i] = w.GetValue(i);
        }

        // Gather byte offsets. In: table row e >= 1, lane g <- logit e - 1 of token g; row 0
        // (the diagonal) depends on the group's place in its projection tile, set per group.
        // Out: the post and comb rows back to token-major order.
        AscendC::LocalTensor<uint32_t> in = inOffsets_.Get<uint32_t>();
        AscendC::LocalTensor<uint32_t> diag = diagOffsets_.Get<uint32_t>();
        AscendC::LocalTensor<uint32_t> out = outOffsets_.Get<uint32_t>();
        for (uint32_t g = 0; g < G; ++g) {
            diag.SetValue(g, (g * S::ROW + g) * sizeof(float));
            for (uint32_t e = 1; e < ROWS; ++e) {
                in.SetValue(e * G + g, (g * S::ROW + P::M_TILE + e - 1) * sizeof(float));
            }
            for (uint32_t o = 0; o < HC; ++o) {
                out.SetValue(g * HC + o, ((R_POST + o) * G + g) * sizeof(float));
            }
            for (uint32_t j = 0; j < HC * HC; ++j) {
                out.SetValue(G * HC + g * HC * HC + j, ((R_COMB + j) * G + g) * sizeof(float));
            }
        }
        ScalarToVector();
    }

    // The TPipe the fused launch's share of the projection takes its UB from.
    __aicore__ inline AscendC::TPipe& Pipe() { return pipe_; }

private:
    // The gates of tokens [t0, t0 + G) from their partials (loaded): the table's rows up to
    // post (comb's still logits), and pre_.
    __aicore__ inline void Gates(uint32_t t0)
    {
        AscendC::LocalTensor<float> parts = partsQ_.DeQue<float>();

        AscendC::LocalTensor<float> table = table_.Get<float>();
        AscendC::LocalTensor<uint32_t> in = inOffsets_.Get<uint32_t>();
        // Token t0 + g sits in row (t0 % M_TILE) + g of its projection tile.
        AscendC::Adds(in.ReinterpretCast<int32_t>(), diagOffsets_.Get<int32_t>(),
                      static_cast<int32_t>((t0 % P::M_TILE) * sizeof(float)), G);
        // Part 0 of every token's row += part p, p ascending: ((p0 + p1) + p2) + ...
        for (uint32_t p = 1; p < P::PARTS; ++p) {
            AddRows(parts, parts, parts[p * S::PART], G, S::PART, ROW_BLOCKS, ROW_BLOCKS, ROW_BLOCKS);
        }
        AscendC::Gather(table, parts, in, 0, ROWS * G);
        partsQ_.FreeTensor(parts);

        // inv = 1 / sqrt(ss * (1/K) + eps), then m = logit * inv (inv's block broadcast).
        AscendC::LocalTensor<float> ones = ones_.Get<float>();
        AscendC::LocalTensor<float> inv = table;
        AscendC::Muls(inv, inv, 1.0f / S::K, G);
        AscendC::Adds(inv, inv, P::RMS_EPS, G);
        AscendC::Sqrt(inv, inv, G);
        AscendC::Div(inv, ones, inv, G);
        AscendC::LocalTensor<float> logits = table[G];
        AscendC::Mul(logits, logits, inv, LANES_PER_REPEAT, S::MIX / 8, AscendC::BinaryRepeatParams(1, 1, 0, 8, 8, 0));
        // (m * scale) + base, then the gates.
        AscendC::LocalTensor<float> pre = table[R_PRE * G];
        AscendC::LocalTensor<float> post = table[R_POST * G];
        AscendC::LocalTensor<float> comb = table[R_COMB * G];
        AscendC::Muls(pre, pre, scale_[0], HC * G);
        AscendC::Muls(post, post, scale_[1], HC * G);
        AscendC::Muls(comb, comb, scale_[2], HC * HC * G);
        AscendC::Add(logits, logits, baseRows_.Get<float>(), S::MIX * G);
        // sigmoid(z) = 1 / (1 + exp(-z)) on the pre and post rows together.
        AscendC::Muls(pre, pre, -1.0f, 2 * HC * G);
        AscendC::Exp(pre, pre, 2 * HC * G);
        AscendC::Adds(pre, pre, 1.0f, 2 * HC * G);
        AscendC::Div(pre, ones, pre, 2 * HC * G);
        AscendC::Adds(pre, pre, P::HC_EPS, HC * G);
        AscendC::Muls(post, post, 2.0f, HC * G);
        VectorToScalar();
        for (uint32_t g = 0; g < G; ++g) {
            for (uint32_t h = 0; h < HC; ++h) {
                pre_[g][h] = pre.GetValue(h * G + g);
            }
        }
    }

    // Sinkhorn on the group's comb logits (its gates in the table), then post and comb out.
    __aicore__ inline void Combs(uint32_t t0)
    {
        AscendC::LocalTensor<float> table = table_.Get<float>();
        Sinkhorn(table[R_COMB * G]);
        AscendC::LocalTensor<float> out = outQ_.AllocTensor<float>();
        AscendC::Gather(out, table, outOffsets_.Get<uint32_t>(), 0, OUT);
        outQ_.EnQue(out);
        out = outQ_.DeQue<float>();
        AscendC::DataCopy(post_[uint64_t(t0) * HC], out, G * HC);
        AscendC::DataCopy(comb_[uint64_t(t0) * HC * HC], out[G * HC], G * HC * HC);
        outQ_.FreeTensor(out);
    }

    // Sinkhorn on c = comb rows [HC * HC][G]: entry (i, o) is row i * HC + o.
    __aicore__ inline void Sinkhorn(const AscendC::LocalTensor<float>& c)
    {
        constexpr uint32_t N = HC * HC * G;
        AscendC::LocalTensor<float> sums = sums_.Get<float>();
        RowReduce<true>(sums, c);
        ByRow<false>(c, sums);
        AscendC::Exp(c, c, N);
        RowReduce<false>(sums, c);
        ByRow<true>(c, sums);
        AscendC::Adds(c, c, P::HC_EPS, N);
        ColumnStep(c);
        for (uint32_t it = 1; it < P::ITERS; ++it) {
            RowReduce<false>(sums, c);
            AscendC::Adds(sums, sums, P::HC_EPS, HC * G);
            ByRow<true>(c, sums);
            ColumnStep(c);
        }
    }

    // out[i] = (c[i,0] op c[i,1]) op (c[i,2] op c[i,3]) per lane, op = max or +.
    template <bool MAX>
    __aicore__ inline void RowReduce(const AscendC::LocalTensor<float>& out, const AscendC::LocalTensor<float>& c)
    {
        AscendC::LocalTensor<float> pairs = pairs_.Get<float>();
        // Repeat i, blocks (i,0),(i,2) with (i,1),(i,3) -> pairs[2i], pairs[2i + 1].
        const AscendC::BinaryRepeatParams inRow(1, 2, 2, 2, HC, HC);
        // Repeat i: pairs[2i] op pairs[2i + 1] -> out[i].
        const AscendC::BinaryRepeatParams halves(1, 1, 1, 1, 2, 2);
        if constexpr (MAX) {
            AscendC::Max(pairs, c, c[G], 2 * G, HC, inRow);
            AscendC::Max(out, pairs, pairs[G], G, HC, halves);
        } else {
            AscendC::Add(pairs, c, c[G], 2 * G, HC, inRow);
            AscendC::Add(out, pairs, pairs[G], G, HC, halves);
        }
    }

    // c[i, o] = c[i, o] / v[i] (DIV) or c[i, o] - v[i]: v's block i broadcast over row i.
    template <bool DIV>
    __aicore__ inline void ByRow(const AscendC::LocalTensor<float>& c, const AscendC::LocalTensor<float>& v)
    {
        const AscendC::BinaryRepeatParams rows(1, 1, 0, HC, HC, 1);
        if constexpr (DIV) {
            AscendC::Div(c, c, v, HC * G, HC, rows);
        } else {
            AscendC::Sub(c, c, v, HC * G, HC, rows);
        }
    }

    // c[i, o] /= (c[0,o] + c[1,o]) + (c[2,o] + c[3,o]) + eps.
    __aicore__ inline void ColumnStep(const AscendC::LocalTensor<float>& c)
    {
        AscendC::LocalTensor<float> pairs = pairs_.Get<float>();
        AscendC::LocalTensor<float> sums = sums_.Get<float>();
        // Repeat 0: row 0 + row 1; repeat 1: row 2 + row 3.
        AscendC::Add(pairs, c, c[HC * G], HC * G, 2, AscendC::BinaryRepeatParams(1, 1, 1, HC, 2 * HC, 2 * HC));
        AscendC::Add(sums, pairs, pairs[HC * G], HC * G);
        AscendC::Adds(sums, sums, P::HC_EPS, HC * G);
        AscendC::Div(c, c, sums, HC * G, HC, AscendC::BinaryRepeatParams(1, 1, 1, HC, HC, 0));
    }

    // Token t's x_hc rows, columns [c0, c0 + COLS) of every stream.
    __aicore__ inline void LoadX(uint64_t t, uint32_t c0)
    {
        AscendC::LocalTensor<float> x = xQ_.AllocTensor<float>();
        AscendC::DataCopy(x, x_[t * HC * D + c0],
                          AscendC::DataCopyParams(HC, BlocksOf<float>(COLS), BlocksOf<float>(D - COLS), 0));
        xQ_.EnQue(x);
    }

    // x_mixed of tokens [t0, t0 + G), columns [c0, c0 + COLS), the first two tokens' rows
    // loaded (Item), each later token's as soon as a buffer frees.
    __aicore__ inline void Mix(uint32_t t0, uint32_t c0)
    {
        for (uint32_t g = 0; g < G; ++g) {
            const uint64_t t = t0 + g;
            AscendC::LocalTensor<float> x = xQ_.DeQue<float>();
            for (uint32_t h = 0; h < HC; ++h) {
                AscendC::Muls(x[h * COLS], x[h * COLS], pre_[g][h], COLS);
            }
            AscendC::Add(x, x, x[COLS], COLS);
            AscendC::Add(x[2 * COLS], x[2 * COLS], x[3 * COLS], COLS);
            AscendC::Add(x, x, x[2 * COLS], COLS);
            AscendC::LocalTensor<bfloat16_t> y = yQ_.AllocTensor<bfloat16_t>();
            AscendC::Cast(y, x, AscendC::RoundMode::CAST_RINT, COLS);
            xQ_.FreeTensor(x);
            if (g + 2 < G) {
                LoadX(t + 2, c0);
            }
            yQ_.EnQue(y);
            y = yQ_.DeQue<bfloat16_t>();
            AscendC::DataCopy(xMixed_[t * D + c0], y, COLS);
            yQ_.FreeTensor(y);
        }
    }

    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> partsQ_;
    AscendC::TQue<AscendC::TPosition::VECIN, 2> xQ_;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> yQ_, outQ_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> table_, inOffsets_, diagOffsets_, outOffsets_, baseRows_,
        weights_, ones_, pairs_, sums_;
    AscendC::GlobalTensor<float> x_, partials_, post_, comb_;
    AscendC::GlobalTensor<bfloat16_t> xMixed_;
    float scale_[3];
    float pre_[G][HC];
};

// Both in one mixed launch (`fuse`): the cube cores project tile after tile; every `every`
// tiles (at most 15 signals in all, so no AIV's flag counter can overflow) they meet
// (mode 0) and each tells its vector cores (mode 2) that those tiles' partials are all out.
// Each vector core takes every (2 · blocks)-th (group, item) item, waits for its tile and
// runs it (gates, then x_mixed or Sinkhorn) while the cube projects the next tiles: the mix
// runs under the projection instead of after it, and reads x_hc from L2, where the cube
// left it.
// PC: HcPreProjection's parameters, PV: HcPreMix's.
template <class PC, class PV>
class HcPreFused {
    static constexpr uint32_t G = TOKEN_GROUP;
    static constexpr uint32_t ITEMS = HcPreMix<PV>::ITEMS;
    static constexpr uint32_t MOST_SETS = 15;
    static constexpr uint16_t PARTS_OUT = 0;    // mode 0: every cube core's partials of the tiles
    static constexpr uint16_t TILES_READY = 1;  // mode 2: to a group's vector cores
    static constexpr uint32_t SHARE_AHEAD = HcPreColumns<PC>::SHARE_AHEAD;
    static_assert(PC::M_TILE == PV::M_TILE && PC::PARTS == PV::PARTS && PC::HIDDEN == PV::HIDDEN,
                  "both halves agree on the partials");

public:
    __aicore__ inline static void Run(GM_ADDR xHc, GM_ADDR fn, GM_ADDR partials, GM_ADDR scale, GM_ADDR base,
                                      GM_ADDR xMixed, GM_ADDR post, GM_ADDR comb, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        const uint32_t tiles = HcPreProjection<PC>::Tiles(td.t);
        const uint32_t every = tiles > MOST_SETS ? CeilDiv(tiles, MOST_SETS) : 1;
        if ASCEND_IS_AIC {
            HcPreProjection<PC> op;
            const bool projects = op.Init(xHc, fn, partials);
            for (uint32_t i = 0; i < tiles; ++i) {
                if (projects) {
                    op.Tile(i, td.t);
                }
                if ((i + 1) % every == 0 || i + 1 == tiles) {
                    AscendC::CrossCoreSetFlag<0, PIPE_FIX>(PARTS_OUT);
                    AscendC::CrossCoreWaitFlag(PARTS_OUT);
                    AscendC::CrossCoreSetFlag<2, PIPE_FIX>(TILES_READY);
                }
            }
        }
        if ASCEND_IS_AIV {
            HcPreMix<PV> op;
            op.Init(xHc, scale, base, partials, xMixed, post, comb);
            // The projection's share (VSPAN > 0) runs SHARE_AHEAD tiles ahead of the sets this
            // core waits for: the cube has consumed a flag per tile of those, so at most
            // SHARE_AHEAD are pending (the counter holds 15).
            HcPreShare<PC> share;
            const bool shares = PC::VSPAN > 0 && share.Init(op.Pipe(), xHc, fn, partials, td.t);
            uint32_t shared = 0;
            auto shareUpTo = [&](uint32_t end) {
                for (; shares && shared < Min(end, tiles); ++shared) {
                    share.Tile(shared, tiles);
                }
            };
            const uint32_t sets = CeilDiv(tiles, every);
            const uint32_t vectors = 2 * static_cast<uint32_t>(AscendC::GetBlockNum());
            uint32_t seen = 0;
            for (uint32_t item = static_cast<uint32_t>(AscendC::GetBlockIdx()); item < td.t / G * ITEMS;
                 item += vectors) {
                const uint32_t t0 = item / ITEMS * G;
                for (; seen <= t0 / PC::M_TILE / every; ++seen) {
                    shareUpTo(seen * every + SHARE_AHEAD);
                    AscendC::CrossCoreWaitFlag(TILES_READY);
                }
                op.Item(t0, item % ITEMS, true);
            }
            for (; seen < sets; ++seen) {
                shareUpTo(seen * every + SHARE_AHEAD);
                AscendC::CrossCoreWaitFlag(TILES_READY);
            }
            shareUpTo(tiles);
        }
    }
};

}  // namespace dsv4
