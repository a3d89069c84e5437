// LoadDataWithTranspose test kernels (AIC-only): C = A (M x K) * B with B stored [K, N]
// row-major in GM, so ND2NZ puts K on the L1 rows and the squares must be transposed on
// the way to L0B (the official path for int8, doc LoadDataWithTranspose.md example
// "int8_t ... B矩阵"). One tile: M, N, K fit L0 at once.
#include "kernel_operator.h"
#include "handshake.h"

using namespace AscendC;

namespace {


// A row-major [M, K] -> L0A; B row-major [K, N] -> L0B through LoadDataWithTranspose;
// one Mmad; Fixpipe to c [M, N]. T is int8_t or bfloat16_t, C its accumulator.
template <typename T, typename C, uint32_t M, uint32_t N, uint32_t K>
__aicore__ inline void MatmulKn(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    constexpr uint32_t c0 = 32 / sizeof(T);
    constexpr uint32_t side = sizeof(T) == 1 ? 32 : 16; // square side along K and N
    constexpr uint32_t mB = (M + 15) / 16, nB = N / 16, kB = K / c0;
    static_assert(K % side == 0 && N % side == 0, "B's squares must be whole");
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> cBuf;
    pipe.InitBuffer(a1Buf, mB * 16 * K * sizeof(T));
    pipe.InitBuffer(b1Buf, K * N * sizeof(T));
    pipe.InitBuffer(a2Buf, mB * 16 * K * sizeof(T));
    pipe.InitBuffer(b2Buf, K * N * sizeof(T));
    pipe.InitBuffer(cBuf, mB * 16 * N * sizeof(C));
    GlobalTensor<T> ga, gb;
    GlobalTensor<C> gc;
    ga.SetGlobalBuffer((__gm__ T*)a);
    gb.SetGlobalBuffer((__gm__ T*)b);
    gc.SetGlobalBuffer((__gm__ C*)c);
    LocalTensor<T> a1 = a1Buf.Get<T>();
    LocalTensor<T> b1 = b1Buf.Get<T>();
    DataCopy(a1, ga, Nd2NzParams(1, M, K, 0, K, mB * 16, 1, 0));
    // K rows x N columns: column blocks of c0 elements, K rows each
    DataCopy(b1, gb, Nd2NzParams(1, K, N, 0, N, K, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LocalTensor<T> a2 = a2Buf.Get<T>();
    for (uint32_t mb = 0; mb < mB; ++mb) {
        LoadData(a2[mb * kB * 512 / sizeof(T)], a1, LoadData2DParams(mb, kB, mB, 0, 0, false, 0));
    }
    // A row of squares covers one L0B k block (side = c0 k values). Square cb of that row
    // sits at cb * (K / side) + kq in L1 (column blocks of K rows); its transpose is the
    // side / 16 fractals (kq, n blocks of cb), so iteration cb starts side / 16 fractals on.
    LocalTensor<T> b2 = b2Buf.Get<T>();
    for (uint32_t kq = 0; kq < K / side; ++kq) {
        LoadData2dTransposeParams p(kq, N / side, K / side, side / 16 - 1, 0);
        LoadDataWithTranspose(b2[kq * nB * 512 / sizeof(T)], b1, p);
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    LocalTensor<C> cl = cBuf.Get<C>();
    Mmad(cl, a2, b2, MmadParams(M, N, K, 0, false, true));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(gc, cl, FixpipeParamsV220(N, M, mB * 16, N, false));
}
} // namespace

constexpr uint32_t kTrM = 40, kTrN = 96, kTrK = 64;

extern "C" __global__ __aicore__ void sim_mm_int8_kn(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    MatmulKn<int8_t, int32_t, kTrM, kTrN, kTrK>(a, b, c);
}

extern "C" __global__ __aicore__ void sim_mm_bf16_kn(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    MatmulKn<bfloat16_t, float, kTrM, kTrN, kTrK>(a, b, c);
}

// A square whose second fractal was never written: the transposed rows are undefined
// and Mmad must trap on them.
extern "C" __global__ __aicore__ void sim_transpose_undefined(GM_ADDR b)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> cBuf;
    pipe.InitBuffer(a1Buf, 16 * 32);
    pipe.InitBuffer(b1Buf, 32 * 32);
    pipe.InitBuffer(a2Buf, 16 * 32);
    pipe.InitBuffer(b2Buf, 32 * 32);
    pipe.InitBuffer(cBuf, 16 * 32 * 4);
    GlobalTensor<int8_t> gb;
    gb.SetGlobalBuffer((__gm__ int8_t*)b);
    LocalTensor<int8_t> b1 = b1Buf.Get<int8_t>();
    DataCopy(b1, gb, Nd2NzParams(1, 16, 32, 0, 32, 32, 1, 0)); // only k rows 0..15 of 32
    Sync<HardEvent::MTE2_MTE1>();
    LocalTensor<int8_t> b2 = b2Buf.Get<int8_t>();
    LoadDataWithTranspose(b2, b1, LoadData2dTransposeParams(0, 1, 1, 0, 0));
    LocalTensor<int8_t> a2 = a2Buf.Get<int8_t>();
    LocalTensor<int8_t> a1 = a1Buf.Get<int8_t>();
    DataCopy(a1, gb, Nd2NzParams(1, 16, 32, 0, 32, 16, 1, 0));
    Sync<HardEvent::MTE2_MTE1>();
    LoadData(a2, a1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
    Sync<HardEvent::MTE1_M>();
    LocalTensor<int32_t> cl = cBuf.Get<int32_t>();
    Mmad(cl, a2, b2, MmadParams(16, 32, 32, 0, false, true));
}
