// Kernels for the per-argument DMA traffic counters: one reads its input twice, one
// reads every other row of a strided matrix, one writes half of its output twice, one
// hands rows off through a reused scratch row.
#include "kernel_operator.h"
#include "handshake.h"

using namespace AscendC;

constexpr uint32_t kTrafficElems = 512;

// y = x + x, with x read from GM twice (two DataCopy of the same bytes).
extern "C" __global__ __aicore__ void sim_traffic_reread(GM_ADDR x, GM_ADDR y)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, kTrafficElems * sizeof(float));
    pipe.InitBuffer(b, kTrafficElems * sizeof(float));
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, kTrafficElems);
    gy.SetGlobalBuffer((__gm__ float*)y, kTrafficElems);
    LocalTensor<float> la = a.Get<float>();
    LocalTensor<float> lb = b.Get<float>();
    DataCopy(la, gx, kTrafficElems);
    DataCopy(lb, gx, kTrafficElems);
    Sync<HardEvent::MTE2_V>();
    Add(la, la, lb, kTrafficElems);
    Sync<HardEvent::V_MTE3>();
    DataCopy(gy, la, kTrafficElems);
}

// x is 8 rows of 64 floats; rows 0, 2, 4, 6 are copied to y (4 x 64) with one strided
// DataCopy, then row 0 of y is written a second time.
extern "C" __global__ __aicore__ void sim_traffic_strided(GM_ADDR x, GM_ADDR y)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 4 * 64 * sizeof(float));
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 8 * 64);
    gy.SetGlobalBuffer((__gm__ float*)y, 4 * 64);
    LocalTensor<float> la = a.Get<float>();
    // 4 bursts of 64 floats (8 blocks), skipping one 64-float row (8 blocks) between them
    DataCopy(la, gx, DataCopyParams(4, 8, 8, 0));
    Sync<HardEvent::MTE2_MTE3>();
    DataCopy(gy, la, 4 * 64);
    PipeBarrier<PIPE_MTE3>(); // the two writes of row 0 stay in order
    DataCopy(gy, la, 64);
}

// x (4 rows of 64 floats) reaches y through one reused row of scratch s: each row is
// written to s and read back (row 0 read back twice), then the last row is written to s
// twice more with no read between.
extern "C" __global__ __aicore__ void sim_traffic_handoff(GM_ADDR x, GM_ADDR s, GM_ADDR y)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 64 * sizeof(float));
    pipe.InitBuffer(b, 4 * 64 * sizeof(float));
    GlobalTensor<float> gx, gs, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 4 * 64);
    gs.SetGlobalBuffer((__gm__ float*)s, 64);
    gy.SetGlobalBuffer((__gm__ float*)y, 4 * 64);
    LocalTensor<float> la = a.Get<float>();
    LocalTensor<float> lb = b.Get<float>();
    for (uint32_t r = 0; r < 4; ++r) {
        DataCopy(la, gx[r * 64], 64);
        Sync<HardEvent::MTE2_MTE3>();
        DataCopy(gs, la, 64);
        Sync<HardEvent::MTE3_MTE2>();
        DataCopy(lb[r * 64], gs, 64);
        if (r == 0) {
            PipeBarrier<PIPE_MTE2>();
            DataCopy(lb[r * 64], gs, 64);
        }
        Sync<HardEvent::MTE2_MTE3>();
        Sync<HardEvent::MTE3_MTE2>(); // s and la are free for the next row
    }
    DataCopy(gy, lb, 4 * 64);
    DataCopy(gs, la, 64);
    PipeBarrier<PIPE_MTE3>();
    DataCopy(gs, la, 64);
}
