// Element-wise unary ops (kernel_operator_vec_unary_intf.h), level 2 and level 0.
// Transcendentals are computed in fp32 with libm and rounded to the storage type; the
// chip's own approximations differ in the last bits, which comparisons must tolerate.
// Types per the dav-c220 doc tables: half and float (Relu also int32).
#pragma once

#include "vec_common.h"

namespace AscendC {
namespace sim {
template <typename T, typename G>
struct FloatFn {
    G g;
    T operator()(T a) const { return T(g(static_cast<float>(a))); }
};
struct ExpF {
    float operator()(float x) const { return std::exp(x); }
};
struct LnF {
    float operator()(float x) const { return std::log(x); }
};
struct SqrtF {
    float operator()(float x) const { return std::sqrt(x); }
};
struct RsqrtF {
    float operator()(float x) const { return 1.0f / std::sqrt(x); }
};
struct RecipF {
    float operator()(float x) const { return 1.0f / x; }
};
struct AbsF {
    float operator()(float x) const { return std::fabs(x); }
};
template <typename T>
struct ReluOp {
    T operator()(T a) const
    {
        if constexpr (std::is_integral_v<T>) {
            return a > 0 ? a : T(0);
        } else {
            float x = static_cast<float>(a);
            return std::isnan(x) ? a : (x > 0.0f ? a : T(0.0f));
        }
    }
};
} // namespace sim

#define SIM_UNARY_OP(NAME, FN, ...)                                                                                   \
    template <typename T>                                                                                             \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count)          \
    {                                                                                                                 \
    sim::Op op_(#NAME, sim::Pipe::V);                                                                                 \
        static_assert(sim::OneOf<T, __VA_ARGS__>, #NAME ": element type not supported on dav-c220");                 \
        sim::Unary2(#NAME, dst, src, count, FN);                                                                      \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask,                 \
                                const sim::Wide repeatTime, const UnaryRepeatParams& repeatParams)                    \
    {                                                                                                                 \
    sim::Op op_(#NAME, sim::Pipe::V);                                                                                 \
        static_assert(sim::OneOf<T, __VA_ARGS__>, #NAME ": element type not supported on dav-c220");                 \
        sim::LanePlan p = sim::PlanFromCount(#NAME, mask, repeatTime, sim::LanesOf<T>(), isSetMask);                  \
        sim::Unary0(#NAME, dst, src, p, repeatParams.dstBlkStride, repeatParams.srcBlkStride,                         \
                    repeatParams.dstRepStride, repeatParams.srcRepStride, FN);                                        \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],         \
                                const sim::Wide repeatTime, const UnaryRepeatParams& repeatParams)                    \
    {                                                                                                                 \
    sim::Op op_(#NAME, sim::Pipe::V);                                                                                 \
        static_assert(sim::OneOf<T, __VA_ARGS__>, #NAME ": element type not supported on dav-c220");                 \
        sim::LanePlan p = sim::PlanFromBits(#NAME, mask, repeatTime, sim::LanesOf<T>(), isSetMask);                   \
        sim::Unary0(#NAME, dst, src, p, repeatParams.dstBlkStride, repeatParams.srcBlkStride,                         \
                    repeatParams.dstRepStride, repeatParams.srcRepStride, FN);                                        \
    }

SIM_UNARY_OP(Exp, (sim::FloatFn<T, sim::ExpF>{}), half, float)
SIM_UNARY_OP(Ln, (sim::FloatFn<T, sim::LnF>{}), half, float)
SIM_UNARY_OP(Sqrt, (sim::FloatFn<T, sim::SqrtF>{}), half, float)
SIM_UNARY_OP(Rsqrt, (sim::FloatFn<T, sim::RsqrtF>{}), half, float)
SIM_UNARY_OP(Reciprocal, (sim::FloatFn<T, sim::RecipF>{}), half, float)
SIM_UNARY_OP(Abs, (sim::FloatFn<T, sim::AbsF>{}), half, float)
SIM_UNARY_OP(Relu, (sim::ReluOp<T>{}), half, int32_t, float)
#undef SIM_UNARY_OP

} // namespace AscendC
