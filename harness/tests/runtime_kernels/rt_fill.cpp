// Runtime test kernel with the generated-kernel ABI (GM args…, workspace, tiling): echoes
// the tiling words, and fills four group slabs of 16 rows: row i of group g is
// x[i] + 1000·g for i < t (x differs per rank). Rank `trap_rank` (tiling word 12, reserved
// in the real layout; 0 = none) reads past x instead, to test a trap on one rank.
#include "kernel_operator.h"
#include "handshake.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void rt_fill(GM_ADDR x, GM_ADDR groups, GM_ADDR words, GM_ADDR workspace,
                                              GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<int32_t> gt;
    gt.SetGlobalBuffer((__gm__ int32_t*)tiling, 16);
    const uint32_t t = gt.GetValue(0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> rowBuf, wordBuf;
    pipe.InitBuffer(rowBuf, 64 * sizeof(float));
    pipe.InitBuffer(wordBuf, 16 * sizeof(int32_t));
    LocalTensor<int32_t> w = wordBuf.Get<int32_t>();
    DataCopy(w, gt, 16);
    Sync<HardEvent::MTE2_MTE3>();
    GlobalTensor<int32_t> gw;
    gw.SetGlobalBuffer((__gm__ int32_t*)words, 16);
    DataCopy(gw, w, 16);
    GlobalTensor<float> gx, gg;
    gx.SetGlobalBuffer((__gm__ float*)x);
    gg.SetGlobalBuffer((__gm__ float*)groups);
    LocalTensor<float> row = rowBuf.Get<float>();
    for (uint32_t g = 0; g < 4; ++g) {
        for (uint32_t i = 0; i < t; ++i) {
            DataCopy(row, gx[i * 64], 64);
            Sync<HardEvent::MTE2_V>();
            Adds(row, row, static_cast<float>(1000 * g), 64);
            Sync<HardEvent::V_MTE3>();
            DataCopy(gg[(g * 16 + i) * 64], row, 64);
            Sync<HardEvent::MTE3_MTE2>(); // row is reloaded next; MTE3, its last user, waited for V
        }
    }
}
