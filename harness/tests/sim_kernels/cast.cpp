// Cast test kernel: every dav-c220 conversion among fp32/fp16/bf16/int8/int32 with every
// round mode it supports, on 64 inputs per source type. The results are concatenated into
// `out` in the order below (the Rust test walks the same list).
#include "kernel_operator.h"
#include "handshake.h"

using namespace AscendC;

namespace {
constexpr uint32_t kN = 64;

struct Out {
    GM_ADDR base;
    uint32_t offset; // bytes
};


template <typename T>
__aicore__ inline LocalTensor<T> Load(TPipe& pipe, TBuf<TPosition::VECCALC>& buf, GM_ADDR src)
{
    pipe.InitBuffer(buf, kN * sizeof(T));
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)src);
    LocalTensor<T> t = buf.Get<T>();
    DataCopy(t, g, kN);
    return t;
}

// Casts src with each mode into the staging buffer and appends it to the output (V_MTE3
// before the copy out, MTE3_V before the next cast overwrites the staging buffer).
template <typename D, typename S>
__aicore__ inline void Seg(TBuf<TPosition::VECCALC>& stage, Out& out, const LocalTensor<S>& src,
                           std::initializer_list<RoundMode> modes)
{
    for (RoundMode m : modes) {
        LocalTensor<D> d = stage.Get<D>(kN);
        Cast(d, src, m, kN);
        Sync<HardEvent::V_MTE3>();
        GlobalTensor<D> g;
        g.SetGlobalBuffer((__gm__ D*)(out.base + out.offset));
        DataCopy(g, d, kN);
        Sync<HardEvent::MTE3_V>();
        out.offset += kN * sizeof(D);
    }
}
} // namespace

extern "C" __global__ __aicore__ void sim_vec_cast(GM_ADDR xf, GM_ADDR xh, GM_ADDR xb, GM_ADDR xi8, GM_ADDR xi32,
                                                   GM_ADDR out)
{
    using R = RoundMode;
    TPipe pipe;
    TBuf<TPosition::VECCALC> bf, bh, bb, b8, b32, stage;
    LocalTensor<float> f = Load<float>(pipe, bf, xf);
    LocalTensor<half> h = Load<half>(pipe, bh, xh);
    LocalTensor<bfloat16_t> b = Load<bfloat16_t>(pipe, bb, xb);
    LocalTensor<int8_t> i8 = Load<int8_t>(pipe, b8, xi8);
    LocalTensor<int32_t> i32 = Load<int32_t>(pipe, b32, xi32);
    pipe.InitBuffer(stage, kN * sizeof(float));
    Sync<HardEvent::MTE2_V>();
    Out o{out, 0};
    const auto rounding = {R::CAST_RINT, R::CAST_FLOOR, R::CAST_CEIL, R::CAST_ROUND, R::CAST_TRUNC};
    Seg<half>(stage, o, f, {R::CAST_NONE, R::CAST_RINT, R::CAST_FLOOR, R::CAST_CEIL, R::CAST_ROUND, R::CAST_TRUNC,
                            R::CAST_ODD});
    Seg<bfloat16_t>(stage, o, f, rounding);
    Seg<int32_t>(stage, o, f, rounding);
    Seg<float>(stage, o, f, rounding);
    Seg<int8_t>(stage, o, h, {R::CAST_NONE, R::CAST_RINT, R::CAST_FLOOR, R::CAST_CEIL, R::CAST_ROUND, R::CAST_TRUNC});
    Seg<int32_t>(stage, o, h, rounding);
    Seg<float>(stage, o, h, {R::CAST_NONE});
    Seg<int32_t>(stage, o, b, rounding);
    Seg<float>(stage, o, b, {R::CAST_NONE});
    Seg<float>(stage, o, i32, {R::CAST_NONE, R::CAST_RINT, R::CAST_FLOOR, R::CAST_CEIL, R::CAST_ROUND, R::CAST_TRUNC});
    Seg<half>(stage, o, i8, {R::CAST_NONE});
}
