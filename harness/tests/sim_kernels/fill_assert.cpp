// Fill (L1 and L0B initialisation) and the exception-detection interfaces
// (ascendc_assert, Trap).
#include "kernel_operator.h"

using namespace AscendC;

// C [16 x 16] = A [16 x 32] * ones [32 x 16]: rows 0..9 of A come from GM, rows 10..15 are
// set to 2 by Fill in L1 (one run of 6 blocks per 16-column block, 10 blocks apart); L0B
// is set to ones by Fill (2 fractals). So C row i is the sum of a[i] (i < 10) or 64.
extern "C" __global__ __aicore__ void sim_fill_l1_l0b(GM_ADDR a, GM_ADDR c)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr uint32_t M = 16, N = 16, K = 32, ROWS_FROM_GM = 10;
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> cBuf;
    pipe.InitBuffer(a1Buf, M * K * sizeof(bfloat16_t));
    pipe.InitBuffer(a2Buf, M * K * sizeof(bfloat16_t));
    pipe.InitBuffer(b2Buf, K * N * sizeof(bfloat16_t));
    pipe.InitBuffer(cBuf, M * N * sizeof(float));
    GlobalTensor<bfloat16_t> ga;
    GlobalTensor<float> gc;
    ga.SetGlobalBuffer((__gm__ bfloat16_t*)a);
    gc.SetGlobalBuffer((__gm__ float*)c);
    LocalTensor<bfloat16_t> a1 = a1Buf.Get<bfloat16_t>();
    DataCopy(a1, ga, Nd2NzParams(1, ROWS_FROM_GM, K, 0, K, M, 1, 0));
    Fill(a1[ROWS_FROM_GM * 16], InitConstValueParams<bfloat16_t>(K / 16, M - ROWS_FROM_GM, ROWS_FROM_GM, bfloat16_t(2.0f)));
    LocalTensor<bfloat16_t> b2 = b2Buf.Get<bfloat16_t>();
    Fill(b2, InitConstValueParams<bfloat16_t>(1, K * N / 256, 0, bfloat16_t(1.0f)));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LocalTensor<bfloat16_t> a2 = a2Buf.Get<bfloat16_t>();
    LoadData(a2, a1, LoadData2DParams(0, K / 16, 1, 0, 0, false, 0));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    LocalTensor<float> cl = cBuf.Get<float>();
    Mmad(cl, a2, b2, MmadParams(M, N, K, 0, false, true));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(gc, cl, FixpipeParamsV220(N, M, M, N, false));
}

// Fill outside the cube memories traps.
extern "C" __global__ __aicore__ void trap_fill_ub()
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    TPipe pipe;
    TBuf<TPosition::CO1> cBuf;
    pipe.InitBuffer(cBuf, 1024);
    Fill(cBuf.Get<float>(), InitConstValueParams<float>(1, 1, 0, 0.0f));
}

// Asserts x[0] == 0 with a formatted message.
extern "C" __global__ __aicore__ void sim_assert_zero(GM_ADDR x)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)x);
    const int32_t v = g.GetValue(0);
    ascendc_assert(v == 0, "x[0] = %d, block %d", v, static_cast<int32_t>(GetBlockIdx()));
    ascendc_assert(v == 0);
}

extern "C" __global__ __aicore__ void sim_trap_call()
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    Trap();
}
