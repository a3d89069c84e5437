// Exact top-k of a stream of f32 scores with the dav-c220 sort instructions (hca_csa.md §5.5),
// vector side. Candidates arrive in chunks of at most SORT_CHUNK scores (Add, with the index of
// the chunk's first candidate, the scores written to Scores()); each chunk is sorted by Sort32 (32-element lists) and 4-way
// MrgSort rounds whose input lists are cut to TOPK, then merged into the running best TOPK
// (also cut). Indices writes the kept indices, best first, −1 past the kept count.
//
// Order: descending score, equal scores by ascending index. Sort32 keeps equal scores in input
// order and MrgSort lets an earlier list win ties; every list holds lower indices than the
// lists after it (chunks arrive in index order, the running best is the first list), so the
// result is the golden's total order exactly and cutting a list to TOPK never drops a
// candidate the full sort would keep. Scores must not be NaN (the sort's order of NaN is
// undefined); callers pad with FP32_NEG_INF, which sorts below every finite score.
//
// Any candidate count: the running best is all that survives a chunk, so UB use is fixed by
// SORT_CHUNK and TOPK (a 1M-context indexer streams 262,144 candidates through the same block).
// Init must be the pipe's first InitBuffer calls: Sort32 needs its scores and indices 128-byte
// and its destination 256-byte aligned, which the buffers' sizes keep from offset 0 on.
#pragma once

#include "dsv4/vec_common.h"

namespace dsv4 {

// P: TOPK (a multiple of 8, at most 4095: one MrgSort list), SORT_CHUNK (a multiple of 32,
// at least 2·TOPK, at most 32·255: one Sort32 call), and the UB sizes the plan decided
// (`*_BYTES`): TOPK_SORT_A / TOPK_SORT_B (the merge ping-pong, 8-byte (score, index)
// elements), TOPK_IOTA (0 .. SORT_CHUNK − 1), TOPK_INDEX (a chunk's indices), TOPK_SCORES (a
// chunk's scores), TOPK_BEST (the running best).
template <class P>
class TopK {
    static constexpr uint32_t K = P::TOPK;
    static constexpr uint32_t CHUNK = P::SORT_CHUNK;
    static constexpr uint32_t UNIT = 32;         // Sort32's list length
    static constexpr uint32_t ELEM = 8;          // bytes of a sorted (score, index) element
    static constexpr uint32_t LISTS = CHUNK / UNIT;
    static_assert(K % 8 == 0 && K >= 8 && K <= 4095, "TOPK: whole 32-byte index blocks, one MrgSort list");
    static_assert(CHUNK % UNIT == 0 && LISTS <= 255, "SORT_CHUNK: whole Sort32 lists, one Sort32 call");
    static_assert(CHUNK >= 2 * K, "a merge of the running best with a chunk's best fits a merge buffer");
    static_assert(P::TOPK_SORT_A_BYTES >= CHUNK * ELEM && P::TOPK_SORT_B_BYTES >= CHUNK * ELEM,
                  "the merge buffers hold a chunk of sorted elements");
    static_assert(P::TOPK_IOTA_BYTES == CHUNK * sizeof(int32_t) && P::TOPK_INDEX_BYTES == CHUNK * sizeof(int32_t) &&
                      P::TOPK_SCORES_BYTES == CHUNK * sizeof(float) && P::TOPK_SORT_A_BYTES == CHUNK * ELEM,
                  "a chunk's indices and scores; exact sizes keep the next buffer aligned");
    static_assert(P::TOPK_BEST_BYTES >= K * ELEM, "the running best");

public:
    __aicore__ inline void Init(AscendC::TPipe& pipe)
    {
        pipe.InitBuffer(sortA_, P::TOPK_SORT_A_BYTES);
        pipe.InitBuffer(sortB_, P::TOPK_SORT_B_BYTES);
        pipe.InitBuffer(iota_, P::TOPK_IOTA_BYTES);
        pipe.InitBuffer(index_, P::TOPK_INDEX_BYTES);
        pipe.InitBuffer(scores_, P::TOPK_SCORES_BYTES);
        pipe.InitBuffer(best_, P::TOPK_BEST_BYTES);
        // 0 .. 7 by the scalar unit, then doubled by vector adds.
        AscendC::LocalTensor<int32_t> iota = iota_.Get<int32_t>();
        for (int32_t i = 0; i < 8; ++i) {
            iota.SetValue(i, i);
        }
        ScalarToVector();
        for (uint32_t len = 8; len < CHUNK; len *= 2) {
            AscendC::Adds(iota[len], iota, static_cast<int32_t>(len), static_cast<int32_t>(Min(len, CHUNK - len)));
        }
    }

    // Starts a new selection.
    __aicore__ inline void Reset() { kept_ = 0; }

    // Where the caller writes a chunk's scores for Add.
    __aicore__ inline AscendC::LocalTensor<float> Scores() { return scores_.Get<float>(); }

    // Where the caller writes a chunk's candidate indices for AddIndexed.
    __aicore__ inline AscendC::LocalTensor<int32_t> Index() { return index_.Get<int32_t>(); }

    // Candidates base .. base + n − 1 with scores Scores()[0 .. n): n a multiple of 32, at most
    // SORT_CHUNK, no NaN.
    __aicore__ inline void Add(uint32_t n, uint32_t base)
    {
        AscendC::LocalTensor<int32_t> index = iota_.Get<int32_t>();
        if (base > 0) {
            index = index_.Get<int32_t>();
            AscendC::Adds(index, iota_.Get<int32_t>(), static_cast<int32_t>(base), static_cast<int32_t>(n));
        }
        Merge(n, index);
    }

    // Candidates Index()[0 .. n) with scores Scores()[0 .. n), as Add: equal scores keep their
    // order here and lose to the running best, so the tie order is the golden's when the
    // caller's candidates come in ascending index among equal scores, after the ones added
    // before.
    __aicore__ inline void AddIndexed(uint32_t n) { Merge(n, index_.Get<int32_t>()); }

    // The running best as sorted (score, index) elements, Kept() of them.
    __aicore__ inline AscendC::LocalTensor<float> Best() { return best_.Get<float>(); }

    // Candidates kept: min(TOPK, candidates added since Reset).
    __aicore__ inline uint32_t Kept() const { return kept_; }

    // out[0 .. TOPK): the best min(kept, count) indices, best first, then −1 (a caller that
    // padded its candidates with FP32_NEG_INF passes its real count: the padding sorts last).
    __aicore__ inline void Indices(const AscendC::LocalTensor<int32_t>& out, uint32_t count)
    {
        const uint32_t n = Min(kept_, count);
        AscendC::Duplicate(out, -1, static_cast<int32_t>(K));
        if (n == 0) {
            return;
        }
        // The odd 32-bit lanes of the sorted elements are the indices (GatherMask pattern 2).
        uint64_t taken = 0;
        AscendC::GatherMask(out.ReinterpretCast<uint32_t>(), best_.Get<uint32_t>(), 2, true, 2 * n,
                            AscendC::GatherMaskParams(1, 1, 8, 0), taken);
    }

private:
    __aicore__ inline void Merge(uint32_t n, const AscendC::LocalTensor<int32_t>& index)
    {
        AscendC::LocalTensor<float> cur = sortA_.Get<float>();
        AscendC::LocalTensor<float> nxt = sortB_.Get<float>();
        AscendC::Sort32(cur, scores_.Get<float>(), index.ReinterpretCast<uint32_t>(), static_cast<int32_t>(n / UNIT));
        uint32_t lens[LISTS];
        uint32_t count = n / UNIT;
        for (uint32_t q = 0; q < count; ++q) {
            lens[q] = UNIT;
        }
        // 4-way merge rounds; every input list cut to K.
        while (count > 1) {
            uint32_t in = 0, out = 0, merged = 0;
            for (uint32_t g = 0; g < count; g += 4) {
                const uint32_t m = Min(count - g, 4);
                uint16_t use[4] = {0, 0, 0, 0};
                uint32_t off[4] = {in, in, in, in};
                uint32_t len = 0;
                for (uint32_t q = 0; q < m; ++q) {
                    off[q] = in;
                    use[q] = static_cast<uint16_t>(Min(lens[g + q], K));
                    len += use[q];
                    in += lens[g + q];
                }
                if (m == 1) {
                    AscendC::DataCopy(nxt[out * 2], cur[off[0] * 2], len * 2);  // UB -> UB
                } else {
                    const uint16_t valid = m == 2 ? 0b11 : (m == 3 ? 0b111 : 0b1111);
                    AscendC::MrgSortSrcList<float> list(cur[off[0] * 2], cur[off[1] * 2], cur[off[2] * 2],
                                                        cur[off[3] * 2]);
                    AscendC::MrgSort(nxt[out * 2], list, AscendC::MrgSort4Info(use, false, valid, 1));
                }
                lens[merged++] = len;
                out += len;
            }
            count = merged;
            AscendC::LocalTensor<float> t = cur;
            cur = nxt;
            nxt = t;
        }
        const uint32_t len = Min(lens[0], K);
        AscendC::LocalTensor<float> best = best_.Get<float>();
        if (kept_ == 0) {
            AscendC::DataCopy(best, cur, len * 2);
            kept_ = len;
            return;
        }
        // The running best first: it holds the lower indices, so it wins ties.
        uint16_t use[4] = {static_cast<uint16_t>(kept_), static_cast<uint16_t>(len), 0, 0};
        AscendC::MrgSort(nxt, AscendC::MrgSortSrcList<float>(best, cur, cur, cur),
                         AscendC::MrgSort4Info(use, false, 0b11, 1));
        kept_ = Min(kept_ + len, K);
        AscendC::DataCopy(best, nxt, kept_ * 2);
    }

    AscendC::TBuf<AscendC::TPosition::VECCALC> sortA_, sortB_, iota_, index_, scores_, best_;
    uint32_t kept_ = 0;
};

}  // namespace dsv4
