// Deliberately wrong kernels, one per trap class of the sim. Each must fail with a message
// naming the kernel, the API call and the buffer (or event / flag) involved. The lead-up of
// each kernel is synchronised as on the device, so the intended trap is the first one.
#include "kernel_operator.h"
#include "handshake.h"

using namespace AscendC;

// GM out of bounds: reads 64 floats starting 32 floats before the end of x.
extern "C" __global__ __aicore__ void trap_gm_oob(GM_ADDR x)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 64 * sizeof(float));
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)x);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, g[64 - 32], 64); // x holds 64 floats
}

// Local memory overflow: two 100 KiB buffers do not fit the 184 KiB of usable UB.
extern "C" __global__ __aicore__ void trap_ub_overflow()
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 100 * 1024);
    pipe.InitBuffer(b, 100 * 1024);
}

// Misaligned DataCopy: 10 floats are 40 bytes, not whole 32-byte blocks.
extern "C" __global__ __aicore__ void trap_misaligned_copy(GM_ADDR x)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)x);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, g, 10);
}

// Misaligned vector operand: a LocalTensor view starting 12 bytes into the buffer.
extern "C" __global__ __aicore__ void trap_misaligned_vec()
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256 * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    Duplicate(t, 1.0f, 256);
    Adds(t[3], t[3], 1.0f, 64);
}

// Use of a freed LocalTensor.
extern "C" __global__ __aicore__ void trap_use_after_free()
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate(t, 1.0f, 64);
    q.FreeTensor(t);
    Adds(t, t, 1.0f, 64);
}

// Queue misuse: DeQue from an empty queue.
extern "C" __global__ __aicore__ void trap_deque_empty()
{
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 2, 256);
    LocalTensor<float> t = q.DeQue<float>();
    Duplicate(t, 1.0f, 64);
}

// Queue misuse: a depth-1 queue holding two tensors.
extern "C" __global__ __aicore__ void trap_queue_depth()
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    LocalTensor<float> b = q.AllocTensor<float>();
    Duplicate(a, 1.0f, 64);
    Duplicate(b, 2.0f, 64);
    q.EnQue(a);
    q.EnQue(b);
}

// Reading never-written local memory: half of the buffer is written, all of it copied out.
extern "C" __global__ __aicore__ void trap_uninit_read(GM_ADDR y)
{
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 128 * sizeof(float));
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)y);
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate(t, 1.0f, 64);
    q.EnQue(t);
    t = q.DeQue<float>();
    DataCopy(g, t, 128);
    q.FreeTensor(t);
}

// WaitFlag without a matching SetFlag.
extern "C" __global__ __aicore__ void trap_wait_without_set()
{
    SetFlag<HardEvent::MTE2_V>(EVENT_ID1);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID1);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID1);
}

// Deadlock (MIX): the AIVs wait for flag 3, which the AIC never raises.
extern "C" __global__ __aicore__ void trap_deadlock()
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    if ASCEND_IS_AIV {
        CrossCoreWaitFlag(3);
    }
}

// A trap in one core while the others wait in SyncAll: the launch must end with the trap.
extern "C" __global__ __aicore__ void trap_while_others_wait(GM_ADDR x)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)x);
    if (GetBlockIdx() == 1) {
        g.GetValue(1000000);
    }
    SyncAll();
}

// Unsupported round mode for the type pair (float -> bf16 has no CAST_ODD on dav-c220).
extern "C" __global__ __aicore__ void trap_cast_mode()
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 64 * sizeof(float));
    pipe.InitBuffer(b, 64 * sizeof(bfloat16_t));
    LocalTensor<float> f = a.Get<float>();
    Duplicate(f, 1.0f, 64);
    LocalTensor<bfloat16_t> h = b.Get<bfloat16_t>();
    Cast(h, f, RoundMode::CAST_ODD, 64);
}

// Cube layout misuse: a LoadData destination in L0A that is not 512-byte aligned.
extern "C" __global__ __aicore__ void trap_l0_misaligned(GM_ADDR x)
{
    TPipe pipe;
    TBuf<TPosition::A1> a1;
    TBuf<TPosition::A2> a2;
    pipe.InitBuffer(a1, 512 * sizeof(half));
    pipe.InitBuffer(a2, 1024 * sizeof(half));
    GlobalTensor<half> g;
    g.SetGlobalBuffer((__gm__ half*)x);
    LocalTensor<half> l1 = a1.Get<half>();
    DataCopy(l1, g, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
    Sync<HardEvent::MTE2_MTE1>();
    LocalTensor<half> l0 = a2.Get<half>();
    LoadData(l0[16], l1, LoadData2DParams(0, 1, 0, 0, 0, false, 0));
}

// Reading an L0A fractal row that was never loaded: Mmad over 32 rows with 16 loaded.
extern "C" __global__ __aicore__ void trap_mmad_uninit(GM_ADDR x)
{
    TPipe pipe;
    TBuf<TPosition::A1> a1;
    TBuf<TPosition::A2> a2;
    TBuf<TPosition::B2> b2;
    TBuf<TPosition::CO1> co1;
    pipe.InitBuffer(a1, 512 * sizeof(half));
    pipe.InitBuffer(a2, 512 * sizeof(half));
    pipe.InitBuffer(b2, 256 * sizeof(half));
    pipe.InitBuffer(co1, 512 * sizeof(float));
    GlobalTensor<half> g;
    g.SetGlobalBuffer((__gm__ half*)x);
    LocalTensor<half> l1 = a1.Get<half>();
    DataCopy(l1, g, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
    Sync<HardEvent::MTE2_MTE1>();
    LocalTensor<half> a = a2.Get<half>();
    LocalTensor<half> b = b2.Get<half>();
    LoadData(a, l1, LoadData2DParams(0, 1, 0, 0, 0, false, 0));
    LoadData(b, l1, LoadData2DParams(0, 1, 0, 0, 0, true, 0));
    Sync<HardEvent::MTE1_M>();
    LocalTensor<float> c = co1.Get<float>();
    Mmad(c, a, b, MmadParams(32, 16, 16, 0, false, true));
}

// Kernel types marked as the `.asc` samples do: the marking is checked against the launch.
extern "C" __global__ __vector__ void marked_vector(GM_ADDR x) {}
extern "C" __global__ __cube__ void marked_cube(GM_ADDR x) {}
extern "C" __global__ __mix__(1, 2) void marked_mix(GM_ADDR x) {}

// Parameter fields (sim/fields.h): a field outside its documented range traps at the API
// call that consumes the struct; a value that does not fit its narrow field (the device
// would truncate it) traps in the struct's constructor.

// DataCopyParams.blockCount 4096 fits its uint16_t but the documented range is [0, 4095].
extern "C" __global__ __aicore__ void trap_copy_block_count(GM_ADDR x)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096 * 32);
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)x);
    DataCopy(buf.Get<float>(), g, DataCopyParams(4096, 1, 0, 0));
}

// 70000 blocks do not fit DataCopyParams.blockLen (uint16_t): the device would copy 4464.
extern "C" __global__ __aicore__ void trap_copy_block_len_truncated(GM_ADDR x)
{
    const uint32_t blocks = 70000;
    DataCopyParams p(1, blocks, 0, 0);
}

// Nd2NzParams.nValue 16385 fits its uint16_t but the documented range is [0, 16384].
extern "C" __global__ __aicore__ void trap_nd2nz_n_value(GM_ADDR x)
{
    TPipe pipe;
    TBuf<TPosition::A1> a1;
    pipe.InitBuffer(a1, 512 * sizeof(half));
    GlobalTensor<half> g;
    g.SetGlobalBuffer((__gm__ half*)x);
    DataCopy(a1.Get<half>(), g, Nd2NzParams(1, 16385, 16, 0, 16, 16, 1, 0));
}

// 256 fractals do not fit LoadData2DParams.repeatTimes (uint8_t): the device would load none.
extern "C" __global__ __aicore__ void trap_load_data_repeat_times(GM_ADDR x)
{
    const uint32_t fractals = 256;
    LoadData2DParams p(0, fractals, 1, 0, 0, false, 0);
}

// FixpipeParamsV220.nSize 4096 fits its uint16_t but the documented range is [0, 4095].
extern "C" __global__ __aicore__ void trap_fixpipe_n_size(GM_ADDR x)
{
    TPipe pipe;
    TBuf<TPosition::CO1> co1;
    pipe.InitBuffer(co1, 256 * sizeof(float));
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)x);
    Fixpipe(g, co1.Get<float>(), FixpipeParamsV220(4096, 16, 16, 4096, false));
}

// MmadParams.k 4096 fits its uint16_t but the documented range is [0, 4095].
extern "C" __global__ __aicore__ void trap_mmad_k(GM_ADDR x)
{
    TPipe pipe;
    TBuf<TPosition::A2> a2;
    TBuf<TPosition::B2> b2;
    TBuf<TPosition::CO1> co1;
    pipe.InitBuffer(a2, 512 * sizeof(half));
    pipe.InitBuffer(b2, 512 * sizeof(half));
    pipe.InitBuffer(co1, 256 * sizeof(float));
    Mmad(co1.Get<float>(), a2.Get<half>(), b2.Get<half>(), MmadParams(16, 16, 4096, 0, false, true));
}

// A level-0 repeatTime of 300 does not fit its uint8_t parameter: the device would run 44.
extern "C" __global__ __aicore__ void trap_vector_repeat_time()
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 300 * 256);
    LocalTensor<float> t = buf.Get<float>();
    const uint32_t repeats = 300;
    Adds(t, t, 1.0f, 64, repeats, UnaryRepeatParams(1, 1, 8, 8));
}

// DataCachePreload of a line past the end of x (x holds 8 uint64).
extern "C" __global__ __aicore__ void trap_preload_oob(GM_ADDR x)
{
    GlobalTensor<uint64_t> g;
    g.SetGlobalBuffer((__gm__ uint64_t*)x);
    DataCachePreload(g, int64_t(64));
}
