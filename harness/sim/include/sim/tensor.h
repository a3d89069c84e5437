// GlobalTensor and LocalTensor (include/basic_api/kernel_tensor.h), plus the checks
// every API call makes on its operands: liveness (FreeTensor / EnQue), bounds within
// the buffer, address alignment, and reads of never-written local memory.
#pragma once

#include "fields.h"
#include "hazard.h"

namespace AscendC {

template <typename T>
class LocalTensor;

namespace sim {
template <typename T>
LocalTensor<T> MakeLocal(int32_t bufId, uint32_t gen, uint32_t byteOff, uint32_t size);
} // namespace sim

// A view of a buffer carved by TPipe: (buffer id, generation, arena offset, element count).
template <typename T>
class LocalTensor {
public:
    using PrimType = T;
    LocalTensor() = default;

    __aicore__ inline LocalTensor operator[](const uint32_t offset) const
    {
        LocalTensor t = *this;
        t.off_ += offset * static_cast<uint32_t>(sizeof(T));
        t.size_ = offset <= size_ ? size_ - offset : 0;
        return t;
    }
    __aicore__ inline T GetValue(const uint32_t index) const;
    __aicore__ inline void SetValue(const uint32_t index, const T value) const;
    template <typename U>
    __aicore__ inline LocalTensor<U> ReinterpretCast() const
    {
        return sim::MakeLocal<U>(buf_, gen_, off_, static_cast<uint32_t>(size_ * sizeof(T) / sizeof(U)));
    }
    __aicore__ inline uint32_t GetSize() const { return size_; }
    __aicore__ inline uint32_t GetLength() const { return size_ * static_cast<uint32_t>(sizeof(T)); }
    __aicore__ inline void SetSize(const uint32_t size) { size_ = size; }
    __aicore__ inline uint64_t GetPhyAddr() const { return off_; }
    __aicore__ inline TPosition GetPosition() const;

    // sim internals (public so the API templates can reach them without friendship)
    int32_t buf_ = -1;
    uint32_t gen_ = 0;
    uint32_t off_ = 0; // byte offset in the arena
    uint32_t size_ = 0;
};

// A typed pointer into a registered GM buffer; `gm_` is the buffer the base pointer
// was found in when SetGlobalBuffer ran, so overruns into a neighbour still trap.
template <typename T>
class GlobalTensor {
public:
    using PrimType = T;
    GlobalTensor() = default;

    __aicore__ inline void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize)
    {
        addr_ = buffer;
        size_ = bufferSize;
        gm_ = sim::FindGm(buffer);
    }
    __aicore__ inline void SetGlobalBuffer(__gm__ T* buffer) { SetGlobalBuffer(buffer, 0); }
    __aicore__ inline const __gm__ T* GetPhyAddr() const { return addr_; }
    __aicore__ inline __gm__ T* GetPhyAddr(const uint64_t offset) const { return addr_ + offset; }
    __aicore__ inline uint64_t GetSize() const { return size_; }
    __aicore__ inline GlobalTensor operator[](const uint64_t offset) const
    {
        GlobalTensor g = *this;
        g.addr_ += offset;
        g.size_ = offset <= size_ ? size_ - offset : 0;
        return g;
    }
    __aicore__ inline T GetValue(const uint64_t offset) const;
    __aicore__ inline void SetValue(const uint64_t offset, const T value) const;

    T* addr_ = nullptr;
    uint64_t size_ = 0;
    int gm_ = -1;
};

namespace sim {

template <typename T>
LocalTensor<T> MakeLocal(int32_t bufId, uint32_t gen, uint32_t byteOff, uint32_t size)
{
    LocalTensor<T> t;
    t.buf_ = bufId;
    t.gen_ = gen;
    t.off_ = byteOff;
    t.size_ = size;
    return t;
}

// Type-erased views of tensors for the out-of-line checks (harness/sim/src/checks.cpp):
// keeping them out of the templates keeps kernel translation units small and fast to
// compile.
struct TensorRef {
    int32_t buf;
    uint32_t gen;
    uint32_t off;
};
template <typename T>
inline TensorRef Ref(const LocalTensor<T>& t)
{
    return TensorRef{t.buf_, t.gen_, t.off_};
}

enum class Acc : uint8_t { Read, Write, ReadWrite, None };

std::string DescribeBuf(const BufDesc& b);
// The buffer behind a tensor, after checking the tensor may be used at all (allocated,
// not freed, not enqueued, its pipe alive).
const BufDesc& AliveRef(const TensorRef& t, const char* api, const char* role);
// Checks [t + byteOff, +len) lies in the tensor's buffer, the tensor start is aligned, and
// for reads that every 32-byte block was written (writes mark them); returns the host
// pointer of t + byteOff.
uint8_t* AccessRef(const TensorRef& t, const char* api, const char* role, uint64_t byteOff, uint64_t len, Acc acc,
                   uint32_t align);
// Traps unless the 32-byte block at arena offset absOff of buffer b was written (a check
// only: the caller reports the access to the hazard checker).
void RequireDefined(const BufDesc& b, uint32_t absOff, const char* api, const char* role);
// Bounds check of [addr + byteOff, +len) against registered GM buffer `gm`.
uint8_t* GmAccessRef(const void* addr, int gm, const char* api, const char* role, uint64_t byteOff, uint64_t len);
void RequireCoreKind(const char* api, CoreKind want);

template <typename T>
inline const BufDesc& Alive(const LocalTensor<T>& t, const char* api, const char* role)
{
    return AliveRef(Ref(t), api, role);
}
template <typename T>
inline uint8_t* Access(const LocalTensor<T>& t, const char* api, const char* role, uint64_t byteOff, uint64_t len,
                       Acc acc, uint32_t align = ONE_BLK_SIZE)
{
    return AccessRef(Ref(t), api, role, byteOff, len, acc, align);
}
template <typename T>
inline Mem MemOfTensor(const LocalTensor<T>& t, const char* api, const char* role)
{
    return AliveRef(Ref(t), api, role).mem;
}
template <typename T>
inline uint8_t* GmAccess(const GlobalTensor<T>& g, const char* api, const char* role, uint64_t byteOff, uint64_t len)
{
    return GmAccessRef(g.addr_, g.gm_, api, role, byteOff, len);
}

inline bool IsUbPos(TPosition p) { return p == TPosition::VECIN || p == TPosition::VECOUT || p == TPosition::VECCALC; }

} // namespace sim

template <typename T>
__aicore__ inline TPosition LocalTensor<T>::GetPosition() const
{
    return sim::Alive(*this, "LocalTensor::GetPosition", "tensor").pos;
}

// Scalar accesses run on the scalar unit (PIPE_S).
template <typename T>
__aicore__ inline T LocalTensor<T>::GetValue(const uint32_t index) const
{
    const char* api = "LocalTensor::GetValue";
    sim::Op op(api, sim::Pipe::S);
    if (sim::Alive(*this, api, "tensor").mem != sim::Mem::UB) {
        sim::Trap(api, "scalar access is only possible to UB, not " +
                           std::string(sim::kMemName[static_cast<int>(sim::Alive(*this, api, "tensor").mem)]));
    }
    T v;
    std::memcpy(&v, sim::Access(*this, api, "tensor", uint64_t(index) * sizeof(T), sizeof(T), sim::Acc::Read, 1),
                sizeof(T));
    return v;
}

template <typename T>
__aicore__ inline void LocalTensor<T>::SetValue(const uint32_t index, const T value) const
{
    const char* api = "LocalTensor::SetValue";
    sim::Op op(api, sim::Pipe::S);
    if (sim::Alive(*this, api, "tensor").mem != sim::Mem::UB) {
        sim::Trap(api, "scalar access is only possible to UB");
    }
    std::memcpy(sim::Access(*this, api, "tensor", uint64_t(index) * sizeof(T), sizeof(T), sim::Acc::Write, 1), &value,
                sizeof(T));
}

template <typename T>
__aicore__ inline T GlobalTensor<T>::GetValue(const uint64_t offset) const
{
    const char* api = "GlobalTensor::GetValue";
    sim::Op op(api, sim::Pipe::S);
    const uint8_t* p = sim::GmAccess(*this, api, "tensor", offset * sizeof(T), sizeof(T));
    sim::HazardGm(gm_, p, sizeof(T), sim::GmAcc::Read);
    sim::WorkGm(p, sizeof(T), false, 0);
    T v;
    std::memcpy(&v, p, sizeof(T));
    sim::CurCore().counters.scalarGmReads++;
    return v;
}

template <typename T>
__aicore__ inline void GlobalTensor<T>::SetValue(const uint64_t offset, const T value) const
{
    const char* api = "GlobalTensor::SetValue";
    sim::Op op(api, sim::Pipe::S);
    uint8_t* p = sim::GmAccess(*this, api, "tensor", offset * sizeof(T), sizeof(T));
    sim::HazardGm(gm_, p, sizeof(T), sim::GmAcc::Write);
    sim::WorkGm(p, sizeof(T), true, 0);
    std::memcpy(p, &value, sizeof(T));
    sim::CurCore().counters.scalarGmWrites++;
}

} // namespace AscendC
