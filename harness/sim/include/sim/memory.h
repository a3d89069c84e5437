// Per-core state of the CPU model: the on-chip arenas with their 910B capacities and a
// written-ness shadow, the buffers carved from them, the GM registry lookup, counters,
// and the trap mechanism. One `Core` exists per simulated core of a launch; the kernel
// code reaches it through a thread_local pointer (one thread per core).
#pragma once

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "types.h"

namespace AscendC {
namespace sim {

enum class CoreKind : uint8_t { AIV, AIC };
// How the host launches a kernel (the launch plan states it; the ABI value is shared
// with Rust, see harness/src/kernel_library/ffi.rs).
enum class CoreMode : uint32_t { AivOnly = 0, AicOnly = 1, Mix12 = 2 };

// Physical on-chip memories. Capacities and alignment from the reference (ascendc.md
// A.3, asc-devkit kernel_utils_constants.h for dav-c220): UB 192 KiB of which 184 KiB
// usable for user buffers, L1 512 KiB, L0A/L0B 64 KiB, L0C 128 KiB.
enum class Mem : uint8_t { UB = 0, L1, L0A, L0B, L0C, COUNT };
constexpr uint32_t kMemCapacity[] = {TOTAL_VEC_LOCAL_SIZE, TOTAL_L1_SIZE, TOTAL_L0A_SIZE, TOTAL_L0B_SIZE,
                                     TOTAL_L0C_SIZE};
constexpr const char* kMemName[] = {"UB", "L1", "L0A", "L0B", "L0C"};

// Never-written memory holds this byte: NaN for fp32/fp16/bf16, -1 for integers, so a
// lane read from a partially written 32-byte block is visibly wrong.
constexpr uint8_t kPoisonByte = 0xFF;
constexpr uint32_t kShadowGranule = 32;

// Thrown on a trap; caught at the top of the core's thread, reported to Rust.
struct TrapError {
    std::string message;
};
// Thrown in a core when another core of the launch trapped: unwinds without a report.
struct AbortLaunch {};

struct Arena {
    uint8_t* data = nullptr;
    uint8_t* shadow = nullptr; // one byte per 32-byte block: 1 = written since allocation
    uint32_t capacity = 0;
    uint32_t used = 0; // bump pointer of the TPipe allocating from it
    uint32_t peak = 0;
};

// A buffer carved by TPipe::InitBuffer (one slot of a TQue, or a TBuf).
struct BufDesc {
    std::string name; // e.g. "TQue<VECIN>#0[1]" (queue 0 of the pipe, slot 1)
    TPosition pos = TPosition::GM;
    Mem mem = Mem::UB;
    uint32_t offset = 0; // byte offset in the arena
    uint32_t len = 0;    // bytes
    uint32_t gen = 0;    // bumped by FreeTensor: stale LocalTensors then trap
    bool enqueued = false;
    bool released = false; // the pipe that carved it was destroyed
    // A TQue slot: the event ids the official TQue holds for it (-1: none), see sim/tpipe.h.
    bool allocated = false;
    int8_t enqueId = -1;
    int8_t freeId = -1;
    HardEvent freeEvt = HardEvent::MAX;
};

struct Counters {
    uint64_t gmReadBytes = 0;
    uint64_t gmWriteBytes = 0;
    uint64_t scalarGmReads = 0;
    uint64_t scalarGmWrites = 0;
    uint64_t macBf16 = 0;
    uint64_t macF16 = 0;
    uint64_t macF32 = 0;
    uint64_t macI8 = 0;
    uint64_t vecElemOps = 0;
};

struct GmBuffer {
    uint8_t* base;
    uint64_t len;
    std::string name;
    // L2 lines (kL2LineBytes, one bit each) an earlier launch left in L2 (sim/timing.h): their
    // reads are hits; null: none
    const uint64_t* warm = nullptr;
};

struct Launch;        // defined in runtime.cpp
struct LaunchHazards; // defined in hazard.cpp
struct CoreHazards;   // defined in hazard.cpp

enum class AtomicOp : uint8_t { None, Add };

template <typename T, typename... Allowed>
constexpr bool OneOf = (std::is_same_v<T, Allowed> || ...);

// Element types the type-erased parts of the model need to tell apart.
enum class ElemKind : uint8_t { F32, F16, BF16, I32, I16, I8, U8, U16, U32, Other };
template <typename T>
constexpr ElemKind KindOf()
{
    if constexpr (std::is_same_v<T, float>) {
        return ElemKind::F32;
    } else if constexpr (std::is_same_v<T, half>) {
        return ElemKind::F16;
    } else if constexpr (std::is_same_v<T, bfloat16_t>) {
        return ElemKind::BF16;
    } else if constexpr (std::is_same_v<T, int32_t>) {
        return ElemKind::I32;
    } else if constexpr (std::is_same_v<T, int16_t>) {
        return ElemKind::I16;
    } else if constexpr (std::is_same_v<T, int8_t>) {
        return ElemKind::I8;
    } else if constexpr (std::is_same_v<T, uint8_t>) {
        return ElemKind::U8;
    } else if constexpr (std::is_same_v<T, uint16_t>) {
        return ElemKind::U16;
    } else if constexpr (std::is_same_v<T, uint32_t>) {
        return ElemKind::U32;
    } else {
        return ElemKind::Other;
    }
}

struct Core {
    Launch* launch = nullptr;
    uint32_t index = 0; // position in the launch's core list
    std::string label; // "AIV 3 (block 1, sub 1)"
    const char* kernel = "";
    CoreKind kind = CoreKind::AIV;
    uint32_t blockIdx = 0;
    uint32_t subBlockIdx = 0;
    uint32_t blockDim = 1;
    uint32_t taskRation = 1;
    KernelMetaType declared = KERNEL_TYPE_MAX; // KERNEL_TASK_TYPE_DEFAULT, if the kernel states it
    Arena arena[static_cast<int>(Mem::COUNT)];
    std::vector<BufDesc> bufs;
    Counters counters;
    // vector mask register (SetVectorMask / SetMaskCount / SetMaskNorm, and what the
    // vector APIs leave in it, see sim/vec_common.h); `maskLeftBy` names the API that left
    // an unspecified value (nullptr: the value is known)
    MaskMode maskMode = MaskMode::NORMAL;
    uint64_t maskHigh = ~0ull;
    uint64_t maskLow = ~0ull;
    const char* maskLeftBy = nullptr;
    // what the last MrgSort took from each list, readable by GetMrgSortResult when that
    // MrgSort ran with ifExhaustedSuspension (sim/vec_sort.h)
    bool mrgSortValid = false;
    uint16_t mrgSortTaken[4] = {0, 0, 0, 0};
    // SetAtomicAdd / SetAtomicNone
    AtomicOp atomicOp = AtomicOp::None;
    ElemKind atomicType = ElemKind::F32;
    // pipe-ordering state (sim/hazard.h): the launch's and this core's
    LaunchHazards* launchHz = nullptr;
    CoreHazards* hz = nullptr;
    // scratch reused by Mmad to keep allocations out of the inner loop
    std::vector<float> scratchF[3];
    std::vector<int32_t> scratchI[3];
};

// The core running on this thread (set by the runtime before calling the kernel).
extern thread_local Core* tlsCore;

inline Core& CurCore() { return *tlsCore; }

// Raise a trap: the message names the kernel and the core; `api` and `what` name the
// call and the buffer. Never returns.
[[noreturn]] void Trap(const char* api, const std::string& what);
// True once any core of the current launch trapped (cheap; polled in long waits and GM access).
bool LaunchAborted();
inline void CheckAbort()
{
    if (LaunchAborted()) {
        throw AbortLaunch{};
    }
}

// Index of the registered GM buffer containing [p, p+len), or -1.
int FindGm(const void* p);
const GmBuffer& GmAt(int idx);
// The label of core `index` of the current launch ("AIV core (block 3)").
const std::string& CoreLabel(uint32_t index);

// Traffic of one DMA transfer between GM buffer `gm` (an index from FindGm) and the
// core, for the launch's per-buffer counters: bytes moved, and the distinct bytes
// touched (a bitmap per buffer), so a kernel that re-reads an operand shows
// moved > distinct. Scalar GetValue/SetValue are counted separately (Counters).
// Both also report the access to the hazard checker.
void NoteGmRead(int gm, const uint8_t* p, uint64_t len);
void NoteGmWrite(int gm, const uint8_t* p, uint64_t len, bool atomic);

// Serialise read-modify-write of GM under SetAtomicAdd (process-wide, see runtime.cpp).
void AtomicLock();
void AtomicUnlock();

std::string Hex(uint64_t v);

inline const char* PosName(TPosition p)
{
    switch (p) {
        case TPosition::GM: return "GM";
        case TPosition::A1: return "A1";
        case TPosition::A2: return "A2";
        case TPosition::B1: return "B1";
        case TPosition::B2: return "B2";
        case TPosition::C1: return "C1";
        case TPosition::C2: return "C2";
        case TPosition::CO1: return "CO1";
        case TPosition::CO2: return "CO2";
        case TPosition::VECIN: return "VECIN";
        case TPosition::VECOUT: return "VECOUT";
        case TPosition::VECCALC: return "VECCALC";
        case TPosition::TSCM: return "TSCM";
        default: return "?";
    }
}

// Where a logical position lives on dav-c220 (docs 通用说明和约束, table TPosition与物理内存映射关系).
inline bool MemOf(TPosition p, Mem& m)
{
    switch (p) {
        case TPosition::VECIN:
        case TPosition::VECOUT:
        case TPosition::VECCALC: m = Mem::UB; return true;
        case TPosition::A1:
        case TPosition::B1:
        case TPosition::C1:
        case TPosition::TSCM: m = Mem::L1; return true;
        case TPosition::A2: m = Mem::L0A; return true;
        case TPosition::B2: m = Mem::L0B; return true;
        case TPosition::CO1: m = Mem::L0C; return true;
        default: return false;
    }
}

inline Arena& ArenaOf(Mem m) { return CurCore().arena[static_cast<int>(m)]; }

// Every access of local memory goes through ReadLocal / WriteLocal (byte offsets are arena
// offsets): they keep the written-ness shadow and report the access to the pipe-hazard
// checker (sim/hazard.h), on behalf of the API call that is running.
void HazardLocal(Mem m, uint32_t off, uint32_t len, bool write);

// Marks [off, off+len) written (or, with defined = false, as holding garbage) by the call.
inline void WriteLocal(Mem m, uint32_t off, uint32_t len, bool defined = true)
{
    if (len == 0) {
        return;
    }
    HazardLocal(m, off, len, true);
    Arena& a = ArenaOf(m);
    uint32_t b0 = off / kShadowGranule;
    uint32_t b1 = (off + len + kShadowGranule - 1) / kShadowGranule;
    std::memset(a.shadow + b0, defined ? 1 : 0, b1 - b0);
}
inline void Poison(Mem m, uint32_t off, uint32_t len)
{
    Arena& a = ArenaOf(m);
    std::memset(a.data + off, kPoisonByte, len);
    uint32_t b0 = off / kShadowGranule;
    uint32_t b1 = (off + len + kShadowGranule - 1) / kShadowGranule;
    std::memset(a.shadow + b0, 0, b1 - b0);
}
// Reads [off, off+len) on behalf of the call; returns the first never-written byte offset,
// or UINT32_MAX if all of it was written.
inline uint32_t ReadLocal(Mem m, uint32_t off, uint32_t len)
{
    if (len == 0) {
        return UINT32_MAX;
    }
    HazardLocal(m, off, len, false);
    Arena& a = ArenaOf(m);
    uint32_t b0 = off / kShadowGranule;
    uint32_t b1 = (off + len + kShadowGranule - 1) / kShadowGranule;
    const void* hit = std::memchr(a.shadow + b0, 0, b1 - b0);
    if (hit == nullptr) {
        return UINT32_MAX;
    }
    uint32_t blk = static_cast<uint32_t>(static_cast<const uint8_t*>(hit) - a.shadow);
    return blk * kShadowGranule > off ? blk * kShadowGranule : off;
}
// Whether every 32-byte block of [off, off+len) was written (no access is made).
inline bool AllWritten(Mem m, uint32_t off, uint32_t len)
{
    Arena& a = ArenaOf(m);
    uint32_t b0 = off / kShadowGranule;
    uint32_t b1 = (off + len + kShadowGranule - 1) / kShadowGranule;
    return std::memchr(a.shadow + b0, 0, b1 - b0) == nullptr;
}

} // namespace sim
} // namespace AscendC
