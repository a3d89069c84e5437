// The narrow fields of the API's parameter structs (DataCopyParams, Nd2NzParams,
// LoadData2DParams, FixpipeParamsV220, ...). The structs keep the real field types, so
// field reads behave as on the device, but their constructors take `Wide` arguments and
// narrow them through Fit, which traps where the device compiler would silently truncate
// (a sanitizer deviation, README "Parameter fields"). The API call that consumes a struct
// checks the documented range of each field with InRange (doc path next to each check).
#pragma once

#include "memory.h"

namespace AscendC {
namespace sim {

// Wide enough for any value a kernel computes in 32 bits, negative ones included.
using Wide = int64_t;

[[noreturn]] void FitTrap(const char* type, const char* field, Wide v, const char* fieldType, uint64_t max,
                          uint64_t truncated);

template <typename F>
constexpr const char* FieldTypeName()
{
    static_assert(std::is_same_v<F, uint8_t> || std::is_same_v<F, uint16_t> || std::is_same_v<F, uint32_t>,
                  "Fit narrows into uint8_t, uint16_t or uint32_t fields");
    return std::is_same_v<F, uint8_t> ? "uint8_t" : (std::is_same_v<F, uint16_t> ? "uint16_t" : "uint32_t");
}

// `v` as field `field` (of type F) of struct `type`, or as a narrow scalar parameter
// `field` of API `type` (the level-0 repeatTime, ...): traps unless it fits.
template <typename F>
inline F Fit(const char* type, const char* field, Wide v)
{
    constexpr uint64_t max = std::numeric_limits<F>::max();
    if (v < 0 || static_cast<uint64_t>(v) > max) {
        FitTrap(type, field, v, FieldTypeName<F>(), max, static_cast<F>(v));
    }
    return static_cast<F>(v);
}

// Traps unless lo <= v <= hi, the documented range of `field` when `api` consumes it.
void InRange(const char* api, const char* field, uint64_t v, uint64_t lo, uint64_t hi);

} // namespace sim
} // namespace AscendC
