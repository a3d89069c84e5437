// Runtime test kernel: writes all 16 capacity rows of y, also those at or beyond the
// runtime extent t (which must stay poisoned): the runtime reports the stray write.
#include "kernel_operator.h"
#include "handshake.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void rt_overwrite(GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> rowBuf;
    pipe.InitBuffer(rowBuf, 64 * sizeof(float));
    GlobalTensor<float> gy;
    gy.SetGlobalBuffer((__gm__ float*)y);
    LocalTensor<float> row = rowBuf.Get<float>();
    Duplicate(row, 1.0f, 64);
    Sync<HardEvent::V_MTE3>();
    for (uint32_t i = 0; i < 16; ++i) {
        DataCopy(gy[i * 64], row, 64);
    }
}
