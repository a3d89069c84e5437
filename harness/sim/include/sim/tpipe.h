// TPipe / TQue / TQueBind / TBuf (include/basic_api/kernel_tpipe.h). TPipe carves
// buffers from the core's arenas with a bump pointer; capacity overruns trap. Queues
// check their protocol: AllocTensor with no free slot, EnQue past the depth, DeQue on
// an empty queue, FreeTensor of a foreign or already freed tensor.
#pragma once

#include "tensor.h"

namespace AscendC {

template <TPosition pos>
class TBuf;

namespace sim {
constexpr int kMaxQueSlots = 16;

inline uint32_t AlignUp(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

// Carves `len` bytes at `pos` for the current core and registers a named buffer.
int32_t CarveBuffer(const char* api, TPosition pos, uint32_t len, const std::string& name);
} // namespace sim

class TPipe {
public:
    __aicore__ inline TPipe();
    __aicore__ inline ~TPipe();
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    template <class T>
    __aicore__ inline bool InitBuffer(T& que, uint8_t num, uint32_t len);
    template <TPosition pos>
    __aicore__ inline bool InitBuffer(TBuf<pos>& buf, uint32_t len);

    template <HardEvent evt>
    __aicore__ inline TEventID AllocEventID()
    {
        auto& used = eventUsed_[static_cast<int>(evt)];
        for (int i = 0; i < 8; ++i) {
            if ((used & (1u << i)) == 0) {
                used |= 1u << i;
                return static_cast<TEventID>(i);
            }
        }
        sim::Trap("TPipe::AllocEventID", "all 8 event ids of this HardEvent are allocated");
    }
    template <HardEvent evt>
    __aicore__ inline void ReleaseEventID(TEventID id)
    {
        eventUsed_[static_cast<int>(evt)] &= ~(1u << (id & 7));
    }
    template <HardEvent evt>
    __aicore__ inline TEventID FetchEventID()
    {
        auto used = eventUsed_[static_cast<int>(evt)];
        for (int i = 0; i < 8; ++i) {
            if ((used & (1u << i)) == 0) {
                return static_cast<TEventID>(i);
            }
        }
        return 0;
    }
    // Releases every buffer of this pipe (TPipe::Destroy); tensors on them trap afterwards.
    __aicore__ inline void Destroy();
    __aicore__ inline void Reset() { Destroy(); }

    int nextQue_ = 0;
    int nextBuf_ = 0;

private:
    uint32_t start_[static_cast<int>(sim::Mem::COUNT)] = {};
    size_t firstBuf_ = 0;
    bool destroyed_ = false;
    uint8_t eventUsed_[static_cast<int>(HardEvent::MAX)] = {};
};

namespace sim {
extern thread_local TPipe* tlsPipe;
}

__aicore__ inline TPipe* GetTPipePtr() { return sim::tlsPipe; }

template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind {
public:
    static constexpr TPosition kPos = src == TPosition::GM ? dst : src;

    template <typename T>
    __aicore__ inline LocalTensor<T> AllocTensor()
    {
        const char* api = "TQue::AllocTensor";
        for (int i = 0; i < num_; ++i) {
            if (state_[i] == kFree) {
                state_[i] = kAllocated;
                sim::BufDesc& b = sim::CurCore().bufs[slot_[i]];
                sim::Poison(b.mem, b.offset, b.len); // fresh allocation holds no data
                return sim::MakeLocal<T>(slot_[i], b.gen, b.offset, b.len / static_cast<uint32_t>(sizeof(T)));
            }
        }
        if (num_ == 0) {
            sim::Trap(api, "queue has no buffers (TPipe::InitBuffer was not called for it)");
        }
        sim::Trap(api, "no free buffer in " + Name() + ": all " + std::to_string(num_) +
                           " are allocated (missing FreeTensor?)");
    }

    template <typename T>
    __aicore__ inline void FreeTensor(LocalTensor<T>& t)
    {
        const char* api = "TQue::FreeTensor";
        int i = SlotOf(t, api);
        sim::BufDesc& b = sim::CurCore().bufs[slot_[i]];
        if (b.enqueued) {
            sim::Trap(api, "FreeTensor of buffer " + sim::DescribeBuf(b) + " while it is enqueued");
        }
        sim::Alive(t, api, "tensor");
        b.gen++;
        state_[i] = kFree;
    }

    template <typename T>
    __aicore__ inline bool EnQue(const LocalTensor<T>& t)
    {
        const char* api = "TQue::EnQue";
        int i = SlotOf(t, api);
        sim::BufDesc& b = sim::CurCore().bufs[slot_[i]];
        sim::Alive(t, api, "tensor");
        int cap = depth > 0 ? depth : num_;
        if (count_ >= cap) {
            sim::Trap(api, "queue depth exceeded: " + Name() + " already holds " + std::to_string(count_) +
                               " tensor(s), depth " + std::to_string(cap));
        }
        b.enqueued = true;
        fifo_[(head_ + count_) % sim::kMaxQueSlots] = static_cast<int8_t>(i);
        count_++;
        return true;
    }

    template <typename T>
    __aicore__ inline LocalTensor<T> DeQue()
    {
        if (count_ == 0) {
            sim::Trap("TQue::DeQue", "DeQue on empty queue " + Name());
        }
        int i = fifo_[head_];
        head_ = (head_ + 1) % sim::kMaxQueSlots;
        count_--;
        sim::BufDesc& b = sim::CurCore().bufs[slot_[i]];
        b.enqueued = false;
        return sim::MakeLocal<T>(slot_[i], b.gen, b.offset, b.len / static_cast<uint32_t>(sizeof(T)));
    }

    __aicore__ inline bool VacantInQue() const { return count_ < (depth > 0 ? depth : num_); }
    __aicore__ inline bool HasTensorInQue() const { return count_ > 0; }
    __aicore__ inline int32_t GetTensorCountInQue() const { return count_; }
    __aicore__ inline bool HasIdleBuffer() const
    {
        for (int i = 0; i < num_; ++i) {
            if (state_[i] == kFree) {
                return true;
            }
        }
        return false;
    }
    __aicore__ inline void FreeAllEvent() {}

    // sim internals, filled by TPipe::InitBuffer
    void Bind(const int32_t* ids, int n, int queIndex)
    {
        num_ = n;
        que_ = queIndex;
        for (int i = 0; i < n; ++i) {
            slot_[i] = ids[i];
            state_[i] = kFree;
        }
        count_ = head_ = 0;
    }
    std::string Name() const
    {
        return std::string("TQue<") + sim::PosName(kPos) + ">#" + std::to_string(que_);
    }

private:
    enum : uint8_t { kFree = 0, kAllocated = 1 };
    template <typename T>
    int SlotOf(const LocalTensor<T>& t, const char* api) const
    {
        for (int i = 0; i < num_; ++i) {
            if (slot_[i] == t.buf_) {
                return i;
            }
        }
        sim::Trap(api, "tensor does not belong to " + Name());
    }
    int32_t slot_[sim::kMaxQueSlots] = {};
    uint8_t state_[sim::kMaxQueSlots] = {};
    int8_t fifo_[sim::kMaxQueSlots] = {};
    int num_ = 0;
    int que_ = -1;
    int count_ = 0;
    int head_ = 0;
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public TQueBind<pos, pos, depth, mask> {};

template <TPosition pos = TPosition::LCM>
class TBuf {
public:
    template <typename T>
    __aicore__ inline LocalTensor<T> Get()
    {
        const sim::BufDesc& b = Desc("TBuf::Get");
        return sim::MakeLocal<T>(id_, b.gen, b.offset, b.len / static_cast<uint32_t>(sizeof(T)));
    }
    template <typename T>
    __aicore__ inline LocalTensor<T> Get(uint32_t len)
    {
        const sim::BufDesc& b = Desc("TBuf::Get");
        if (uint64_t(len) * sizeof(T) > b.len) {
            sim::Trap("TBuf::Get", "requested " + std::to_string(len) + " elements exceed buffer " + sim::DescribeBuf(b));
        }
        return sim::MakeLocal<T>(id_, b.gen, b.offset, len);
    }
    template <typename T>
    __aicore__ inline LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset)
    {
        const sim::BufDesc& b = Desc("TBuf::GetWithOffset");
        if (uint64_t(bufOffset) + uint64_t(size) * sizeof(T) > b.len) {
            sim::Trap("TBuf::GetWithOffset", "range exceeds buffer " + sim::DescribeBuf(b));
        }
        return sim::MakeLocal<T>(id_, b.gen, b.offset + bufOffset, size);
    }
    int32_t id_ = -1;

private:
    const sim::BufDesc& Desc(const char* api) const
    {
        if (id_ < 0) {
            sim::Trap(api, "TBuf has no buffer (TPipe::InitBuffer was not called for it)");
        }
        return sim::CurCore().bufs[id_];
    }
};

__aicore__ inline TPipe::TPipe()
{
    sim::Core& c = sim::CurCore();
    for (int m = 0; m < static_cast<int>(sim::Mem::COUNT); ++m) {
        start_[m] = c.arena[m].used;
    }
    firstBuf_ = c.bufs.size();
    sim::tlsPipe = this;
}

__aicore__ inline void TPipe::Destroy()
{
    if (destroyed_ || sim::tlsCore == nullptr) {
        return;
    }
    destroyed_ = true;
    sim::Core& c = sim::CurCore();
    for (size_t i = firstBuf_; i < c.bufs.size(); ++i) {
        c.bufs[i].released = true;
    }
    for (int m = 0; m < static_cast<int>(sim::Mem::COUNT); ++m) {
        c.arena[m].used = start_[m];
    }
    if (sim::tlsPipe == this) {
        sim::tlsPipe = nullptr;
    }
}

__aicore__ inline TPipe::~TPipe() { Destroy(); }

template <class T>
__aicore__ inline bool TPipe::InitBuffer(T& que, uint8_t num, uint32_t len)
{
    const char* api = "TPipe::InitBuffer";
    if (num == 0 || num > sim::kMaxQueSlots) {
        sim::Trap(api, "buffer count " + std::to_string(num) + " out of range [1, 16]");
    }
    int q = nextQue_++;
    int32_t ids[sim::kMaxQueSlots];
    for (int i = 0; i < num; ++i) {
        std::string name = std::string("TQue<") + sim::PosName(T::kPos) + ">#" + std::to_string(q) + "[" +
                           std::to_string(i) + "]";
        ids[i] = sim::CarveBuffer(api, T::kPos, len, name);
    }
    que.Bind(ids, num, q);
    return true;
}

template <TPosition pos>
__aicore__ inline bool TPipe::InitBuffer(TBuf<pos>& buf, uint32_t len)
{
    int b = nextBuf_++;
    std::string name = std::string("TBuf<") + sim::PosName(pos) + ">#" + std::to_string(b);
    buf.id_ = sim::CarveBuffer("TPipe::InitBuffer", pos, len, name);
    return true;
}

} // namespace AscendC
