// TPipe / TQue / TQueBind / TBuf (include/basic_api/kernel_tpipe.h). TPipe carves
// buffers from the core's arenas with a bump pointer; capacity overruns trap. Queues
// check their protocol: AllocTensor with no free slot, EnQue past the depth, DeQue on
// an empty queue, FreeTensor of a foreign or already freed tensor.
// Queues synchronise as the official implementation does on dav-c220
// (impl/basic_api/kernel_tquebind_impl.h, GetQueEvt in kernel_event.h): EnQue sets the
// queue's forward event (VECIN MTE2_V, VECOUT V_MTE3, A1/B1 MTE2_MTE1, A2/B2 MTE1_M, CO1
// M_FIX) with an id from the TPipe's pool, DeQue waits for it and returns the id;
// FreeTensor sets the backward event (V_MTE2, MTE3_V, MTE1_MTE2, M_MTE1, FIX_M) and the
// next AllocTensor of that slot waits for it. Slots are taken round robin. On an AIC the
// TPipe sets M_MTE1 ids 0..2 when constructed (for the Matmul macros) and waits for them
// when destroyed; destruction also waits for pending free events and drains every pipe.
// So a kernel's own flags must take their ids from the pool (AllocEventID / FetchEventID)
// or it collides with the queues' (the checker traps the second set of a set flag).
#pragma once

#include <exception>

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
    __aicore__ inline ~TPipe() noexcept(false);
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
        sim::Trap("TPipe::AllocEventID", std::string("all 8 ids of HardEvent::") + sim::EventName(evt) +
                                              " are allocated (each freed queue slot holds one until it is "
                                              "allocated again; on an AIC the TPipe holds M_MTE1 0..2)");
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
    // Waits for the pending free events of its queues' slots (and, on an AIC, for M_MTE1
    // 0..2), drains every pipe (PipeBarrier<PIPE_ALL>) and releases every buffer of this
    // pipe (TPipe::Destroy); tensors on them trap afterwards.
    __aicore__ inline void Destroy();

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
} // namespace AscendC

// At global scope, as include/basic_api/kernel_common.h declares it (GetTPipePtr.md calls it
// unqualified): `AscendC::GetTPipePtr()` does not compile on the device.
__aicore__ inline AscendC::TPipe* GetTPipePtr() { return AscendC::sim::tlsPipe; }

namespace AscendC {
namespace sim {
// The events a queue from `src` to `dst` synchronises with (GetPhyType / GetQueEvt for
// dav-c220): forward (EnQue to DeQue) and backward (FreeTensor to the slot's next
// AllocTensor); MAX where the official code has no queue.
struct QueEvents {
    HardEvent enque;
    HardEvent free;
};
enum class Hw : uint8_t { GM, UB, L1, L0A, L0B, L0C, NONE };
constexpr Hw HwOf(TPosition p)
{
    switch (p) {
        case TPosition::GM:
        case TPosition::CO2: return Hw::GM;
        case TPosition::VECIN:
        case TPosition::VECOUT:
        case TPosition::VECCALC: return Hw::UB;
        case TPosition::A1:
        case TPosition::B1:
        case TPosition::C1: return Hw::L1;
        case TPosition::A2: return Hw::L0A;
        case TPosition::B2: return Hw::L0B;
        case TPosition::CO1: return Hw::L0C;
        default: return Hw::NONE;
    }
}
constexpr QueEvents QueEventsOf(TPosition src, TPosition dst)
{
    Hw s = HwOf(src), d = HwOf(dst);
    if (s == Hw::GM && d == Hw::UB) return {HardEvent::MTE2_V, HardEvent::V_MTE2};
    if (s == Hw::GM && d == Hw::L1) return {HardEvent::MTE2_MTE1, HardEvent::MTE1_MTE2};
    if (s == Hw::GM && (d == Hw::L0A || d == Hw::L0B)) return {HardEvent::MTE2_M, HardEvent::M_MTE2};
    if (s == Hw::UB && d == Hw::GM) return {HardEvent::V_MTE3, HardEvent::MTE3_V};
    if (s == Hw::UB && d == Hw::L1) return {HardEvent::MTE3_MTE1, HardEvent::MTE1_MTE3};
    if (s == Hw::UB && d == Hw::UB) return {HardEvent::MTE2_MTE3, HardEvent::MTE3_MTE2};
    if (s == Hw::L1 && (d == Hw::L0A || d == Hw::L0B)) return {HardEvent::MTE1_M, HardEvent::M_MTE1};
    if (s == Hw::L0C && d == Hw::GM) return {HardEvent::M_FIX, HardEvent::FIX_M};
    return {HardEvent::MAX, HardEvent::MAX};
}
// Where the buffers of a queue from `src` to `dst` live (GetBufferPos / GetPosition).
constexpr TPosition QuePos(TPosition src, TPosition dst)
{
    return (dst == TPosition::GM || dst == TPosition::CO2) ? src : dst;
}
// TQue<pos> is TQueBind from / to the neighbouring positions (GetBufferLogicPos).
constexpr TPosition QueSrc(TPosition p)
{
    switch (p) {
        case TPosition::A2: return TPosition::A1;
        case TPosition::B2: return TPosition::B1;
        case TPosition::VECOUT:
        case TPosition::CO1: return p;
        default: return TPosition::GM; // VECIN, A1, B1
    }
}
constexpr TPosition QueDst(TPosition p)
{
    switch (p) {
        case TPosition::VECOUT: return TPosition::GM;
        case TPosition::CO1: return TPosition::CO2;
        default: return p;
    }
}
TPipe& PipeFor(const char* api);
} // namespace sim

template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind {
public:
    static constexpr TPosition kPos = sim::QuePos(src, dst);
    static constexpr sim::QueEvents kEvt = sim::QueEventsOf(src, dst);
    static_assert(kEvt.enque != HardEvent::MAX,
                  "queue not modelled: TQue takes VECIN, VECOUT, A1, B1, A2, B2 or CO1, TQueBind a GM / UB / "
                  "L1 / L0 / L0C -> GM pair of dav-c220 (VECCALC scratch is a TBuf)");

    template <typename T>
    __aicore__ inline LocalTensor<T> AllocTensor()
    {
        const char* api = "TQue::AllocTensor";
        if (num_ == 0) {
            sim::Trap(api, "queue has no buffers (TPipe::InitBuffer was not called for it)");
        }
        for (int n = 0; n < num_; ++n) {
            int i = cursor_;
            cursor_ = (cursor_ + 1) % num_;
            sim::BufDesc& b = sim::CurCore().bufs[slot_[i]];
            if (b.allocated) {
                continue;
            }
            b.allocated = true;
            if (b.freeId >= 0) {
                sim::FlagWait(api, kEvt.free, b.freeId);
                sim::PipeFor(api).ReleaseEventID<kEvt.free>(b.freeId);
                b.freeId = -1;
            }
            sim::Poison(b.mem, b.offset, b.len); // fresh allocation holds no data
            return sim::MakeLocal<T>(slot_[i], b.gen, b.offset, b.len / static_cast<uint32_t>(sizeof(T)));
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
        b.allocated = false;
        b.freeId = static_cast<int8_t>(sim::PipeFor(api).AllocEventID<kEvt.free>());
        sim::FlagSet(api, kEvt.free, b.freeId, slot_[i]);
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
        b.enqueId = static_cast<int8_t>(sim::PipeFor(api).AllocEventID<kEvt.enque>());
        sim::FlagSet(api, kEvt.enque, b.enqueId, slot_[i]);
        fifo_[(head_ + count_) % sim::kMaxQueSlots] = static_cast<int8_t>(i);
        count_++;
        return true;
    }

    template <typename T>
    __aicore__ inline LocalTensor<T> DeQue()
    {
        const char* api = "TQue::DeQue";
        if (count_ == 0) {
            sim::Trap(api, "DeQue on empty queue " + Name());
        }
        int i = fifo_[head_];
        head_ = (head_ + 1) % sim::kMaxQueSlots;
        count_--;
        sim::BufDesc& b = sim::CurCore().bufs[slot_[i]];
        b.enqueued = false;
        sim::FlagWait(api, kEvt.enque, b.enqueId);
        sim::PipeFor(api).ReleaseEventID<kEvt.enque>(b.enqueId);
        b.enqueId = -1;
        return sim::MakeLocal<T>(slot_[i], b.gen, b.offset, b.len / static_cast<uint32_t>(sizeof(T)));
    }

    __aicore__ inline bool VacantInQue() const { return count_ < (depth > 0 ? depth : num_); }
    __aicore__ inline bool HasTensorInQue() const { return count_ > 0; }
    __aicore__ inline int32_t GetTensorCountInQue() const { return count_; }
    __aicore__ inline bool HasIdleBuffer() const
    {
        for (int i = 0; i < num_; ++i) {
            if (!sim::CurCore().bufs[slot_[i]].allocated) {
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
        }
        count_ = head_ = cursor_ = 0;
    }
    std::string Name() const { return std::string("TQue<") + sim::PosName(kPos) + ">#" + std::to_string(que_); }

private:
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
    int8_t fifo_[sim::kMaxQueSlots] = {};
    int num_ = 0;
    int que_ = -1;
    int count_ = 0;
    int head_ = 0;
    int cursor_ = 0;
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public TQueBind<sim::QueSrc(pos), sim::QueDst(pos), depth, mask> {
    static_assert(pos == TPosition::VECIN || pos == TPosition::VECOUT || pos == TPosition::A1 ||
                      pos == TPosition::B1 || pos == TPosition::A2 || pos == TPosition::B2 || pos == TPosition::CO1,
                  "TQue takes VECIN, VECOUT, A1, B1, A2, B2 or CO1 (VECCALC scratch is a TBuf)");
};

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
    if (c.kind == sim::CoreKind::AIC) { // the official TPipe::Init, for the Matmul macros
        for (int i = 0; i < 3; ++i) {
            sim::FlagSet("TPipe (AIC construction)", HardEvent::M_MTE1, AllocEventID<HardEvent::M_MTE1>(), -1);
        }
    }
}

namespace sim {
inline TPipe& PipeFor(const char* api)
{
    if (tlsPipe == nullptr) {
        Trap(api, "queue used without a live TPipe");
    }
    return *tlsPipe;
}
} // namespace sim

__aicore__ inline void TPipe::Destroy()
{
    if (destroyed_ || sim::tlsCore == nullptr) {
        return;
    }
    destroyed_ = true;
    sim::Core& c = sim::CurCore();
    const char* api = "TPipe::Destroy";
    for (size_t i = firstBuf_; i < c.bufs.size(); ++i) {
        sim::BufDesc& b = c.bufs[i];
        if (b.freeId >= 0 && !b.allocated) {
            sim::FlagWait(api, b.freeEvt, b.freeId);
            b.freeId = -1;
        }
    }
    if (c.kind == sim::CoreKind::AIC) {
        for (int i = 0; i < 3; ++i) {
            sim::FlagWait(api, HardEvent::M_MTE1, i);
        }
    }
    sim::Barrier(api, PIPE_ALL);
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

__aicore__ inline TPipe::~TPipe() noexcept(false)
{
    // a trap unwinds through here: the launch is already lost, so no more checks
    if (!sim::LaunchAborted() && std::uncaught_exceptions() == 0) {
        Destroy();
    }
}

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
        sim::CurCore().bufs[ids[i]].freeEvt = T::kEvt.free;
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
