// The vector cores' share of a matmul of few rows (AIV only): for BATCH problems
//   C[m, n] = sum_k A[m, k] * B(k, n)     for the columns N_FIRST <= n < N_FIRST + N_SHARE,
// bf16 x bf16 -> f32 or int8 x int8 -> int32 or half (DEQ_SHIFT, as dsv4/matmul.h), B
// stored [N, K] (B_NK: out x in) or [K, N] (leading dimension LDB), A and C row-major
// (LDA, LDC), batch strides STRIDE_A/B/C; M the runtime row count (ProductRows in
// dsv4/tiling_data.h). A decode step's weight product (a few rows against megabytes of B)
// is bound by how fast cores load B, so the vector cores load some of B while the cube
// cores load the rest (dsv4/matmul_group.h runs both in one launch).
//
// Work: units of UNIT_COLS columns of C (BATCH x N_SHARE / UNIT_COLS of them), contiguous
// shares over the launch's vector cores (or a share of a group's, dsv4/matmul_group.h). A
// unit runs passes of ROW_BATCH rows of A; in a pass, for each TILE_K slice of K, the B
// tile and the rows' A slice load (the next IN_BUFFERS - 1 slices' while this one
// computes) and widen to f32, then
//   B [N, K] (tile UNIT_COLS rows x TILE_K): each A row r adds B * a_r into its accumulator
//     acc_r [UNIT_COLS x 64] (MulAddDst, a_r's 64 columns of a repeat reused for every row of
//     B: src1 repeat stride 0); after K, two BlockReduceSum passes turn acc_r's rows into
//     C[r, n .. n + UNIT_COLS);
//   B [K, N] (tile TILE_K rows x UNIT_COLS): Brcb spreads each A value over a 32-byte block,
//     then per k one MulAddDst adds a[r][k] * B[k, ..] into acc [ROW_BATCH x UNIT_COLS] (C's
//     layout) for all the pass's rows at once: a repeat's 8 blocks are the rows (the B block
//     shared: src1 block stride 0), its repeats the column blocks (K_LANES 0); or, for
//     narrow units, per column block one MulAddDst covers K_LANES k (its repeats), k's
//     product into accumulator k mod K_LANES (each C's layout), and after K the
//     accumulators are summed pairwise into the first: fewer, longer calls.
// C is written in whole 32-byte blocks. The order is fixed, so a run repeats bit for bit.
// int8: every product and partial sum is an integer of magnitude at most K * 2^14 <= 2^24,
// exact in f32, so C is the cube's int32 product exactly; times 2^-DEQ_SHIFT still exact,
// so the one rounding to half gives the bits the cube's Fixpipe DEQF16 writes.
//
// Params: INT8, DEQ_SHIFT, B_NK, GROUP_ROWS, ROWS_PER_TOKEN, BATCH, K, LDA, LDB, LDC,
// STRIDE_A, STRIDE_B, STRIDE_C, N_FIRST, N_SHARE, UNIT_COLS, TILE_K, ROW_BATCH, K_LANES
// ([K, N]: 0 or a power of two dividing TILE_K; 0 for [N, K]), IN_BUFFERS (2 to 4: the B and A slices in UB, all but
// one loading ahead while one computes) and the UB sizes the plan decided
// (B_IN, A_IN, B_WIDE, A_WIDE, ACC, C_OUT; SUMS8 for [N, K], A_BRCB for [K, N]; F16 and, for
// [N, K], SUMS for int8 `_BYTES`, each at least what its use below needs).
#pragma once

#include "dsv4/matmul.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

template <typename P>
class VectorMatmul {
    using In = typename CubeTypes<P::INT8>::In;
    using Out = typename CubeOut<P>::T;
    static constexpr uint32_t LANES = F32_REPEAT;
    static constexpr uint32_t C_BLOCK = 32 / sizeof(Out);
    static constexpr uint32_t R = P::UNIT_COLS;
    static constexpr uint32_t KC = P::TILE_K;
    static constexpr uint32_t SLICES = P::K / KC;
    static constexpr uint32_t E = sizeof(In);
    // B tile: R rows of KC ([N, K]) or KC rows of R ([K, N]).
    static constexpr uint32_t B_ROWS = P::B_NK ? R : KC;
    static constexpr uint32_t B_COLS = P::B_NK ? KC : R;
    static_assert(P::K % KC == 0 && KC % 8 == 0, "K in whole slices of whole blocks");
    static_assert(!P::B_NK || (KC % LANES == 0 && KC / 8 <= 255 && R <= 255),
                  "[N, K]: slices of whole repeats, a slice row an 8-bit repeat stride in blocks; one repeat per B row");
    static_assert(P::B_NK || (KC <= 255 && R / 8 <= 255 && P::ROW_BATCH <= 8 && P::ROW_BATCH * KC / 8 <= 255),
                  "[K, N]: 8-bit block strides over an A row and a C row, a repeat's blocks the rows, one Brcb");
    static_assert(R % C_BLOCK == 0, "C rows of a unit are whole 32-byte blocks");
    static_assert(P::IN_BUFFERS >= 2 && P::IN_BUFFERS <= 4, "2 to 4 slices' loads in UB");
    static constexpr uint32_t AHEAD = P::IN_BUFFERS - 1;  // slices loading while one computes
    static constexpr uint32_t J = P::K_LANES;
    static constexpr uint32_t LANE = P::ROW_BATCH * R;  // f32 of one [K, N] accumulator
    static_assert(J == 0 || (!P::B_NK && KC % J == 0 && (J & (J - 1)) == 0 && J <= 255 &&
                             P::ROW_BATCH * R / 8 <= 255),
                  "k lanes: [K, N], a power of two dividing the slice, one call's repeats, a lane an 8-bit repeat stride");
    static_assert(P::N_SHARE % R == 0 && P::N_FIRST % C_BLOCK == 0 && P::LDC % C_BLOCK == 0 &&
                      P::STRIDE_C % C_BLOCK == 0,
                  "units of whole tiles; C pieces start on 32-byte blocks");
    static_assert(P::ROW_BATCH >= 1 && P::ROW_BATCH <= 4095, "a DataCopy moves at most 4095 rows");
    static_assert((P::LDA - KC) * E / 32 <= 65535 && (P::LDB - B_COLS) * E / 32 <= 65535 &&
                      (P::LDC - R) * sizeof(Out) / 32 <= 65535 && (B_COLS * E) % 32 == 0 &&
                      P::LDA % (32 / E) == 0 && P::LDB % (32 / E) == 0,
                  "rows of A and B start on 32-byte blocks; the gaps fit 16 bits");
    static_assert(!P::INT8 || uint64_t(P::K) * 128 * 128 <= (uint64_t(1) << 24),
                  "int8: the sums stay exact in f32");
    static_assert(P::B_IN_BYTES >= R * KC * E && P::A_IN_BYTES >= P::ROW_BATCH * KC * E,
                  "b_in and a_in hold a slice");
    static_assert(P::B_WIDE_BYTES >= R * KC * sizeof(float) && P::A_WIDE_BYTES >= P::ROW_BATCH * KC * sizeof(float),
                  "b_wide and a_wide hold a slice in f32");
    static_assert(P::ACC_BYTES >= P::ROW_BATCH * R * (P::B_NK ? LANES : (J > 0 ? J : 1)) * sizeof(float),
                  "acc holds a pass's accumulators");
    static_assert(P::C_OUT_BYTES >= P::ROW_BATCH * R * sizeof(Out), "c_out holds a pass's C rows");
    // half C: the exact sums times 2^-DEQ_SHIFT (exact too) before the one rounding
    static constexpr float DEQ = 1.0f / float(uint32_t(1) << P::DEQ_SHIFT);

public:
    __aicore__ static inline void Run(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const Share share = ShareOf(Units(), static_cast<uint32_t>(AscendC::GetBlockIdx()),
                                    static_cast<uint32_t>(AscendC::GetBlockNum() * AscendC::GetSubBlockNum()));
        RunUnits(a, b, c, tiling, share.begin, share.end);
    }

    // Units of work: BATCH x N_SHARE / UNIT_COLS.
    __aicore__ static constexpr uint32_t Units() { return P::BATCH * (P::N_SHARE / R); }

    // Units [begin, end) (dsv4/matmul_group.h deals the units of several products).
    __aicore__ static inline void RunUnits(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR tiling, uint32_t begin,
                                           uint32_t end)
    {
        if (begin >= end) {
            return;
        }
        AscendC::TPipe pipe;
        VectorMatmul op(pipe, a, b, c, tiling, begin, end);
        op.RunTo(op.Steps());
    }

    // Units [begin, end) a K slice at a time, on `pipe` (dsv4/matmul_group.h spreads a
    // reader's DMAs among the slices): RunTo(s) runs the steps up to step s of Steps(), a
    // pass's loads issued at its first slice and its C stored after its last.
    __aicore__ inline VectorMatmul(AscendC::TPipe& pipe, GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR tiling,
                                   uint32_t begin, uint32_t end)
        : pipe_(pipe), unit_(begin)
    {
        rows_ = ProductRows<P>(LoadTiling(tiling));
        steps_ = begin < end ? (end - begin) * ((rows_ + P::ROW_BATCH - 1) / P::ROW_BATCH) * SLICES : 0;
        a_.SetGlobalBuffer(reinterpret_cast<__gm__ In*>(a));
        b_.SetGlobalBuffer(reinterpret_cast<__gm__ In*>(b));
        c_.SetGlobalBuffer(reinterpret_cast<__gm__ Out*>(c));
        if (begin < end) {
            InitBuffers();
        }
    }

    __aicore__ inline uint32_t Steps() const { return steps_; }

    __aicore__ inline void RunTo(uint32_t step)
    {
        for (; done_ < step; ++done_) {
            Step();
        }
    }

private:
    __aicore__ inline void InitBuffers()
    {
        pipe_.InitBuffer(bIn_, P::IN_BUFFERS, P::B_IN_BYTES);
        pipe_.InitBuffer(aIn_, P::IN_BUFFERS, P::A_IN_BYTES);
        pipe_.InitBuffer(bWide_, P::B_WIDE_BYTES);
        pipe_.InitBuffer(aWide_, P::A_WIDE_BYTES);
        if constexpr (P::INT8) {
            static_assert(P::F16_BYTES >= R * KC * sizeof(half), "f16 stages a B slice");
            pipe_.InitBuffer(f16_, P::F16_BYTES);
        }
        pipe_.InitBuffer(acc_, P::ACC_BYTES);
        if constexpr (P::B_NK) {
            static_assert(P::SUMS8_BYTES >= P::ROW_BATCH * R * 8 * sizeof(float), "sums8 holds the block sums");
            pipe_.InitBuffer(sums8_, P::SUMS8_BYTES);
            if constexpr (P::INT8) {
                static_assert(P::SUMS_BYTES >= P::ROW_BATCH * R * sizeof(float), "sums holds a pass's C rows in f32");
                pipe_.InitBuffer(sums_, P::SUMS_BYTES);
            }
        } else {
            static_assert(P::A_BRCB_BYTES >= P::ROW_BATCH * KC * 8 * sizeof(float), "a_brcb holds a block per A value");
            pipe_.InitBuffer(aBrcb_, P::A_BRCB_BYTES);
        }
        pipe_.InitBuffer(cOut_, 1, P::C_OUT_BYTES);
    }

    // Slice s_ of the pass (unit unit_, rows m_ ..): C[m_ .. m_ + rows, n .. n + R) of its
    // problem, begun at its first slice, stored after its last; then the next pass.
    __aicore__ inline void Step()
    {
        if (slice_ == 0) {
            const uint32_t batch = unit_ / (P::N_SHARE / R);
            const uint32_t n = P::N_FIRST + unit_ % (P::N_SHARE / R) * R;
            pass_ = Pass{batch, n, m_, Min(P::ROW_BATCH, rows_ - m_),
                         uint64_t(batch) * P::STRIDE_B + (P::B_NK ? uint64_t(n) * P::LDB : n),
                         uint64_t(batch) * P::STRIDE_A + uint64_t(m_) * P::LDA};
            if constexpr (!P::B_NK && J > 0) {
                AscendC::Duplicate(acc_.Get<float>(), 0.0f, J * LANE);
            }
            LoadFirst();
        }
        if constexpr (P::B_NK) {
            SliceNk(slice_);
        } else {
            SliceKn(slice_);
        }
        if (++slice_ < SLICES) {
            return;
        }
        if constexpr (P::B_NK) {
            EndNk();
        } else {
            EndKn();
        }
        slice_ = 0;
        m_ += P::ROW_BATCH;
        if (m_ >= rows_) {
            m_ = 0;
            ++unit_;
        }
    }

    // B [N, K]: per A row an accumulator of 64 lanes per B row, block-summed after K.
    __aicore__ inline void SliceNk(uint32_t s)
    {
        AscendC::LocalTensor<float> acc = acc_.Get<float>();
        AscendC::LocalTensor<float> bw = bWide_.Get<float>();
        AscendC::LocalTensor<float> aw = aWide_.Get<float>();
        WidenSlice(bw, aw, s);
        // acc_r += B[:, col .. col + 64) * a_r[col .. col + 64), row by row (the first
        // product of a pass is acc_r).
        const AscendC::BinaryRepeatParams rowsTimesA(1, 1, 1, 8, KC / 8, 0);
        for (uint32_t r = 0; r < pass_.rows; ++r) {
            const AscendC::LocalTensor<float> accRow = acc[r * R * LANES];
            for (uint32_t col = 0; col < KC; col += LANES) {
                if (s == 0 && col == 0) {
                    AscendC::Mul(accRow, bw, aw[r * KC], LANES, R, rowsTimesA);
                } else {
                    AscendC::MulAddDst(accRow, bw[col], aw[r * KC + col], LANES, R, rowsTimesA);
                }
            }
        }
    }

    // acc_r's rows of 64 lanes to C: each 8-lane block summed (into sums8), then each
    // row's 8 block sums; f32 C: the sums are C, int8: exact integers, rounded to
    // int32 unchanged or scaled and rounded to half.
    __aicore__ inline void EndNk()
    {
        const uint32_t rows = pass_.rows;
        AscendC::LocalTensor<Out> out = cOut_.AllocTensor<Out>();
        AscendC::LocalTensor<float> sums;
        if constexpr (P::INT8) {
            sums = sums_.Get<float>();
        } else {
            sums = out;
        }
        AscendC::LocalTensor<float> sums8 = sums8_.Get<float>();
        BlockSums(sums8, acc_.Get<float>(), rows * R * LANES);
        BlockSums(sums, sums8, rows * R * 8);
        if constexpr (P::INT8) {
            ToOut(out, sums, rows);
        }
        Store(out);
    }

    // B [K, N]: per k one MulAddDst over the pass's rows (a repeat's blocks) and the unit's
    // column blocks (its repeats) into acc, C's layout; or, with J k lanes, per column block
    // one MulAddDst over the rows and J k (its repeats), k into accumulator k mod J (lane i
    // at i * ROW_BATCH * R, C's layout), the lanes summed pairwise after K.
    __aicore__ inline void SliceKn(uint32_t s)
    {
        AscendC::LocalTensor<float> acc = acc_.Get<float>();
        AscendC::LocalTensor<float> bw = bWide_.Get<float>();
        AscendC::LocalTensor<float> aw = aWide_.Get<float>();
        AscendC::LocalTensor<float> ab = aBrcb_.Get<float>();
        // dst blocks: row r at r * R / 8 blocks; src0: a[r][k]'s block at (r * KC + k) blocks;
        // src1: B[k]'s column block, the same for every row. Repeats: the column blocks, or
        // with lanes the next k (its lane, its A block, its B row).
        const AscendC::BinaryRepeatParams rowsTimesB = J > 0 ? AscendC::BinaryRepeatParams(R / 8, KC, 0, LANE / 8, 1, R / 8)
                                                             : AscendC::BinaryRepeatParams(R / 8, KC, 0, 1, 0, 1);
        const uint64_t lanes = pass_.rows * 8;
        WidenSlice(bw, aw, s);
        AscendC::Brcb(ab, aw, pass_.rows * KC / 8, AscendC::BrcbRepeatParams(1, 8));
        if constexpr (J > 0) {
            for (uint32_t k = 0; k < KC; k += J) {
                for (uint32_t col = 0; col < R; col += 8) {
                    AscendC::MulAddDst(acc[col], ab[k * 8], bw[k * R + col], lanes, J, rowsTimesB);
                }
            }
        } else {
            for (uint32_t k = 0; k < KC; ++k) {
                if (s == 0 && k == 0) {
                    AscendC::Mul(acc, ab[k * 8], bw[k * R], lanes, R / 8, rowsTimesB);
                } else {
                    AscendC::MulAddDst(acc, ab[k * 8], bw[k * R], lanes, R / 8, rowsTimesB);
                }
            }
        }
    }

    __aicore__ inline void EndKn()
    {
        AscendC::LocalTensor<float> acc = acc_.Get<float>();
        if constexpr (J > 0) {
            for (uint32_t width = J / 2; width >= 1; width /= 2) {
                AscendC::Add(acc, acc, acc[width * LANE], width * LANE);
            }
        }
        StoreSums(acc);
    }

    // The pass's sums (C's layout) out as C: f32 C the sums themselves; int8 exact
    // integers, rounded to int32 unchanged or scaled and rounded to half.
    __aicore__ inline void StoreSums(const AscendC::LocalTensor<float>& sums)
    {
        const uint32_t rows = pass_.rows;
        AscendC::LocalTensor<Out> out = cOut_.AllocTensor<Out>();
        if constexpr (P::INT8) {
            ToOut(out, sums, rows);
        } else {
            AscendC::Muls(out, sums, 1.0f, rows * R);
        }
        Store(out);
    }

    // int8: the pass's exact sums as int32, or as DEQF16 writes them, acc * 2^-DEQ_SHIFT
    // rounded to nearest even (the sums scaled in place).
    __aicore__ inline void ToOut(const AscendC::LocalTensor<Out>& out, const AscendC::LocalTensor<float>& sums,
                                 uint32_t rows)
    {
        if constexpr (CubeOut<P>::HALF) {
            AscendC::Muls(sums, sums, DEQ, rows * R);
        }
        AscendC::Cast(out, sums, AscendC::RoundMode::CAST_RINT, rows * R);
    }

    // The pass's C rows out, in whole blocks.
    __aicore__ inline void Store(AscendC::LocalTensor<Out>& out)
    {
        cOut_.EnQue(out);
        out = cOut_.DeQue<Out>();
        const AscendC::DataCopyParams cp(pass_.rows, R * sizeof(Out) / 32, 0, (P::LDC - R) * sizeof(Out) / 32);
        AscendC::DataCopy(c_[uint64_t(pass_.batch) * P::STRIDE_C + uint64_t(pass_.m) * P::LDC + pass_.n], out, cp);
        cOut_.FreeTensor(out);
    }

    // The first IN_BUFFERS - 1 slices' loads, queued.
    __aicore__ inline void LoadFirst()
    {
        for (uint32_t s = 0; s < AHEAD && s < SLICES; ++s) {
            Load(s * KC);
        }
    }

    // Slice s's B tile and A rows (queued by Load) widened into bw and aw, the loads of
    // slice s + AHEAD issued first so they run under this and the next slices' calls.
    __aicore__ inline void WidenSlice(const AscendC::LocalTensor<float>& bw, const AscendC::LocalTensor<float>& aw,
                                      uint32_t s)
    {
        if (s + AHEAD < SLICES) {
            Load((s + AHEAD) * KC);
        }
        AscendC::LocalTensor<In> bt = bIn_.template DeQue<In>();
        AscendC::LocalTensor<In> at = aIn_.template DeQue<In>();
        Widen(bw, bt, R * KC);
        Widen(aw, at, pass_.rows * KC);
        bIn_.FreeTensor(bt);
        aIn_.FreeTensor(at);
    }

    // The pass's B tile and A rows' slice at k, queued.
    __aicore__ inline void Load(uint32_t k)
    {
        const uint64_t bAt = pass_.bAt;
        const uint64_t aAt = pass_.aAt;
        const uint32_t rows = pass_.rows;
        constexpr uint32_t SLICE_BLOCKS = KC * E / 32;
        AscendC::LocalTensor<In> bt = bIn_.template AllocTensor<In>();
        const uint64_t bk = P::B_NK ? k : uint64_t(k) * P::LDB;
        AscendC::DataCopy(bt, b_[bAt + bk],
                          AscendC::DataCopyParams(B_ROWS, B_COLS * E / 32, (P::LDB - B_COLS) * E / 32, 0));
        bIn_.EnQue(bt);
        AscendC::LocalTensor<In> at = aIn_.template AllocTensor<In>();
        AscendC::DataCopy(at, a_[aAt + k],
                          AscendC::DataCopyParams(rows, SLICE_BLOCKS, (P::LDA - KC) * E / 32, 0));
        aIn_.EnQue(at);
    }

    // `count` elements of In to f32 (int8 through f16: both steps exact).
    __aicore__ inline void Widen(const AscendC::LocalTensor<float>& dst, const AscendC::LocalTensor<In>& src,
                                 uint32_t count)
    {
        if constexpr (P::INT8) {
            AscendC::LocalTensor<half> h = f16_.Get<half>();
            AscendC::Cast(h, src, AscendC::RoundMode::CAST_NONE, count);
            AscendC::Cast(dst, h, AscendC::RoundMode::CAST_NONE, count);
        } else {
            AscendC::Cast(dst, src, AscendC::RoundMode::CAST_NONE, count);
        }
    }

    // A pass: its problem, C columns n .. n + R, rows m .. m + rows, and where its B and A start.
    struct Pass {
        uint32_t batch, n, m, rows;
        uint64_t bAt, aAt;
    };

    AscendC::TPipe& pipe_;
    AscendC::TQue<AscendC::TPosition::VECIN, P::IN_BUFFERS> bIn_, aIn_;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> cOut_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> bWide_, aWide_, f16_, acc_, sums8_, sums_, aBrcb_;
    AscendC::GlobalTensor<In> a_, b_;
    AscendC::GlobalTensor<Out> c_;
    uint32_t rows_ = 0;            // the product's rows
    uint32_t unit_;                // the unit of the next step
    uint32_t m_ = 0, slice_ = 0;   // the pass's first row and its next slice
    uint32_t steps_, done_ = 0;    // steps in all, steps run
    Pass pass_{};
};

}  // namespace dsv4
