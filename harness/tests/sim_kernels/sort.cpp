// Sort32 / MrgSort / GetMrgSortResult / GatherMask test kernels (single AIV core) and an
// exact top-k built only from them, DataCopy and scalar index set-up. Pipe hand-offs are
// synchronised explicitly (handshake.h), vector-after-vector with PipeBarrier<PIPE_V>.
#include "kernel_operator.h"
#include "handshake.h"

using namespace AscendC;

namespace {
constexpr uint32_t kSortRepeats = 5; // 160 scores

template <typename T>
__aicore__ inline void Sort32Kernel(GM_ADDR x, GM_ADDR idx, GM_ADDR out)
{
    constexpr uint32_t n = 32 * kSortRepeats;
    TPipe pipe;
    TBuf<TPosition::VECCALC> bd, bi, bx;
    // dst first (offset 0, 256-byte aligned), then the index (128), then the scores (32·sizeof(T))
    pipe.InitBuffer(bd, n * 8);
    pipe.InitBuffer(bi, n * 4);
    pipe.InitBuffer(bx, n * sizeof(T));
    LocalTensor<float> d = bd.Get<float>();
    LocalTensor<uint32_t> ti = bi.Get<uint32_t>();
    LocalTensor<T> tx = bx.Get<T>();
    GlobalTensor<T> gx;
    gx.SetGlobalBuffer((__gm__ T*)x);
    GlobalTensor<uint32_t> gi;
    gi.SetGlobalBuffer((__gm__ uint32_t*)idx);
    DataCopy(tx, gx, n);
    DataCopy(ti, gi, n);
    Sync<HardEvent::MTE2_V>();
    Sort32(d.ReinterpretCast<T>(), tx, ti, kSortRepeats);
    Sort32(d.ReinterpretCast<T>(), tx, ti, 0); // NOP on A2
    Sync<HardEvent::V_MTE3>();
    GlobalTensor<float> go;
    go.SetGlobalBuffer((__gm__ float*)out);
    DataCopy(go, d, n * 2);
}
} // namespace

// out = Sort32 of 5 repeats of (x, idx) as raw 8-byte (score, index) elements.
extern "C" __global__ __aicore__ void sim_sort32_f32(GM_ADDR x, GM_ADDR idx, GM_ADDR out)
{
    Sort32Kernel<float>(x, idx, out);
}
extern "C" __global__ __aicore__ void sim_sort32_f16(GM_ADDR x, GM_ADDR idx, GM_ADDR out)
{
    Sort32Kernel<half>(x, idx, out);
}

// params = [validBit, len0, len1, len2, len3, ifExhaustedSuspension, repeatTimes];
// src = the lists' raw (score, index) elements, list q of repeat 0 at the sum of the lengths
// before it, repeat r at r·(sum of lengths); out = the merged elements, res = [written,
// GetMrgSortResult ×4] (the counts only with suspension).
extern "C" __global__ __aicore__ void sim_mrgsort(GM_ADDR params, GM_ADDR src, GM_ADDR out, GM_ADDR res)
{
    constexpr uint32_t cap = 2048; // elements per buffer
    GlobalTensor<uint32_t> gp;
    gp.SetGlobalBuffer((__gm__ uint32_t*)params);
    const uint16_t validBit = static_cast<uint16_t>(gp.GetValue(0));
    uint16_t len[4];
    uint32_t start[4];
    uint32_t sum = 0;
    for (uint32_t q = 0; q < 4; ++q) {
        len[q] = static_cast<uint16_t>(gp.GetValue(1 + q));
        start[q] = sum;
        sum += len[q];
    }
    const bool suspend = gp.GetValue(5) != 0;
    const uint16_t reps = static_cast<uint16_t>(gp.GetValue(6));
    const uint32_t total = sum * reps;
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd;
    pipe.InitBuffer(bs, cap * 8);
    pipe.InitBuffer(bd, cap * 8);
    LocalTensor<float> s = bs.Get<float>();
    LocalTensor<float> d = bd.Get<float>();
    GlobalTensor<float> gs;
    gs.SetGlobalBuffer((__gm__ float*)src);
    DataCopy(s, gs, (total * 2 + 7) / 8 * 8);
    Sync<HardEvent::MTE2_V>();
    MrgSortSrcList<float> list(s[start[0] * 2], s[start[1] * 2], s[start[2] * 2], s[start[3] * 2]);
    MrgSort4Info info(len, suspend, validBit, reps);
    MrgSort(d, list, info);
    uint32_t written = total;
    GlobalTensor<uint32_t> gr;
    gr.SetGlobalBuffer((__gm__ uint32_t*)res);
    if (suspend) {
        uint16_t c[4];
        Sync<HardEvent::V_S>();
        GetMrgSortResult(c[0], c[1], c[2], c[3]);
        written = 0;
        for (uint32_t q = 0; q < 4; ++q) {
            gr.SetValue(1 + q, c[q]);
            written += c[q];
        }
    }
    gr.SetValue(0, written);
    Sync<HardEvent::V_MTE3>();
    GlobalTensor<float> go;
    go.SetGlobalBuffer((__gm__ float*)out);
    if (written > 0) {
        DataCopy(go, d, (written * 2 + 7) / 8 * 8);
    }
}

namespace {
constexpr uint32_t kGm = 512;     // f32 / u32 elements of x: 8 repeats
constexpr uint32_t kGmCases = 11; // output segments of kGm elements
constexpr uint32_t kGmHalf = 256; // u16 elements of xh: 2 repeats
constexpr uint32_t kGmHalfCases = 3;

template <typename T, typename P>
__aicore__ inline void GatherCase(const LocalTensor<T>& o, uint32_t seg, uint32_t len, GlobalTensor<uint32_t>& gr,
                                  uint32_t slot, P run)
{
    LocalTensor<T> dst = o[seg * len];
    Duplicate(dst, T(0), len); // sentinel: GatherMask must not write past rsvdCnt
    PipeBarrier<PIPE_V>();
    uint64_t cnt = 0;
    run(dst, cnt);
    PipeBarrier<PIPE_V>();
    gr.SetValue(slot, static_cast<uint32_t>(cnt));
}
} // namespace

// x: 512 u32, pat: 64 u32 (8 repeats × 32 bytes), xh: 256 u16, path: 16 u16.
// out: 11 segments of 512 u32, outh: 3 segments of 256 u16, res: the 14 rsvdCnt values.
extern "C" __global__ __aicore__ void sim_gathermask(GM_ADDR x, GM_ADDR pat, GM_ADDR xh, GM_ADDR path, GM_ADDR out,
                                                     GM_ADDR outh, GM_ADDR res)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bp, bo, bxh, bph, boh, bin;
    pipe.InitBuffer(bx, kGm * 4);
    pipe.InitBuffer(bp, 64 * 4);
    pipe.InitBuffer(bo, kGmCases * kGm * 4);
    pipe.InitBuffer(bxh, kGmHalf * 2);
    pipe.InitBuffer(bph, 16 * 2);
    pipe.InitBuffer(boh, kGmHalfCases * kGmHalf * 2);
    pipe.InitBuffer(bin, kGm * 4);
    LocalTensor<uint32_t> tx = bx.Get<uint32_t>();
    LocalTensor<uint32_t> tp = bp.Get<uint32_t>();
    LocalTensor<uint32_t> o = bo.Get<uint32_t>();
    LocalTensor<uint16_t> txh = bxh.Get<uint16_t>();
    LocalTensor<uint16_t> tph = bph.Get<uint16_t>();
    LocalTensor<uint16_t> oh = boh.Get<uint16_t>();
    LocalTensor<float> tin = bin.Get<float>();
    GlobalTensor<uint32_t> gx, gp, go, gr;
    GlobalTensor<uint16_t> gxh, gph, goh;
    gx.SetGlobalBuffer((__gm__ uint32_t*)x);
    gp.SetGlobalBuffer((__gm__ uint32_t*)pat);
    go.SetGlobalBuffer((__gm__ uint32_t*)out);
    gr.SetGlobalBuffer((__gm__ uint32_t*)res);
    gxh.SetGlobalBuffer((__gm__ uint16_t*)xh);
    gph.SetGlobalBuffer((__gm__ uint16_t*)path);
    goh.SetGlobalBuffer((__gm__ uint16_t*)outh);
    DataCopy(tx, gx, kGm);
    DataCopy(tp, gp, 64);
    DataCopy(txh, gxh, kGmHalf);
    DataCopy(tph, gph, 16);
    DataCopy(tin.ReinterpretCast<uint32_t>(), gx, kGm);
    Sync<HardEvent::MTE2_V>();
    // 0..6: built-in patterns 1..7, Normal mode, 8 repeats of 64 u32
    for (uint8_t m = 1; m <= 7; ++m) {
        GatherCase(o, m - 1, kGm, gr, m - 1, [&](const LocalTensor<uint32_t>& d, uint64_t& c) {
            GatherMask(d, tx, m, false, 0, {1, 8, 8, 0}, c);
        });
    }
    // 7: user pattern, Normal mode, a new 32-byte pattern block per repeat (only its first
    // 8 bytes = 64 bits are used)
    GatherCase(o, 7, kGm, gr, 7, [&](const LocalTensor<uint32_t>& d, uint64_t& c) {
        GatherMask(d, tx, tp, false, 0, {1, 8, 8, 1}, c);
    });
    // 8: built-in pattern 2 (indices of (score, index) pairs), Counter mode, 300 elements
    GatherCase(o, 8, kGm, gr, 8, [&](const LocalTensor<uint32_t>& d, uint64_t& c) {
        GatherMask(d, tx, 2, true, 300, {1, 1, 8, 0}, c);
    });
    // 9: the doc's user-pattern example on float: Counter mode, mask 70, 2 repeats, src0
    // repeat stride 4 blocks, pattern re-read (src1RepeatStride 0)
    GatherCase(o, 9, kGm, gr, 9, [&](const LocalTensor<uint32_t>& d, uint64_t& c) {
        LocalTensor<float> df = d.ReinterpretCast<float>();
        GatherMask(df, tin, tp, true, 70, {1, 2, 4, 0}, c);
    });
    // 10: in place (dst == src0), pattern 1, 4 repeats, then copied to segment 10
    {
        uint64_t c = 0;
        GatherMask(tin, tin, 1, false, 0, {1, 4, 8, 0}, c);
        PipeBarrier<PIPE_V>();
        gr.SetValue(10, static_cast<uint32_t>(c));
        LocalTensor<float> d = o[10 * kGm].ReinterpretCast<float>();
        Duplicate(d, 0.0f, kGm);
        PipeBarrier<PIPE_V>();
        DataCopy(d, tin, static_cast<uint32_t>(c)); // UB -> UB on the V pipe
    }
    // half width: built-in pattern 3 (lane 4k), 2 repeats of 128 u16; user pattern with a
    // block stride of 2 (Normal, 1 repeat: blocks 0, 2, .., 14 of xh); user pattern in
    // Counter mode over 200 elements
    GatherCase(oh, 0, kGmHalf, gr, 11, [&](const LocalTensor<uint16_t>& d, uint64_t& c) {
        GatherMask(d, txh, 3, false, 0, {1, 2, 8, 0}, c);
    });
    GatherCase(oh, 1, kGmHalf, gr, 12, [&](const LocalTensor<uint16_t>& d, uint64_t& c) {
        GatherMask(d, txh, tph, false, 0, {2, 1, 16, 0}, c);
    });
    GatherCase(oh, 2, kGmHalf, gr, 13, [&](const LocalTensor<uint16_t>& d, uint64_t& c) {
        GatherMask(d, txh, tph, true, 200, {1, 1, 8, 0}, c);
    });
    Sync<HardEvent::V_MTE3>();
    DataCopy(go, o, kGmCases * kGm);
    DataCopy(goh, oh, kGmHalfCases * kGmHalf);
}

// One violation per case (params[0]); each must trap.
extern "C" __global__ __aicore__ void trap_sort(GM_ADDR params)
{
    GlobalTensor<uint32_t> gp;
    gp.SetGlobalBuffer((__gm__ uint32_t*)params);
    const uint32_t which = gp.GetValue(0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bd, bs, bi;
    pipe.InitBuffer(bd, 4096);
    pipe.InitBuffer(bs, 4096);
    pipe.InitBuffer(bi, 2048);
    LocalTensor<float> d = bd.Get<float>();
    LocalTensor<float> s = bs.Get<float>();
    LocalTensor<uint32_t> ix = bi.Get<uint32_t>();
    Duplicate(s, 1.0f, 1024);
    Duplicate(ix, 0u, 512);
    PipeBarrier<PIPE_V>();
    uint16_t len[4] = {4, 4, 4, 4};
    uint64_t cnt = 0;
    switch (which) {
        case 0: Sort32(d, s, ix, 256); break;
        case 1: Sort32(d[8], s, ix, 1); break; // dst 32 bytes in: not 256-byte aligned
        case 2: {
            s.SetValue(5, NAN);
            Sync<HardEvent::S_V>();
            Sort32(d, s, ix, 1);
            break;
        }
        case 3: MrgSort(d, MrgSortSrcList<float>(s, s[8], s[16], s[24]), MrgSort4Info(len, false, 5, 1)); break;
        case 4: {
            s.SetValue(10, 2.0f); // list 2 (elements 4..7): 1, 2, 1, 1
            Sync<HardEvent::S_V>();
            MrgSort(d, MrgSortSrcList<float>(s, s[8], s[16], s[24]), MrgSort4Info(len, false, 15, 1));
            break;
        }
        case 5: MrgSort(s[16], MrgSortSrcList<float>(s, s[8], s[16], s[24]), MrgSort4Info(len, false, 15, 1)); break;
        case 6: {
            uint16_t uneven[4] = {4, 4, 4, 8};
            MrgSort(d, MrgSortSrcList<float>(s, s[8], s[16], s[24]), MrgSort4Info(uneven, false, 15, 2));
            break;
        }
        case 7: GatherMask(d, s, 8, false, 0, {1, 1, 8, 0}, cnt); break;
        case 8: GatherMask(d, s, 1, true, 0, {1, 1, 8, 0}, cnt); break;
        case 9: {
            MrgSort(d, MrgSortSrcList<float>(s, s[8], s[16], s[24]), MrgSort4Info(len, false, 15, 1));
            uint16_t a, b, c, e;
            Sync<HardEvent::V_S>();
            GetMrgSortResult(a, b, c, e);
            break;
        }
        case 10: {
            uint16_t big[4] = {4096, 4, 0, 0};
            MrgSort(d, MrgSortSrcList<float>(s, s, s, s), MrgSort4Info(big, false, 3, 1));
            break;
        }
        default: break;
    }
}

namespace {
constexpr uint32_t kTopK = 512;
constexpr uint32_t kTopMax = 2048; // scores per call at most
} // namespace

// Exact top-512 of params[0] f32 scores (descending, ties in input order, -1 indices and
// -inf scores past the valid count): Sort32 over 32-element units (the scores padded with
// -inf to max(alignUp(n, 32), 512)), 4-way MrgSort rounds over lists cut to 512, GatherMask
// to split scores and indices. res = the two rsvdCnt values.
extern "C" __global__ __aicore__ void sim_topk(GM_ADDR params, GM_ADDR scores, GM_ADDR outScores, GM_ADDR outIdx,
                                               GM_ADDR res)
{
    GlobalTensor<uint32_t> gp;
    gp.SetGlobalBuffer((__gm__ uint32_t*)params);
    const uint32_t n = gp.GetValue(0);
    ascendc_assert(n >= 1 && n <= kTopMax);
    uint32_t npad = (n + 31) / 32 * 32;
    npad = npad < kTopK ? kTopK : npad;
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bsc, bix, bos, boi;
    pipe.InitBuffer(ba, kTopMax * 8);
    pipe.InitBuffer(bb, kTopMax * 8);
    pipe.InitBuffer(bsc, kTopMax * 4);
    pipe.InitBuffer(bix, kTopMax * 4);
    pipe.InitBuffer(bos, kTopK * 4);
    pipe.InitBuffer(boi, kTopK * 4);
    LocalTensor<float> a = ba.Get<float>();
    LocalTensor<float> b = bb.Get<float>();
    LocalTensor<float> sc = bsc.Get<float>();
    LocalTensor<uint32_t> ix = bix.Get<uint32_t>();
    LocalTensor<float> os = bos.Get<float>();
    LocalTensor<uint32_t> oi = boi.Get<uint32_t>();

    GlobalTensor<float> gs;
    gs.SetGlobalBuffer((__gm__ float*)scores);
    DataCopyPad(sc, gs, DataCopyExtParams(1, n * 4, 0, 0, 0), DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
    Sync<HardEvent::MTE2_S>();
    for (uint32_t i = n; i < npad; ++i) {
        sc.SetValue(i, -INFINITY);
    }
    for (uint32_t i = 0; i < npad; ++i) {
        ix.SetValue(i, i < n ? i : 0xFFFFFFFFu);
    }
    Sync<HardEvent::S_V>();
    Sort32(a, sc, ix, static_cast<int32_t>(npad / 32));

    uint32_t lens[kTopMax / 32];
    uint32_t count = npad / 32;
    for (uint32_t q = 0; q < count; ++q) {
        lens[q] = 32;
    }
    LocalTensor<float> cur = a, nxt = b;
    while (count > 1) {
        PipeBarrier<PIPE_V>();
        uint32_t inOff = 0, outOff = 0, newCount = 0;
        for (uint32_t g = 0; g < count; g += 4) {
            const uint32_t m = count - g < 4 ? count - g : 4;
            uint16_t use[4] = {0, 0, 0, 0};
            uint32_t off[4] = {inOff, inOff, inOff, inOff};
            uint32_t merged = 0;
            for (uint32_t q = 0; q < m; ++q) {
                off[q] = inOff;
                use[q] = static_cast<uint16_t>(lens[g + q] < kTopK ? lens[g + q] : kTopK);
                merged += use[q];
                inOff += lens[g + q];
            }
            if (m == 1) {
                DataCopy(nxt[outOff * 2], cur[off[0] * 2], use[0] * 2u); // UB -> UB, V pipe
            } else {
                const uint16_t valid = m == 2 ? 0b11 : (m == 3 ? 0b111 : 0b1111);
                MrgSortSrcList<float> list(cur[off[0] * 2], cur[off[1] * 2], cur[off[2] * 2], cur[off[3] * 2]);
                MrgSort(nxt[outOff * 2], list, MrgSort4Info(use, false, valid, 1));
            }
            lens[newCount++] = merged;
            outOff += merged;
        }
        count = newCount;
        LocalTensor<float> t = cur;
        cur = nxt;
        nxt = t;
    }
    PipeBarrier<PIPE_V>();
    uint64_t nScores = 0, nIdx = 0;
    GatherMask(os, cur, 1, true, 2 * kTopK, {1, 1, 8, 0}, nScores);
    GatherMask(oi, cur.ReinterpretCast<uint32_t>(), 2, true, 2 * kTopK, {1, 1, 8, 0}, nIdx);
    GlobalTensor<uint32_t> gr;
    gr.SetGlobalBuffer((__gm__ uint32_t*)res);
    gr.SetValue(0, static_cast<uint32_t>(nScores));
    gr.SetValue(1, static_cast<uint32_t>(nIdx));
    Sync<HardEvent::V_MTE3>();
    GlobalTensor<float> gos;
    gos.SetGlobalBuffer((__gm__ float*)outScores);
    GlobalTensor<uint32_t> goi;
    goi.SetGlobalBuffer((__gm__ uint32_t*)outIdx);
    DataCopy(gos, os, kTopK);
    DataCopy(goi, oi, kTopK);
}
