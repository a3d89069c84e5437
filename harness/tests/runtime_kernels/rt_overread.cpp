// Runtime test kernel: on TP rank 1 only, reads a row far past the end of x (a trap),
// so the other ranks must be released from the next collective with an error.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void rt_overread(GM_ADDR x, GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<int32_t> gt;
    gt.SetGlobalBuffer((__gm__ int32_t*)tiling, 16);
    if (gt.GetValue(3) != 1) {
        return;
    }
    TPipe pipe;
    TBuf<TPosition::VECCALC> rowBuf;
    pipe.InitBuffer(rowBuf, 64 * sizeof(float));
    GlobalTensor<float> gx;
    gx.SetGlobalBuffer((__gm__ float*)x);
    LocalTensor<float> row = rowBuf.Get<float>();
    DataCopy(row, gx[100000 * 64], 64);
}
