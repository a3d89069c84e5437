// The compressors' sequential-over-requests state semantics, executed in parallel
// (hca_csa.md §4.7). The reference runs requests one at a time: request b writes its tokens'
// state rows, then pools, so it sees the state as requests 0..b left it - its own and the
// earlier requests' rows of this step, never a later request's. Here every request pools in
// parallel against the state as the previous step left it, with an overlay: a pooled row that
// a token of requests 0..b writes this step is taken from that token's new row instead; the
// step's rows are written to the state afterwards, by a later launch (CompressorCommit).
// Writers are unique per row (the fixtures refuse two tokens writing one row), so the
// result is exactly the sequential one.
#pragma once

#include "kernel_operator.h"

namespace dsv4 {

// The writers of one request's pooling window: PAGES state pages of BS rows, in window
// order (the request's block-table entries for the window).
template <uint32_t PAGES, uint32_t BS>
class StateOverlay {
public:
    // Scans the state slots of tokens [0, tokens) - requests 0..b - for rows of `pages`
    // (`Slots`: a ScalarStream or UbTable of int64).
    template <class Slots>
    __aicore__ inline void Build(Slots& stateSlots, uint32_t tokens, const int32_t* pages)
    {
        for (uint32_t i = 0; i < PAGES * BS; ++i) {
            writer_[i] = -1;
        }
        for (uint32_t p = 0; p < PAGES; ++p) {
            any_[p] = false;
        }
        for (uint32_t t = 0; t < tokens; ++t) {
            const int64_t slot = stateSlots.Get(t);
            if (slot < 0) {
                continue;
            }
            const int64_t page = slot / BS;
            for (uint32_t p = 0; p < PAGES; ++p) {
                if (pages[p] >= 0 && page == pages[p]) {
                    writer_[p * BS + static_cast<uint32_t>(slot % BS)] = static_cast<int32_t>(t);
                    any_[p] = true;
                }
            }
        }
    }

    // The ring layer's overlay (csa_1m.md §4.3): the window's positions from `first` on, in
    // pages of BS; a position at or after the request's first position p0 is its own token
    // tok0 + (q − p0) of this step, one before it the ring as the previous step left it.
    __aicore__ inline void BuildOwn(int64_t first, int64_t p0, uint32_t tok0)
    {
        for (uint32_t p = 0; p < PAGES; ++p) {
            any_[p] = false;
            for (uint32_t r = 0; r < BS; ++r) {
                const int64_t q = first + int64_t(p * BS + r);
                writer_[p * BS + r] = q >= p0 ? static_cast<int32_t>(tok0 + (q - p0)) : -1;
                any_[p] = any_[p] || q >= p0;
            }
        }
    }

    // Whether a token of this step writes a row of window page p.
    __aicore__ inline bool Touched(uint32_t p) const { return any_[p]; }
    // The token whose new row replaces row r of window page p, or -1 (the previous state).
    __aicore__ inline int32_t Writer(uint32_t p, uint32_t r) const { return writer_[p * BS + r]; }

private:
    int32_t writer_[PAGES * BS];
    bool any_[PAGES];
};

}  // namespace dsv4
