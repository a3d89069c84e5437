// The vector kernels of qkv_proj_rope (swa.md §3.3), between the stage's cube matmuls
// (dsv4/matmul.h): all AIV only, rows = the runtime token count t.
//   QLatentQuant  q_latent f32 [t, QL] -> RMSNorm with gamma_cq (f32, no bf16 rounding)
//                 -> per-token int8: qr i8 [t, QL], qr_scale f32 [t]
//   QHeads        q_acc half [t, H·HD] (the int8 product · 2^-DEQ_SHIFT, dsv4/matmul.h)
//                 -> (f32(acc)·(qr_scale·2^DEQ_SHIFT))·wq_b_scale[n] -> per-head
//                 RMSNorm without weight -> RoPE on each head's last RD dims -> q bf16
//   KvFinish      kv_latent f32 [t, HD] -> RMSNorm with gamma_ckv -> RoPE -> kv bf16
// Every value is rounded to bf16 once, at the end. RMSNorm: inv = rsqrt(Σx²·(1/n) + eps).
// Each kernel's UB sizes are the plan's `*_BYTES` params (QHeads and KvFinish also pass
// rope.h's ROPE_*_BYTES), each at least what its use below needs.
// RoPE rows (rope.h RopeRow): QHeads and KvFinish read row t of token-local cos / sin
// tables [t, RD] (`table: per_token`), or, when P::POSITIONS is set and the kernel takes
// position_ids, row position_ids[t] of the full table [max_positions, RD] (`table:
// positions`); the two are the two Run overloads.
#pragma once

#include "dsv4/quant.h"
#include "dsv4/rope.h"
#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

using namespace AscendC;

// rsqrt(Σ x_r[0..n)² · invN + eps) of `rows` rows of n (row r at x[r * n]) into
// inv[0, rows), the scalar round trips once for all of them; work holds n values, slots a
// block per row.
__aicore__ inline void RmsInvRows(const LocalTensor<float>& x, uint32_t rows, const LocalTensor<float>& work,
                                  const LocalTensor<float>& slots, const LocalTensor<float>& tmp, uint32_t n,
                                  float invN, float eps, float* inv)
{
    constexpr uint32_t SLOT = 8;
    for (uint32_t r = 0; r < rows; ++r) {
        Mul(work, x[r * n], x[r * n], n);
        ReduceSum(slots[r * SLOT], work, tmp, n);
    }
    Handshake<HardEvent::V_S>();
    for (uint32_t r = 0; r < rows; ++r) {
        slots.SetValue(r * SLOT, slots.GetValue(r * SLOT) * invN + eps);
    }
    Handshake<HardEvent::S_V>();
    for (uint32_t r = 0; r < rows; ++r) {
        Rsqrt(slots[r * SLOT], slots[r * SLOT], 1);
    }
    Handshake<HardEvent::V_S>();
    for (uint32_t r = 0; r < rows; ++r) {
        inv[r] = slots.GetValue(r * SLOT);
    }
    Handshake<HardEvent::S_V>();
}

// RmsInvRows for rows of n = 8^L values: the squares of all rows in one call, then L
// levels of 8-lane block sums leave one sum per row, and the rsqrt runs on the rows' sums
// at once (the scalar unit reads only the results). squares holds rows * n values, sums
// rows * n / 8.
__aicore__ inline void RmsInvBlocks(const LocalTensor<float>& x, uint32_t rows, const LocalTensor<float>& squares,
                                    const LocalTensor<float>& sums, uint32_t n, float invN, float eps, float* inv)
{
    Mul(squares, x, x, rows * n);
    uint32_t left = rows * n;
    bool inSquares = true;
    while (left > rows) {
        BlockSums(inSquares ? sums : squares, inSquares ? squares : sums, left);
        left /= 8;
        inSquares = !inSquares;
    }
    const LocalTensor<float> s = inSquares ? squares : sums;
    Muls(s, s, invN, rows);
    Adds(s, s, eps, rows);
    Rsqrt(s, s, rows);
    Handshake<HardEvent::V_S>();
    for (uint32_t r = 0; r < rows; ++r) {
        inv[r] = s.GetValue(r);
    }
    Handshake<HardEvent::S_V>();
}

__aicore__ constexpr inline bool PowerOf8(uint32_t n) { return n == 1 || (n % 8 == 0 && PowerOf8(n / 8)); }

// RmsInvRows of one row.
__aicore__ inline float RmsInv(const LocalTensor<float>& x, const LocalTensor<float>& work,
                               const LocalTensor<float>& slot, const LocalTensor<float>& tmp, uint32_t n, float invN,
                               float eps)
{
    float inv;
    RmsInvRows(x, 1, work, slot, tmp, n, invN, eps, &inv);
    return inv;
}

// The contiguous run of `unit`-row tiles block `idx` of `count` takes out of `rows` rows.
struct RowRun {
    uint32_t first, end;
};
__aicore__ inline RowRun BlockRows(uint32_t rows, uint32_t unit, uint32_t idx, uint32_t count)
{
    const uint32_t tiles = rows / unit;
    const uint32_t per = (tiles + count - 1) / count;
    const uint32_t first = idx * per < tiles ? idx * per : tiles;
    const uint32_t end = first + per < tiles ? first + per : tiles;
    return RowRun{first * unit, end * unit};
}

// This block's rows, of the blocks of a kernel with Params P, in whole 8-row units (the
// runtime token granularity), which its passes of TILE_ROWS (a divisor of 8) walk: every
// per-token output a block writes then starts and ends on a 32-byte boundary (8 f32
// scales), so no two cores share a GM block.
template <typename P>
__aicore__ inline RowRun TokenRows(uint32_t t)
{
    return BlockRows(t, 8, OwnBlocks<P>::Idx(), OwnBlocks<P>::Num());
}

// The head group and 8-row token run of this block in a grid of `groups` head groups x
// token ranges over the blocks of a kernel with Params P (OwnBlocks<P>: its blocks / groups
// ranges); false if it has no rows.
template <typename P>
__aicore__ inline bool HeadGroupRows(uint32_t t, uint32_t groups, uint32_t& group, RowRun& run)
{
    const uint32_t idx = OwnBlocks<P>::Idx(), ranges = OwnBlocks<P>::Num() / groups;
    if (idx / groups >= ranges) {
        return false;
    }
    group = idx % groups;
    run = BlockRows(t, 8, idx / groups, ranges);
    return run.first != run.end;
}

// Params: QL, TILE_ROWS (rows per DMA, divides 8), EPS, INV_QL = 1/QL, and the UB sizes
// LATENT_IN, QR_OUT, QR_SCALES, GAMMA_IN, GAMMA, WORK, F16, SLOT, REDUCE_TMP (`*_BYTES`).
// Its blocks: OwnBlocks<P> (optional BLOCK_BASE, BLOCKS: a range of the launch's,
// dsv4/together.h).
// A tile's rows are normalised and quantised at once (RmsInvRows, QuantizeRows: the scalar
// unit's round trips once per tile, not per row).
template <typename P>
class QLatentQuant {
public:
    __aicore__ static inline void Run(GM_ADDR latent, GM_ADDR gamma, GM_ADDR qr, GM_ADDR qrScale, GM_ADDR workspace,
                                      GM_ADDR tiling)
    {
        (void)workspace;
        QLatentQuant op;
        op.Process(latent, gamma, qr, qrScale, LoadTiling(tiling).t);
    }

private:
    static constexpr uint32_t QL = P::QL, TR = P::TILE_ROWS;
    static_assert(8 % TR == 0, "passes of TILE_ROWS walk a block's 8-row units");
    static_assert(P::LATENT_IN_BYTES >= TR * QL * sizeof(float), "latent_in holds a tile of rows");
    static_assert(P::QR_OUT_BYTES >= TR * QL * sizeof(int8_t), "qr_out holds a tile of rows");
    static_assert(P::QR_SCALES_BYTES >= 8 * sizeof(float), "qr_scales holds a tile's scales");
    static_assert(P::GAMMA_IN_BYTES >= QL * sizeof(bfloat16_t) && P::GAMMA_BYTES >= QL * sizeof(float),
                  "gamma_cq as read and widened");
    static_assert(P::WORK_BYTES >= TR * QL * sizeof(float) && P::F16_BYTES >= TR * QL * sizeof(half),
                  "a tile's scratch");
    static_assert(P::SLOT_BYTES >= TR * 8 * sizeof(float), "a block of scalars per row");
    static_assert(P::REDUCE_TMP_BYTES >= ReduceTmpElems(QL) * sizeof(float), "ReduceMax scratch of a row");

    __aicore__ inline void Process(GM_ADDR latent, GM_ADDR gamma, GM_ADDR qr, GM_ADDR qrScale, uint32_t t)
    {
        GlobalTensor<float> gLatent, gScale;
        GlobalTensor<bfloat16_t> gGamma;
        GlobalTensor<int8_t> gQr;
        gLatent.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(latent));
        gGamma.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(gamma));
        gQr.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t*>(qr));
        gScale.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(qrScale));
        const RowRun run = TokenRows<P>(t);
        if (run.first == run.end) {
            return;
        }
        pipe_.InitBuffer(in_, 2, P::LATENT_IN_BYTES);
        pipe_.InitBuffer(out_, 2, P::QR_OUT_BYTES);
        pipe_.InitBuffer(scales_, 2, P::QR_SCALES_BYTES);
        pipe_.InitBuffer(gammaIn_, P::GAMMA_IN_BYTES);
        pipe_.InitBuffer(gamma_, P::GAMMA_BYTES);
        pipe_.InitBuffer(work_, P::WORK_BYTES);
        pipe_.InitBuffer(half_, P::F16_BYTES);
        pipe_.InitBuffer(slot_, P::SLOT_BYTES);
        pipe_.InitBuffer(tmp_, P::REDUCE_TMP_BYTES);
        LocalTensor<float> g = gamma_.Get<float>();
        LocalTensor<bfloat16_t> gIn = gammaIn_.Get<bfloat16_t>();
        DataCopy(gIn, gGamma, QL);
        Handshake<HardEvent::MTE2_V>();
        Cast(g, gIn, RoundMode::CAST_NONE, QL);
        LocalTensor<float> work = work_.Get<float>(), slot = slot_.Get<float>(), tmp = tmp_.Get<float>();
        LocalTensor<half> h = half_.Get<half>();
        for (uint32_t row = run.first; row < run.end; row += TR) {
            LocalTensor<float> x = in_.AllocTensor<float>();
            DataCopy(x, gLatent[row * QL], TR * QL);
            in_.EnQue(x);
            x = in_.DeQue<float>();
            LocalTensor<int8_t> q = out_.AllocTensor<int8_t>();
            LocalTensor<float> s = scales_.AllocTensor<float>();
            float inv[TR], scale[TR];
            RmsInvRows(x, TR, work, slot, tmp, QL, P::INV_QL, P::EPS, inv);
            for (uint32_t r = 0; r < TR; ++r) {
                Muls(x[r * QL], x[r * QL], inv[r], QL);
                Mul(x[r * QL], x[r * QL], g, QL);
            }
            QuantizeRows<TR>(q, x, TR, QL, work, h, slot, tmp, scale);
            for (uint32_t r = 0; r < TR; ++r) {
                s.SetValue(r, scale[r]);
            }
            in_.FreeTensor(x);
            out_.EnQue(q);
            scales_.EnQue(s);
            q = out_.DeQue<int8_t>();
            s = scales_.DeQue<float>();
            DataCopy(gQr[row * QL], q, TR * QL);
            // passes of fewer than 8 rows write parts of one 32-byte block of scales
            BeforeContinuedBlock<TR * sizeof(float)>(row != run.first);
            DataCopyPad(gScale[row], s, DataCopyExtParams(1, TR * sizeof(float), 0, 0, 0));
            out_.FreeTensor(q);
            scales_.FreeTensor(s);
        }
    }

    TPipe pipe_;
    TQue<TPosition::VECIN, 1> in_;
    TQue<TPosition::VECOUT, 1> out_, scales_;
    TBuf<TPosition::VECCALC> gammaIn_, gamma_, work_, half_, slot_, tmp_;
};

// Params: H (heads of a row), HEAD0 and HEADS (the heads this kernel finishes: all, or a
// column range of the product a cube launch still writes the rest of: CubeBeside in
// dsv4/together.h),
// HD, RD, HG (heads per work item), EPS, INV_HD = 1/HD, POSITIONS (only in
// kernels that take position_ids), and the UB sizes ACC_IN, Q_OUT, X, WQ_B_SCALE, QR_SCALE,
// WORK, SLOT, REDUCE_TMP (`*_BYTES`). Blocks (OwnBlocks<P>: optional BLOCK_BASE, BLOCKS, a
// range of the launch's, dsv4/together.h) form a grid of HEADS/HG head groups x token ranges
// (blocks / (HEADS/HG) of them, in 8-row units); a block loads its heads' wq_b_scale once and
// walks its tokens one at a time, the next token's row loading while this one computes.
template <typename P>
class QHeads {
public:
    // Token-local RoPE rows: cos / sin are [t, RD].
    __aicore__ static inline void Run(GM_ADDR acc, GM_ADDR qrScale, GM_ADDR wqbScale, GM_ADDR cos, GM_ADDR sin,
                                      GM_ADDR q, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        QHeads op;
        op.template Process<false>(acc, qrScale, wqbScale, cos, sin, nullptr, q, LoadTiling(tiling).t);
    }

    // The full table: cos / sin are [max_positions, RD], token t reads row position_ids[t].
    __aicore__ static inline void Run(GM_ADDR acc, GM_ADDR qrScale, GM_ADDR wqbScale, GM_ADDR cos, GM_ADDR sin,
                                      GM_ADDR positions, GM_ADDR q, GM_ADDR workspace, GM_ADDR tiling)
    {
        static_assert(P::POSITIONS, "a kernel taking position_ids reads the full RoPE table");
        (void)workspace;
        QHeads op;
        op.template Process<true>(acc, qrScale, wqbScale, cos, sin, positions, q, LoadTiling(tiling).t);
    }

private:
    static constexpr uint32_t HD = P::HD, W = P::HG * P::HD, ROW = P::H * P::HD;
    static constexpr uint32_t NOPE = P::HD - P::RD, GROUPS = P::HEADS / P::HG;
    static_assert(P::HEADS % P::HG == 0 && P::HEAD0 + P::HEADS <= P::H, "whole head groups of the row");
    // The group's rope slices in one rotation where each is one f32 repeat (rope.h).
    static constexpr bool HEADS_AT_ONCE = P::RD <= 64;
    // A head of 8^L values sums its squares in block sums, all heads of a row at once.
    static constexpr bool BLOCK_SUMS = PowerOf8(HD);
    static_assert(NOPE * sizeof(float) % 32 == 0, "the rope slice starts on a 32-byte block");
    static_assert(P::ACC_IN_BYTES >= W * sizeof(half), "acc_in holds a head group's row");
    // undoes the product's 2^-DEQ_SHIFT inside the token scale (a power of two: exact)
    static constexpr float UNSHIFT = float(uint32_t(1) << P::DEQ_SHIFT);
    static_assert(P::Q_OUT_BYTES >= W * sizeof(bfloat16_t), "q_out holds a head group's row");
    static_assert(P::X_BYTES >= W * sizeof(float) && P::WQ_B_SCALE_BYTES >= W * sizeof(float),
                  "the group's f32 row and wq_b_scale slice");
    static_assert(P::QR_SCALE_BYTES >= 8 * sizeof(float), "8 tokens' qr_scale");
    static_assert(P::WORK_BYTES >= (BLOCK_SUMS ? W : HD) * sizeof(float), "the squares of the row, or a head's");
    static_assert(!BLOCK_SUMS || P::REDUCE_TMP_BYTES >= W / 8 * sizeof(float), "the row's block sums");
    static_assert(P::SLOT_BYTES >= P::HG * 8 * sizeof(float), "a block of scalars per head");
    static_assert(P::REDUCE_TMP_BYTES >= ReduceTmpElems(HD) * sizeof(float), "ReduceSum scratch of a head");
    static_assert(P::QR_SCALE_BYTES >= 16 * sizeof(float) && Rope<P>::SLOTS >= 16,
                  "two 8-row blocks' qr_scale and rope rows");

    // Token row `row`'s head group into an acc_in buffer, queued.
    __aicore__ inline void LoadRow(const GlobalTensor<half>& gAcc, uint32_t row, uint32_t col)
    {
        LocalTensor<half> a = in_.AllocTensor<half>();
        DataCopy(a, gAcc[row * ROW + col], W);
        in_.EnQue(a);
    }

    template <bool POSITIONS>
    __aicore__ inline void Process(GM_ADDR acc, GM_ADDR qrScale, GM_ADDR wqbScale, GM_ADDR cos, GM_ADDR sin,
                                   GM_ADDR positions, GM_ADDR q, uint32_t t)
    {
        uint32_t group = 0;
        RowRun run{};
        if (!HeadGroupRows<P>(t, GROUPS, group, run)) {
            return;
        }
        GlobalTensor<half> gAcc;
        GlobalTensor<float> gTokScale, gWScale;
        GlobalTensor<bfloat16_t> gCos, gSin, gQ;
        GlobalTensor<int32_t> gPos;
        if constexpr (POSITIONS) {
            gPos.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(positions));
        }
        gAcc.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(acc));
        gTokScale.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(qrScale));
        gWScale.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(wqbScale));
        gCos.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(cos));
        gSin.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(sin));
        gQ.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(q));
        pipe_.InitBuffer(in_, 2, P::ACC_IN_BYTES);
        pipe_.InitBuffer(out_, 2, P::Q_OUT_BYTES);
        pipe_.InitBuffer(x_, P::X_BYTES);
        pipe_.InitBuffer(wScale_, P::WQ_B_SCALE_BYTES);
        pipe_.InitBuffer(tokScale_, P::QR_SCALE_BYTES);
        pipe_.InitBuffer(work_, P::WORK_BYTES);
        pipe_.InitBuffer(slot_, P::SLOT_BYTES);
        pipe_.InitBuffer(tmp_, P::REDUCE_TMP_BYTES);
        rope_.Carve(pipe_);
        const uint32_t col = P::HEAD0 * HD + group * W;
        LocalTensor<float> ws = wScale_.Get<float>(), x = x_.Get<float>(), ts = tokScale_.Get<float>();
        LocalTensor<float> work = work_.Get<float>(), slot = slot_.Get<float>(), tmp = tmp_.Get<float>();
        // An 8-row block's qr_scale and rope rows into half `side` of ts and of the rope slots:
        // the next block's are in flight while this one computes, one GM latency for all 8.
        auto fetchBlock = [&](uint32_t row0, uint32_t side) {
            DataCopy(ts[side * 8], gTokScale[row0], 8);
            rope_.template FetchTokens<POSITIONS>(gCos, gSin, gPos, row0, 8, side * 8);
        };
        // The first loads go out before the scalar writes of the gather offsets.
        DataCopy(ws, gWScale[col], W);
        LoadRow(gAcc, run.first, col);
        fetchBlock(run.first, 0);
        rope_.Offsets(false);
        if constexpr (HEADS_AT_ONCE) {
            ropeHeads_.Init(pipe_);
        }
        uint32_t side = 0;
        for (uint32_t row0 = run.first; row0 < run.end; row0 += 8, side ^= 1) {
            // this block's qr_scale (scalar reads) and rope rows (vector reads) have landed
            Handshake<HardEvent::MTE2_S>();
            Handshake<HardEvent::MTE2_V>();
            if (row0 + 8 < run.end) {
                fetchBlock(row0 + 8, side ^ 1);
            }
            for (uint32_t row = row0; row < row0 + 8; ++row) {
                const float tokScale = ts.GetValue(side * 8 + row - row0) * UNSHIFT;
                LocalTensor<half> a = in_.DeQue<half>();
                rope_.Build(side * 8 + row - row0);
                if (row + 1 < run.end) {
                    LoadRow(gAcc, row + 1, col);
                }
                Cast(x, a, RoundMode::CAST_NONE, W);
                in_.FreeTensor(a);
                Mul(x, x, ws, W);
                // the token's scale t rides on each head's: rsqrt(mean((t y)^2) + eps) =
                // rsqrt(t^2 mean(y^2) + eps), and t y * that is y * (t * that)
                const float invN = P::INV_HD * tokScale * tokScale;
                float inv[P::HG];
                if constexpr (BLOCK_SUMS) {
                    RmsInvBlocks(x, P::HG, work, tmp, HD, invN, P::EPS, inv);
                } else {
                    RmsInvRows(x, P::HG, work, slot, tmp, HD, invN, P::EPS, inv);
                }
                for (uint32_t h = 0; h < P::HG; ++h) {
                    Muls(x[h * HD], x[h * HD], inv[h] * tokScale, HD);
                }
                if constexpr (HEADS_AT_ONCE) {
                    ropeHeads_.Apply(rope_, x[NOPE]);
                } else {
                    for (uint32_t h = 0; h < P::HG; ++h) {
                        rope_.Apply(x[h * HD + NOPE]);
                    }
                }
                LocalTensor<bfloat16_t> o = out_.AllocTensor<bfloat16_t>();
                Cast(o, x, RoundMode::CAST_RINT, W);
                out_.EnQue(o);
                o = out_.DeQue<bfloat16_t>();
                DataCopy(gQ[row * ROW + col], o, W);
                out_.FreeTensor(o);
            }
            Handshake<HardEvent::S_MTE2>();
        }
    }

    TPipe pipe_;
    TQue<TPosition::VECIN, 1> in_;
    TQue<TPosition::VECOUT, 1> out_;
    TBuf<TPosition::VECCALC> x_, wScale_, tokScale_, work_, slot_, tmp_;
    Rope<P> rope_;
    RopeHeads<P, P::HG, HD> ropeHeads_;
};

// Params: HD, RD, TILE_ROWS, EPS, INV_HD = 1/HD, POSITIONS (only in kernels that take
// position_ids), and the UB sizes LATENT_IN, KV_OUT, GAMMA_IN, GAMMA, WORK, SLOT,
// REDUCE_TMP (`*_BYTES`). Blocks (OwnBlocks<P>: optional BLOCK_BASE, BLOCKS, a range of the
// launch's, dsv4/together.h) take runs of whole TILE_ROWS units, a pass each.
// KvFinish writes the rows to kv [t, HD]; KvFinishInsert (cache_insert.h taking it as its
// prologue; BLOCK_SIZE too) writes each straight to its row of the paged pool
// [nb * BLOCK_SIZE, HD] at slots[t], a negative or out-of-pool slot skipping the token, as
// cache_insert.h would copy it.
template <typename P, bool INSERT>
class KvFinishTo {
public:
    // Token-local RoPE rows (cos / sin [t, RD]) into kv.
    __aicore__ static inline void Run(GM_ADDR latent, GM_ADDR gamma, GM_ADDR cos, GM_ADDR sin, GM_ADDR kv,
                                      GM_ADDR workspace, GM_ADDR tiling)
    {
        static_assert(!INSERT, "KvFinishInsert takes the slots and the pool");
        (void)workspace;
        KvFinishTo op;
        op.template Process<false>(latent, gamma, cos, sin, nullptr, kv, nullptr, LoadTiling(tiling));
    }

    // KvFinish: the full table (cos / sin [max_positions, RD], token t reads row
    // position_ids[t]) into kv. KvFinishInsert: token-local rows into the pool at slots.
    __aicore__ static inline void Run(GM_ADDR latent, GM_ADDR gamma, GM_ADDR cos, GM_ADDR sin, GM_ADDR a, GM_ADDR b,
                                      GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        KvFinishTo op;
        if constexpr (INSERT) {
            op.template Process<false>(latent, gamma, cos, sin, nullptr, b, a, LoadTiling(tiling));
        } else {
            static_assert(P::POSITIONS, "a kernel taking position_ids reads the full RoPE table");
            op.template Process<true>(latent, gamma, cos, sin, a, b, nullptr, LoadTiling(tiling));
        }
    }

    // KvFinishInsert with the full table: position_ids, then the slots and the pool.
    __aicore__ static inline void Run(GM_ADDR latent, GM_ADDR gamma, GM_ADDR cos, GM_ADDR sin, GM_ADDR positions,
                                      GM_ADDR slots, GM_ADDR pool, GM_ADDR workspace, GM_ADDR tiling)
    {
        static_assert(INSERT && P::POSITIONS, "the slots and the pool, after position_ids");
        (void)workspace;
        KvFinishTo op;
        op.template Process<true>(latent, gamma, cos, sin, positions, pool, slots, LoadTiling(tiling));
    }

private:
    static constexpr uint32_t HD = P::HD, TR = P::TILE_ROWS, NOPE = P::HD - P::RD;
    static_assert(8 % TR == 0, "units of TILE_ROWS divide the runtime token count");
    static_assert(NOPE * sizeof(float) % 32 == 0, "the rope slice starts on a 32-byte block");
    static_assert(HD * sizeof(bfloat16_t) % 32 == 0, "a kv row is whole 32-byte blocks");
    static_assert(P::LATENT_IN_BYTES >= TR * HD * sizeof(float), "latent_in holds a tile of rows");
    static_assert(P::KV_OUT_BYTES >= TR * HD * sizeof(bfloat16_t), "kv_out holds a tile of rows");
    static_assert(P::GAMMA_IN_BYTES >= HD * sizeof(bfloat16_t) && P::GAMMA_BYTES >= HD * sizeof(float),
                  "gamma_ckv as read and widened");
    static_assert(P::WORK_BYTES >= HD * sizeof(float), "a row's scratch");
    static_assert(P::SLOT_BYTES >= 8 * sizeof(float), "one block of scalars");
    static_assert(P::REDUCE_TMP_BYTES >= ReduceTmpElems(HD) * sizeof(float), "ReduceSum scratch of a row");
    static_assert(Rope<P>::SLOTS >= 2 * TR, "rope rows of this tile and the next");

    // The rows go to `out`: kv, or (INSERT) the pool at `slots`. A tile's rope rows are
    // fetched while the tile before works, so their GM latency passes under it.
    template <bool POSITIONS>
    __aicore__ inline void Process(GM_ADDR latent, GM_ADDR gamma, GM_ADDR cos, GM_ADDR sin, GM_ADDR positions,
                                   GM_ADDR out, GM_ADDR slots, const TilingData& td)
    {
        const uint32_t t = td.t;
        // units of TR rows: a kv row is whole 32-byte blocks and no per-token scalar goes
        // with it, so a few tokens spread over as many blocks
        const RowRun run = BlockRows(t, TR, OwnBlocks<P>::Idx(), OwnBlocks<P>::Num());
        if (run.first == run.end) {
            return;
        }
        GlobalTensor<float> gLatent;
        GlobalTensor<bfloat16_t> gGamma, gCos, gSin, gKv;
        GlobalTensor<int32_t> gPos;
        if constexpr (POSITIONS) {
            gPos.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(positions));
        }
        gLatent.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(latent));
        gGamma.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(gamma));
        gCos.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(cos));
        gSin.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(sin));
        gKv.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(out));
        GlobalTensor<int64_t> gSlots;
        if constexpr (INSERT) {
            gSlots.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(slots));
        }
        pipe_.InitBuffer(in_, 2, P::LATENT_IN_BYTES);
        pipe_.InitBuffer(out_, 2, P::KV_OUT_BYTES);
        pipe_.InitBuffer(gammaIn_, P::GAMMA_IN_BYTES);
        pipe_.InitBuffer(gamma_, P::GAMMA_BYTES);
        pipe_.InitBuffer(work_, P::WORK_BYTES);
        pipe_.InitBuffer(slot_, P::SLOT_BYTES);
        pipe_.InitBuffer(tmp_, P::REDUCE_TMP_BYTES);
        rope_.Init(pipe_, false);
        LocalTensor<float> g = gamma_.Get<float>();
        LocalTensor<bfloat16_t> gIn = gammaIn_.Get<bfloat16_t>();
        DataCopy(gIn, gGamma, HD);
        Handshake<HardEvent::MTE2_V>();
        Cast(g, gIn, RoundMode::CAST_NONE, HD);
        LocalTensor<float> work = work_.Get<float>(), slot = slot_.Get<float>(), tmp = tmp_.Get<float>();
        rope_.template FetchTokens<POSITIONS>(gCos, gSin, gPos, run.first, TR, 0);
        uint32_t side = 0;
        for (uint32_t row = run.first; row < run.end; row += TR, side ^= 1) {
            LocalTensor<float> x = in_.AllocTensor<float>();
            DataCopy(x, gLatent[row * HD], TR * HD);
            in_.EnQue(x);
            // this tile's rope rows (fetched before) have landed; the next tile's go out
            Handshake<HardEvent::MTE2_V>();
            if (row + TR < run.end) {
                rope_.template FetchTokens<POSITIONS>(gCos, gSin, gPos, row + TR, TR, (side ^ 1) * TR);
            }
            // the slots' scalar reads wait their GM latency while the rows load
            [[maybe_unused]] int64_t to[TR];
            if constexpr (INSERT) {
                for (uint32_t r = 0; r < TR; ++r) {
                    to[r] = gSlots.GetValue(row + r);
                }
            }
            x = in_.DeQue<float>();
            for (uint32_t r = 0; r < TR; ++r) {
                LocalTensor<float> xr = x[r * HD];
                Muls(xr, xr, RmsInv(xr, work, slot, tmp, HD, P::INV_HD, P::EPS), HD);
                Mul(xr, xr, g, HD);
                rope_.Build(side * TR + r);
                rope_.Apply(xr[NOPE]);
            }
            LocalTensor<bfloat16_t> o = out_.AllocTensor<bfloat16_t>();
            Cast(o, x, RoundMode::CAST_RINT, TR * HD);
            in_.FreeTensor(x);
            out_.EnQue(o);
            o = out_.DeQue<bfloat16_t>();
            if constexpr (INSERT) {
                const int64_t poolRows = int64_t(td.nb) * P::BLOCK_SIZE;
                for (uint32_t r = 0; r < TR; ++r) {
                    if (to[r] >= 0 && to[r] < poolRows) {
                        DataCopy(gKv[uint64_t(to[r]) * HD], o[r * HD], HD);
                    }
                }
            } else {
                DataCopy(gKv[row * HD], o, TR * HD);
            }
            out_.FreeTensor(o);
        }
    }

    TPipe pipe_;
    TQue<TPosition::VECIN, 1> in_;
    TQue<TPosition::VECOUT, 1> out_;
    TBuf<TPosition::VECCALC> gammaIn_, gamma_, work_, slot_, tmp_;
    Rope<P> rope_;
};

template <typename P>
using KvFinish = KvFinishTo<P, false>;
template <typename P>
using KvFinishInsert = KvFinishTo<P, true>;

}  // namespace dsv4
