// Data movement test kernels: plain DataCopy across cores, DataCopyPad with unaligned rows.
#include "kernel_operator.h"
#include "handshake.h"

using namespace AscendC;

// Each of the blockDim AIV cores copies kCopyPerCore floats x -> y through UB, double
// buffered in two tiles. A VECIN -> VECOUT queue: no vector work between the copies, so
// EnQue/DeQue carry MTE2_MTE3 and FreeTensor/AllocTensor MTE3_MTE2.
constexpr uint32_t kCopyPerCore = 2048;
constexpr uint32_t kCopyTile = 1024;

extern "C" __global__ __aicore__ void sim_copy_f32(GM_ADDR x, GM_ADDR y)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 2> q;
    pipe.InitBuffer(q, 2, kCopyTile * sizeof(float));
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * kCopyPerCore, kCopyPerCore);
    gy.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * kCopyPerCore, kCopyPerCore);
    for (uint32_t t = 0; t < kCopyPerCore / kCopyTile; ++t) {
        LocalTensor<float> in = q.AllocTensor<float>();
        DataCopy(in, gx[t * kCopyTile], kCopyTile);
        q.EnQue(in);
        LocalTensor<float> out = q.DeQue<float>();
        DataCopy(gy[t * kCopyTile], out, kCopyTile);
        q.FreeTensor(out);
    }
}

// A kRows x kCols bf16 matrix (rows of 42 bytes: not 32-byte aligned) is read row by row
// with DataCopyPad into UB rows of 32 elements (right-padded with 7.0), doubled with a
// float round trip, and written back unaligned into y (kRows x kCols). The padded UB rows
// (kRows x 32) are also written to ypad, so the padding values can be checked.
constexpr uint32_t kRows = 5;
constexpr uint32_t kCols = 21;
constexpr uint32_t kPadCols = 32;

extern "C" __global__ __aicore__ void sim_copy_pad_bf16(GM_ADDR x, GM_ADDR y, GM_ADDR ypad)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bufIn, bufF, bufOut;
    pipe.InitBuffer(bufIn, kRows * kPadCols * sizeof(bfloat16_t));
    pipe.InitBuffer(bufF, kRows * kPadCols * sizeof(float));
    pipe.InitBuffer(bufOut, kRows * kPadCols * sizeof(bfloat16_t));
    GlobalTensor<bfloat16_t> gx, gy, gpad;
    gx.SetGlobalBuffer((__gm__ bfloat16_t*)x);
    gy.SetGlobalBuffer((__gm__ bfloat16_t*)y);
    gpad.SetGlobalBuffer((__gm__ bfloat16_t*)ypad);
    LocalTensor<bfloat16_t> in = bufIn.Get<bfloat16_t>();
    // one burst per row; the UB row is 21 data + 11 padding elements = 64 bytes
    DataCopyExtParams cp{kRows, kCols * sizeof(bfloat16_t), 0, 0, 0};
    DataCopyPadExtParams<bfloat16_t> pad{true, 0, kPadCols - kCols, bfloat16_t(7.0f)};
    DataCopyPad(in, gx, cp, pad);
    Sync<HardEvent::MTE2_V>();
    LocalTensor<float> f = bufF.Get<float>();
    Cast(f, in, RoundMode::CAST_NONE, kRows * kPadCols);
    Muls(f, f, 2.0f, kRows * kPadCols);
    LocalTensor<bfloat16_t> out = bufOut.Get<bfloat16_t>();
    Cast(out, f, RoundMode::CAST_RINT, kRows * kPadCols);
    // V_MTE3 for `out`; it also orders the load of `in` (V waited for it) before the copy
    Sync<HardEvent::V_MTE3>();
    DataCopy(gpad, in, kRows * kPadCols);
    // rows of 42 bytes back to GM: UB rows are 64 bytes apart (srcStride 0 blocks after
    // the 2 blocks a 42-byte burst occupies), GM rows contiguous (dstStride 0 bytes)
    DataCopyExtParams outp{kRows, kCols * sizeof(bfloat16_t), 0, 0, 0};
    DataCopyPad(gy, out, outp);
}

// Strided DataCopyPad: reads rows 0 and 2 of a 4 x 20 fp32 matrix (srcStride in bytes)
// without padding; each 80-byte row fills 3 blocks in UB and the 4 dummy lanes repeat the
// row's first element.
extern "C" __global__ __aicore__ void sim_copy_pad_stride(GM_ADDR x, GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * 32 * sizeof(float));
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x);
    gy.SetGlobalBuffer((__gm__ float*)y);
    LocalTensor<float> t = buf.Get<float>();
    DataCopyExtParams cp{2, 20 * sizeof(float), 20 * sizeof(float), 0, 0};
    DataCopyPad(t, gx, cp, DataCopyPadExtParams<float>{});
    Sync<HardEvent::MTE2_MTE3>();
    DataCopy(gy, t, 48);
}
