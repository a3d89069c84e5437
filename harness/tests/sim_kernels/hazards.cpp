// Kernels of the ordering sanitizer's tests (harness/tests/sim_hazards.rs; the rules are in
// harness/sim/include/sim/hazard.h). Each hazard class has a deliberately wrong kernel
// (`hz_*_bad`, or a name saying what is wrong) and a corrected twin (`hz_*_ok`); most pairs
// are one template instantiated twice, so the twin differs only in the missing sync.
#include "kernel_operator.h"

using namespace AscendC;

namespace {

template <typename T>
__aicore__ inline GlobalTensor<T> Gm(GM_ADDR p)
{
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)p);
    return g;
}

template <HardEvent e>
__aicore__ inline void Sync(int32_t id = EVENT_ID0)
{
    SetFlag<e>(id);
    WaitFlag<e>(id);
}

// ---- classes 1, 2, 13b: y = x + 1 over 64 floats, GM -> UB -> V -> UB -> GM with manual
// flags; `mode` drops one of them or orders the wrong direction.
enum CopyAddMode { kAllFlags, kNoMte2V, kNoVMte3, kWrongDirection };

template <int mode>
__aicore__ inline void CopyAddCopy(GM_ADDR x, GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb;
    pipe.InitBuffer(xb, 64 * sizeof(float));
    pipe.InitBuffer(yb, 64 * sizeof(float));
    GlobalTensor<float> gx = Gm<float>(x), gy = Gm<float>(y);
    LocalTensor<float> xl = xb.Get<float>(), yl = yb.Get<float>();
    DataCopy(xl, gx, 64);
    if (mode == kWrongDirection) {
        Sync<HardEvent::V_MTE2>(); // orders V before MTE2: the opposite of what the read needs
    } else if (mode != kNoMte2V) {
        Sync<HardEvent::MTE2_V>();
    }
    Adds(yl, xl, 1.0f, 64);
    if (mode != kNoVMte3) {
        Sync<HardEvent::V_MTE3>();
    }
    DataCopy(gy, yl, 64);
}

// ---- class 3: xl is read by a vector op, then reloaded by a new DataCopy. The barrier
// orders the two copies (MTE2 after MTE2) but not the vector read before the reload.
// y = [x[0:64] + 1, x[64:128] + 2].
template <bool sync>
__aicore__ inline void ReloadAfterVectorRead(GM_ADDR x, GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb;
    pipe.InitBuffer(xb, 64 * sizeof(float));
    pipe.InitBuffer(yb, 128 * sizeof(float));
    GlobalTensor<float> gx = Gm<float>(x), gy = Gm<float>(y);
    LocalTensor<float> xl = xb.Get<float>(), yl = yb.Get<float>();
    DataCopy(xl, gx, 64);
    Sync<HardEvent::MTE2_V>();
    Adds(yl, xl, 1.0f, 64);
    PipeBarrier<PIPE_MTE2>();
    if (sync) {
        Sync<HardEvent::V_MTE2>();
    }
    DataCopy(xl, gx[64], 64);
    Sync<HardEvent::MTE2_V>();
    Adds(yl[64], xl, 2.0f, 64);
    Sync<HardEvent::V_MTE3>();
    DataCopy(gy, yl, 128);
}

// ---- class 4: yl is copied out, then overwritten by the next vector result.
// y = [x + 1, x + 2].
template <bool sync>
__aicore__ inline void OverwriteAfterCopyOut(GM_ADDR x, GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb;
    pipe.InitBuffer(xb, 64 * sizeof(float));
    pipe.InitBuffer(yb, 64 * sizeof(float));
    GlobalTensor<float> gx = Gm<float>(x), gy = Gm<float>(y);
    LocalTensor<float> xl = xb.Get<float>(), yl = yb.Get<float>();
    DataCopy(xl, gx, 64);
    Sync<HardEvent::MTE2_V>();
    Adds(yl, xl, 1.0f, 64);
    Sync<HardEvent::V_MTE3>();
    DataCopy(gy, yl, 64);
    if (sync) {
        Sync<HardEvent::MTE3_V>();
    }
    Adds(yl, xl, 2.0f, 64);
    Sync<HardEvent::V_MTE3>();
    DataCopy(gy[64], yl, 64);
}

// ---- classes 5, 6, 7 (and the cube half of 18): one 16 x 16 x 16 half tile,
// c = a * b (row-major), GM -> L1 (ND2NZ) -> L0A/L0B (LoadData) -> Mmad -> Fixpipe -> GM.
// `skip` drops one intra-core flag; `after()` runs right after the Fixpipe, while the TPipe
// is alive (its destruction drains every pipe).
enum CubeSkip { kCubeAllFlags, kNoMte2Mte1, kNoMte1M, kNoMFix };

struct NoOp {
    __aicore__ inline void operator()() const {}
};

template <int skip, typename After = NoOp>
__aicore__ inline void OneTileMatmul(GM_ADDR a, GM_ADDR b, GM_ADDR c, After after = After())
{
    TPipe pipe;
    TBuf<TPosition::A1> a1b;
    TBuf<TPosition::B1> b1b;
    TBuf<TPosition::A2> a2b;
    TBuf<TPosition::B2> b2b;
    TBuf<TPosition::CO1> cb;
    pipe.InitBuffer(a1b, 256 * sizeof(half));
    pipe.InitBuffer(b1b, 256 * sizeof(half));
    pipe.InitBuffer(a2b, 256 * sizeof(half));
    pipe.InitBuffer(b2b, 256 * sizeof(half));
    pipe.InitBuffer(cb, 256 * sizeof(float));
    GlobalTensor<half> ga = Gm<half>(a), gb = Gm<half>(b);
    GlobalTensor<float> gc = Gm<float>(c);
    LocalTensor<half> a1 = a1b.Get<half>(), b1 = b1b.Get<half>();
    LocalTensor<half> a2 = a2b.Get<half>(), b2 = b2b.Get<half>();
    LocalTensor<float> cl = cb.Get<float>();
    DataCopy(a1, ga, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
    DataCopy(b1, gb, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
    if (skip != kNoMte2Mte1) {
        Sync<HardEvent::MTE2_MTE1>();
    }
    LoadData(a2, a1, LoadData2DParams(0, 1, 0, 0, 0, false, 0));
    LoadData(b2, b1, LoadData2DParams(0, 1, 0, 0, 0, true, 0)); // B (k x n) -> Zn
    if (skip != kNoMte1M) {
        Sync<HardEvent::MTE1_M>();
    }
    Mmad(cl, a2, b2, MmadParams(16, 16, 16, 0, false, true));
    if (skip != kNoMFix) {
        Sync<HardEvent::M_FIX>();
    }
    Fixpipe(gc, cl, FixpipeParamsV220(16, 16, 16, 16, false));
    after();
}

// ---- class 8: ws = half(a * b) through Fixpipe, read back into L1 by the same AIC as the
// left operand of c = ws * b.
template <bool sync>
__aicore__ inline void WorkspaceRoundTrip(GM_ADDR a, GM_ADDR b, GM_ADDR ws, GM_ADDR c)
{
    TPipe pipe;
    TBuf<TPosition::A1> a1b, w1b;
    TBuf<TPosition::B1> b1b;
    TBuf<TPosition::A2> a2b, w2b;
    TBuf<TPosition::B2> b2b;
    TBuf<TPosition::CO1> c0b, c1b;
    pipe.InitBuffer(a1b, 256 * sizeof(half));
    pipe.InitBuffer(w1b, 256 * sizeof(half));
    pipe.InitBuffer(b1b, 256 * sizeof(half));
    pipe.InitBuffer(a2b, 256 * sizeof(half));
    pipe.InitBuffer(w2b, 256 * sizeof(half));
    pipe.InitBuffer(b2b, 256 * sizeof(half));
    pipe.InitBuffer(c0b, 256 * sizeof(float));
    pipe.InitBuffer(c1b, 256 * sizeof(float));
    GlobalTensor<half> ga = Gm<half>(a), gb = Gm<half>(b), gw = Gm<half>(ws);
    GlobalTensor<float> gc = Gm<float>(c);
    LocalTensor<half> a1 = a1b.Get<half>(), w1 = w1b.Get<half>(), b1 = b1b.Get<half>();
    LocalTensor<half> a2 = a2b.Get<half>(), w2 = w2b.Get<half>(), b2 = b2b.Get<half>();
    LocalTensor<float> c0 = c0b.Get<float>(), c1 = c1b.Get<float>();
    const Nd2NzParams nz(1, 16, 16, 0, 16, 16, 1, 0);
    // round 1: ws = half(a * b)
    DataCopy(a1, ga, nz);
    DataCopy(b1, gb, nz);
    Sync<HardEvent::MTE2_MTE1>();
    LoadData(a2, a1, LoadData2DParams(0, 1, 0, 0, 0, false, 0));
    LoadData(b2, b1, LoadData2DParams(0, 1, 0, 0, 0, true, 0));
    Sync<HardEvent::MTE1_M>();
    Mmad(c0, a2, b2, MmadParams(16, 16, 16, 0, false, true));
    Sync<HardEvent::M_FIX>();
    FixpipeParamsV220 toHalf(16, 16, 16, 16, false);
    toHalf.quantPre = QuantMode_t::F322F16;
    Fixpipe(gw, c0, toHalf);
    if (sync) {
        Sync<HardEvent::FIX_MTE2>();
    }
    // round 2: c = ws * b (b is still in L0B)
    DataCopy(w1, gw, nz);
    Sync<HardEvent::MTE2_MTE1>();
    LoadData(w2, w1, LoadData2DParams(0, 1, 0, 0, 0, false, 0));
    Sync<HardEvent::MTE1_M>();
    Mmad(c1, w2, b2, MmadParams(16, 16, 16, 0, false, true));
    Sync<HardEvent::M_FIX>();
    Fixpipe(gc, c1, FixpipeParamsV220(16, 16, 16, 16, false));
}

// ---- class 9: y[i] = i / 2 for 8 floats, written by the scalar unit, then copied out.
template <bool sync>
__aicore__ inline void ScalarFillCopyOut(GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> yb;
    pipe.InitBuffer(yb, 8 * sizeof(float));
    LocalTensor<float> yl = yb.Get<float>();
    for (uint32_t i = 0; i < 8; ++i) {
        yl.SetValue(i, static_cast<float>(i) * 0.5f);
    }
    if (sync) {
        Sync<HardEvent::S_MTE3>();
    }
    DataCopy(Gm<float>(y), yl, 8);
}

// ---- class 10: y = 1 + 1 over 64 floats, a vector op reading another's result.
template <bool barrier>
__aicore__ inline void DupThenAdds(GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> ab, bb;
    pipe.InitBuffer(ab, 64 * sizeof(float));
    pipe.InitBuffer(bb, 64 * sizeof(float));
    LocalTensor<float> al = ab.Get<float>(), bl = bb.Get<float>();
    Duplicate(al, 1.0f, 64);
    if (barrier) {
        PipeBarrier<PIPE_V>();
    }
    Adds(bl, al, 1.0f, 64);
    Sync<HardEvent::V_MTE3>();
    DataCopy(Gm<float>(y), bl, 64);
}

// ---- class 11: c = a * b with K = 32 as two k tiles of 16 accumulated in L0C
// (a: M x 32, b: 32 x N, half, row-major; c: M x N float).
template <uint32_t M, uint32_t N, bool barrier>
__aicore__ inline void AccumulateK(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    constexpr uint32_t K = 32, kT = 16, mB = M / 16, nB = N / 16, kB = K / 16;
    TPipe pipe;
    TBuf<TPosition::A1> a1b;
    TBuf<TPosition::B1> b1b;
    TBuf<TPosition::A2> a2b;
    TBuf<TPosition::B2> b2b;
    TBuf<TPosition::CO1> cb;
    pipe.InitBuffer(a1b, M * K * sizeof(half));
    pipe.InitBuffer(b1b, K * N * sizeof(half));
    pipe.InitBuffer(a2b, M * K * sizeof(half)); // two k tiles of M x 16
    pipe.InitBuffer(b2b, K * N * sizeof(half)); // two k tiles of 16 x N
    pipe.InitBuffer(cb, M * N * sizeof(float));
    GlobalTensor<half> ga = Gm<half>(a), gb = Gm<half>(b);
    LocalTensor<half> a1 = a1b.Get<half>(), b1 = b1b.Get<half>();
    LocalTensor<half> a2 = a2b.Get<half>(), b2 = b2b.Get<half>();
    LocalTensor<float> cl = cb.Get<float>();
    DataCopy(a1, ga, Nd2NzParams(1, M, K, 0, K, M, 1, 0)); // fractal (mb, kb) at kb * mB + mb
    DataCopy(b1, gb, Nd2NzParams(1, K, N, 0, N, K, 1, 0)); // fractal (kb, nb) at nb * kB + kb
    Sync<HardEvent::MTE2_MTE1>();
    for (uint32_t kb = 0; kb < kB; ++kb) {
        LocalTensor<half> a2k = a2[kb * M * kT], b2k = b2[kb * kT * N];
        for (uint32_t mb = 0; mb < mB; ++mb) {
            LoadData(a2k[mb * 256], a1, LoadData2DParams(kb * mB + mb, 1, 0, 0, 0, false, 0));
        }
        LoadData(b2k, b1, LoadData2DParams(kb, nB, kB, 0, 0, true, 0));
    }
    Sync<HardEvent::MTE1_M>();
    Mmad(cl, a2, b2, MmadParams(M, N, kT, 0, false, true));
    if (barrier) {
        PipeBarrier<PIPE_M>(); // Mmad.md: needed when (m / 16) * (n / 16) < 10
    }
    Mmad(cl, a2[M * kT], b2[kT * N], MmadParams(M, N, kT, 0, false, false));
    Sync<HardEvent::M_FIX>();
    Fixpipe(Gm<float>(c), cl, FixpipeParamsV220(N, M, M, N, false));
}

// ---- class 12: x[0:128] lands in UB, then x[128:192] over its second half.
// y = x[0:64] ++ x[128:192].
template <bool barrier>
__aicore__ inline void OverlappingCopies(GM_ADDR x, GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb;
    pipe.InitBuffer(xb, 128 * sizeof(float));
    GlobalTensor<float> gx = Gm<float>(x);
    LocalTensor<float> xl = xb.Get<float>();
    DataCopy(xl, gx, 128);
    if (barrier) {
        PipeBarrier<PIPE_MTE2>();
    }
    DataCopy(xl[64], gx[128], 64);
    Sync<HardEvent::MTE2_MTE3>();
    DataCopy(Gm<float>(y), xl, 128);
}

// ---- class 14b: a VECIN queue plus a bias TBuf that is reloaded after use, ordered by a
// manual V_MTE2 flag whose id is hard-coded, fetched from the TPipe's pool, or allocated
// from it. y = [x[0:64] + bias[0:64], x[64:128] + bias[64:128]].
enum ManualId { kFixedId, kFetchedId, kAllocatedId };

template <int idFrom>
__aicore__ inline void QueueAndManualFlag(GM_ADDR x, GM_ADDR bias, GM_ADDR y)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    TBuf<TPosition::VECCALC> bb, yb;
    pipe.InitBuffer(inQ, 1, 64 * sizeof(float));
    pipe.InitBuffer(bb, 64 * sizeof(float));
    pipe.InitBuffer(yb, 128 * sizeof(float));
    GlobalTensor<float> gx = Gm<float>(x), gbias = Gm<float>(bias);
    LocalTensor<float> bl = bb.Get<float>(), yl = yb.Get<float>();
    for (uint32_t i = 0; i < 2; ++i) {
        if (i > 0) {
            // bl was read by the Add of the previous tile: order that read before the reload
            TEventID id = EVENT_ID0;
            if (idFrom == kFetchedId) {
                id = GetTPipePtr()->FetchEventID<HardEvent::V_MTE2>();
            } else if (idFrom == kAllocatedId) {
                id = GetTPipePtr()->AllocEventID<HardEvent::V_MTE2>();
            }
            SetFlag<HardEvent::V_MTE2>(id);
            WaitFlag<HardEvent::V_MTE2>(id);
            if (idFrom == kAllocatedId) {
                GetTPipePtr()->ReleaseEventID<HardEvent::V_MTE2>(id);
            }
        }
        DataCopy(bl, gbias[i * 64], 64);
        LocalTensor<float> xl = inQ.AllocTensor<float>();
        DataCopy(xl, gx[i * 64], 64);
        inQ.EnQue(xl); // its MTE2_V fires after both copies
        xl = inQ.DeQue<float>();
        Add(yl[i * 64], xl, bl, 64);
        inQ.FreeTensor(xl); // sets V_MTE2 (id from the pool) for the slot's next AllocTensor
    }
    Sync<HardEvent::V_MTE3>();
    DataCopy(Gm<float>(y), yl, 128);
}

// ---- class 15: two tiles ping-pong on yl: each iteration sets MTE3_V after its copy-out
// and the next one waits for it; the last set needs a wait after the loop.
// y = [x + 1, x + 2].
template <bool drain>
__aicore__ inline void PingPongTail(GM_ADDR x, GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb;
    pipe.InitBuffer(xb, 64 * sizeof(float));
    pipe.InitBuffer(yb, 64 * sizeof(float));
    GlobalTensor<float> gx = Gm<float>(x), gy = Gm<float>(y);
    LocalTensor<float> xl = xb.Get<float>(), yl = yb.Get<float>();
    DataCopy(xl, gx, 64);
    Sync<HardEvent::MTE2_V>();
    for (uint32_t i = 0; i < 2; ++i) {
        if (i > 0) {
            WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
        }
        Adds(yl, xl, static_cast<float>(i + 1), 64);
        Sync<HardEvent::V_MTE3>();
        DataCopy(gy[i * 64], yl, 64);
        SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
    }
    if (drain) {
        WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
    }
}

// ---- class 18: MIX 1:2. The AIC writes ws = a * b (16 x 16 float) with Fixpipe; each AIV
// copies its 8 rows in and writes y = ws + 1. `flag` says how the AIVs learn ws is ready.
enum CrossMode { kNoCrossFlag, kFlagOnMte2, kFlagOnFix };

template <int flag>
__aicore__ inline void CubeToVector(GM_ADDR a, GM_ADDR b, GM_ADDR ws, GM_ADDR y)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    constexpr uint16_t kReady = 3;
    if ASCEND_IS_AIC {
        OneTileMatmul<kCubeAllFlags>(a, b, ws, [] {
            if (flag == kFlagOnFix) {
                CrossCoreSetFlag<2, PIPE_FIX>(kReady);
            } else if (flag == kFlagOnMte2) {
                CrossCoreSetFlag<2, PIPE_MTE2>(kReady); // MTE2 knows nothing of the Fixpipe
            }
        });
    }
    if ASCEND_IS_AIV {
        if (flag != kNoCrossFlag) {
            CrossCoreWaitFlag(kReady);
        }
        const uint32_t rows = 128 * static_cast<uint32_t>(GetSubBlockIdx());
        TPipe pipe;
        TBuf<TPosition::VECCALC> tb;
        pipe.InitBuffer(tb, 128 * sizeof(float));
        LocalTensor<float> t = tb.Get<float>();
        DataCopy(t, Gm<float>(ws)[rows], 128);
        Sync<HardEvent::MTE2_V>();
        Adds(t, t, 1.0f, 128);
        Sync<HardEvent::V_MTE3>();
        DataCopy(Gm<float>(y)[rows], t, 128);
    }
}

// ---- class 19: AIV cores and GM rows of 256 floats.
constexpr uint32_t kRow = 256;

// Core 0 writes out[0:256] = 2 x; core 1 reads it back and writes out[256:512] = out[0:256] + 1.
// `slowWriter` makes core 0 busy before it writes, so that the reader usually comes first.
template <bool syncAll, bool slowWriter = false>
__aicore__ inline void Handoff(GM_ADDR x, GM_ADDR out)
{
    if (syncAll) {
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
    }
    TPipe pipe;
    TBuf<TPosition::VECCALC> tb;
    pipe.InitBuffer(tb, kRow * sizeof(float));
    LocalTensor<float> t = tb.Get<float>();
    GlobalTensor<float> gx = Gm<float>(x), gout = Gm<float>(out);
    if (GetBlockIdx() == 0) {
        DataCopy(t, gx, kRow);
        Sync<HardEvent::MTE2_V>();
        Muls(t, t, 2.0f, kRow);
        for (int i = 0; slowWriter && i < 50000; ++i) {
            Muls(t, t, 1.0f, kRow);
        }
        Sync<HardEvent::V_MTE3>();
        DataCopy(gout, t, kRow);
    }
    if (syncAll) {
        SyncAll();
    }
    if (GetBlockIdx() == 1) {
        DataCopy(t, gout, kRow);
        Sync<HardEvent::MTE2_V>();
        Adds(t, t, 1.0f, kRow);
        Sync<HardEvent::V_MTE3>();
        DataCopy(gout[kRow], t, kRow);
    }
}

// ---- class 20: ReduceMax (count form) of 1024 floats = 16 repeats, scratch of tmpElems.
template <uint32_t tmpElems>
__aicore__ inline void ReduceMaxWithScratch(GM_ADDR x, GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, tb, db;
    pipe.InitBuffer(xb, 1024 * sizeof(float));
    pipe.InitBuffer(tb, tmpElems * sizeof(float));
    pipe.InitBuffer(db, 8 * sizeof(float));
    LocalTensor<float> xl = xb.Get<float>(), tl = tb.Get<float>(), dl = db.Get<float>();
    DataCopy(xl, Gm<float>(x), 1024);
    Sync<HardEvent::MTE2_V>();
    ReduceMax(dl, xl, tl, 1024, false);
    Sync<HardEvent::V_MTE3>();
    DataCopy(Gm<float>(y), dl, 8);
}

// ---- class 21: level-0 Adds under the mask register.
const UnaryRepeatParams kContiguous; // blocks 1 apart, repeats 8 blocks apart

template <bool setMask>
__aicore__ inline void MaskAfterReduceMax(GM_ADDR x, GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, tb, db, yb;
    pipe.InitBuffer(xb, 1024 * sizeof(float));
    pipe.InitBuffer(tb, 32 * sizeof(float));
    pipe.InitBuffer(db, 8 * sizeof(float));
    pipe.InitBuffer(yb, 64 * sizeof(float));
    LocalTensor<float> xl = xb.Get<float>(), tl = tb.Get<float>(), dl = db.Get<float>(), yl = yb.Get<float>();
    DataCopy(xl, Gm<float>(x), 1024);
    Sync<HardEvent::MTE2_V>();
    ReduceMax(dl, xl, tl, 1024, false);
    if (setMask) {
        SetVectorMask<float, MaskMode::NORMAL>(0, ~0ull); // all 64 lanes of a float repeat
    }
    Adds<float, false>(yl, xl, 1.0f, 64, 1, kContiguous);
    Sync<HardEvent::V_MTE3>();
    DataCopy(Gm<float>(y), yl, 64);
}

// ---- class 22a: the vector paradigm (CopyIn / Compute / CopyOut with VECIN, VECOUT queues,
// double buffering), z = x + y over kAddTotal floats split across the blocks.
constexpr uint32_t kAddTotal = 8 * 2048;
constexpr uint32_t kAddTiles = 8;
constexpr uint32_t kBufferNum = 2;

class KernelAdd {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z)
    {
        blockLen_ = kAddTotal / GetBlockNum();
        tileLen_ = blockLen_ / kAddTiles / kBufferNum;
        const uint32_t base = blockLen_ * GetBlockIdx();
        xGm_.SetGlobalBuffer((__gm__ float*)x + base, blockLen_);
        yGm_.SetGlobalBuffer((__gm__ float*)y + base, blockLen_);
        zGm_.SetGlobalBuffer((__gm__ float*)z + base, blockLen_);
        pipe_.InitBuffer(inX_, kBufferNum, tileLen_ * sizeof(float));
        pipe_.InitBuffer(inY_, kBufferNum, tileLen_ * sizeof(float));
        pipe_.InitBuffer(outZ_, kBufferNum, tileLen_ * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t i = 0; i < kAddTiles * kBufferNum; ++i) {
            CopyIn(i);
            Compute();
            CopyOut(i);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t i)
    {
        LocalTensor<float> x = inX_.AllocTensor<float>();
        LocalTensor<float> y = inY_.AllocTensor<float>();
        DataCopy(x, xGm_[i * tileLen_], tileLen_);
        DataCopy(y, yGm_[i * tileLen_], tileLen_);
        inX_.EnQue(x);
        inY_.EnQue(y);
    }
    __aicore__ inline void Compute()
    {
        LocalTensor<float> x = inX_.DeQue<float>();
        LocalTensor<float> y = inY_.DeQue<float>();
        LocalTensor<float> z = outZ_.AllocTensor<float>();
        Add(z, x, y, tileLen_);
        outZ_.EnQue(z);
        inX_.FreeTensor(x);
        inY_.FreeTensor(y);
    }
    __aicore__ inline void CopyOut(uint32_t i)
    {
        LocalTensor<float> z = outZ_.DeQue<float>();
        DataCopy(zGm_[i * tileLen_], z, tileLen_);
        outZ_.FreeTensor(z);
    }

    TPipe pipe_;
    TQue<TPosition::VECIN, kBufferNum> inX_, inY_;
    TQue<TPosition::VECOUT, kBufferNum> outZ_;
    GlobalTensor<float> xGm_, yGm_, zGm_;
    uint32_t blockLen_ = 0;
    uint32_t tileLen_ = 0;
};

// ---- class 22b: the cube paradigm with queues, c = a * b (a: M x K, b: K x N half,
// row-major; c: M x N float). Block i computes rows [32 i, 32 i + 32); K in tiles of 32
// accumulated in one CO1 tensor.
constexpr uint32_t kMmM = 64, kMmN = 48, kMmK = 64, kMmBase = 32;

class KernelMatmul {
public:
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c)
    {
        const uint32_t m0 = kMmBase * GetBlockIdx();
        aGm_.SetGlobalBuffer((__gm__ half*)a + m0 * kMmK);
        bGm_.SetGlobalBuffer((__gm__ half*)b);
        cGm_.SetGlobalBuffer((__gm__ float*)c + m0 * kMmN);
        pipe_.InitBuffer(a1_, 1, kMmBase * kMmBase * sizeof(half));
        pipe_.InitBuffer(b1_, 1, kMmBase * kMmN * sizeof(half));
        pipe_.InitBuffer(a2_, 1, kMmBase * kMmBase * sizeof(half));
        pipe_.InitBuffer(b2_, 1, kMmBase * kMmN * sizeof(half));
        pipe_.InitBuffer(co1_, 1, kMmBase * kMmN * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        LocalTensor<float> c = co1_.AllocTensor<float>();
        for (uint32_t k0 = 0; k0 < kMmK; k0 += kMmBase) {
            CopyIn(k0);
            SplitA();
            SplitB();
            Compute(c, k0 == 0);
        }
        co1_.EnQue(c);
        CopyOut();
    }

private:
    static constexpr uint32_t mB = kMmBase / 16, nB = kMmN / 16, kB = kMmBase / 16;

    __aicore__ inline void CopyIn(uint32_t k0)
    {
        LocalTensor<half> a1 = a1_.AllocTensor<half>();
        LocalTensor<half> b1 = b1_.AllocTensor<half>();
        // ND -> NZ: 16-column blocks of all rows; fractal (row block, column block) at
        // column block * row blocks + row block
        DataCopy(a1, aGm_[k0], Nd2NzParams(1, kMmBase, kMmBase, 0, kMmK, kMmBase, 1, 0));
        DataCopy(b1, bGm_[k0 * kMmN], Nd2NzParams(1, kMmBase, kMmN, 0, kMmN, kMmBase, 1, 0));
        a1_.EnQue(a1);
        b1_.EnQue(b1);
    }
    __aicore__ inline void SplitA()
    {
        LocalTensor<half> a1 = a1_.DeQue<half>();
        LocalTensor<half> a2 = a2_.AllocTensor<half>();
        for (uint32_t mb = 0; mb < mB; ++mb) { // L0A: fractals ordered (m block, k block)
            LoadData(a2[mb * kB * 256], a1, LoadData2DParams(mb, kB, mB, 0, 0, false, 0));
        }
        a2_.EnQue(a2);
        a1_.FreeTensor(a1);
    }
    __aicore__ inline void SplitB()
    {
        LocalTensor<half> b1 = b1_.DeQue<half>();
        LocalTensor<half> b2 = b2_.AllocTensor<half>();
        for (uint32_t kb = 0; kb < kB; ++kb) { // L0B: fractals ordered (k block, n block), transposed
            LoadData(b2[kb * nB * 256], b1, LoadData2DParams(kb, nB, kB, 0, 0, true, 0));
        }
        b2_.EnQue(b2);
        b1_.FreeTensor(b1);
    }
    __aicore__ inline void Compute(const LocalTensor<float>& c, bool first)
    {
        LocalTensor<half> a2 = a2_.DeQue<half>();
        LocalTensor<half> b2 = b2_.DeQue<half>();
        Mmad(c, a2, b2, MmadParams(kMmBase, kMmN, kMmBase, 0, false, first));
        a2_.FreeTensor(a2);
        b2_.FreeTensor(b2);
    }
    __aicore__ inline void CopyOut()
    {
        LocalTensor<float> c = co1_.DeQue<float>();
        Fixpipe(cGm_, c, FixpipeParamsV220(kMmN, kMmBase, kMmBase, kMmN, false));
        co1_.FreeTensor(c);
    }

    TPipe pipe_;
    TQue<TPosition::A1, 1> a1_;
    TQue<TPosition::B1, 1> b1_;
    TQue<TPosition::A2, 1> a2_;
    TQue<TPosition::B2, 1> b2_;
    TQue<TPosition::CO1, 1> co1_;
    GlobalTensor<half> aGm_, bGm_;
    GlobalTensor<float> cGm_;
};

} // namespace

// ======================= class 1: MTE2 -> V RAW =======================
extern "C" __global__ __aicore__ void hz_mte2_v_bad(GM_ADDR x, GM_ADDR y) { CopyAddCopy<kNoMte2V>(x, y); }
extern "C" __global__ __aicore__ void hz_copy_add_ok(GM_ADDR x, GM_ADDR y) { CopyAddCopy<kAllFlags>(x, y); }

// ======================= class 2: V -> MTE3 RAW =======================
extern "C" __global__ __aicore__ void hz_v_mte3_bad(GM_ADDR x, GM_ADDR y) { CopyAddCopy<kNoVMte3>(x, y); }

// ======================= class 3: V -> MTE2 WAR =======================
extern "C" __global__ __aicore__ void hz_v_mte2_bad(GM_ADDR x, GM_ADDR y) { ReloadAfterVectorRead<false>(x, y); }
extern "C" __global__ __aicore__ void hz_v_mte2_ok(GM_ADDR x, GM_ADDR y) { ReloadAfterVectorRead<true>(x, y); }

// ======================= class 4: MTE3 -> V WAR =======================
extern "C" __global__ __aicore__ void hz_mte3_v_bad(GM_ADDR x, GM_ADDR y) { OverwriteAfterCopyOut<false>(x, y); }
extern "C" __global__ __aicore__ void hz_mte3_v_ok(GM_ADDR x, GM_ADDR y) { OverwriteAfterCopyOut<true>(x, y); }

// ======================= classes 5, 6, 7: the cube pipes =======================
extern "C" __global__ __aicore__ void hz_mte2_mte1_bad(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    OneTileMatmul<kNoMte2Mte1>(a, b, c);
}
extern "C" __global__ __aicore__ void hz_mte1_m_bad(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    OneTileMatmul<kNoMte1M>(a, b, c);
}
extern "C" __global__ __aicore__ void hz_m_fix_bad(GM_ADDR a, GM_ADDR b, GM_ADDR c) { OneTileMatmul<kNoMFix>(a, b, c); }
extern "C" __global__ __aicore__ void hz_cube_tile_ok(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    OneTileMatmul<kCubeAllFlags>(a, b, c);
}

// ======================= class 8: FIX -> MTE2 RAW through GM =======================
extern "C" __global__ __aicore__ void hz_fix_mte2_bad(GM_ADDR a, GM_ADDR b, GM_ADDR ws, GM_ADDR c)
{
    WorkspaceRoundTrip<false>(a, b, ws, c);
}
extern "C" __global__ __aicore__ void hz_fix_mte2_ok(GM_ADDR a, GM_ADDR b, GM_ADDR ws, GM_ADDR c)
{
    WorkspaceRoundTrip<true>(a, b, ws, c);
}

// ======================= class 9: S -> MTE3 RAW =======================
extern "C" __global__ __aicore__ void hz_s_mte3_implicit(GM_ADDR y) { ScalarFillCopyOut<false>(y); }
extern "C" __global__ __aicore__ void hz_s_mte3_ok(GM_ADDR y) { ScalarFillCopyOut<true>(y); }

// ======================= class 10: V -> V RAW =======================
extern "C" __global__ __aicore__ void hz_v_v_implicit(GM_ADDR y) { DupThenAdds<false>(y); }
extern "C" __global__ __aicore__ void hz_v_v_ok(GM_ADDR y) { DupThenAdds<true>(y); }

// ======================= class 11: Mmad accumulation M -> M =======================
extern "C" __global__ __aicore__ void hz_mmad_acc_small_bad(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    AccumulateK<16, 16, false>(a, b, c);
}
extern "C" __global__ __aicore__ void hz_mmad_acc_small_ok(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    AccumulateK<16, 16, true>(a, b, c);
}
extern "C" __global__ __aicore__ void hz_mmad_acc_large_ok(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    AccumulateK<64, 64, false>(a, b, c); // (64 / 16) * (64 / 16) = 16 >= 10: the hardware orders them
}

// ======================= class 12: MTE2 WAW =======================
extern "C" __global__ __aicore__ void hz_mte2_waw_bad(GM_ADDR x, GM_ADDR y) { OverlappingCopies<false>(x, y); }
extern "C" __global__ __aicore__ void hz_mte2_waw_ok(GM_ADDR x, GM_ADDR y) { OverlappingCopies<true>(x, y); }

// ======================= class 13: wrong event =======================
// The wait names id 0, the set id 1: the wait can never be satisfied.
extern "C" __global__ __aicore__ void hz_wait_wrong_id()
{
    SetFlag<HardEvent::MTE2_V>(EVENT_ID1);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
}
// V_MTE2 where the read needs MTE2_V.
extern "C" __global__ __aicore__ void hz_wrong_direction(GM_ADDR x, GM_ADDR y) { CopyAddCopy<kWrongDirection>(x, y); }

// ======================= class 14: double SetFlag =======================
extern "C" __global__ __aicore__ void hz_double_set()
{
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
}
// Manual SetFlag<V_MTE2>(EVENT_ID0) while the queue's freed slot holds V_MTE2 id 0.
extern "C" __global__ __aicore__ void hz_queue_id_collision(GM_ADDR x, GM_ADDR bias, GM_ADDR y)
{
    QueueAndManualFlag<kFixedId>(x, bias, y);
}
extern "C" __global__ __aicore__ void hz_queue_id_fetched(GM_ADDR x, GM_ADDR bias, GM_ADDR y)
{
    QueueAndManualFlag<kFetchedId>(x, bias, y);
}
extern "C" __global__ __aicore__ void hz_queue_id_allocated(GM_ADDR x, GM_ADDR bias, GM_ADDR y)
{
    QueueAndManualFlag<kAllocatedId>(x, bias, y);
}

// ======================= class 15: dangling flag =======================
extern "C" __global__ __aicore__ void hz_dangling_flag(GM_ADDR x, GM_ADDR y) { PingPongTail<false>(x, y); }
extern "C" __global__ __aicore__ void hz_drained_flag(GM_ADDR x, GM_ADDR y) { PingPongTail<true>(x, y); }

// ======================= class 16: events and barriers the core does not have =======================
extern "C" __global__ __aicore__ void hz_cube_event_on_aiv() { Sync<HardEvent::M_FIX>(); }
extern "C" __global__ __aicore__ void hz_vector_event_on_aic() { Sync<HardEvent::MTE2_V>(); }
extern "C" __global__ __aicore__ void hz_barrier_pipe_s() { PipeBarrier<PIPE_S>(); }
extern "C" __global__ __aicore__ void hz_barrier_pipe_v_on_aic() { PipeBarrier<PIPE_V>(); }
// Twin: every event and barrier used on a core type that has it (run AIV-only and AIC-only).
extern "C" __global__ __aicore__ void hz_events_on_their_core()
{
    if ASCEND_IS_AIV {
        Sync<HardEvent::MTE2_V>();
        Sync<HardEvent::V_MTE3>();
        Sync<HardEvent::S_MTE2>();
        PipeBarrier<PIPE_V>();
    }
    if ASCEND_IS_AIC {
        Sync<HardEvent::M_FIX>();
        Sync<HardEvent::MTE2_MTE1>();
        Sync<HardEvent::FIX_MTE2>();
        PipeBarrier<PIPE_M>();
        PipeBarrier<PIPE_FIX>();
    }
    PipeBarrier<PIPE_MTE2>();
    PipeBarrier<PIPE_ALL>();
}

// ======================= class 17: illegal cross-core sync =======================
extern "C" __global__ __aicore__ void hz_cross_set_pipe_s()
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
    CrossCoreSetFlag<0, PIPE_S>(1);
    CrossCoreWaitFlag(1);
}
extern "C" __global__ __aicore__ void hz_cross_set_pipe_all()
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
    CrossCoreSetFlag<0, PIPE_ALL>(1);
    CrossCoreWaitFlag(1);
}
extern "C" __global__ __aicore__ void hz_cross_in_aiv_only()
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    CrossCoreSetFlag<0, PIPE_MTE3>(1);
    CrossCoreWaitFlag(1);
}
extern "C" __global__ __aicore__ void hz_syncall_in_aiv_only()
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    SyncAll();
}
extern "C" __global__ __aicore__ void hz_cross_ok()
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
    CrossCoreSetFlag<0, PIPE_MTE3>(1);
    CrossCoreWaitFlag(1);
    SyncAll();
}

// ======================= class 18: AIC writer, AIV readers =======================
extern "C" __global__ __aicore__ void hz_cube_to_vec_no_flag(GM_ADDR a, GM_ADDR b, GM_ADDR ws, GM_ADDR y)
{
    CubeToVector<kNoCrossFlag>(a, b, ws, y);
}
extern "C" __global__ __aicore__ void hz_cube_to_vec_wrong_pipe(GM_ADDR a, GM_ADDR b, GM_ADDR ws, GM_ADDR y)
{
    CubeToVector<kFlagOnMte2>(a, b, ws, y);
}
extern "C" __global__ __aicore__ void hz_cube_to_vec_ok(GM_ADDR a, GM_ADDR b, GM_ADDR ws, GM_ADDR y)
{
    CubeToVector<kFlagOnFix>(a, b, ws, y);
}

// ======================= class 19: GM races among AIV cores =======================
extern "C" __global__ __aicore__ void hz_handoff_race(GM_ADDR x, GM_ADDR out) { Handoff<false>(x, out); }
extern "C" __global__ __aicore__ void hz_handoff_race_slow_writer(GM_ADDR x, GM_ADDR out)
{
    Handoff<false, true>(x, out);
}
extern "C" __global__ __aicore__ void hz_handoff_syncall(GM_ADDR x, GM_ADDR out) { Handoff<true>(x, out); }
// Each core touches only its own rows: out[c] = 2 x[c].
extern "C" __global__ __aicore__ void hz_own_rows(GM_ADDR x, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> tb;
    pipe.InitBuffer(tb, kRow * sizeof(float));
    LocalTensor<float> t = tb.Get<float>();
    const uint32_t row = kRow * static_cast<uint32_t>(GetBlockIdx());
    DataCopy(t, Gm<float>(x)[row], kRow);
    Sync<HardEvent::MTE2_V>();
    Muls(t, t, 2.0f, kRow);
    Sync<HardEvent::V_MTE3>();
    DataCopy(Gm<float>(out)[row], t, kRow);
}
// Every core adds its row of x into the same row of out atomically: out += sum of rows.
extern "C" __global__ __aicore__ void hz_atomic_rows(GM_ADDR x, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> tb;
    pipe.InitBuffer(tb, kRow * sizeof(float));
    LocalTensor<float> t = tb.Get<float>();
    DataCopy(t, Gm<float>(x)[kRow * static_cast<uint32_t>(GetBlockIdx())], kRow);
    Sync<HardEvent::MTE2_MTE3>();
    SetAtomicAdd<float>();
    DataCopy(Gm<float>(out), t, kRow);
    SetAtomicNone();
}

// ======================= class 20: ReduceMax scratch =======================
// One value per repeat (16); the documented size is alignUp(2 x 16, 8) = 32.
extern "C" __global__ __aicore__ void hz_reduce_max_tmp_small(GM_ADDR x, GM_ADDR y) { ReduceMaxWithScratch<16>(x, y); }
extern "C" __global__ __aicore__ void hz_reduce_max_tmp_ok(GM_ADDR x, GM_ADDR y) { ReduceMaxWithScratch<32>(x, y); }
// The scratch is a buffer still holding live data (`keep`), copied out afterwards.
extern "C" __global__ __aicore__ void hz_reduce_max_tmp_aliased(GM_ADDR x, GM_ADDR keep, GM_ADDR y, GM_ADDR keepOut)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, kb, db;
    pipe.InitBuffer(xb, 1024 * sizeof(float));
    pipe.InitBuffer(kb, 64 * sizeof(float));
    pipe.InitBuffer(db, 8 * sizeof(float));
    LocalTensor<float> xl = xb.Get<float>(), kl = kb.Get<float>(), dl = db.Get<float>();
    DataCopy(xl, Gm<float>(x), 1024);
    DataCopy(kl, Gm<float>(keep), 64);
    Sync<HardEvent::MTE2_V>();
    ReduceMax(dl, xl, kl, 1024, false);
    Sync<HardEvent::V_MTE3>();
    DataCopy(Gm<float>(y), dl, 8);
    DataCopy(Gm<float>(keepOut), kl, 64);
}

// ======================= class 21: mask register =======================
// y = [a, b, c, d] (64 floats each) from src = 1:
//  a: level 0, mask 16 (isSetMask = true)        -> 11 in lanes 0..16, 0 elsewhere
//  b: level 0, isSetMask = false right after it  -> the same 16 lanes: 21, 0 elsewhere
//  c: count form (restores all lanes)            -> 31 everywhere
//  d: level 0, isSetMask = false after it        -> 41 everywhere
extern "C" __global__ __aicore__ void hz_mask_persistence(GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> sb, ob;
    pipe.InitBuffer(sb, 64 * sizeof(float));
    pipe.InitBuffer(ob, 4 * 64 * sizeof(float));
    LocalTensor<float> s = sb.Get<float>(), o = ob.Get<float>();
    Duplicate(s, 1.0f, 64);
    Duplicate(o, 0.0f, 4 * 64);
    Adds(o, s, 10.0f, 16, 1, kContiguous);
    Adds<float, false>(o[64], s, 20.0f, 64, 1, kContiguous);
    Adds(o[128], s, 30.0f, 64);
    Adds<float, false>(o[192], s, 40.0f, 64, 1, kContiguous);
    Sync<HardEvent::V_MTE3>();
    DataCopy(Gm<float>(y), o, 4 * 64);
}
extern "C" __global__ __aicore__ void hz_mask_after_reduce_max_bad(GM_ADDR x, GM_ADDR y)
{
    MaskAfterReduceMax<false>(x, y);
}
extern "C" __global__ __aicore__ void hz_mask_after_reduce_max_ok(GM_ADDR x, GM_ADDR y)
{
    MaskAfterReduceMax<true>(x, y);
}

// ======================= class 22: the documented queue pipelines =======================
extern "C" __global__ __aicore__ void hz_paradigm_add(GM_ADDR x, GM_ADDR y, GM_ADDR z)
{
    KernelAdd op;
    op.Init(x, y, z);
    op.Process();
}
extern "C" __global__ __aicore__ void hz_paradigm_matmul(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    KernelMatmul op;
    op.Init(a, b, c);
    op.Process();
}
