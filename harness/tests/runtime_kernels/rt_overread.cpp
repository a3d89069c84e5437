// Runtime test kernel: on TP rank 1 only (its x starts with 10: the test's x(rank, 0, 0) =
// 10 · rank), reads a row far past the end of x (a trap), so the other ranks must be
// released from the next collective with an error.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void rt_overread(GM_ADDR x, GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<float> gx;
    gx.SetGlobalBuffer((__gm__ float*)x);
    if (gx.GetValue(0) != 10.0f) {
        return;
    }
    TPipe pipe;
    TBuf<TPosition::VECCALC> rowBuf;
    pipe.InitBuffer(rowBuf, 64 * sizeof(float));
    LocalTensor<float> row = rowBuf.Get<float>();
    DataCopy(row, gx[100000 * 64], 64);
}
