// Scalar types, qualifiers and enums of the Ascend C API (dav-c220 subset), with the
// same names as the official headers so that kernel sources compile unchanged.
// Names that the official toolchain declares globally (pipe_t, event_t, QuantMode_t,
// KernelMetaType) are global here too, and only there: `AscendC::pipe_t` does not compile on
// the device.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

// Address-space and function qualifiers are compiler attributes on the NPU; on the CPU
// they mean nothing (the official CPU-debug mode defines them empty as well).
#define __aicore__
#define __global__
#define __gm__
#define __ubuf__
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __fbuf__

#define GM_ADDR __gm__ uint8_t*

// Kernel types as the `.asc` flow marks them (asc-devkit samples: `__global__ __vector__`,
// `__global__ __cube__`, `__global__ __mix__(1, 2)`). Each places the entry in its own
// section, so the sim knows the declared type from the entry's address (runtime.cpp
// MarkedKernelType) and checks it against the launch mode. Only the 1:2 mix exists on
// dav-c220 here: any other ratio does not compile.
#define __vector__ __attribute__((section("sim_kernel_vector")))
#define __cube__ __attribute__((section("sim_kernel_cube")))
#define __mix__(cube, vector) SIM_KERNEL_MIX_##cube##_##vector
#define SIM_KERNEL_MIX_1_2 __attribute__((section("sim_kernel_mix_1_2")))

// Pipes and hardware event ids: global enums in the official intrinsic header.
enum pipe_t : uint8_t {
    PIPE_S = 0,
    PIPE_V,
    PIPE_M,
    PIPE_MTE1,
    PIPE_MTE2,
    PIPE_MTE3,
    PIPE_ALL,
    PIPE_MTE4,
    PIPE_MTE5,
    PIPE_V2,
    PIPE_FIX,
};

enum event_t : uint8_t {
    EVENT_ID0 = 0,
    EVENT_ID1,
    EVENT_ID2,
    EVENT_ID3,
    EVENT_ID4,
    EVENT_ID5,
    EVENT_ID6,
    EVENT_ID7,
};

// Fixpipe quantisation modes (kernel_struct_fixpipe.h / QuantMode_t); only the
// conversions the sim implements are meaningful, the rest trap when used.
enum QuantMode_t : uint8_t {
    NoQuant = 0,
    F322F16,
    F322BF16,
    DEQF16,
    VDEQF16,
    QF322B8_PRE,
    VQF322B8_PRE,
    REQ8,
    VREQ8,
};

// kernel_utils_macros.h: the kernel type a mixed source declares for itself.
enum KernelMetaType : uint8_t {
    KERNEL_TYPE_AIV_ONLY,
    KERNEL_TYPE_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2,
    KERNEL_TYPE_AICORE,
    KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE,
    KERNEL_TYPE_MIX_VECTOR_CORE,
    KERNEL_TYPE_MAX,
};

namespace AscendC {
namespace sim {
// IEEE binary16 <-> binary32 with round-to-nearest-even (the storage rounding of the
// chip). _Float16 conversions are exact RNE in GCC/Clang on x86-64.
inline uint16_t F32ToF16Bits(float f)
{
    _Float16 h = static_cast<_Float16>(f);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
}
inline float F16BitsToF32(uint16_t b)
{
    _Float16 h;
    std::memcpy(&h, &b, 2);
    return static_cast<float>(h);
}
inline uint32_t F32Bits(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float BitsF32(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
// bf16 is the top half of an fp32; RNE on the dropped 16 bits. NaN stays a (quiet) NaN.
inline uint16_t F32ToBf16Bits(float f)
{
    uint32_t u = F32Bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return static_cast<uint16_t>((u >> 16) | 0x0040u);
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}
inline float Bf16BitsToF32(uint16_t b) { return BitsF32(static_cast<uint32_t>(b) << 16); }
} // namespace sim
} // namespace AscendC

// `half` and `bfloat16_t` are the device compiler's built-in types: global, and not members
// of AscendC (so `AscendC::half` fails here as it fails in bisheng).

// `half`: IEEE fp16 storage. Arithmetic happens in float through the implicit
// conversion; results stored back round to nearest even. (For +,-,*,/ and sqrt
// binary32 has enough precision that the double rounding is exact.)
struct half {
    uint16_t bits_ = 0;
    half() = default;
    template <typename U, typename = std::enable_if_t<std::is_arithmetic_v<U>>>
    half(U v) : bits_(AscendC::sim::F32ToF16Bits(static_cast<float>(v)))
    {}
    operator float() const { return AscendC::sim::F16BitsToF32(bits_); }
    static half FromBits(uint16_t b)
    {
        half h;
        h.bits_ = b;
        return h;
    }
};

// bfloat16_t: the upper 16 bits of a binary32, stored with RNE.
struct bfloat16_t {
    uint16_t bits_ = 0;
    bfloat16_t() = default;
    template <typename U, typename = std::enable_if_t<std::is_arithmetic_v<U>>>
    bfloat16_t(U v) : bits_(AscendC::sim::F32ToBf16Bits(static_cast<float>(v)))
    {}
    operator float() const { return AscendC::sim::Bf16BitsToF32(bits_); }
    static bfloat16_t FromBits(uint16_t b)
    {
        bfloat16_t h;
        h.bits_ = b;
        return h;
    }
};

namespace AscendC {

// Scalar conversions of the official scalar API (标量计算/Cast).
__aicore__ inline bfloat16_t ToBfloat16(const float& f) { return bfloat16_t(f); }
__aicore__ inline float ToFloat(const bfloat16_t& b) { return static_cast<float>(b); }

using TEventID = int8_t;

// impl/basic_api/common_types.h
enum class TPosition : uint8_t {
    GM,
    A1,
    A2,
    B1,
    B2,
    C1,
    C2,
    CO1,
    CO2,
    VECIN,
    VECOUT,
    VECCALC,
    LCM = VECCALC,
    SPM,
    SHM = SPM,
    TSCM,
    C2PIPE2GM,
    C2PIPE2LOCAL,
    MAX,
};
using QuePosition = TPosition;

// impl/basic_api/kernel_event.h (src_dst pipes).
enum class HardEvent : uint8_t {
    MTE2_MTE1,
    MTE1_MTE2,
    MTE1_M,
    M_MTE1,
    MTE2_V,
    V_MTE2,
    MTE3_V,
    V_MTE3,
    M_V,
    V_M,
    V_V,
    MTE3_MTE1,
    MTE1_MTE3,
    MTE1_V,
    MTE2_M,
    M_MTE2,
    V_MTE1,
    M_FIX,
    FIX_M,
    MTE3_MTE2,
    MTE2_MTE3,
    S_V,
    V_S,
    S_MTE2,
    MTE2_S,
    S_MTE3,
    MTE3_S,
    MTE2_FIX,
    FIX_MTE2,
    FIX_S,
    M_S,
    FIX_MTE3,
    MTE1_FIX,
    FIX_MTE1,
    FIX_FIX,
    MAX,
};

// impl/basic_api/utils/kernel_utils_mode.h
enum class RoundMode : uint8_t {
    CAST_NONE = 0,
    CAST_RINT,
    CAST_FLOOR,
    CAST_CEIL,
    CAST_ROUND,
    CAST_TRUNC,
    CAST_ODD,
    UNKNOWN = 0xFF,
};

enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };

enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };

enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };

enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

// impl/basic_api/kernel_reg.h: DataCacheCleanAndInvalid targets.
enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint64_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

constexpr uint64_t MASK_PLACEHOLDER = 0;

// impl/basic_api/utils/kernel_utils_constants.h (dav-c220 values).
constexpr uint32_t ONE_BLK_SIZE = 32;
constexpr uint32_t ONE_REPEAT_BYTE_SIZE = 256;
constexpr uint32_t DEFAULT_BLK_NUM = 8;
constexpr uint32_t DEFAULT_BLK_STRIDE = 1;
constexpr uint32_t DEFAULT_REPEAT_STRIDE = 8;
constexpr uint32_t MAX_REPEAT_TIMES = 255;
constexpr uint32_t BLOCK_CUBE = 16;
constexpr uint32_t CUBE_MAX_SIZE = 256;
constexpr uint32_t TOTAL_UB_SIZE = 192 * 1024;
constexpr uint32_t TOTAL_VEC_LOCAL_SIZE = 184 * 1024;
constexpr uint32_t TOTAL_L1_SIZE = 512 * 1024;
constexpr uint32_t TOTAL_L0A_SIZE = 64 * 1024;
constexpr uint32_t TOTAL_L0B_SIZE = 64 * 1024;
constexpr uint32_t TOTAL_L0C_SIZE = 128 * 1024;

template <typename T, typename U>
struct IsSameType {
    static constexpr bool value = std::is_same_v<T, U>;
};

} // namespace AscendC
