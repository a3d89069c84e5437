// Exception detection (基础API/调试接口/异常检测): Trap (kernel_operator_sys_var_intf.h) and
// ascendc_assert (utils/debug/asc_assert.h, reached through kernel_operator.h). On the chip a
// failed assertion prints its message and stops the core; here it traps the launch with the
// condition, the source location and the formatted message.
#pragma once

#include <cstdio>

#include "memory.h"

namespace AscendC {

__aicore__ inline void Trap() { sim::Trap("Trap", "the kernel called AscendC::Trap()"); }

namespace sim {
[[noreturn]] inline void AssertFail(const char* expr, const char* file, int line)
{
    Trap("ascendc_assert", std::string("assertion `") + expr + "` failed at " + file + ":" + std::to_string(line));
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
template <typename... Args>
[[noreturn]] inline void AssertFail(const char* expr, const char* file, int line, const char* fmt, Args... args)
{
    char msg[1024];
    std::snprintf(msg, sizeof msg, fmt, args...);
    Trap("ascendc_assert",
         std::string("assertion `") + expr + "` failed at " + file + ":" + std::to_string(line) + ": " + msg);
}
#pragma GCC diagnostic pop
} // namespace sim
} // namespace AscendC

// ascendc_assert(expr) or ascendc_assert(expr, fmt, args...): printf-style message.
#define ascendc_assert(expr, ...) \
    (static_cast<bool>(expr) ? void(0) : ::AscendC::sim::AssertFail(#expr, __FILE__, __LINE__, ##__VA_ARGS__))
