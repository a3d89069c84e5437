// The ratio-R compressors (hca_csa.md §4.1–4.5), vector side: HCA's (ratio 128, no overlap)
// and CSA's overlapping ones (ratio 4, COFF = 2 projection streams). The projections
// kvp = x·wkvᵀ and sc = x·wgateᵀ (OUT = COFF·HD columns each) come from the cube matmul
// (f32). Three kernels: the pooling, then (in a later launch, so that every request sees the
// state as the requests before it left it, dsv4/state_overlay.h) the state commit, and the
// pooled rows' finish:
//  CompressorPool (work items: (pooled row, channel tile), blocks over items, so a row
//     spreads over cores): at the request's first token with (p+1) mod R == 0 (position e;
//     only the first boundary of a step is pooled, §4.2, §11.1; with P::RING every boundary,
//     see below), if its cmp_slot_mapping entry is >= 0 (PooledRows), pool the COFF·R state
//     rows of positions e−COFF·R+1 .. e, read through the state block table (whole pages; a
//     negative page or a position before 0 reads as kv 0, score FP32_NEG_INF) - or, for a
//     row a token t' of requests 0..b writes this step, its new row
//     [kvp[t'] | sc[t'] + ape[p_t' mod R]]. A state row is [kv | score], each OUT wide; with
//     overlap each is [front | back] halves of HD: the previous window's positions
//     (e−7 .. e−4 at R = 4) contribute their front halves, the current window's their back
//     halves (§4.4). Per channel c, over those entries q:
//        pooled_c = Σ_q kv_q,c · exp(s_q,c − max_q s_q,c) / Σ_q exp(s_q,c − max_q s_q,c)
//     one CH-channel tile per item (max, exp, products and both sums as halving trees over
//     the entries), into the boundary token's f32 row of a [t, HD] workspace. The state is
//     only read.
//  CompressorFinish (one pooled row per work item; it needs the whole row): RMSNorm with
//     norm_w, the forward interleaved rotation of the last RD dims (CompressedRope), bf16
//     RNE into cmp_kv row cmp_slot_mapping[boundary token]. CompressorFinishToToken (the
//     index-key compressor, §4.5 end) writes the bf16 row instead to row b·SEQ (the
//     request's first token) of a [t, HD] workspace, for the Hadamard product that follows
//     on the cube; the slot mapping (idx_slot_mapping) still decides whether there is a row.
//  CompressorPoolFinish (one pooled row per work item): both, the row in UB; the plan's
//     choice where a row is one tile (nothing to spread).
//  CompressorCommit (one request's SEQ tokens per work item): sc[t] += ape[p_t mod R]; if
//     state_slot_mapping[t] >= 0 the state row of that slot := [kvp[t] | sc[t]] (f32).
// P::RING (CSA at 1M, pypto-lib PR #1013; csa_1m.md §4): the state is a ring of TABLE_W
// pages per request (position q at table[b, (q mod TABLE_W·BS) / BS]); EVERY boundary token
// of the step is pooled, a position before the request's first one p0 from the ring as the
// previous step left it, one from p0 on from this request's own token of that position
// (StateOverlay::BuildOwn); the RoPE row is the boundary token's (CMP_ROPE_TOKEN) and
// CompressorFinishToToken writes to the boundary token's own row. The commit is the same.
#pragma once

#include "dsv4/rope.h"
#include "dsv4/scalar_stream.h"
#include "dsv4/state_overlay.h"
#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// Where a pooled row's RoPE angles come from (P::CMP_ROPE).
enum CmpRope : uint32_t {
    // The host's f32 angles of request b, rows [b, RD/2] of cmp_freqs_cos / _sin (HCA,
    // `rope.table: per_token`).
    CMP_ROPE_REQUEST = 0,
    // The row p0 − p0 mod P::ROPE_ALIGN of the full bf16 table [max_positions, RD] (the
    // snapshot CSA, §2.3, §3; p0 the request's first position: the window start for the
    // main compressor, ROPE_ALIGN = RATIO).
    CMP_ROPE_POSITION = 1,
    // The boundary token's row of bf16 [t, RD] rows (the ring CSA's cmp_freqs_*, at p − 3).
    CMP_ROPE_TOKEN = 2,
};

// The rotation of a compressed row's last RD dims (hca_csa.md §4.5), from the rows P::CMP_ROPE
// names; the bf16 rows go through rope.h's Rope. Fetch starts the loads, Ready (after other
// vector work) builds the tables, Apply rotates.
template <class P, uint32_t FROM = P::CMP_ROPE>
class CompressedRope;

template <class P>
class CompressedRope<P, CMP_ROPE_REQUEST> {
    static constexpr uint32_t HALF = P::RD / 2;
    static_assert(P::CMP_TRIG_BYTES >= 3 * HALF * sizeof(float), "cos | sin | -sin");

public:
    __aicore__ inline void Init(AscendC::TPipe& pipe, GM_ADDR cos, GM_ADDR sin)
    {
        cos_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(cos));
        sin_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(sin));
        pipe.InitBuffer(trig_, P::CMP_TRIG_BYTES);
        rot_.Init(pipe, false);
    }

    __aicore__ inline void Fetch(uint32_t b, uint32_t p0, uint32_t tok)
    {
        (void)p0;
        (void)tok;
        AscendC::LocalTensor<float> trig = trig_.Get<float>();
        AscendC::DataCopy(trig, cos_[uint64_t(b) * HALF], HALF);
        AscendC::DataCopy(trig[HALF], sin_[uint64_t(b) * HALF], HALF);
    }

    __aicore__ inline void Ready()
    {
        AscendC::LocalTensor<float> trig = trig_.Get<float>();
        Handshake<AscendC::HardEvent::MTE2_V>();
        AscendC::Muls(trig[2 * HALF], trig[HALF], -1.0f, HALF);
        rot_.Tables(trig);
    }

    __aicore__ inline void Apply(const AscendC::LocalTensor<float>& x) { rot_.Apply(x); }

private:
    AscendC::TBuf<AscendC::TPosition::VECCALC> trig_;
    Rotation<P, HALF> rot_;
    AscendC::GlobalTensor<float> cos_, sin_;
};

template <class P, uint32_t FROM>
class CompressedRope {
    static_assert(FROM == CMP_ROPE_POSITION || FROM == CMP_ROPE_TOKEN, "a CmpRope");

public:
    __aicore__ inline void Init(AscendC::TPipe& pipe, GM_ADDR cos, GM_ADDR sin)
    {
        cos_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(cos));
        sin_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(sin));
        rope_.Init(pipe, false);
    }

    __aicore__ inline void Fetch(uint32_t b, uint32_t p0, uint32_t tok)
    {
        (void)b;
        if constexpr (FROM == CMP_ROPE_POSITION) {
            static_assert(P::ROPE_ALIGN >= 1, "the row is p0 rounded down to a multiple of ROPE_ALIGN");
            row_ = p0 - p0 % P::ROPE_ALIGN;
        } else {
            row_ = tok;
        }
    }

    __aicore__ inline void Ready() { rope_.Load(cos_, sin_, row_); }

    __aicore__ inline void Apply(const AscendC::LocalTensor<float>& x) { rope_.Apply(x); }

private:
    Rope<P> rope_;
    AscendC::GlobalTensor<bfloat16_t> cos_, sin_;
    uint32_t row_ = 0;
};

// The rows a step pools, in token order: request b's first boundary token (position p with
// (p + 1) mod RATIO == 0; only the first of a step, §4.2, §11.1) if its cmp slot is >= 0
// (a -1 slot discards the row, so it is not computed); with P::RING every boundary token
// whose cmp slot is >= 0. Both launches of a compressor walk the same list, so a row's
// place in it names the row: Load, Count, then Each over a block's share of them.
// The step's per-token metadata, which every core walks and each row's overlay scans from
// token 0, is staged in UB (UbTable): P::POSITIONS_BYTES, CMP_SLOTS_BYTES and, for the
// pooling, STATE_SLOTS_BYTES.
template <class P>
class PooledRows {
public:
    // The tables, from `pipe`; STATE_SLOTS: the state slots too (the pooling's overlay).
    template <bool STATE_SLOTS>
    __aicore__ inline void Load(AscendC::TPipe& pipe, GM_ADDR positionsGm, GM_ADDR cmpSlotsGm,
                                GM_ADDR stateSlotsGm, const TilingData& td)
    {
        positions.Init(pipe, P::POSITIONS_BYTES);
        cmpSlots.Init(pipe, P::CMP_SLOTS_BYTES);
        positions.Load(positionsGm, td.t);
        cmpSlots.Load(cmpSlotsGm, td.t);
        if constexpr (STATE_SLOTS) {
            stateSlots.Init(pipe, P::STATE_SLOTS_BYTES);
            stateSlots.Load(stateSlotsGm, td.t);
        } else {
            (void)stateSlotsGm;
        }
        Handshake<AscendC::HardEvent::MTE2_S>();
        requests_ = td.b;
    }

    __aicore__ inline uint32_t Count()
    {
        uint32_t n = 0;
        for (Restart(); Next();) {
            ++n;
        }
        return n;
    }

    __aicore__ inline void Restart()
    {
        b = 0;
        s_ = 0;
    }

    // f(row) at each row of [first, end) of the list, in order, with Next's fields set.
    template <class F>
    __aicore__ inline void Each(uint32_t first, uint32_t end, const F& f)
    {
        Restart();
        for (uint32_t row = 0; row < end && Next(); ++row) {
            if (row >= first) {
                f(row);
            }
        }
    }

    // The next row: request b, its first position p0, the boundary token tok at position
    // pos, its cmp slot.
    __aicore__ inline bool Next()
    {
        for (; b < requests_; ++b, s_ = 0) {
            const uint32_t tok0 = b * P::SEQ;
            if (s_ == 0) {
                p0 = static_cast<uint32_t>(positions.Get(tok0));
            }
            while (s_ < P::SEQ) {
                const uint32_t s = s_++;
                const uint32_t p = static_cast<uint32_t>(positions.Get(tok0 + s));
                if ((p + 1) % P::RATIO != 0) {
                    continue;
                }
                if (!P::RING) {
                    s_ = P::SEQ;  // only the first boundary
                }
                slot = cmpSlots.Get(tok0 + s);
                if (slot >= 0) {
                    tok = tok0 + s;
                    pos = p;
                    return true;
                }
            }
        }
        return false;
    }

    UbTable<int32_t> positions;
    UbTable<int64_t> cmpSlots, stateSlots;
    uint32_t b = 0, p0 = 0, tok = 0, pos = 0;
    int64_t slot = -1;

private:
    uint32_t requests_ = 0, s_ = 0;
};

// The pooling of one row's window (PooledRows), a CH-channel tile at a time. P: HD (pooled
// width), COFF (projection streams: 2 with overlap, else 1), RATIO, SEQ (tokens per
// request), STATE_BS (rows per state page), TABLE_W (state block-table width), RING (the
// state is a ring of TABLE_W pages per request), CH (channels per pooling tile), and the UB
// sizes the plan decided (`*_BYTES`, each at least what its use below needs).
template <class P>
class WindowPool {
    static constexpr uint32_t HD = P::HD;
    static constexpr uint32_t COFF = P::COFF;
    static constexpr uint32_t R = P::RATIO;
    static constexpr uint32_t SEQ = P::SEQ;
    static constexpr uint32_t BS = P::STATE_BS;
    static constexpr uint32_t CH = P::CH;
    static constexpr uint32_t OUT = COFF * HD;       // a projected row
    static constexpr uint32_t WIDTH = 2 * OUT;       // a state row: kv then score
    static constexpr uint32_t ENTRIES = COFF * R;    // pooled positions
    static constexpr uint32_t PAGES = ENTRIES / BS;  // whole state pages of the window
    static constexpr uint32_t FRONT_PAGES = (COFF - 1) * (R / BS);  // the previous window's
    static constexpr uint32_t TILE = ENTRIES * CH;   // one pooling tile
    static constexpr uint32_t REPEAT = 64;           // f32 lanes of one vector repeat
    static constexpr float NEG = -3.4028234663852886e38f;  // FP32_NEG_INF
    static_assert(COFF == 1 || COFF == 2, "one projection stream, or front and back");
    static_assert((ENTRIES & (ENTRIES - 1)) == 0 && ENTRIES <= 255, "halving trees over the entries; a repeat each");
    static_assert(R % BS == 0, "a window is whole state pages");
    static_assert(!P::RING || (P::TABLE_W * BS == ENTRIES && SEQ <= ENTRIES),
                  "a ring holds one window (2·RATIO rows) and a step's tokens");
    static_assert(BS <= 4095 && (WIDTH - CH) * sizeof(float) / BLOCK_BYTES <= 65535,
                  "a DataCopy of a state page's channels: at most 4095 rows, a 16-bit gap in blocks");
    static_assert(CH % (BLOCK_BYTES / sizeof(float)) == 0 && CH / (BLOCK_BYTES / sizeof(float)) <= 255 &&
                      (CH <= REPEAT || CH % REPEAT == 0) && HD % CH == 0,
                  "tiles of whole blocks, in whole repeats, dividing HD");
    static_assert(P::POOL_KV_BYTES >= TILE * sizeof(float) && P::POOL_SCORE_BYTES >= TILE * sizeof(float) &&
                      P::POOL_APE_BYTES >= TILE * sizeof(float),
                  "a pooling tile of kv, score and APE");
    static_assert(P::POOL_MAX_BYTES >= TILE / 2 * sizeof(float), "the column-max tree's first level");

public:
    static constexpr uint32_t TILES = HD / CH;  // pooling tiles of a row

    __aicore__ inline void Init(AscendC::TPipe& pipe, GM_ADDR kvp, GM_ADDR score, GM_ADDR ape, GM_ADDR stateTable,
                                GM_ADDR state)
    {
        kvp_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(kvp));
        score_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(score));
        ape_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(ape));
        table_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(stateTable));
        state_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(state));
        pipe.InitBuffer(poolKv_, P::POOL_KV_BYTES);
        pipe.InitBuffer(poolScore_, P::POOL_SCORE_BYTES);
        pipe.InitBuffer(poolApe_, P::POOL_APE_BYTES);
        pipe.InitBuffer(colMax_, P::POOL_MAX_BYTES);
    }

    // The state pages of `row`'s window and the step's writers of their rows (its state
    // slots of requests 0..b).
    __aicore__ inline void Window(PooledRows<P>& row)
    {
        const uint32_t b = row.b, tok0 = b * SEQ;
        if constexpr (P::RING) {
            // The window e − ENTRIES + 1 .. e from the ring pages of its positions, the
            // positions from p0 on from this step's tokens.
            const int64_t first = int64_t(row.pos) + 1 - ENTRIES;  // a multiple of BS: R % BS == 0
            for (uint32_t p = 0; p < PAGES; ++p) {
                const int64_t q = first + int64_t(p * BS);
                pages_[p] = q < 0 ? -1
                                  : table_.GetValue(uint64_t(b) * P::TABLE_W + uint64_t(q % (P::TABLE_W * BS)) / BS);
            }
            overlay_.BuildOwn(first, row.p0, tok0);
        } else {
            // The window's first page; pages before position 0 are absent.
            const int64_t first = int64_t((row.pos + 1) / BS) - PAGES;
            for (uint32_t p = 0; p < PAGES; ++p) {
                const int64_t page = first + p;
                pages_[p] = page < 0 ? -1 : table_.GetValue(uint64_t(b) * P::TABLE_W + uint64_t(page));
            }
            overlay_.Build(row.stateSlots, tok0 + SEQ, pages_);
        }
    }

    // Channels [c0, c0 + CH) of `row`'s window (Window): Σ kv·e / Σ e into `out` (CH f32),
    // after the caller's work on `out` before it (the vector unit's order).
    __aicore__ inline void Tile(const PooledRows<P>& row, uint32_t c0, const AscendC::LocalTensor<float>& out)
    {
        AscendC::LocalTensor<float> kv = poolKv_.Get<float>();
        AscendC::LocalTensor<float> sc = poolScore_.Get<float>();
        AscendC::LocalTensor<float> ape = poolApe_.Get<float>();
        // Page p's BS rows: CH channels of each, the rest of the state row skipped; a row this
        // step's requests 0..b write comes from the writer's projections and APE row.
        const AscendC::DataCopyParams rows(BS, BlocksOf<float>(CH), BlocksOf<float>(WIDTH - CH), 0);
        for (uint32_t p = 0; p < PAGES; ++p) {
            if (pages_[p] < 0) {
                AscendC::Duplicate(kv[p * BS * CH], 0.0f, BS * CH);
                AscendC::Duplicate(sc[p * BS * CH], NEG, BS * CH);
                continue;
            }
            const uint32_t col = Half(p) + c0;
            const uint64_t base = uint64_t(static_cast<uint32_t>(pages_[p])) * BS * WIDTH + col;
            if (!overlay_.Touched(p)) {
                AscendC::DataCopy(kv[p * BS * CH], state_[base], rows);
                AscendC::DataCopy(sc[p * BS * CH], state_[base + OUT], rows);
                continue;
            }
            for (uint32_t r = 0; r < BS; ++r) {
                const uint32_t at = (p * BS + r) * CH;
                const int32_t w = overlay_.Writer(p, r);
                if (w < 0) {
                    AscendC::DataCopy(kv[at], state_[base + r * WIDTH], CH);
                    AscendC::DataCopy(sc[at], state_[base + r * WIDTH + OUT], CH);
                    continue;
                }
                const uint32_t apeRow = static_cast<uint32_t>(row.positions.Get(w)) % R;
                AscendC::DataCopy(kv[at], kvp_[uint64_t(w) * OUT + col], CH);
                AscendC::DataCopy(sc[at], score_[uint64_t(w) * OUT + col], CH);
                AscendC::DataCopy(ape[at], ape_[uint64_t(apeRow) * OUT + col], CH);
            }
        }
        Handshake<AscendC::HardEvent::MTE2_V>();
        for (uint32_t p = 0; p < PAGES; ++p) {
            if (pages_[p] < 0 || !overlay_.Touched(p)) {
                continue;
            }
            for (uint32_t r = 0; r < BS; ++r) {
                if (overlay_.Writer(p, r) >= 0) {
                    const uint32_t at = (p * BS + r) * CH;
                    AscendC::Add(sc[at], sc[at], ape[at], CH);
                }
            }
        }
        // Column max: halving tree over the entries.
        AscendC::LocalTensor<float> mx = colMax_.Get<float>();
        AscendC::Max(mx, sc, sc[TILE / 2], TILE / 2);
        for (uint32_t n = TILE / 2; n > CH; n /= 2) {
            AscendC::Max(mx, mx, mx[n / 2], n / 2);
        }
        // e = exp(s − max) entry by entry (the max row repeated: src1 repeat stride 0), one
        // repeat of channels at a time.
        const uint32_t rowBlocks = BlocksOf<float>(CH);
        for (uint32_t c = 0; c < CH; c += REPEAT) {
            AscendC::Sub(sc[c], sc[c], mx[c], Min(CH - c, REPEAT), ENTRIES,
                         AscendC::BinaryRepeatParams(1, 1, 1, rowBlocks, rowBlocks, 0));
        }
        AscendC::Exp(sc, sc, TILE);
        AscendC::Mul(kv, kv, sc, TILE);
        for (uint32_t n = TILE; n > CH; n /= 2) {
            AscendC::Add(kv, kv, kv[n / 2], n / 2);
            AscendC::Add(sc, sc, sc[n / 2], n / 2);
        }
        AscendC::Div(out, kv, sc, CH);
        // The next tile's loads overwrite kv and sc.
        Handshake<AscendC::HardEvent::V_MTE2>();
    }

private:
    // The column of page p's entries within a projected row: front halves for the
    // previous window's pages, back halves for the current window's.
    __aicore__ inline static uint32_t Half(uint32_t p) { return p < FRONT_PAGES ? 0 : OUT - HD; }

    AscendC::TBuf<AscendC::TPosition::VECCALC> poolKv_, poolScore_, poolApe_, colMax_;
    StateOverlay<PAGES, BS> overlay_;
    int32_t pages_[PAGES];
    AscendC::GlobalTensor<float> kvp_, score_, ape_, state_;
    AscendC::GlobalTensor<int32_t> table_;
};

// The finish of one pooled row: RMSNorm with norm_w (x · 1/sqrt(Σx²/HD + EPS), then · w), the
// forward interleaved rotation of the last RD dims (CompressedRope), bf16 RNE into cmp_kv
// row cmp_slot_mapping[boundary token]. TO_TOKEN (the index-key compressor, §4.5 end): the
// row goes to row b·SEQ (the request's first token; with RING the boundary token's row) of
// `cmpKv`, a [t, HD] workspace, for the Hadamard product that follows on the cube; the slot
// mapping (idx_slot_mapping) still decides whether there is a row. P: HD, SEQ, RING (as
// WindowPool), RD (rope dims), EPS, INV_HD, CMP_ROPE (and ROPE_ALIGN for
// CMP_ROPE_POSITION; CompressedRope), and the UB sizes the plan decided.
template <class P, bool TO_TOKEN>
class RowFinish {
    static constexpr uint32_t HD = P::HD;
    static constexpr uint32_t RD = P::RD;
    static constexpr uint32_t LANES = BLOCK_BYTES / sizeof(float);
    static_assert(!P::RING || P::CMP_ROPE == CMP_ROPE_TOKEN, "the ring rotates at the boundary token's row");
    static_assert(RD / 2 % LANES == 0 && (HD - RD) % LANES == 0, "rope rows and slice in whole blocks");
    static_assert(HD % 16 == 0, "bf16 output rows in whole blocks");
    static_assert(P::SQUARES_BYTES >= HD * sizeof(float), "the row's squares");
    static_assert(P::REDUCE_TMP_BYTES >= AlignUp(CeilDiv(HD, 64), LANES) * sizeof(float), "ReduceSum scratch of a row");
    static_assert(P::NORM_W_BYTES >= HD * sizeof(float) && P::NORM_W_IN_BYTES >= HD * sizeof(bfloat16_t),
                  "norm_w widened, and as read");
    static_assert(P::CMP_OUT_BYTES >= HD * sizeof(bfloat16_t), "the bf16 row out");
    static_assert(P::SCALARS_BYTES >= 2 * LANES * sizeof(float), "inv and a block of ones");

public:
    // Its buffers; norm_w widened once.
    __aicore__ inline void Init(AscendC::TPipe& pipe, GM_ADDR normW, GM_ADDR cos, GM_ADDR sin, GM_ADDR cmpKv)
    {
        cmpKv_.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(cmpKv));
        pipe.InitBuffer(work_, P::SQUARES_BYTES);
        pipe.InitBuffer(reduceTmp_, P::REDUCE_TMP_BYTES);
        pipe.InitBuffer(normW_, P::NORM_W_BYTES);
        pipe.InitBuffer(normWIn_, P::NORM_W_IN_BYTES);
        pipe.InitBuffer(out_, P::CMP_OUT_BYTES);
        pipe.InitBuffer(scalar_, P::SCALARS_BYTES);
        rope_.Init(pipe, cos, sin);
        AscendC::GlobalTensor<bfloat16_t> w;
        w.SetGlobalBuffer(reinterpret_cast<__gm__ bfloat16_t*>(normW));
        AscendC::LocalTensor<bfloat16_t> wIn = normWIn_.Get<bfloat16_t>();
        AscendC::DataCopy(wIn, w, HD);
        Handshake<AscendC::HardEvent::MTE2_V>();
        AscendC::Cast(normW_.Get<float>(), wIn, AscendC::RoundMode::CAST_NONE, HD);
        AscendC::Duplicate(scalar_.Get<float>()[LANES], 1.0f, LANES);
        // The rotation's gather offsets (rope_.Init) before its first tables.
        ScalarToVector();
    }

    // Starts `row`'s rope loads.
    __aicore__ inline void Fetch(const PooledRows<P>& row) { rope_.Fetch(row.b, row.p0, row.tok); }

    // `row` (x: its HD f32 in UB, the vector unit's to read): normalised, rotated, bf16 out.
    __aicore__ inline void Row(const PooledRows<P>& row, const AscendC::LocalTensor<float>& x)
    {
        const uint64_t dest = !TO_TOKEN ? static_cast<uint64_t>(row.slot) : P::RING ? row.tok : row.b * P::SEQ;
        AscendC::LocalTensor<float> sq = work_.Get<float>();
        AscendC::LocalTensor<float> inv = scalar_.Get<float>();
        AscendC::Mul(sq, x, x, HD);
        AscendC::ReduceSum(inv, sq, reduceTmp_.Get<float>(), HD);
        AscendC::Muls(inv, inv, P::INV_HD, 1);
        AscendC::Adds(inv, inv, P::EPS, 1);
        AscendC::Sqrt(inv, inv, 1);
        AscendC::Div(inv, inv[LANES], inv, 1);
        VectorToScalar();
        AscendC::Muls(x, x, inv.GetValue(0), HD);
        AscendC::Mul(x, x, normW_.Get<float>(), HD);
        rope_.Ready();
        rope_.Apply(x[HD - RD]);
        AscendC::LocalTensor<bfloat16_t> out = out_.Get<bfloat16_t>();
        AscendC::Cast(out, x, AscendC::RoundMode::CAST_RINT, HD);
        Handshake<AscendC::HardEvent::V_MTE3>();
        AscendC::DataCopy(cmpKv_[dest * HD], out, HD);
        // The next row's loads and vector work reuse these buffers.
        Handshake<AscendC::HardEvent::MTE3_V>();
        Handshake<AscendC::HardEvent::V_MTE2>();
    }

private:
    AscendC::TBuf<AscendC::TPosition::VECCALC> work_, reduceTmp_, normW_, normWIn_, out_, scalar_;
    CompressedRope<P> rope_;
    AscendC::GlobalTensor<bfloat16_t> cmpKv_;
};

// The pooling launch: work items are (pooled row, CH-channel tile) pairs, dealt to the
// blocks in contiguous runs, so one row's tiles pool on several cores; each tile goes to
// its row's HD f32 columns of `pooled` (a [t, HD] workspace row per boundary token) for
// CompressorFinish. P: WindowPool's, and the UB sizes of the token tables and the tile out.
// Its blocks: OwnBlocks<P> (optional BLOCK_BASE, BLOCKS: a range of the launch's,
// dsv4/together.h).
template <class P>
class CompressorPool {
    static constexpr uint32_t TILES = WindowPool<P>::TILES;
    static_assert(P::POOLED_BYTES >= P::CH * sizeof(float), "a tile of the pooled row");

public:
    __aicore__ inline static void Run(GM_ADDR kvp, GM_ADDR score, GM_ADDR ape, GM_ADDR positions,
                                      GM_ADDR stateSlots, GM_ADDR cmpSlots, GM_ADDR stateTable, GM_ADDR state,
                                      GM_ADDR pooled, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        CompressorPool op;
        op.rows_.template Load<true>(op.pipe_, positions, cmpSlots, stateSlots, td);
        const Share share = OwnBlocks<P>::Of(op.rows_.Count() * TILES);
        if (share.begin >= share.end) {
            return;
        }
        op.pool_.Init(op.pipe_, kvp, score, ape, stateTable, state);
        op.pipe_.InitBuffer(op.tileOut_, P::POOLED_BYTES);
        op.pooled_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(pooled));
        op.Items(share);
    }

private:
    // Items [share.begin, share.end): a row's window once per row.
    __aicore__ inline void Items(const Share& share)
    {
        AscendC::LocalTensor<float> out = tileOut_.Get<float>();
        rows_.Each(share.begin / TILES, CeilDiv(share.end, TILES), [&](uint32_t row) {
            const uint32_t first = share.begin > row * TILES ? share.begin : row * TILES;
            const uint32_t last = Min(share.end, (row + 1) * TILES);
            pool_.Window(rows_);
            for (uint32_t i = first; i < last; ++i) {
                const uint32_t c0 = (i - row * TILES) * P::CH;
                // The tile before is out before this one takes its buffer.
                Handshake<AscendC::HardEvent::MTE3_V>();
                pool_.Tile(rows_, c0, out);
                Handshake<AscendC::HardEvent::V_MTE3>();
                AscendC::DataCopy(pooled_[uint64_t(rows_.tok) * P::HD + c0], out, P::CH);
            }
        });
    }

    AscendC::TPipe pipe_;
    PooledRows<P> rows_;
    WindowPool<P> pool_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> tileOut_;
    AscendC::GlobalTensor<float> pooled_;
};

// The finish launch: one pooled row per work item (it needs the whole row), dealt to the
// blocks in contiguous runs, read from `pooled` and finished (RowFinish). P: RowFinish's,
// and the UB sizes of the token tables and the row. Its blocks: OwnBlocks<P>.
template <class P, bool TO_TOKEN = false>
class CompressorFinish {
    static_assert(P::POOLED_BYTES >= P::HD * sizeof(float), "the pooled row");

public:
    __aicore__ inline static void Run(GM_ADDR pooled, GM_ADDR normW, GM_ADDR cos, GM_ADDR sin, GM_ADDR positions,
                                      GM_ADDR cmpSlots, GM_ADDR cmpKv, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        CompressorFinish op;
        op.rows_.template Load<false>(op.pipe_, positions, cmpSlots, nullptr, td);
        const Share share = OwnBlocks<P>::Of(op.rows_.Count());
        if (share.begin >= share.end) {
            return;
        }
        op.finish_.Init(op.pipe_, normW, cos, sin, cmpKv);
        op.pipe_.InitBuffer(op.pooledRow_, P::POOLED_BYTES);
        AscendC::GlobalTensor<float> rows;
        rows.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(pooled));
        AscendC::LocalTensor<float> x = op.pooledRow_.Get<float>();
        op.rows_.Each(share.begin, share.end, [&](uint32_t) {
            op.finish_.Fetch(op.rows_);
            AscendC::DataCopy(x, rows[uint64_t(op.rows_.tok) * P::HD], P::HD);
            Handshake<AscendC::HardEvent::MTE2_V>();
            op.finish_.Row(op.rows_, x);
        });
    }

private:
    AscendC::TPipe pipe_;
    PooledRows<P> rows_;
    RowFinish<P, TO_TOKEN> finish_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> pooledRow_;
};

// The index-key compressor's finish: its rows at the requests' first tokens.
template <class P>
using CompressorFinishToToken = CompressorFinish<P, true>;

// Both in one launch (the finish taking the pooling as its prologue, where a row is one
// tile and spreading tiles gains nothing): one pooled row per work item, pooled into UB and
// finished there. P: WindowPool's and RowFinish's, and the UB sizes of the token tables and
// the row. Its blocks: OwnBlocks<P>.
template <class P, bool TO_TOKEN = false>
class CompressorPoolFinish {
    static constexpr uint32_t TILES = WindowPool<P>::TILES;
    static_assert(P::POOLED_BYTES >= P::HD * sizeof(float), "the pooled row");

public:
    __aicore__ inline static void Run(GM_ADDR kvp, GM_ADDR score, GM_ADDR ape, GM_ADDR positions,
                                      GM_ADDR stateSlots, GM_ADDR cmpSlots, GM_ADDR stateTable, GM_ADDR state,
                                      GM_ADDR normW, GM_ADDR cos, GM_ADDR sin, GM_ADDR cmpKv, GM_ADDR workspace,
                                      GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        CompressorPoolFinish op;
        op.rows_.template Load<true>(op.pipe_, positions, cmpSlots, stateSlots, td);
        const Share share = OwnBlocks<P>::Of(op.rows_.Count());
        if (share.begin >= share.end) {
            return;
        }
        op.pool_.Init(op.pipe_, kvp, score, ape, stateTable, state);
        op.finish_.Init(op.pipe_, normW, cos, sin, cmpKv);
        op.pipe_.InitBuffer(op.pooledRow_, P::POOLED_BYTES);
        AscendC::LocalTensor<float> x = op.pooledRow_.Get<float>();
        op.rows_.Each(share.begin, share.end, [&](uint32_t) {
            op.finish_.Fetch(op.rows_);
            op.pool_.Window(op.rows_);
            for (uint32_t c = 0; c < TILES; ++c) {
                op.pool_.Tile(op.rows_, c * P::CH, x[c * P::CH]);
            }
            op.finish_.Row(op.rows_, x);
        });
    }

private:
    AscendC::TPipe pipe_;
    PooledRows<P> rows_;
    WindowPool<P> pool_;
    RowFinish<P, TO_TOKEN> finish_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> pooledRow_;
};

template <class P>
using CompressorPoolFinishToToken = CompressorPoolFinish<P, true>;

// P: HD, COFF, RATIO, SEQ (as CompressorPool), and the UB sizes the plan decided (`*_BYTES`, each
// at least what its use below needs); its blocks as CompressorPool's.
template <class P>
class CompressorCommit {
    static constexpr uint32_t OUT = P::COFF * P::HD;  // a projected row
    static constexpr uint32_t SEQ = P::SEQ;
    static constexpr uint32_t WIDTH = 2 * OUT;  // a state row: kv then score
    static_assert(P::KV_ROWS_BYTES >= SEQ * OUT * sizeof(float) && P::SCORE_ROWS_BYTES >= SEQ * OUT * sizeof(float) &&
                      P::APE_ROWS_BYTES >= SEQ * OUT * sizeof(float),
                  "a request's rows of kvp, score and APE");

public:
    __aicore__ inline static void Run(GM_ADDR kvp, GM_ADDR score, GM_ADDR ape, GM_ADDR positions,
                                      GM_ADDR stateSlots, GM_ADDR state, GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        const TilingData td = LoadTiling(tiling);
        const Share share = OwnBlocks<P>::Of(td.b);
        if (share.begin >= share.end) {
            return;
        }
        CompressorCommit op;
        op.Init(kvp, score, ape, positions, stateSlots, state);
        for (uint32_t b = share.begin; b < share.end; ++b) {
            op.Request(b * SEQ);
        }
    }

private:
    __aicore__ inline void Init(GM_ADDR kvp, GM_ADDR score, GM_ADDR ape, GM_ADDR positions, GM_ADDR stateSlots,
                                GM_ADDR state)
    {
        kvp_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(kvp));
        score_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(score));
        ape_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(ape));
        positions_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(positions));
        stateSlots_.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(stateSlots));
        state_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(state));
        pipe_.InitBuffer(kvRows_, P::KV_ROWS_BYTES);
        pipe_.InitBuffer(scoreRows_, P::SCORE_ROWS_BYTES);
        pipe_.InitBuffer(apeRows_, P::APE_ROWS_BYTES);
    }

    // The state rows of the request's SEQ tokens from token tok0.
    __aicore__ inline void Request(uint32_t tok0)
    {
        AscendC::LocalTensor<float> kv = kvRows_.Get<float>();
        AscendC::LocalTensor<float> sc = scoreRows_.Get<float>();
        AscendC::LocalTensor<float> ape = apeRows_.Get<float>();
        // The previous request's rows are out before these buffers take the next ones.
        Handshake<AscendC::HardEvent::MTE3_MTE2>();
        AscendC::DataCopy(kv, kvp_[uint64_t(tok0) * OUT], SEQ * OUT);
        AscendC::DataCopy(sc, score_[uint64_t(tok0) * OUT], SEQ * OUT);
        for (uint32_t s = 0; s < SEQ; ++s) {
            const uint32_t row = static_cast<uint32_t>(positions_.GetValue(tok0 + s)) % P::RATIO;
            AscendC::DataCopy(ape[s * OUT], ape_[uint64_t(row) * OUT], OUT);
        }
        Handshake<AscendC::HardEvent::MTE2_V>();
        AscendC::Add(sc, sc, ape, SEQ * OUT);
        Handshake<AscendC::HardEvent::V_MTE3>();
        for (uint32_t s = 0; s < SEQ; ++s) {
            const int64_t slot = stateSlots_.GetValue(tok0 + s);
            if (slot < 0) {
                continue;
            }
            const uint64_t row = static_cast<uint64_t>(slot) * WIDTH;
            AscendC::DataCopy(state_[row], kv[s * OUT], OUT);
            AscendC::DataCopy(state_[row + OUT], sc[s * OUT], OUT);
        }
    }

    AscendC::TPipe pipe_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> kvRows_, scoreRows_, apeRows_;
    AscendC::GlobalTensor<float> kvp_, score_, ape_, state_;
    AscendC::GlobalTensor<int32_t> positions_;
    AscendC::GlobalTensor<int64_t> stateSlots_;
};

}  // namespace dsv4
