// Cube-path test kernels (AIC-only): multi-tile matmuls GM -> L1 (ND2NZ) -> L0A/L0B
// (LoadData) -> Mmad (accumulating over k tiles in L0C) -> Fixpipe (NZ2ND) -> GM.
// Block b of blockDim handles m tiles b, b + blockDim, ...
#include "kernel_operator.h"
#include "handshake.h"

using namespace AscendC;

namespace {
constexpr uint32_t kBase = 64; // base tile in m, n and k

__aicore__ inline uint32_t Ceil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }


struct Queues {
    TQue<TPosition::A1, 1> a1;
    TQue<TPosition::B1, 1> b1;
    TQue<TPosition::A2, 1> a2;
    TQue<TPosition::B2, 1> b2;
    TQue<TPosition::CO1, 1> co1;
};
} // namespace

// C = A (M x K, row-major bf16) * B (K x N, row-major bf16); c32 gets the fp32 result,
// c16 the bf16 one (Fixpipe F322BF16). K must be a multiple of 16 (B's k tail would hold
// undefined rows in L1 otherwise).
constexpr uint32_t kMmM = 100, kMmN = 72, kMmK = 176;

extern "C" __global__ __aicore__ void sim_mm_bf16(GM_ADDR a, GM_ADDR b, GM_ADDR c32, GM_ADDR c16)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr uint32_t M = kMmM, N = kMmN, K = kMmK;
    TPipe pipe;
    Queues q;
    pipe.InitBuffer(q.a1, 1, kBase * kBase * sizeof(bfloat16_t));
    pipe.InitBuffer(q.b1, 1, kBase * kBase * sizeof(bfloat16_t));
    pipe.InitBuffer(q.a2, 1, kBase * kBase * sizeof(bfloat16_t));
    pipe.InitBuffer(q.b2, 1, kBase * kBase * sizeof(bfloat16_t));
    pipe.InitBuffer(q.co1, 1, kBase * kBase * sizeof(float));
    GlobalTensor<bfloat16_t> ga, gb, gc16;
    GlobalTensor<float> gc32;
    ga.SetGlobalBuffer((__gm__ bfloat16_t*)a);
    gb.SetGlobalBuffer((__gm__ bfloat16_t*)b);
    gc32.SetGlobalBuffer((__gm__ float*)c32);
    gc16.SetGlobalBuffer((__gm__ bfloat16_t*)c16);
    for (uint32_t mt = GetBlockIdx(); mt < Ceil(M, kBase); mt += GetBlockNum()) {
        for (uint32_t nt = 0; nt < Ceil(N, kBase); ++nt) {
            uint32_t m0 = mt * kBase, n0 = nt * kBase;
            uint32_t mLen = std::min(kBase, M - m0), nLen = std::min(kBase, N - n0);
            uint32_t mB = Ceil(mLen, 16), nB = Ceil(nLen, 16);
            LocalTensor<float> c = q.co1.AllocTensor<float>();
            for (uint32_t k0 = 0; k0 < K; k0 += kBase) {
                uint32_t kLen = std::min(kBase, K - k0);
                uint32_t kB = Ceil(kLen, 16);
                // A tile: mLen x kLen -> L1 NZ (16-column blocks of mB*16 rows)
                LocalTensor<bfloat16_t> a1 = q.a1.AllocTensor<bfloat16_t>();
                DataCopy(a1, ga[m0 * K + k0], Nd2NzParams(1, mLen, kLen, 0, K, mB * 16, 1, 0));
                // B tile: kLen x nLen -> L1 NZ (16-column blocks of kLen rows)
                LocalTensor<bfloat16_t> b1 = q.b1.AllocTensor<bfloat16_t>();
                DataCopy(b1, gb[k0 * N + n0], Nd2NzParams(1, kLen, nLen, 0, N, kB * 16, 1, 0));
                q.a1.EnQue(a1);
                q.b1.EnQue(b1);
                a1 = q.a1.DeQue<bfloat16_t>();
                b1 = q.b1.DeQue<bfloat16_t>();
                // L0A wants fractals ordered (m block, k block): one row of fractals per m block
                LocalTensor<bfloat16_t> a2 = q.a2.AllocTensor<bfloat16_t>();
                for (uint32_t mb = 0; mb < mB; ++mb) {
                    LoadData(a2[mb * kB * 256], a1, LoadData2DParams(mb, kB, mB, 0, 0, false, 0));
                }
                // L0B wants fractals ordered (k block, n block), each n-major: transpose
                LocalTensor<bfloat16_t> b2 = q.b2.AllocTensor<bfloat16_t>();
                for (uint32_t kb = 0; kb < kB; ++kb) {
                    LoadData(b2[kb * nB * 256], b1, LoadData2DParams(kb, nB, kB, 0, 0, true, 0));
                }
                q.a1.FreeTensor(a1);
                q.b1.FreeTensor(b1);
                Sync<HardEvent::MTE1_M>();
                MmadParams mp;
                mp.m = mLen;
                mp.n = nLen;
                mp.k = kLen;
                mp.cmatrixInitVal = k0 == 0;
                Mmad(c, a2, b2, mp);
                q.a2.FreeTensor(a2);
                q.b2.FreeTensor(b2);
            }
            q.co1.EnQue(c);
            c = q.co1.DeQue<float>();
            FixpipeParamsV220 fp;
            fp.nSize = nLen;
            fp.mSize = mLen;
            fp.srcStride = mB * 16;
            fp.dstStride = N;
            Fixpipe(gc32[m0 * N + n0], c, fp);
            fp.quantPre = QuantMode_t::F322BF16;
            Fixpipe(gc16[m0 * N + n0], c, fp);
            q.co1.FreeTensor(c);
        }
    }
}

// C (int32) = A (M x K int8) * B where B is given transposed as Bt (N x K int8), so both
// operands keep k contiguous and ND2NZ zero-fills the k tail (K need not be a multiple of 32);
// c16 gets C * 2^-6 as half (Fixpipe DEQF16, the scalar's float bits in deqScalar).
// Plain TBufs, synchronised by hand: each buffer's producer/consumer hand-off and, before
// a buffer is reloaded, its last reader's (MTE1_MTE2, M_MTE1, FIX_M). The k-accumulating
// Mmads are ordered through M_MTE1 -> LoadData -> MTE1_M.
constexpr uint32_t kI8M = 70, kI8N = 40, kI8K = 200;

extern "C" __global__ __aicore__ void sim_mm_int8(GM_ADDR a, GM_ADDR bt, GM_ADDR c, GM_ADDR c16)
{
    constexpr uint32_t M = kI8M, N = kI8N, K = kI8K, c0 = 32;
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> cBuf;
    pipe.InitBuffer(a1Buf, kBase * kBase);
    pipe.InitBuffer(b1Buf, kBase * kBase);
    pipe.InitBuffer(a2Buf, kBase * kBase);
    pipe.InitBuffer(b2Buf, kBase * kBase);
    pipe.InitBuffer(cBuf, kBase * kBase * sizeof(int32_t));
    GlobalTensor<int8_t> ga, gb;
    GlobalTensor<int32_t> gc;
    GlobalTensor<half> gc16;
    ga.SetGlobalBuffer((__gm__ int8_t*)a);
    gb.SetGlobalBuffer((__gm__ int8_t*)bt);
    gc.SetGlobalBuffer((__gm__ int32_t*)c);
    gc16.SetGlobalBuffer((__gm__ half*)c16);
    for (uint32_t mt = GetBlockIdx(); mt < Ceil(M, kBase); mt += GetBlockNum()) {
        for (uint32_t nt = 0; nt < Ceil(N, kBase); ++nt) {
            uint32_t m0 = mt * kBase, n0 = nt * kBase;
            uint32_t mLen = std::min(kBase, M - m0), nLen = std::min(kBase, N - n0);
            uint32_t mB = Ceil(mLen, 16), nB = Ceil(nLen, 16);
            LocalTensor<int32_t> cl = cBuf.Get<int32_t>();
            for (uint32_t k0 = 0; k0 < K; k0 += kBase) {
                uint32_t kLen = std::min(kBase, K - k0);
                uint32_t kB = Ceil(kLen, c0);
                LocalTensor<int8_t> a1 = a1Buf.Get<int8_t>();
                LocalTensor<int8_t> b1 = b1Buf.Get<int8_t>();
                DataCopy(a1, ga[m0 * K + k0], Nd2NzParams(1, mLen, kLen, 0, K, mB * 16, 1, 0));
                DataCopy(b1, gb[n0 * K + k0], Nd2NzParams(1, nLen, kLen, 0, K, nB * 16, 1, 0));
                Sync<HardEvent::MTE2_MTE1>();
                LocalTensor<int8_t> a2 = a2Buf.Get<int8_t>();
                LocalTensor<int8_t> b2 = b2Buf.Get<int8_t>();
                for (uint32_t mb = 0; mb < mB; ++mb) {
                    LoadData(a2[mb * kB * 512], a1, LoadData2DParams(mb, kB, mB, 0, 0, false, 0));
                }
                // Bt in L1 already has the L0B order: (k block, n block) fractals, n-major
                LoadData(b2, b1, LoadData2DParams(0, kB * nB, 1, 0, 0, false, 0));
                Sync<HardEvent::MTE1_MTE2>(); // a1 / b1 may be reloaded
                Sync<HardEvent::MTE1_M>();
                MmadParams mp(mLen, nLen, kLen, 0, false, k0 == 0);
                Mmad(cl, a2, b2, mp);
                Sync<HardEvent::M_MTE1>(); // a2 / b2 may be reloaded
            }
            Sync<HardEvent::M_FIX>();
            FixpipeParamsV220 fp(nLen, mLen, mB * 16, N, false);
            Fixpipe(gc[m0 * N + n0], cl, fp);
            fp.quantPre = QuantMode_t::DEQF16;
            fp.deqScalar = 0x3C800000;  // 2^-6 as float
            Fixpipe(gc16[m0 * N + n0], cl, fp);
            Sync<HardEvent::FIX_M>(); // cl may be overwritten
        }
    }
}
