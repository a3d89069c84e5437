// Element-wise binary ops (kernel_operator_vec_binary_intf.h) and tensor-scalar ops
// (kernel_operator_vec_binary_scalar_intf.h), level 2 (count) and level 0 (mask, repeat,
// strides). Supported types per the dav-c220 tables of the docs (基础算术/*.md): no bf16
// arithmetic on the A2 vector unit, so bf16 operands fail to compile here as on the chip.
// Arithmetic runs in fp32 and rounds to the storage type (exact for +,-,*,/ on fp16).
#pragma once

#include "vec_common.h"

namespace AscendC {
namespace sim {
template <typename T>
inline float F(T v)
{
    return static_cast<float>(v);
}

template <typename T>
struct AddOp {
    T operator()(T a, T b) const
    {
        if constexpr (std::is_integral_v<T>) {
            return static_cast<T>(a + b);
        } else {
            return T(F(a) + F(b));
        }
    }
};
template <typename T>
struct SubOp {
    T operator()(T a, T b) const
    {
        if constexpr (std::is_integral_v<T>) {
            return static_cast<T>(a - b);
        } else {
            return T(F(a) - F(b));
        }
    }
};
template <typename T>
struct MulOp {
    T operator()(T a, T b) const
    {
        if constexpr (std::is_integral_v<T>) {
            return static_cast<T>(a * b);
        } else {
            return T(F(a) * F(b));
        }
    }
};
template <typename T>
struct DivOp {
    T operator()(T a, T b) const { return T(F(a) / F(b)); }
};
template <typename T>
struct MaxOp {
    T operator()(T a, T b) const { return VMax(a, b); }
};
template <typename T>
struct MinOp {
    T operator()(T a, T b) const { return VMin(a, b); }
};
} // namespace sim

#define SIM_BINARY_OP(NAME, OP, ...)                                                                                  \
    template <typename T>                                                                                             \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,  \
                                const int32_t& count)                                                                 \
    {                                                                                                                 \
    sim::Op op_(#NAME, sim::Pipe::V);                                                                                 \
        static_assert(sim::OneOf<T, __VA_ARGS__>, #NAME ": element type not supported on dav-c220");                 \
        sim::Binary2(#NAME, dst, src0, src1, count, sim::OP<T>{});                                                    \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,  \
                                uint64_t mask, const sim::Wide repeatTime, const BinaryRepeatParams& repeatParams)   \
    {                                                                                                                 \
    sim::Op op_(#NAME, sim::Pipe::V);                                                                                 \
        static_assert(sim::OneOf<T, __VA_ARGS__>, #NAME ": element type not supported on dav-c220");                 \
        sim::LanePlan p = sim::PlanFromCount(#NAME, mask, repeatTime, sim::LanesOf<T>(), isSetMask);                  \
        sim::Binary0(#NAME, dst, src0, src1, p, repeatParams, sim::OP<T>{});                                          \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,  \
                                const uint64_t mask[], const sim::Wide repeatTime,                                    \
                                const BinaryRepeatParams& repeatParams)                                               \
    {                                                                                                                 \
    sim::Op op_(#NAME, sim::Pipe::V);                                                                                 \
        static_assert(sim::OneOf<T, __VA_ARGS__>, #NAME ": element type not supported on dav-c220");                 \
        sim::LanePlan p = sim::PlanFromBits(#NAME, mask, repeatTime, sim::LanesOf<T>(), isSetMask);                   \
        sim::Binary0(#NAME, dst, src0, src1, p, repeatParams, sim::OP<T>{});                                          \
    }

SIM_BINARY_OP(Add, AddOp, int16_t, half, int32_t, float)
SIM_BINARY_OP(Sub, SubOp, int16_t, half, int32_t, float)
SIM_BINARY_OP(Mul, MulOp, int16_t, half, int32_t, float)
SIM_BINARY_OP(Div, DivOp, half, float)
SIM_BINARY_OP(Max, MaxOp, int16_t, half, int32_t, float)
SIM_BINARY_OP(Min, MinOp, int16_t, half, int32_t, float)
#undef SIM_BINARY_OP

// MulAddDst (复合计算/MulAddDst.md): dst = src0 * src1 + dst, dst read as a third operand
// with its own strides. dav-c220 takes (half, half), (float, float) and (float, half); the
// sim models the same-type pairs (the mixed pair fails to compile here: not modelled).
namespace sim {
// The product rounds to f32 before the sum (not fused: an assumption, the docs say
// dst = src0 * src1 + dst); `volatile` keeps -ffp-contract from fusing them on hosts with FMA.
template <typename T>
struct MulAddDstOp {
    T operator()(T a, T b, T c) const
    {
        volatile float product = F(a) * F(b);
        return T(product + F(c));
    }
};
template <typename T, typename U>
constexpr bool kMulAddDstModelled = std::is_same_v<T, U> && OneOf<T, half, float>;
} // namespace sim

template <typename T, typename U>
__aicore__ inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
                                 const int32_t& count)
{
    sim::Op op_("MulAddDst", sim::Pipe::V);
    static_assert(sim::kMulAddDstModelled<T, U>, "MulAddDst: the sim models (half, half) and (float, float)");
    sim::Ternary2("MulAddDst", dst, src0, src1, count, sim::MulAddDstOp<T>{});
}
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
                                 uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams& repeatParams)
{
    sim::Op op_("MulAddDst", sim::Pipe::V);
    static_assert(sim::kMulAddDstModelled<T, U>, "MulAddDst: the sim models (half, half) and (float, float)");
    sim::LanePlan p = sim::PlanFromCount("MulAddDst", mask, repeatTime, sim::LanesOf<T>(), isSetMask);
    sim::Ternary0("MulAddDst", dst, src0, src1, p, repeatParams, sim::MulAddDstOp<T>{});
}
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
                                 const uint64_t mask[], const uint8_t repeatTime,
                                 const BinaryRepeatParams& repeatParams)
{
    sim::Op op_("MulAddDst", sim::Pipe::V);
    static_assert(sim::kMulAddDstModelled<T, U>, "MulAddDst: the sim models (half, half) and (float, float)");
    sim::LanePlan p = sim::PlanFromBits("MulAddDst", mask, repeatTime, sim::LanesOf<T>(), isSetMask);
    sim::Ternary0("MulAddDst", dst, src0, src1, p, repeatParams, sim::MulAddDstOp<T>{});
}

// Tensor-scalar ops: the scalar has the tensor's element type, `const T&` as in the official
// declarations, so a scalar of another type only compiles with T given explicitly
// (`Adds<float>(d, s, 1, n)`), as on the device.
#define SIM_SCALAR_OP(NAME, OP)                                                                                       \
    template <typename T, bool isSetMask = true>                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,          \
                                const int32_t& count)                                                                 \
    {                                                                                                                 \
    sim::Op op_(#NAME, sim::Pipe::V);                                                                                 \
        static_assert(sim::OneOf<T, int16_t, half, int32_t, float>, #NAME ": element type not supported on dav-c220"); \
        const T s = scalarValue;                                                                                      \
        if constexpr (isSetMask) {                                                                                    \
            sim::Unary2(#NAME, dst, src, count, [s](T a) { return sim::OP<T>{}(a, s); });                             \
        } else { /* one instruction under the mask register (in counter mode: its count) */                           \
            sim::LanePlan p = sim::PlanFromCount(#NAME, 0, 1, sim::LanesOf<T>(), false);                              \
            sim::Unary0(#NAME, dst, src, p, 1, 1, 8, 8, [s](T a) { return sim::OP<T>{}(a, s); });                     \
        }                                                                                                             \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,          \
                                uint64_t mask, const sim::Wide repeatTime, const UnaryRepeatParams& repeatParams)    \
    {                                                                                                                 \
    sim::Op op_(#NAME, sim::Pipe::V);                                                                                 \
        static_assert(sim::OneOf<T, int16_t, half, int32_t, float>, #NAME ": element type not supported on dav-c220"); \
        const T s = scalarValue;                                                                      \
        sim::LanePlan p = sim::PlanFromCount(#NAME, mask, repeatTime, sim::LanesOf<T>(), isSetMask);                  \
        sim::Unary0(#NAME, dst, src, p, repeatParams.dstBlkStride, repeatParams.srcBlkStride,                         \
                    repeatParams.dstRepStride, repeatParams.srcRepStride,                                             \
                    [s](T a) { return sim::OP<T>{}(a, s); });                                                         \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,          \
                                const uint64_t mask[], const sim::Wide repeatTime,                                    \
                                const UnaryRepeatParams& repeatParams)                                                \
    {                                                                                                                 \
    sim::Op op_(#NAME, sim::Pipe::V);                                                                                 \
        static_assert(sim::OneOf<T, int16_t, half, int32_t, float>, #NAME ": element type not supported on dav-c220"); \
        const T s = scalarValue;                                                                      \
        sim::LanePlan p = sim::PlanFromBits(#NAME, mask, repeatTime, sim::LanesOf<T>(), isSetMask);                   \
        sim::Unary0(#NAME, dst, src, p, repeatParams.dstBlkStride, repeatParams.srcBlkStride,                         \
                    repeatParams.dstRepStride, repeatParams.srcRepStride,                                             \
                    [s](T a) { return sim::OP<T>{}(a, s); });                                                         \
    }

SIM_SCALAR_OP(Adds, AddOp)
SIM_SCALAR_OP(Muls, MulOp)
SIM_SCALAR_OP(Maxs, MaxOp)
SIM_SCALAR_OP(Mins, MinOp)
#undef SIM_SCALAR_OP

} // namespace AscendC
