// Scalar reads of a GM array of metadata (page tables, top-k lists, window indices) that go
// through it in ascending order (with gaps, or not). A scalar read stalls the core for a GM
// round trip the first time it touches a 64-byte line of its data cache; `ScalarStream` asks
// for the line AHEAD lines further whenever a read enters a line (DataCachePreload, docs
// 缓存控制: one line per call), so once a stream is under way its reads hit. `Warm` asks for
// the first lines of a stream that starts cold. Callers keep at most 4 calls in a row, as the
// docs advise (a read between them breaks the row).
#pragma once

#include "kernel_operator.h"

namespace dsv4 {

// T: the element type; AHEAD: how many lines ahead of a read the stream asks for (1..4).
template <typename T, uint32_t AHEAD>
class ScalarStream {
    static constexpr uint64_t LINE = 64;  // bytes of a data-cache line
    static_assert(AHEAD >= 1 && AHEAD <= 4, "at most 4 preloads in a row");
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
            AskLine(line + static_cast<int64_t>(AHEAD * LINE));
            last_ = line;
        }
        return values_.GetValue(i);
    }

    // Asks for the line holding element i (a read out of order, known ahead).
    __aicore__ inline void Ask(uint64_t i) { AskLine(LineOf(i)); }

    // Asks for the AHEAD - 1 lines after element i's: a stream starting cold at i (its own
    // line would arrive no sooner than its read; the first Get asks for the AHEAD-th, so
    // with it at most AHEAD calls run in a row).
    __aicore__ inline void Warm(uint64_t i)
    {
        for (uint32_t l = 1; l < AHEAD; ++l) {
            AskLine(LineOf(i) + static_cast<int64_t>(l * LINE));
        }
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
    int64_t last_ = -1 - static_cast<int64_t>(LINE);  // the line of the last Get
};

}  // namespace dsv4
