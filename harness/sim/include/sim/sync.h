// Synchronisation (kernel_operator_block_sync_intf.h), atomics and system variables.
// Intra-core flags, barriers and their ordering effect are the hazard checker's
// (sim/hazard.h): a flag is one bit, a set on a set flag or a wait on a clear one traps.
// Cross-core flags (CrossCoreSetFlag/WaitFlag, docs 核间同步) and SyncAll really block:
// every core is a thread. Per flag id (0..15) each core has a counter that WaitFlag
// consumes; mode 0 raises it on all cores of the caller's type once all of them have set
// the flag, mode 1 on both AIVs of a group once both have set it, mode 2 from the AIC on
// both AIVs of its group, and from the AIVs on the AIC once both AIVs have set it. On A2 a
// wait blocks every pipe of the core whatever its `pipe` argument says (the hardware
// ignores it); a set fires on its pipe once that pipe's earlier work completed.
#pragma once

#include "vec_common.h"

namespace AscendC {
namespace sim {
void CrossCoreSet(uint8_t mode, pipe_t pipe, uint16_t flagId);
void CrossCoreWait(uint16_t flagId);
void SyncAllCores(bool aivOnly, const char* api);
void DeclareKernelType(KernelMetaType t, const char* api = "KERNEL_TASK_TYPE_DEFAULT");
} // namespace sim

template <HardEvent event>
__aicore__ inline void SetFlag(int32_t eventID)
{
    sim::FlagSet("SetFlag", event, eventID, -1);
}

template <HardEvent event>
__aicore__ inline void WaitFlag(int32_t eventID)
{
    sim::FlagWait("WaitFlag", event, eventID);
}

template <pipe_t pipe>
__aicore__ inline void PipeBarrier()
{
    sim::Barrier("PipeBarrier", pipe);
}

template <uint8_t modeId, pipe_t pipe>
__aicore__ inline void CrossCoreSetFlag(uint16_t flagId)
{
    sim::CrossCoreSet(modeId, pipe, flagId);
}

template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
__aicore__ inline void CrossCoreWaitFlag(uint16_t flagId)
{
    sim::CrossCoreWait(flagId);
}

template <bool isAIVOnly = true>
__aicore__ inline void SyncAll()
{
    sim::SyncAllCores(isAIVOnly, "SyncAll");
}

// Software SyncAll over the AIV cores; the GM/UB workspaces are only checked for validity.
template <bool isAIVOnly = true>
__aicore__ inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                               const int32_t usedCores = 0)
{
    sim::Alive(ubWorkspace, "SyncAll", "ubWorkspace");
    sim::GmAccess(gmWorkspace, "SyncAll", "gmWorkspace", 0, 0);
    (void)usedCores;
    sim::SyncAllCores(true, "SyncAll");
}

// Data cache maintenance (缓存控制/DataCacheCleanAndInvalid.md): scalar GM accesses go
// through a per-core data cache that DMA bypasses. The sim has no data cache (a limit of the
// model, see its README): these only check their operand.
template <typename T, CacheLine entireType, DcciDst dcciDst>
__aicore__ inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst)
{
    sim::GmAccess(dst, "DataCacheCleanAndInvalid", "dst", 0, 0);
}
template <typename T, CacheLine entireType>
__aicore__ inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst)
{
    sim::GmAccess(dst, "DataCacheCleanAndInvalid", "dst", 0, 0);
}

// Preloads the 64-byte line holding byte `cacheOffset` of src into the core's data cache
// (缓存控制/DataCachePreload.md: one line per call, an int16_t or int64_t offset in bytes;
// the docs advise at most 4 calls in a row). The sim has no data cache: the call checks the
// byte is src's, and the timeline makes the line's scalar reads hits once a GM read latency
// has passed since the call (sim/timing.h).
template <typename T>
__aicore__ inline void DataCachePreload(const GlobalTensor<uint64_t>& src, const T cacheOffset)
{
    static_assert(sim::OneOf<T, int16_t, int64_t>, "DataCachePreload: cacheOffset is int16_t or int64_t");
    const char* api = "DataCachePreload";
    sim::Op op(api, sim::Pipe::S);
    if (cacheOffset < 0) {
        sim::Trap(api, "cacheOffset " + std::to_string(cacheOffset) + " is before src");
    }
    sim::WorkPreload(sim::GmAccess(src, api, "src", static_cast<uint64_t>(cacheOffset), 1));
}

template <typename T>
__aicore__ inline void SetAtomicAdd()
{
    static_assert(sim::OneOf<T, float, half, bfloat16_t, int32_t, int16_t, int8_t>,
                  "SetAtomicAdd: element type not supported");
    sim::Core& c = sim::CurCore();
    c.atomicOp = sim::AtomicOp::Add;
    c.atomicType = sim::KindOf<T>();
}
__aicore__ inline void SetAtomicNone() { sim::CurCore().atomicOp = sim::AtomicOp::None; }

// System variables (kernel_operator_sys_var_intf.h; dav-c220 impl): on an AIV of a mixed
// launch GetBlockIdx() = block * 2 + sub-block, on an AIC the block index.
__aicore__ inline int64_t GetBlockNum() { return sim::CurCore().blockDim; }
__aicore__ inline int64_t GetSubBlockIdx() { return sim::CurCore().subBlockIdx; }
__aicore__ inline int64_t GetTaskRation() { return sim::CurCore().taskRation; }
__aicore__ inline int64_t GetSubBlockNum() { return sim::CurCore().taskRation; }
__aicore__ inline int64_t GetBlockIdx()
{
    const sim::Core& c = sim::CurCore();
    return c.kind == sim::CoreKind::AIV ? int64_t(c.blockIdx) * c.taskRation + c.subBlockIdx : c.blockIdx;
}
// The sim reserves no system workspace: the user workspace is the whole buffer passed in.
__aicore__ inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) { return workspace; }

} // namespace AscendC

// `if ASCEND_IS_AIV { ... }` as on the device, where the macro is `constexpr(g_coreType ==
// AIV)` (impl/utils/sys_macros.h): only usable right after `if`, so a value use (`x =
// ASCEND_IS_AIV ? a : b`) fails to compile here as it does in bisheng. The core type is a
// runtime property of the thread here, so the expansion is `if constexpr (true) if (...)`;
// an `else` binds to the inner `if`.
namespace AscendC {
namespace sim {
inline bool OnAiv() { return CurCore().kind == CoreKind::AIV; }
} // namespace sim
} // namespace AscendC
#pragma GCC diagnostic ignored "-Wdangling-else"
#define ASCEND_IS_AIV constexpr (true) if (::AscendC::sim::OnAiv())
#define ASCEND_IS_AIC constexpr (true) if (!::AscendC::sim::OnAiv())
#define ASCEND_IS_NOT_AIV ASCEND_IS_AIC
#define ASCEND_IS_NOT_AIC ASCEND_IS_AIV
// Checks the declared kernel type against the launch's core mode.
#define KERNEL_TASK_TYPE_DEFAULT(value) ::AscendC::sim::DeclareKernelType(value)
