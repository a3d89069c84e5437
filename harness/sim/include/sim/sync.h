// Synchronisation (kernel_operator_block_sync_intf.h), atomics and system variables.
// The sim executes each API call to completion, so intra-core events are pairing checks:
// WaitFlag<evt>(id) without a pending SetFlag<evt>(id) traps (the chip would hang).
// Cross-core flags (CrossCoreSetFlag/WaitFlag, docs 核间同步) and SyncAll really block:
// every core is a thread. Per flag id (0..15) each core has a counter that WaitFlag
// consumes; mode 0 raises it on all cores of the caller's type once all of them have set
// the flag, mode 1 on both AIVs of a group once both have set it, mode 2 from the AIC on
// both AIVs of its group, and from the AIVs on the AIC once both AIVs have set it.
#pragma once

#include "vec_common.h"

namespace AscendC {
namespace sim {
void CrossCoreSet(uint8_t mode, uint16_t flagId);
void CrossCoreWait(uint16_t flagId);
void SyncAllCores(bool aivOnly, const char* api);
void DeclareKernelType(KernelMetaType t);

inline const char* EventName(HardEvent e)
{
    static const char* const names[] = {
        "MTE2_MTE1", "MTE1_MTE2", "MTE1_M",    "M_MTE1",    "MTE2_V",    "V_MTE2",    "MTE3_V",   "V_MTE3",
        "M_V",       "V_M",       "V_V",       "MTE3_MTE1", "MTE1_MTE3", "MTE1_V",    "MTE2_M",   "M_MTE2",
        "V_MTE1",    "M_FIX",     "FIX_M",     "MTE3_MTE2", "MTE2_MTE3", "S_V",       "V_S",      "S_MTE2",
        "MTE2_S",    "S_MTE3",    "MTE3_S",    "MTE2_FIX",  "FIX_MTE2",  "FIX_S",     "M_S",      "FIX_MTE3",
        "MTE1_FIX",  "FIX_MTE1",  "FIX_FIX"};
    int i = static_cast<int>(e);
    return i < static_cast<int>(HardEvent::MAX) ? names[i] : "?";
}
} // namespace sim

template <HardEvent event>
__aicore__ inline void SetFlag(int32_t eventID)
{
    if (eventID < 0 || eventID > 7) {
        sim::Trap("SetFlag", "event id " + std::to_string(eventID) + " out of range [0, 7]");
    }
    sim::CurCore().eventSet[static_cast<int>(event)][eventID]++;
}

template <HardEvent event>
__aicore__ inline void WaitFlag(int32_t eventID)
{
    if (eventID < 0 || eventID > 7) {
        sim::Trap("WaitFlag", "event id " + std::to_string(eventID) + " out of range [0, 7]");
    }
    uint16_t& n = sim::CurCore().eventSet[static_cast<int>(event)][eventID];
    if (n == 0) {
        sim::Trap("WaitFlag", std::string("WaitFlag<HardEvent::") + sim::EventName(event) + ">(" +
                                  std::to_string(eventID) + ") without a matching SetFlag (the core would hang)");
    }
    n--;
}

template <pipe_t pipe>
__aicore__ inline void PipeBarrier()
{}

template <uint8_t modeId, pipe_t pipe>
__aicore__ inline void CrossCoreSetFlag(uint16_t flagId)
{
    sim::CrossCoreSet(modeId, flagId);
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

// `if ASCEND_IS_AIV { ... }`: the core type is a runtime property of the thread, as in
// the official CPU-debug mode.
#define ASCEND_IS_AIV (::AscendC::sim::CurCore().kind == ::AscendC::sim::CoreKind::AIV)
#define ASCEND_IS_AIC (::AscendC::sim::CurCore().kind == ::AscendC::sim::CoreKind::AIC)
#define ASCEND_IS_NOT_AIV (!ASCEND_IS_AIV)
#define ASCEND_IS_NOT_AIC (!ASCEND_IS_AIC)
// Checks the declared kernel type against the launch's core mode.
#define KERNEL_TASK_TYPE_DEFAULT(value) ::AscendC::sim::DeclareKernelType(value)
