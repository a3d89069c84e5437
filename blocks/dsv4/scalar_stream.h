// Scalar reads of a GM array of metadata (page tables, top-k lists, window indices) that go
// through it in ascending order (with gaps, or not). A scalar read stalls the core for a GM
// round trip the first time it touches a 64-byte line of its data cache; `ScalarStream` keeps
// the lines up to AHEAD lines past the one being read asked for (DataCachePreload, docs
// 缓存控制: one line per call), so once a stream is under way its reads hit: a round trip
// (1400 cycles) is longer than the scalar work on 4 lines of a top-k list, so a stream that
// a core reads line after line wants more than 4 ahead. Entering a line asks for at most two
// more (the frontier catches up after a start or a jump), `Warm` for the first two: the
// docs advise at most 4 calls in a row (a read between them breaks the row). Eight lines
// ahead (512 bytes a stream) is our choice, not a documented figure: enough to cover a round
// trip of the top-k lists' reads in the model, a small share of any scalar data cache.
#pragma once

#include "kernel_operator.h"

namespace dsv4 {

// T: the element type.
template <typename T>
class ScalarStream {
    static constexpr uint64_t LINE = 64;  // bytes of a data-cache line
    static constexpr uint32_t AHEAD = 8;  // lines kept asked for ahead of a read
    static constexpr uint32_t PER_LINE = 2;  // preloads at most per line entered
    static constexpr uint32_t WARM = 2;      // lines Warm asks for (then a Get's two: 4 in a row)
    static constexpr uint32_t MOST_IN_A_ROW = 4;  // preloads in a row, as the docs advise
    static_assert(LINE % sizeof(T) == 0, "elements do not straddle lines");

public:
    // The array at `base` of `count` elements; nothing past it is asked for.
    __aicore__ inline void Init(GM_ADDR base, uint64_t count)
    {
        values_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(base), count);
        lines_.SetGlobalBuffer(reinterpret_cast<__gm__ uint64_t*>(base));
        head_ = reinterpret_cast<uintptr_t>(base) % LINE;
        bytes_ = count * sizeof(T);
    }

    __aicore__ inline T Get(uint64_t i)
    {
        const int64_t line = LineOf(i);
        if (line != last_) {
            last_ = line;
            if (asked_ < line) {
                asked_ = line;  // a jump past the frontier: it restarts here
            }
            const int64_t want = line + static_cast<int64_t>(AHEAD * LINE);
            for (uint32_t n = 0; n < PER_LINE && asked_ < want; ++n) {
                asked_ += static_cast<int64_t>(LINE);
                AskLine(asked_);
            }
        }
        return values_.GetValue(i);
    }

    // Asks for the line holding element i (a read out of order, known ahead).
    __aicore__ inline void Ask(uint64_t i) { AskLine(LineOf(i)); }

    // Asks for the lines holding elements [i, i + count), count >= 1, at most MOST_IN_A_ROW
    // of them (the docs' advice): a range the reads will visit in no known order (a
    // page-table row indexed by top-k slots), so each of its lines costs one round trip in
    // all.
    __aicore__ inline void AskRange(uint64_t i, uint64_t count)
    {
        const int64_t last = LineOf(i + count - 1);
        int64_t line = LineOf(i);
        for (uint32_t n = 0; n < MOST_IN_A_ROW && line <= last; ++n, line += static_cast<int64_t>(LINE)) {
            AskLine(line);
        }
    }

    // Asks for the lines after element i's: a stream starting cold at i (its own line would
    // arrive no sooner than its read; the reads then take the frontier further).
    __aicore__ inline void Warm(uint64_t i)
    {
        const int64_t line = LineOf(i);
        for (uint32_t l = 1; l <= WARM; ++l) {
            AskLine(line + static_cast<int64_t>(l * LINE));
        }
        asked_ = line + static_cast<int64_t>(WARM * LINE);
    }

private:
    // The start of element i's line, in bytes from base (negative for base's own line when
    // base is not line-aligned).
    __aicore__ inline int64_t LineOf(uint64_t i) const
    {
        return static_cast<int64_t>((head_ + i * sizeof(T)) / LINE * LINE) - static_cast<int64_t>(head_);
    }

    // The line starting at byte `at` of the array (before base: base's line), if the array
    // reaches it.
    __aicore__ inline void AskLine(int64_t at)
    {
        if (at < static_cast<int64_t>(bytes_)) {
            AscendC::DataCachePreload(lines_, at < 0 ? int64_t(0) : at);
        }
    }

    AscendC::GlobalTensor<T> values_;
    AscendC::GlobalTensor<uint64_t> lines_;
    uint64_t head_ = 0;   // base's offset into its line
    uint64_t bytes_ = 0;  // the array's bytes
    int64_t last_ = -1 - static_cast<int64_t>(LINE);   // the line of the last Get
    int64_t asked_ = -1 - static_cast<int64_t>(LINE);  // the furthest line asked for in order
};

// Asks for the first line of each GM array (at most 4, the docs' preloads in a row): metadata
// a kernel reads first thing, whose addresses are its arguments, asked for before it reads
// its tiling, so their first reads hit once the tiling's round trip is over instead of each
// waiting a round trip of its own after it.
template <typename... Gm>
__aicore__ inline void AskFirstLines(Gm... arrays)
{
    static_assert(sizeof...(Gm) <= 4, "at most 4 preloads in a row");
    AscendC::GlobalTensor<uint64_t> line;
    ((line.SetGlobalBuffer(reinterpret_cast<__gm__ uint64_t*>(arrays)), AscendC::DataCachePreload(line, int64_t(0))),
     ...);
}

// A small GM array of metadata that every core reads whole, some of it several times (a
// compressor's per-token positions and slots): staged in UB by one copy, so the scalar reads
// cost one round trip in all instead of one per line a stream outruns. `Load` starts the
// copy; reads wait for it (`Handshake<MTE2_S>` once after the loads).
template <typename T>
class UbTable {
public:
    // Room for `bytes` in `pipe` (at least the count Load copies).
    __aicore__ inline void Init(AscendC::TPipe& pipe, uint32_t bytes) { pipe.InitBuffer(buf_, bytes); }

    // The first `count` elements of the array at `base`.
    __aicore__ inline void Load(GM_ADDR base, uint32_t count)
    {
        AscendC::GlobalTensor<T> src;
        src.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(base), count);
        values_ = buf_.Get<T>();
        AscendC::DataCopyPad(values_, src, AscendC::DataCopyExtParams(1, count * sizeof(T), 0, 0, 0),
                             AscendC::DataCopyPadExtParams<T>(false, 0, 0, T(0)));
    }

    __aicore__ inline T Get(uint32_t i) const { return values_.GetValue(i); }

private:
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf_;
    AscendC::LocalTensor<T> values_;
};

}  // namespace dsv4
