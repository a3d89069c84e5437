// Vector-unit test kernels (single AIV core). Every kernel stages its results in UB and
// copies them out; the Rust tests recompute each segment with plain Rust. Hand-offs between
// the DMA pipes and the vector pipe are synchronised as on the device: MTE2_V after the
// loads, V_MTE3 before each store, MTE3_V before a stored buffer is overwritten.
#include "kernel_operator.h"
#include "handshake.h"

using namespace AscendC;

namespace {
constexpr uint32_t kN = 1000; // 4000 bytes: whole 32-byte blocks, not whole 256-byte repeats


template <typename T>
__aicore__ inline LocalTensor<T> Load(TPipe& pipe, TBuf<TPosition::VECCALC>& buf, GM_ADDR src, uint32_t n)
{
    pipe.InitBuffer(buf, n * sizeof(T));
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)src);
    LocalTensor<T> t = buf.Get<T>();
    DataCopy(t, g, n);
    return t;
}

// Copies what the vector pipe wrote to t out to GM (V_MTE3 first).
template <typename T>
__aicore__ inline void Store(GM_ADDR dst, uint32_t offset, const LocalTensor<T>& t, uint32_t n)
{
    Sync<HardEvent::V_MTE3>();
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)dst + offset);
    DataCopy(g, t, n);
}
} // namespace

// out = [x*y + y over kN (level 2), then x[r, l]*y[l] + x[r, l] over 4 repeats of 64
// lanes, y's repeat stride 0 (level 0)].
extern "C" __global__ __aicore__ void sim_vec_mul_add_dst(GM_ADDR x, GM_ADDR y, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo;
    LocalTensor<float> tx = Load<float>(pipe, bx, x, kN);
    LocalTensor<float> ty = Load<float>(pipe, by, y, kN);
    pipe.InitBuffer(bo, kN * sizeof(float));
    LocalTensor<float> o = bo.Get<float>();
    Sync<HardEvent::MTE2_V>();
    Adds(o, ty, 0.0f, kN);
    MulAddDst(o, tx, ty, kN);
    Store(out, 0, o, kN);
    Sync<HardEvent::MTE3_V>();
    Adds(o, tx, 0.0f, 256);
    MulAddDst(o, tx, ty, 64, 4, BinaryRepeatParams(1, 1, 1, 8, 8, 0));
    Store(out, kN, o, 256);
}

// out = [x+y, x-y, x*y, x/y, max(x,y), min(x,y)], level 2, kN floats each.
extern "C" __global__ __aicore__ void sim_vec_binary_f32(GM_ADDR x, GM_ADDR y, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo;
    LocalTensor<float> tx = Load<float>(pipe, bx, x, kN);
    LocalTensor<float> ty = Load<float>(pipe, by, y, kN);
    pipe.InitBuffer(bo, kN * sizeof(float));
    LocalTensor<float> o = bo.Get<float>();
    Sync<HardEvent::MTE2_V>();
    Add(o, tx, ty, kN);
    Store(out, 0 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Sub(o, tx, ty, kN);
    Store(out, 1 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Mul(o, tx, ty, kN);
    Store(out, 2 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Div(o, tx, ty, kN);
    Store(out, 3 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Max(o, tx, ty, kN);
    Store(out, 4 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Min(o, tx, ty, kN);
    Store(out, 5 * kN, o, kN);
}

// out = [exp x, ln(|x|+0.5), sqrt(|x|+0.5), rsqrt(|x|+0.5), 1/x, |x|, relu x, x+1.5,
//        x*-0.75, max(x,0.25), min(x,-0.25)], level 2, kN floats each.
extern "C" __global__ __aicore__ void sim_vec_unary_f32(GM_ADDR x, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bp, bo;
    LocalTensor<float> tx = Load<float>(pipe, bx, x, kN);
    pipe.InitBuffer(bp, kN * sizeof(float));
    pipe.InitBuffer(bo, kN * sizeof(float));
    LocalTensor<float> pos = bp.Get<float>();
    LocalTensor<float> o = bo.Get<float>();
    Sync<HardEvent::MTE2_V>();
    Abs(pos, tx, kN);
    Adds(pos, pos, 0.5f, kN);
    Exp(o, tx, kN);
    Store(out, 0 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Ln(o, pos, kN);
    Store(out, 1 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Sqrt(o, pos, kN);
    Store(out, 2 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Rsqrt(o, pos, kN);
    Store(out, 3 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Reciprocal(o, tx, kN);
    Store(out, 4 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Abs(o, tx, kN);
    Store(out, 5 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Relu(o, tx, kN);
    Store(out, 6 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Adds(o, tx, 1.5f, kN);
    Store(out, 7 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Muls(o, tx, -0.75f, kN);
    Store(out, 8 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Maxs(o, tx, 0.25f, kN);
    Store(out, 9 * kN, o, kN);
    Sync<HardEvent::MTE3_V>();
    Mins(o, tx, -0.25f, kN);
    Store(out, 10 * kN, o, kN);
}

// half storage: out = [x+y, x*y, exp x], 1024 halves each (results rounded to nearest even).
extern "C" __global__ __aicore__ void sim_vec_half(GM_ADDR x, GM_ADDR y, GM_ADDR out)
{
    constexpr uint32_t n = 1024;
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo;
    LocalTensor<half> tx = Load<half>(pipe, bx, x, n);
    LocalTensor<half> ty = Load<half>(pipe, by, y, n);
    pipe.InitBuffer(bo, n * sizeof(half));
    LocalTensor<half> o = bo.Get<half>();
    Sync<HardEvent::MTE2_V>();
    Add(o, tx, ty, n);
    Store(out, 0 * n, o, n);
    Sync<HardEvent::MTE3_V>();
    Mul(o, tx, ty, n);
    Store(out, 1 * n, o, n);
    Sync<HardEvent::MTE3_V>();
    Exp(o, tx, n);
    Store(out, 2 * n, o, n);
}

// Level-0 forms on an 8 x 64 fp32 tile x (one 64-lane repeat per row); y[0..8] are per-row
// values. Output segments (floats):
//  [0, 512)    x - rowval (row value broadcast by Brcb, src1 block stride 0, rep stride 1)
//  [512, 1024) x * y with bit mask 0x5555... (odd lanes keep the 0 written before)
//  [1024,1536) exp x on the first 48 lanes of each row (others keep -1)
//  [1536,1792) x + 1.5 reading every other block of x (src blkStride 2, repStride 16), 4 repeats
//  [1792,2304) x * 2 in counter mask mode over 300 elements (others keep 0)
//  [2304,2560) 3.5 duplicated into the first 16 lanes of 4 repeats (others keep 0)
extern "C" __global__ __aicore__ void sim_vec_level0(GM_ADDR x, GM_ADDR y, GM_ADDR out)
{
    constexpr uint32_t n = 512;
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bb, bo;
    LocalTensor<float> tx = Load<float>(pipe, bx, x, n);
    LocalTensor<float> ty = Load<float>(pipe, by, y, n);
    pipe.InitBuffer(bb, 64 * sizeof(float));
    pipe.InitBuffer(bo, n * sizeof(float));
    LocalTensor<float> brc = bb.Get<float>();
    LocalTensor<float> o = bo.Get<float>();
    Sync<HardEvent::MTE2_V>();

    Brcb(brc, ty, 1, BrcbRepeatParams(1, 8));
    Sub(o, tx, brc, 64, 8, BinaryRepeatParams(1, 1, 0, 8, 8, 1));
    Store(out, 0, o, n);

    Sync<HardEvent::MTE3_V>();
    Duplicate(o, 0.0f, n);
    uint64_t bits[2] = {0x5555555555555555ull, 0};
    Mul(o, tx, ty, bits, 8, BinaryRepeatParams(1, 1, 1, 8, 8, 8));
    Store(out, 512, o, n);

    Sync<HardEvent::MTE3_V>();
    Duplicate(o, -1.0f, n);
    Exp(o, tx, 48, 8, UnaryRepeatParams(1, 1, 8, 8));
    Store(out, 1024, o, n);

    Sync<HardEvent::MTE3_V>();
    Adds(o, tx, 1.5f, 64, 4, UnaryRepeatParams(1, 2, 8, 16));
    Store(out, 1536, o, 256);

    Sync<HardEvent::MTE3_V>();
    Duplicate(o, 0.0f, n);
    SetMaskCount();
    SetVectorMask<float, MaskMode::COUNTER>(0, 300);
    Muls<float, false>(o, tx, 2.0f, MASK_PLACEHOLDER, 1, UnaryRepeatParams(1, 1, 8, 8));
    SetMaskNorm();
    ResetMask();
    Store(out, 1792, o, n);

    Sync<HardEvent::MTE3_V>();
    Duplicate(o, 0.0f, n);
    Duplicate(o, 3.5f, 16, 4, 1, 8);
    Store(out, 2304, o, 256);
}

// Reductions on x (1000 floats). Output (256 floats, unset entries 0):
//  [0] ReduceMax value, [1] its index (uint32 bits); [8] ReduceSum;
//  [16, 32) WholeReduceMax (value, index) of the first 8 repeats (64 lanes each)
//  [32, 40) WholeReduceSum of the first 8 repeats, mask 40 (first 40 lanes)
//  [40, 56) BlockReduceMax of the first 2 repeats; [56, 72) BlockReduceSum of the same
//  [72, 200) Brcb of x[0..16] (16 blocks of 8); [200] level-0 ReduceMax over 4 repeats
extern "C" __global__ __aicore__ void sim_vec_reduce(GM_ADDR x, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bt, bo;
    LocalTensor<float> tx = Load<float>(pipe, bx, x, kN);
    pipe.InitBuffer(bt, kN * sizeof(float));
    pipe.InitBuffer(bo, 256 * sizeof(float));
    LocalTensor<float> tmp = bt.Get<float>();
    LocalTensor<float> o = bo.Get<float>();
    Sync<HardEvent::MTE2_V>();
    Duplicate(o, 0.0f, 256);
    ReduceMax(o, tx, tmp, kN, true);
    ReduceSum(o[8], tx, tmp, kN);
    WholeReduceMax(o[16], tx, 64, 8, 1, 1, 8);
    WholeReduceSum(o[32], tx, 40, 8, 1, 1, 8);
    BlockReduceMax(o[40], tx, 2, 64, 1, 1, 8);
    BlockReduceSum(o[56], tx, 2, 64, 1, 1, 8);
    Brcb(o[72], tx, 2, BrcbRepeatParams(1, 8));
    ReduceMax(o[200], tx, tmp, 64, 4, 8);
    Store(out, 0, o, 256);
}

// NaN/inf handling on 64 floats with NaN/inf planted by the test. Output (floats):
//  [0, 64) exp x; [64, 128) max(x, 0); [128] ReduceMax, [129] its index; [136] ReduceSum;
//  [144, 146) WholeReduceMax (value, index) of the single repeat
extern "C" __global__ __aicore__ void sim_vec_nan(GM_ADDR x, GM_ADDR out)
{
    constexpr uint32_t n = 64;
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bz, bt, bo;
    LocalTensor<float> tx = Load<float>(pipe, bx, x, n);
    pipe.InitBuffer(bz, n * sizeof(float));
    pipe.InitBuffer(bt, n * sizeof(float));
    pipe.InitBuffer(bo, 160 * sizeof(float));
    LocalTensor<float> zero = bz.Get<float>();
    LocalTensor<float> tmp = bt.Get<float>();
    LocalTensor<float> o = bo.Get<float>();
    Duplicate(o, 0.0f, 160);
    Duplicate(zero, 0.0f, n);
    Sync<HardEvent::MTE2_V>();
    Exp(o, tx, n);
    Max(o[64], tx, zero, n);
    ReduceMax(o[128], tx, tmp, n, true);
    ReduceSum(o[136], tx, tmp, n);
    WholeReduceMax(o[144], tx, 64, 1, 1, 1, 8);
    Store(out, 0, o, 160);
}

// Compare / Select / Gather on 256 floats. Output (floats):
//  [0, 256) select(x < y ? x : y) (tensor-tensor mode), [256, 512) x < y ? x : 0 (scalar
//  mode), [512, 768) gather of x at the byte offsets `off`, [768, 776) the 32-byte mask.
extern "C" __global__ __aicore__ void sim_vec_select(GM_ADDR x, GM_ADDR y, GM_ADDR off, GM_ADDR out)
{
    constexpr uint32_t n = 256;
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, boff, bm, bo;
    LocalTensor<float> tx = Load<float>(pipe, bx, x, n);
    LocalTensor<float> ty = Load<float>(pipe, by, y, n);
    LocalTensor<uint32_t> toff = Load<uint32_t>(pipe, boff, off, n);
    pipe.InitBuffer(bm, 32);
    pipe.InitBuffer(bo, n * sizeof(float));
    LocalTensor<uint8_t> mask = bm.Get<uint8_t>();
    LocalTensor<float> o = bo.Get<float>();
    Sync<HardEvent::MTE2_V>();
    Compare(mask, tx, ty, CMPMODE::LT, n);
    Store(out + 768 * sizeof(float), 0, mask, 32);
    Select(o, mask, tx, ty, SELMODE::VSEL_TENSOR_TENSOR_MODE, n);
    Store(out, 0, o, n);
    Sync<HardEvent::MTE3_V>();
    Select(o, mask, tx, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
    Store(out, 256, o, n);
    Sync<HardEvent::MTE3_V>();
    Gather(o, tx, toff, 0, n);
    Store(out, 512, o, n);
}
