// The KV rows one request attends to (swa.md §3.6, §4.2): the union of its tokens' SWA
// windows. The reference's metadata contract makes every token's valid lanes consecutive
// positions, oldest first, ending with the token itself, and a request's SEQ tokens
// consecutive positions. So the union is token 0's lens[0] valid lanes followed by the last
// valid lane of each later token, and token s attends to the union lanes
// [lens[0] + s - lens[s], lens[0] + s). The cube kernels read only these union entries
// (scalar metadata reads, bounds-checked here); the softmax kernel checks every lane of
// every token against the union (AttentionSoftmax) and stops the launch on a violation.
#pragma once

#include "dsv4/scalar_stream.h"
#include "dsv4/tiling_data.h"

namespace dsv4 {

// P: WINDOW (lanes per token), SEQ (tokens per request), BLOCK_SIZE (rows per KV page).
template <class P>
struct WindowUnion {
    static constexpr uint32_t MAX_ROWS = P::WINDOW + P::SEQ - 1;

    int32_t lens[P::SEQ];
    int32_t rows[MAX_ROWS];  // physical pool rows, in union order
    uint32_t count;          // union entries: lens[0] + SEQ - 1

    // Token s's lanes in the union: [Begin(s), End(s)).
    __aicore__ inline uint32_t Begin(uint32_t s) const { return End(s) - static_cast<uint32_t>(lens[s]); }
    __aicore__ inline uint32_t End(uint32_t s) const { return static_cast<uint32_t>(lens[0]) + s; }

    // Reads the lengths of request `b` and checks the shape of its windows (every token has
    // 1..WINDOW lanes and no more than the union before it can hold).
    __aicore__ inline void ReadLens(const AscendC::GlobalTensor<int32_t>& swaLens, uint32_t b)
    {
        const uint32_t t0 = b * P::SEQ;
        for (uint32_t s = 0; s < P::SEQ; ++s) {
            lens[s] = swaLens.GetValue(t0 + s);
            ascendc_assert(lens[s] >= 1 && lens[s] <= static_cast<int32_t>(P::WINDOW),
                           "swa_lens[%u] = %d is outside [1, %u]", t0 + s, lens[s], P::WINDOW);
            ascendc_assert(lens[s] <= lens[0] + static_cast<int32_t>(s),
                           "swa_lens[%u] = %d exceeds swa_lens[%u] + %u: the request's windows are not "
                           "consecutive positions",
                           t0 + s, lens[s], t0, s);
        }
        count = static_cast<uint32_t>(lens[0]) + P::SEQ - 1;
    }

    // Asks for the first lines of request `b`'s lanes in swa_indices, before ReadLens: they
    // arrive while its reads wait for the lengths' line.
    __aicore__ inline static void AskRows(ScalarStream<int32_t>& swaIndices, uint32_t b)
    {
        const uint64_t first = static_cast<uint64_t>(b) * P::SEQ * P::WINDOW;
        swaIndices.Ask(first);
        swaIndices.Warm(first);
    }

    // Reads the union rows of request `b` (after AskRows and ReadLens) and checks each is a
    // row of the pool of `poolBlocks` pages, so no gather can leave kv_cache. Token 0's lanes
    // stream in order; the later tokens' last lanes are asked for while they do.
    __aicore__ inline void ReadRows(ScalarStream<int32_t>& swaIndices, uint32_t b, uint32_t poolBlocks)
    {
        const uint32_t t0 = b * P::SEQ;
        const uint32_t n0 = static_cast<uint32_t>(lens[0]);
        for (uint32_t k = 0; k < n0; ++k) {
            rows[k] = swaIndices.Get(static_cast<uint64_t>(t0) * P::WINDOW + k);
            if (k + 1 < P::SEQ) {
                swaIndices.Ask(LastLane(t0, k + 1));
            }
        }
        for (uint32_t s = 1; s < P::SEQ; ++s) {
            rows[n0 + s - 1] = swaIndices.Get(LastLane(t0, s));
        }
        const int32_t poolRows = static_cast<int32_t>(poolBlocks * P::BLOCK_SIZE);
        for (uint32_t k = 0; k < count; ++k) {
            ascendc_assert(rows[k] >= 0 && rows[k] < poolRows,
                           "request %u: window row %d (union entry %u) is not a row of the %d-row kv_cache", b,
                           rows[k], k, poolRows);
        }
    }

    // Token t0 + s's last lane in swa_indices.
    __aicore__ inline uint64_t LastLane(uint32_t t0, uint32_t s) const
    {
        return static_cast<uint64_t>(t0 + s) * P::WINDOW + lens[s] - 1;
    }

    // Length of the run of physically consecutive rows starting at union entry k (pages of
    // one request are usually scattered, positions inside a page are consecutive rows).
    __aicore__ inline uint32_t RunAt(uint32_t k) const
    {
        uint32_t n = 1;
        while (k + n < count && rows[k + n] == rows[k] + static_cast<int32_t>(n)) {
            ++n;
        }
        return n;
    }
};

}  // namespace dsv4
