// Multi-core test kernels: core indices, cross-core flags, SyncAll, atomic accumulation.
// Scalar GM accesses go through each core's data cache, which writes back whole 64-byte
// lines (GlobalTensor/SetValue.md): every core's scalar-written values get a cache line of
// their own (kSlot int32), the writer cleans its line after writing and a reader
// invalidates the line before reading what another core wrote
// (缓存控制/DataCacheCleanAndInvalid.md).
#include "kernel_operator.h"

using namespace AscendC;

namespace {
constexpr int64_t kSlot = 16; // int32 per 64-byte cache line

// Writes back (and drops) the cache line holding g[i].
__aicore__ inline void Dcci(const GlobalTensor<int32_t>& g, int64_t i)
{
    DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(g[i]);
}
} // namespace

// Each core records (GetBlockIdx, GetBlockNum, GetSubBlockIdx, GetSubBlockNum) as int32 at
// slot GetBlockIdx() of aiv_ids or aic_ids (4 values at the start of a kSlot-int32 slot).
extern "C" __global__ __aicore__ void sim_core_ids(GM_ADDR aiv_ids, GM_ADDR aic_ids)
{
    GM_ADDR ids = aic_ids;
    if ASCEND_IS_AIV {
        ids = aiv_ids;
    }
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)ids);
    int64_t slot = GetBlockIdx() * kSlot;
    g.SetValue(slot + 0, static_cast<int32_t>(GetBlockIdx()));
    g.SetValue(slot + 1, static_cast<int32_t>(GetBlockNum()));
    g.SetValue(slot + 2, static_cast<int32_t>(GetSubBlockIdx()));
    g.SetValue(slot + 3, static_cast<int32_t>(GetSubBlockNum()));
}

// MIX 1:2 ping-pong through GM over kRounds rounds: both AIVs of a block publish a value
// (data[GetBlockIdx() * kSlot]) and raise flag 1 (mode 2); the AIC waits for both, adds
// them into out[block * kSlot + round] and raises flag 2 back; each AIV waits for it before
// publishing the next round. A cross-core set fires on its pipe, so the scalar accesses
// before it are first ordered before that pipe (S_MTE3).
constexpr uint32_t kRounds = 3;

extern "C" __global__ __aicore__ void sim_mix_pingpong(GM_ADDR data, GM_ADDR out)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<int32_t> d, o;
    d.SetGlobalBuffer((__gm__ int32_t*)data);
    o.SetGlobalBuffer((__gm__ int32_t*)out);
    for (uint32_t r = 0; r < kRounds; ++r) {
        if ASCEND_IS_AIV {
            int64_t me = GetBlockIdx();
            d.SetValue(me * kSlot, static_cast<int32_t>((me + 1) * 100 + r));
            Dcci(d, me * kSlot);
            SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
            CrossCoreSetFlag<2, PIPE_MTE3>(1);
            CrossCoreWaitFlag(2);
        }
        if ASCEND_IS_AIC {
            CrossCoreWaitFlag(1);
            int64_t b = GetBlockIdx();
            Dcci(d, 2 * b * kSlot);
            Dcci(d, (2 * b + 1) * kSlot);
            int32_t sum = d.GetValue(2 * b * kSlot) + d.GetValue((2 * b + 1) * kSlot);
            o.SetValue(b * kSlot + r, sum);
            SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
            CrossCoreSetFlag<2, PIPE_MTE3>(2);
        }
    }
}

// AIV-only (hard SyncAll: a MIX_AIV_1_0 kernel): two rounds of "every core writes a
// partial (partial[GetBlockIdx() * kSlot]), SyncAll, core 0 sums them".
extern "C" __global__ __aicore__ void sim_syncall(GM_ADDR partial, GM_ADDR out)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
    GlobalTensor<int32_t> p, o;
    p.SetGlobalBuffer((__gm__ int32_t*)partial);
    o.SetGlobalBuffer((__gm__ int32_t*)out);
    int64_t me = GetBlockIdx(), n = GetBlockNum();
    for (int32_t round = 0; round < 2; ++round) {
        p.SetValue(me * kSlot, static_cast<int32_t>((me + 1) * (round == 0 ? 1 : 10)));
        Dcci(p, me * kSlot);
        SyncAll();
        if (me == 0) {
            int32_t sum = 0;
            for (int64_t i = 0; i < n; ++i) {
                Dcci(p, i * kSlot); // core 0 cached these lines in the previous round
                sum += p.GetValue(i * kSlot);
            }
            o.SetValue(round, sum);
        }
        SyncAll();
    }
}

// AIV-only: every core adds x (64 floats) into out with SetAtomicAdd<float>.
extern "C" __global__ __aicore__ void sim_atomic_add(GM_ADDR x, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 64 * sizeof(float));
    GlobalTensor<float> gx, go;
    gx.SetGlobalBuffer((__gm__ float*)x);
    go.SetGlobalBuffer((__gm__ float*)out);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, gx, 64);
    TEventID id = GetTPipePtr()->FetchEventID<HardEvent::MTE2_MTE3>();
    SetFlag<HardEvent::MTE2_MTE3>(id);
    WaitFlag<HardEvent::MTE2_MTE3>(id);
    SetAtomicAdd<float>();
    DataCopy(go, t, 64);
    SetAtomicNone();
}
