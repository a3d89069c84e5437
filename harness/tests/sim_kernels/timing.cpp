// Micro-kernels whose modeled time follows by hand from the cost table (sim/timing.h):
// one DataCopy per block, a copy-in / compute / copy-out loop single- and double-buffered,
// one large Mmad, and a cube → vector hand-off through a cross-core flag.
#include "kernel_operator.h"

using namespace AscendC;

// One DataCopy of kCopyFloats floats GM → UB from float `first` of x.
constexpr uint32_t kCopyFloats = 16384; // 64 KiB

__aicore__ inline void CopyFrom(GM_ADDR x, uint32_t first)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, kCopyFloats * sizeof(float));
    GlobalTensor<float> gx;
    gx.SetGlobalBuffer((__gm__ float*)x + first, kCopyFloats);
    DataCopy(buf.Get<float>(), gx, kCopyFloats);
}

// Block b reads slice b.
extern "C" __global__ __aicore__ void tm_one_copy(GM_ADDR x)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    CopyFrom(x, GetBlockIdx() * kCopyFloats);
}

// Every block reads the first slice.
extern "C" __global__ __aicore__ void tm_same_copy(GM_ADDR x)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    CopyFrom(x, 0);
}

// 64 bursts of 64 bytes, 32 bytes apart (a pitch of 96 bytes), GM → UB in one DataCopy.
extern "C" __global__ __aicore__ void tm_strided_copy(GM_ADDR x)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 64 * 64);
    GlobalTensor<float> gx;
    gx.SetGlobalBuffer((__gm__ float*)x, 64 * 96 / sizeof(float));
    DataCopy(buf.Get<float>(), gx, DataCopyParams(64, 2, 1, 0));
}

// y = 2·x over kTiles tiles of kTileFloats: copy-in (MTE2), Muls (V), copy-out (MTE3).
constexpr uint32_t kTiles = 16, kTileFloats = 8192; // 32 KiB tiles

// One buffer, scaled in place: each tile's copy-in waits for the previous copy-out.
extern "C" __global__ __aicore__ void tm_pipeline_single(GM_ADDR x, GM_ADDR y)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, kTileFloats * sizeof(float));
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, kTiles * kTileFloats);
    gy.SetGlobalBuffer((__gm__ float*)y, kTiles * kTileFloats);
    for (uint32_t t = 0; t < kTiles; ++t) {
        LocalTensor<float> v = q.AllocTensor<float>();
        DataCopy(v, gx[t * kTileFloats], kTileFloats);
        q.EnQue(v);
        v = q.DeQue<float>();
        Muls(v, v, 2.0f, kTileFloats);
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
        DataCopy(gy[t * kTileFloats], v, kTileFloats);
        SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0); // the next copy-in overwrites v
        WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        q.FreeTensor(v);
    }
}

// The official double-buffered pattern: an input and an output queue of two buffers each.
extern "C" __global__ __aicore__ void tm_pipeline_double(GM_ADDR x, GM_ADDR y)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TQue<TPosition::VECIN, 2> inQ;
    TQue<TPosition::VECOUT, 2> outQ;
    pipe.InitBuffer(inQ, 2, kTileFloats * sizeof(float));
    pipe.InitBuffer(outQ, 2, kTileFloats * sizeof(float));
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, kTiles * kTileFloats);
    gy.SetGlobalBuffer((__gm__ float*)y, kTiles * kTileFloats);
    for (uint32_t t = 0; t < kTiles; ++t) {
        LocalTensor<float> in = inQ.AllocTensor<float>();
        DataCopy(in, gx[t * kTileFloats], kTileFloats);
        inQ.EnQue(in);
        in = inQ.DeQue<float>();
        LocalTensor<float> out = outQ.AllocTensor<float>();
        Muls(out, in, 2.0f, kTileFloats);
        inQ.FreeTensor(in);
        outQ.EnQue(out);
        out = outQ.DeQue<float>();
        DataCopy(gy[t * kTileFloats], out, kTileFloats);
        outQ.FreeTensor(out);
    }
}

// C [128 x 128] f32 = A [128 x 256] (all 1) · B [256 x 128] (all 2), operands set by Fill in
// L0A / L0B, one Mmad (8 · 8 · 16 b16 fractal steps), then Fixpipe to GM.
constexpr uint32_t kMmM = 128, kMmN = 128, kMmK = 256;

__aicore__ inline void BigMmad(GlobalTensor<float>& gc)
{
    TPipe pipe;
    TBuf<TPosition::A2> aBuf;
    TBuf<TPosition::B2> bBuf;
    TBuf<TPosition::CO1> cBuf;
    pipe.InitBuffer(aBuf, kMmM * kMmK * sizeof(bfloat16_t));
    pipe.InitBuffer(bBuf, kMmK * kMmN * sizeof(bfloat16_t));
    pipe.InitBuffer(cBuf, kMmM * kMmN * sizeof(float));
    LocalTensor<bfloat16_t> a = aBuf.Get<bfloat16_t>();
    LocalTensor<bfloat16_t> b = bBuf.Get<bfloat16_t>();
    Fill(a, InitConstValueParams<bfloat16_t>(1, kMmM * kMmK / 256, 0, bfloat16_t(1.0f)));
    Fill(b, InitConstValueParams<bfloat16_t>(1, kMmK * kMmN / 256, 0, bfloat16_t(2.0f)));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    LocalTensor<float> c = cBuf.Get<float>();
    Mmad(c, a, b, MmadParams(kMmM, kMmN, kMmK, 0, false, true));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(gc, c, FixpipeParamsV220(kMmN, kMmM, kMmM, kMmN, false));
}

extern "C" __global__ __aicore__ void tm_mmad(GM_ADDR c)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GlobalTensor<float> gc;
    gc.SetGlobalBuffer((__gm__ float*)c, kMmM * kMmN);
    BigMmad(gc);
}

// The AIC computes C (as tm_mmad) and raises flag 1 once Fixpipe wrote it; each AIV waits
// for the flag, then reads its half of C back into UB.
extern "C" __global__ __aicore__ void tm_handoff(GM_ADDR c)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<float> gc;
    gc.SetGlobalBuffer((__gm__ float*)c, kMmM * kMmN);
    if ASCEND_IS_AIC {
        BigMmad(gc);
        CrossCoreSetFlag<2, PIPE_FIX>(1);
    }
    if ASCEND_IS_AIV {
        CrossCoreWaitFlag(1);
        constexpr uint32_t half = kMmM * kMmN / 2;
        TPipe pipe;
        TBuf<TPosition::VECCALC> buf;
        pipe.InitBuffer(buf, half * sizeof(float));
        DataCopy(buf.Get<float>(), gc[GetSubBlockIdx() * half], half);
    }
}

// 64 int32 of x from its first 64-byte boundary (four lines; x holds 80) read by the scalar
// unit, their sum into y[0]; with PRELOAD each line is first asked for with
// DataCachePreload (four calls, the docs' limit).
template <bool PRELOAD>
__aicore__ inline void ScalarReads(GM_ADDR x, GM_ADDR y)
{
    const uint32_t skip = (64 - reinterpret_cast<uintptr_t>(x) % 64) % 64; // bytes
    GlobalTensor<int32_t> gx, gy;
    gx.SetGlobalBuffer((__gm__ int32_t*)(x + skip), 64);
    gy.SetGlobalBuffer((__gm__ int32_t*)y, 16);
    if constexpr (PRELOAD) {
        GlobalTensor<uint64_t> lines;
        lines.SetGlobalBuffer((__gm__ uint64_t*)(x + skip), 32);
        for (int64_t line = 0; line < 4; ++line) {
            DataCachePreload(lines, line * 64);
        }
    }
    int32_t sum = 0;
    for (uint32_t i = 0; i < 64; ++i) {
        sum += gx.GetValue(i);
    }
    gy.SetValue(0, sum);
}

extern "C" __global__ __aicore__ void tm_scalar_reads(GM_ADDR x, GM_ADDR y)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    ScalarReads<false>(x, y);
}

extern "C" __global__ __aicore__ void tm_preloaded_reads(GM_ADDR x, GM_ADDR y)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    ScalarReads<true>(x, y);
}
