// Cast (类型转换/Cast.md, 数据结构/precision_conversion.md). The dav-c220 (Atlas A2)
// table of supported (src, dst, roundMode) combinations is enforced: an unsupported type
// pair fails to compile, an unsupported round mode traps. Rounding is exact: the value is
// scaled to units of the target's last place and rounded per mode on its magnitude:
//   RINT/NONE half-to-even, ROUND half-away-from-zero, TRUNC toward 0, FLOOR toward -inf,
//   CEIL toward +inf, ODD (von Neumann) sets the last bit when inexact.
// Overflow: integer targets saturate to their range ("溢出默认按照饱和模式处理"; NaN gives
// 0). Floating targets follow the float overflow mode of the A2 runtime, whose default is
// Inf/NaN mode (aclrtFloatOverflowMode: "Atlas A2 ... 默认为Inf/NaN模式"; CTRL[48]): IEEE
// results, so a finite value past the target's range becomes inf when the rounding moves
// it away from zero (RINT, ROUND, CEIL up, FLOOR down) and the largest finite value
// otherwise; inf and NaN propagate. Vector arithmetic (Exp, Add, ...) follows the same mode
// through the storage rounding of half. Fixpipe's F322F16 / F322BF16 conversions have no
// Inf/NaN mode (asc_copy_l0c2gm: "不支持INF_NAN模式") and saturate: RoundToFloatType's
// `saturate`.
#pragma once

#include "vec_common.h"

namespace AscendC {
namespace sim {

inline double RoundMag(double q, bool neg, RoundMode m)
{
    double f = std::floor(q);
    double frac = q - f;
    // integers from 2^53 on are even
    bool odd = f < 9007199254740992.0 && (static_cast<uint64_t>(f) & 1) != 0;
    switch (m) {
        case RoundMode::CAST_NONE:
        case RoundMode::CAST_RINT:
            if (frac > 0.5 || (frac == 0.5 && odd)) {
                f += 1;
            }
            break;
        case RoundMode::CAST_ROUND:
            if (frac >= 0.5) {
                f += 1;
            }
            break;
        case RoundMode::CAST_TRUNC: break;
        case RoundMode::CAST_FLOOR:
            if (neg && frac > 0) {
                f += 1;
            }
            break;
        case RoundMode::CAST_CEIL:
            if (!neg && frac > 0) {
                f += 1;
            }
            break;
        case RoundMode::CAST_ODD:
            if (frac > 0 && !odd) {
                f += 1;
            }
            break;
        default: break;
    }
    return f;
}

// Rounds finite x to a binary float format with `mant` fraction bits, minimum normal
// exponent `emin` and largest finite value `maxVal`: past it, inf if the rounding moves the
// magnitude up (or `saturate` is false and it does), else maxVal.
inline double RoundToFormat(double x, RoundMode m, int mant, int emin, double maxVal, bool saturate)
{
    bool neg = std::signbit(x);
    double a = std::fabs(x);
    if (a == 0.0) {
        return x;
    }
    int e = std::ilogb(a);
    if (e < emin) {
        e = emin;
    }
    double ulp = std::ldexp(1.0, e - mant);
    double r = RoundMag(a / ulp, neg, m) * ulp;
    if (r > maxVal) {
        bool towardZero = m == RoundMode::CAST_TRUNC || m == RoundMode::CAST_ODD ||
                          (m == RoundMode::CAST_FLOOR && !neg) || (m == RoundMode::CAST_CEIL && neg);
        r = (saturate || towardZero) ? maxVal : std::numeric_limits<double>::infinity();
    }
    return neg ? -r : r;
}

template <typename I>
inline I RoundToInt(double x, RoundMode m)
{
    if (std::isnan(x)) {
        return I(0);
    }
    bool neg = std::signbit(x);
    double r = RoundMag(std::fabs(x), neg, m);
    r = neg ? -r : r;
    if (r < double(std::numeric_limits<I>::min())) {
        return std::numeric_limits<I>::min();
    }
    if (r > double(std::numeric_limits<I>::max())) {
        return std::numeric_limits<I>::max();
    }
    return static_cast<I>(r);
}

template <typename D>
inline D RoundToFloatType(float x, RoundMode m, bool saturate = false)
{
    if (std::isnan(x) || std::isinf(x)) {
        return D(x);
    }
    if constexpr (!std::is_same_v<D, float>) {
        // fast path for the common RNE case (IEEE: overflow rounds to inf)
        if ((m == RoundMode::CAST_RINT || m == RoundMode::CAST_NONE) && !saturate) {
            return D(x);
        }
    }
    if constexpr (std::is_same_v<D, half>) {
        return D(static_cast<float>(RoundToFormat(x, m, 10, -14, 65504.0, saturate)));
    } else if constexpr (std::is_same_v<D, bfloat16_t>) {
        return D(static_cast<float>(RoundToFormat(x, m, 7, -126, 3.3895313892515355e38, saturate)));
    } else {
        // float -> float: round to an integral value
        if (std::fabs(x) >= 8388608.0f) {
            return x;
        }
        double r = RoundMag(std::fabs(double(x)), std::signbit(x), m);
        return static_cast<float>(std::signbit(x) ? -r : r);
    }
}

enum ModeSet : uint8_t { kNoneOnly = 1, kRounding = 2, kRoundingNone = 3, kRoundingNoneOdd = 4 };

inline bool ModeAllowed(ModeSet s, RoundMode m)
{
    bool rounding = m == RoundMode::CAST_RINT || m == RoundMode::CAST_FLOOR || m == RoundMode::CAST_CEIL ||
                    m == RoundMode::CAST_ROUND || m == RoundMode::CAST_TRUNC;
    switch (s) {
        case kNoneOnly: return m == RoundMode::CAST_NONE;
        case kRounding: return rounding;
        case kRoundingNone: return rounding || m == RoundMode::CAST_NONE;
        case kRoundingNoneOdd: return rounding || m == RoundMode::CAST_NONE || m == RoundMode::CAST_ODD;
    }
    return false;
}

// The dav-c220 support table (Cast.md, "Atlas A2 训练系列产品/Atlas A2 推理系列产品").
template <typename D, typename S>
constexpr ModeSet CastModes()
{
    if constexpr (std::is_same_v<S, int8_t> && std::is_same_v<D, half>) return kNoneOnly;
    else if constexpr (std::is_same_v<S, uint8_t> && std::is_same_v<D, half>) return kNoneOnly;
    else if constexpr (std::is_same_v<S, int16_t> && std::is_same_v<D, half>) return kRoundingNone;
    else if constexpr (std::is_same_v<S, int16_t> && std::is_same_v<D, float>) return kNoneOnly;
    else if constexpr (std::is_same_v<S, half> && std::is_same_v<D, int8_t>) return kRoundingNone;
    else if constexpr (std::is_same_v<S, half> && std::is_same_v<D, uint8_t>) return kRoundingNone;
    else if constexpr (std::is_same_v<S, half> && std::is_same_v<D, int16_t>) return kRounding;
    else if constexpr (std::is_same_v<S, half> && std::is_same_v<D, int32_t>) return kRounding;
    else if constexpr (std::is_same_v<S, half> && std::is_same_v<D, float>) return kNoneOnly;
    else if constexpr (std::is_same_v<S, bfloat16_t> && std::is_same_v<D, int32_t>) return kRounding;
    else if constexpr (std::is_same_v<S, bfloat16_t> && std::is_same_v<D, float>) return kNoneOnly;
    else if constexpr (std::is_same_v<S, int32_t> && std::is_same_v<D, int16_t>) return kNoneOnly;
    else if constexpr (std::is_same_v<S, int32_t> && std::is_same_v<D, float>) return kRoundingNone;
    else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, int16_t>) return kRounding;
    else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, half>) return kRoundingNoneOdd;
    else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, bfloat16_t>) return kRounding;
    else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, int32_t>) return kRounding;
    else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, float>) return kRounding;
    else return ModeSet(0);
}

template <typename D, typename S>
inline D CastOne(S v, RoundMode m)
{
    if constexpr (std::is_integral_v<D>) {
        return RoundToInt<D>(static_cast<double>(static_cast<float>(v)), m);
    } else if constexpr (std::is_integral_v<S>) {
        // int -> float types: round the exact integer into the target format
        double x = static_cast<double>(v);
        if constexpr (std::is_same_v<D, float>) {
            return static_cast<float>(RoundToFormat(x, m, 23, -126, 3.4028234663852886e38, false));
        } else {
            return D(static_cast<float>(RoundToFormat(x, m, 10, -14, 65504.0, false)));
        }
    } else if constexpr (std::is_same_v<S, float>) {
        return RoundToFloatType<D>(v, m);
    } else {
        return D(static_cast<float>(v)); // exact widening (half/bf16 -> float)
    }
}

inline const char* ModeName(RoundMode m)
{
    switch (m) {
        case RoundMode::CAST_NONE: return "CAST_NONE";
        case RoundMode::CAST_RINT: return "CAST_RINT";
        case RoundMode::CAST_FLOOR: return "CAST_FLOOR";
        case RoundMode::CAST_CEIL: return "CAST_CEIL";
        case RoundMode::CAST_ROUND: return "CAST_ROUND";
        case RoundMode::CAST_TRUNC: return "CAST_TRUNC";
        case RoundMode::CAST_ODD: return "CAST_ODD";
        default: return "?";
    }
}

template <typename D, typename S>
void CheckCastMode(RoundMode m)
{
    static_assert(CastModes<D, S>() != ModeSet(0), "Cast: this (src, dst) type pair is not supported on dav-c220");
    if (!ModeAllowed(CastModes<D, S>(), m)) {
        Trap("Cast", std::string("round mode ") + ModeName(m) + " is not supported for this type pair on dav-c220");
    }
}
} // namespace sim

template <typename T, typename U>
__aicore__ inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                            const uint32_t count)
{
    sim::Op op_("Cast", sim::Pipe::V);
    sim::CheckCastMode<T, U>(roundMode);
    RoundMode m = roundMode;
    sim::Unary2("Cast", dst, src, static_cast<int32_t>(count), [m](U v) { return sim::CastOne<T, U>(v, m); });
}

template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                            const uint64_t mask, const sim::Wide repeatTime, const UnaryRepeatParams& repeatParams)
{
    sim::Op op_("Cast", sim::Pipe::V);
    sim::CheckCastMode<T, U>(roundMode);
    RoundMode m = roundMode;
    constexpr uint32_t lanes = 256 / (sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U));
    sim::LanePlan p = sim::PlanFromCount("Cast", mask, repeatTime, lanes, isSetMask);
    sim::Unary0("Cast", dst, src, p, repeatParams.dstBlkStride, repeatParams.srcBlkStride, repeatParams.dstRepStride,
                repeatParams.srcRepStride, [m](U v) { return sim::CastOne<T, U>(v, m); });
}

template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                            const uint64_t mask[], const sim::Wide repeatTime, const UnaryRepeatParams& repeatParams)
{
    sim::Op op_("Cast", sim::Pipe::V);
    sim::CheckCastMode<T, U>(roundMode);
    RoundMode m = roundMode;
    constexpr uint32_t lanes = 256 / (sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U));
    sim::LanePlan p = sim::PlanFromBits("Cast", mask, repeatTime, lanes, isSetMask);
    sim::Unary0("Cast", dst, src, p, repeatParams.dstBlkStride, repeatParams.srcBlkStride, repeatParams.dstRepStride,
                repeatParams.srcRepStride, [m](U v) { return sim::CastOne<T, U>(v, m); });
}

} // namespace AscendC
