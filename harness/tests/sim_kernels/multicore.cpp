// Multi-core test kernels: core indices, cross-core flags, SyncAll, atomic accumulation.
#include "kernel_operator.h"

using namespace AscendC;

// Each core records (GetBlockIdx, GetBlockNum, GetSubBlockIdx, GetSubBlockNum) as int32 at
// slot GetBlockIdx() of aiv_ids or aic_ids (4 values per slot).
extern "C" __global__ __aicore__ void sim_core_ids(GM_ADDR aiv_ids, GM_ADDR aic_ids)
{
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)(ASCEND_IS_AIV ? aiv_ids : aic_ids));
    int64_t slot = GetBlockIdx() * 4;
    g.SetValue(slot + 0, static_cast<int32_t>(GetBlockIdx()));
    g.SetValue(slot + 1, static_cast<int32_t>(GetBlockNum()));
    g.SetValue(slot + 2, static_cast<int32_t>(GetSubBlockIdx()));
    g.SetValue(slot + 3, static_cast<int32_t>(GetSubBlockNum()));
}

// MIX 1:2 ping-pong through GM over kRounds rounds: both AIVs of a block publish a value
// and raise flag 1 (mode 2); the AIC waits for both, adds them into out[block][round] and
// raises flag 2 back; each AIV waits for it before publishing the next round.
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
            d.SetValue(me, static_cast<int32_t>((me + 1) * 100 + r));
            CrossCoreSetFlag<2, PIPE_MTE3>(1);
            CrossCoreWaitFlag(2);
        }
        if ASCEND_IS_AIC {
            CrossCoreWaitFlag(1);
            int64_t b = GetBlockIdx();
            int32_t sum = d.GetValue(2 * b) + d.GetValue(2 * b + 1);
            o.SetValue(b * kRounds + r, sum);
            CrossCoreSetFlag<2, PIPE_FIX>(2);
        }
    }
}

// AIV-only: two rounds of "every core writes a partial, SyncAll, core 0 sums them".
extern "C" __global__ __aicore__ void sim_syncall(GM_ADDR partial, GM_ADDR out)
{
    GlobalTensor<int32_t> p, o;
    p.SetGlobalBuffer((__gm__ int32_t*)partial);
    o.SetGlobalBuffer((__gm__ int32_t*)out);
    int64_t me = GetBlockIdx(), n = GetBlockNum();
    for (int32_t round = 0; round < 2; ++round) {
        p.SetValue(me, static_cast<int32_t>((me + 1) * (round == 0 ? 1 : 10)));
        SyncAll();
        if (me == 0) {
            int32_t sum = 0;
            for (int64_t i = 0; i < n; ++i) {
                sum += p.GetValue(i);
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
    SetAtomicAdd<float>();
    DataCopy(go, t, 64);
    SetAtomicNone();
}
