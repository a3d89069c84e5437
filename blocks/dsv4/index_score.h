// Cube side of the lightning indexer's scores (hca_csa.md §5.4), AIC only: ScoreCube (also
// the cube half of dsv4/index_leaves.h) and the IndexScores kernel, whose blocks take runs
// of (request, KEY_ROWS key load) items of about equal key rows. Per request b with
// V_b = min(kv_seq_lens[b] / RATIO, CAP) visible compressed rows:
// the request's SEQ·HEADS int8 index-query rows stay in L1; its keys (row j at
// idx_block_table[b, j / BLOCK_SIZE]·BLOCK_SIZE + j % BLOCK_SIZE of the int8 index-key cache)
// stream through L1 in whole pages, KEY_ROWS at a time, each gathered once for all tokens of
// the request; and
//   raw[b·SEQ·HEADS + r, j] = ReLU(Σ_d q_i8[r, d] · k_i8[j, d])      (int32, exact)
// for j < V_b rounded up to whole pages (the rest of the last page is real pool rows; the
// vector side pads past each token's own count). The ReLU is Fixpipe's: the dequant scale
// q_s > 0 commutes with it, ReLU(q_s · raw) = q_s · ReLU(raw).
// Layouts (see the sim's cube.h): L1 holds NZ column blocks of 32 int8 (ND2NZ); L0A wants
// (m block, k block) fractals; L0B (k block, n block) fractals of n rows, which is how the
// keys [rows, HEAD_DIM] already sit in L1 (matmul.h's B [N, K] case).
#pragma once

#include "dsv4/pipe_sync.h"
#include "dsv4/scalar_stream.h"
#include "dsv4/tiling_data.h"
#include "dsv4/vec_common.h"

namespace dsv4 {

// The candidates of request b (§5.4): V_b = min(kv_seq_lens[b] / RATIO, CAP). `lens` is not
// const: GlobalTensor::GetValue is a non-const member (rope.h RopeRow).
template <class P>
__aicore__ inline uint32_t RequestRows(AscendC::GlobalTensor<int32_t>& lens, uint32_t b)
{
    const int32_t len = lens.GetValue(b);
    return Min(len > 0 ? static_cast<uint32_t>(len) / P::RATIO : 0u, P::CAP);
}

// The candidates token t sees: min(V_b, (p_t + 1) / RATIO), b = t / SEQ.
template <class P>
__aicore__ inline uint32_t VisibleRows(AscendC::GlobalTensor<int32_t>& lens, AscendC::GlobalTensor<int32_t>& positions,
                                       uint32_t t)
{
    const int32_t next = positions.GetValue(t) + 1;
    return Min(RequestRows<P>(lens, t / P::SEQ), next > 0 ? static_cast<uint32_t>(next) / P::RATIO : 0u);
}

// The cube work of the scores, for the kernels that use it (IndexScores below, IndexLeaves in
// dsv4/index_leaves.h). P: HEADS, HEAD_DIM, SEQ, BLOCK_SIZE (rows per index-cache page),
// TILE_M (query rows per Mmad), TILE_N (key rows per Mmad), TILE_K (head dims per Mmad),
// KEY_ROWS (keys per L1 load), and the L1 and L0 sizes the plan decided (`*_BYTES`, each at
// least what its use below needs). GM: idx_q [t, HEADS·HEAD_DIM] i8, idx_kv_cache
// [pages·BLOCK_SIZE, HEAD_DIM] i8, idx_block_table [b, idx_tw] i32.
template <class P>
class ScoreCube {
    static constexpr uint32_t C0 = 32;    // int8 columns of a fractal
    static constexpr uint32_t FRAC = 512; // int8 elements of a fractal (16 x 32)
    static constexpr uint32_t KEY_BLOCKS = P::KEY_ROWS / 16;

public:
    static constexpr uint32_t ROWS = P::SEQ * P::HEADS;  // a request's query rows
    static constexpr uint32_t ROWS_PAD = AlignUp(ROWS, 16);
    static_assert(P::HEAD_DIM % C0 == 0 && P::TILE_K % C0 == 0 && P::HEAD_DIM % P::TILE_K == 0,
                  "TILE_K: whole int8 fractals dividing HEAD_DIM");
    static_assert(P::TILE_M % 16 == 0 && ROWS % P::TILE_M == 0, "TILE_M: whole fractals dividing SEQ*HEADS");
    static_assert(P::TILE_N % 16 == 0 && P::KEY_ROWS % P::TILE_N == 0, "TILE_N: whole fractals dividing KEY_ROWS");
    static_assert(P::KEY_ROWS % P::BLOCK_SIZE == 0 && P::BLOCK_SIZE % 16 == 0, "key loads are whole pages");
    static_assert(P::HEAD_DIM <= 65535 && ROWS_PAD <= 16384 && P::KEY_ROWS <= 16384,
                  "ND2NZ: a 16-bit source row, at most 16384 rows and NZ row stride");
    static_assert(P::Q_L1_BYTES >= ROWS_PAD * P::HEAD_DIM, "q_l1 holds a request's query rows");
    static_assert(P::KEYS_L1_BYTES >= P::KEY_ROWS * P::HEAD_DIM, "keys_l1 holds KEY_ROWS keys");
    static_assert(P::A_L0_BYTES >= P::TILE_M * P::TILE_K && P::B_L0_BYTES >= P::TILE_K * P::TILE_N &&
                      P::C_L0_BYTES >= P::TILE_M * P::TILE_N * sizeof(int32_t),
                  "L0 tiles");

    __aicore__ inline void Init(AscendC::TPipe& pipe, GM_ADDR q, GM_ADDR keys, GM_ADDR table, const TilingData& td)
    {
        q_.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t*>(q));
        keys_.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t*>(keys));
        table_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(table));
        pages_ = td.idx_nb;
        tableWidth_ = td.idx_tw;
        pipe.InitBuffer(qL1_, 1, P::Q_L1_BYTES);
        pipe.InitBuffer(keysL1_, 2, P::KEYS_L1_BYTES);
        pipe.InitBuffer(aL0_, 2, P::A_L0_BYTES);
        pipe.InitBuffer(bL0_, 2, P::B_L0_BYTES);
        pipe.InitBuffer(cL0_, 2, P::C_L0_BYTES);
    }

    // Request b's query rows into L1, held until the next Query or Release.
    __aicore__ inline void Query(uint32_t b)
    {
        Release();
        qHeld_ = qL1_.AllocTensor<int8_t>();
        AscendC::DataCopy(qHeld_, q_[static_cast<uint64_t>(b) * ROWS * P::HEAD_DIM],
                          AscendC::Nd2NzParams(1, ROWS, P::HEAD_DIM, 0, P::HEAD_DIM, ROWS_PAD, 1, 0));
        qL1_.EnQue(qHeld_);
        qHeld_ = qL1_.DeQue<int8_t>();
        held_ = true;
    }

    __aicore__ inline void Release()
    {
        if (held_) {
            qL1_.FreeTensor(qHeld_);
            held_ = false;
        }
    }

    // raw[r, j] = ReLU(Σ_d q_i8[r, d] · k_i8[begin + j, d]) for the query rows r of the held
    // request b and its keys begin .. begin + rows (`rows` whole pages from a page start),
    // into dst (row r at dst[r · stride]).
    __aicore__ inline void Keys(uint32_t b, uint32_t begin, uint32_t rows, const AscendC::GlobalTensor<int32_t>& dst,
                                uint32_t stride)
    {
        for (uint32_t c0 = 0; c0 < rows; c0 += P::KEY_ROWS) {
            const uint32_t keyRows = Min(P::KEY_ROWS, rows - c0);
            AscendC::LocalTensor<int8_t> k = LoadKeys(b, begin + c0, keyRows);
            for (uint32_t m0 = 0; m0 < ROWS; m0 += P::TILE_M) {
                const uint64_t out = static_cast<uint64_t>(m0) * stride + c0;
                for (uint32_t n0 = 0; n0 < keyRows; n0 += P::TILE_N) {
                    Tile(k, m0, n0, Min(P::TILE_N, keyRows - n0), dst[out + n0], stride);
                }
            }
            keysL1_.FreeTensor(k);
        }
    }

private:
    // Keys c0 .. c0 + keyRows of request b (whole pages) into an NZ tile of KEY_ROWS-row
    // column blocks.
    __aicore__ inline AscendC::LocalTensor<int8_t> LoadKeys(uint32_t b, uint32_t c0, uint32_t keyRows)
    {
        AscendC::LocalTensor<int8_t> k = keysL1_.AllocTensor<int8_t>();
        for (uint32_t r = 0; r < keyRows; r += P::BLOCK_SIZE) {
            const uint32_t logical = (c0 + r) / P::BLOCK_SIZE;
            ascendc_assert(logical < tableWidth_);
            const int32_t page = table_.GetValue(static_cast<uint64_t>(b) * tableWidth_ + logical);
            ascendc_assert(page >= 0 && static_cast<uint32_t>(page) < pages_);
            AscendC::DataCopy(k[r * C0], keys_[static_cast<uint64_t>(page) * P::BLOCK_SIZE * P::HEAD_DIM],
                              AscendC::Nd2NzParams(1, P::BLOCK_SIZE, P::HEAD_DIM, 0, P::HEAD_DIM, P::KEY_ROWS, 1, 0));
        }
        keysL1_.EnQue(k);
        return keysL1_.DeQue<int8_t>();
    }

    // dst[TILE_M, nLen] (row stride `stride`) = ReLU(q rows m0.. · keys n0..ᵀ), over HEAD_DIM in
    // TILE_K steps through L0A/L0B and one L0C tile.
    __aicore__ inline void Tile(const AscendC::LocalTensor<int8_t>& k, uint32_t m0, uint32_t n0, uint32_t nLen,
                                const AscendC::GlobalTensor<int32_t>& dst, uint32_t stride)
    {
        const AscendC::LocalTensor<int8_t>& q = qHeld_;
        constexpr uint32_t M_BLOCKS = P::TILE_M / 16;
        constexpr uint32_t K_BLOCKS = P::TILE_K / C0;
        constexpr uint32_t ROW_BLOCKS = ROWS_PAD / 16;
        const uint32_t nBlocks = nLen / 16;
        AscendC::LocalTensor<int32_t> c = cL0_.AllocTensor<int32_t>();
        for (uint32_t k0 = 0; k0 < P::HEAD_DIM; k0 += P::TILE_K) {
            const uint32_t kb0 = k0 / C0;
            AscendC::LocalTensor<int8_t> a2 = aL0_.AllocTensor<int8_t>();
            AscendC::LocalTensor<int8_t> b2 = bL0_.AllocTensor<int8_t>();
            // L0A: (m block, k block) fractals row-major; L1 holds them column-major.
            for (uint32_t mb = 0; mb < M_BLOCKS; ++mb) {
                AscendC::LoadData(a2[mb * K_BLOCKS * FRAC], q,
                                  AscendC::LoadData2DParams(kb0 * ROW_BLOCKS + m0 / 16 + mb, K_BLOCKS, ROW_BLOCKS, 0, 0,
                                                            false, 0));
            }
            // L0B: k block kb's nBlocks fractals of key rows, consecutive in L1.
            for (uint32_t kb = 0; kb < K_BLOCKS; ++kb) {
                AscendC::LoadData(b2[kb * nBlocks * FRAC], k,
                                  AscendC::LoadData2DParams((kb0 + kb) * KEY_BLOCKS + n0 / 16, nBlocks, 1, 0, 0, false,
                                                            0));
            }
            aL0_.EnQue(a2);
            bL0_.EnQue(b2);
            a2 = aL0_.DeQue<int8_t>();
            b2 = bL0_.DeQue<int8_t>();
            if (k0 > 0) {
                BeforeAccumulatingMmad(P::TILE_M, nLen);
            }
            AscendC::Mmad(c, a2, b2, AscendC::MmadParams(P::TILE_M, nLen, P::TILE_K, 0, false, k0 == 0));
            aL0_.FreeTensor(a2);
            bL0_.FreeTensor(b2);
        }
        cL0_.EnQue(c);
        c = cL0_.DeQue<int32_t>();
        AscendC::Fixpipe(dst, c, AscendC::FixpipeParamsV220(nLen, P::TILE_M, P::TILE_M, stride, true));
        cL0_.FreeTensor(c);
    }

    AscendC::TQue<AscendC::TPosition::A1, 1> qL1_;
    AscendC::TQue<AscendC::TPosition::B1, 1> keysL1_;
    AscendC::TQue<AscendC::TPosition::A2, 1> aL0_;
    AscendC::TQue<AscendC::TPosition::B2, 1> bL0_;
    AscendC::TQue<AscendC::TPosition::CO1, 1> cL0_;
    AscendC::GlobalTensor<int8_t> q_, keys_;
    AscendC::GlobalTensor<int32_t> table_;
    AscendC::LocalTensor<int8_t> qHeld_;
    bool held_ = false;
    uint32_t pages_ = 0;
    uint32_t tableWidth_ = 0;
};

// Per request b with V_b = min(kv_seq_lens[b] / RATIO, CAP) visible rows, its raw rows of
// all V_b keys (rounded up to whole pages) into raw [t, HEADS, STRIDE]. The work items are
// the (request, key load) pairs in request order, dealt over the blocks in contiguous runs
// of about equal length: a long request's loads spread over several blocks, short requests
// share one, so the blocks finish together whatever the mix of context lengths. P:
// ScoreCube's, RATIO, CAP (candidate rows per request), STRIDE (raw row length: CAP in
// whole pages). GM: kv_seq_lens [b] i32, raw [t, HEADS, STRIDE] i32.
template <class P>
class IndexScores {
    static_assert(P::STRIDE % P::BLOCK_SIZE == 0 && P::STRIDE >= P::CAP, "raw rows hold CAP in whole pages");

public:
    __aicore__ inline static void Run(GM_ADDR q, GM_ADDR kvSeqLens, GM_ADDR keys, GM_ADDR table, GM_ADDR raw,
                                      GM_ADDR workspace, GM_ADDR tiling)
    {
        (void)workspace;
        AskFirstLines(kvSeqLens, table);
        const TilingData td = LoadTiling(tiling);
        AscendC::GlobalTensor<int32_t> lens, out;
        lens.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(kvSeqLens));
        out.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(raw));
        uint32_t items = 0;
        for (uint32_t b = 0; b < td.b; ++b) {
            items += Loads(lens, b);
        }
        // An item's Fixpipe writes its ROWS query rows by its key rows, so items weigh their
        // key rows (a short request's single load is a fraction of a full one), and a
        // request's first item its query load besides (about a page's worth).
        uint32_t req = 0, reqFirst = 0, reqRows = 0;  // item u's request, its first item, its key rows
        const auto weight = [&](uint32_t u) {
            if (u == 0) {
                req = 0;
                reqFirst = 0;
                reqRows = Rows(lens, 0);
            }
            while (u >= reqFirst + CeilDiv(reqRows, P::KEY_ROWS)) {
                reqFirst += CeilDiv(reqRows, P::KEY_ROWS);
                reqRows = Rows(lens, ++req);
            }
            const uint32_t at = (u - reqFirst) * P::KEY_ROWS;
            return uint64_t(Min(P::KEY_ROWS, reqRows - at)) + (at == 0 ? P::BLOCK_SIZE : 0u);
        };
        const Share share = WeightedShare(items, static_cast<uint32_t>(AscendC::GetBlockIdx()),
                                          static_cast<uint32_t>(AscendC::GetBlockNum()), weight);
        if (share.begin >= share.end) {
            return;
        }
        AscendC::TPipe pipe;
        ScoreCube<P> cube;
        cube.Init(pipe, q, keys, table, td);
        uint32_t first = 0;  // request b's first item
        for (uint32_t b = 0; b < td.b && first < share.end; ++b) {
            const uint32_t rows = Rows(lens, b), loads = CeilDiv(rows, P::KEY_ROWS);
            // this block's loads of the request
            const uint32_t lo = share.begin > first ? share.begin - first : 0;
            const uint32_t hi = Min(share.end - first, loads);
            first += loads;
            if (lo >= hi) {
                continue;
            }
            const uint32_t begin = lo * P::KEY_ROWS, end = Min(hi * P::KEY_ROWS, rows);
            cube.Query(b);
            cube.Keys(b, begin, end - begin,
                      out[static_cast<uint64_t>(b) * ScoreCube<P>::ROWS * P::STRIDE + begin], P::STRIDE);
        }
        cube.Release();
    }

private:
    // Request b's key rows (its V_b in whole pages) and its key loads.
    __aicore__ inline static uint32_t Rows(AscendC::GlobalTensor<int32_t>& lens, uint32_t b)
    {
        return AlignUp(RequestRows<P>(lens, b), P::BLOCK_SIZE);
    }
    __aicore__ inline static uint32_t Loads(AscendC::GlobalTensor<int32_t>& lens, uint32_t b)
    {
        return CeilDiv(Rows(lens, b), P::KEY_ROWS);
    }
};

}  // namespace dsv4
