// The fake CANN's "device compiler" glue, force-included into every launcher by the fake
// cmake: `kernel<<<blockDim, l2ctrl, stream>>>(args…)` is rewritten to
// `fake_cann::launch(kernel, "kernel", blockDim, l2ctrl, stream)(args…)`, which queues the
// kernel on the fake ACL's stream with its marking's core type (FAKE_CANN_MODE); the CPU
// model's sim_launch runs it when the stream is synchronised.
#pragma once
#include <cstdint>

struct FakeGmArg { // sim_launch's SimGmArg (harness/sim/src/runtime.cpp)
    uint8_t* ptr;
    uint64_t len;
    const char* name;
    const uint64_t* warm;
    uint64_t* lines;
};
using FakeDeviceRun = int (*)(const char*, void*, uint32_t, uint32_t, const FakeGmArg*, uint32_t, char*, uint64_t);

extern "C" {
void fake_rt_launch(void* stream, uint32_t block_dim, uint32_t mode, const char* kernel, void* fn, FakeDeviceRun run,
                    uint32_t nargs, void** args);
int32_t sim_launch(const char* kernel, void* fn, uint32_t mode, uint32_t blockDim, uint32_t checks,
                   const FakeGmArg* args, uint32_t nargs, void* stats, void* traffic, void* times, void* onCall,
                   void* ctx, char* err, uint64_t errCap);
}

namespace fake_cann {
// Every check the sim backend runs: hazards, with the compiler's auto-sync modelled (no
// timeline: a device measures its own time).
inline int Run(const char* kernel, void* fn, uint32_t mode, uint32_t block_dim, const FakeGmArg* args, uint32_t nargs,
               char* err, uint64_t cap)
{
    return sim_launch(kernel, fn, mode, block_dim, 3, args, nargs, nullptr, nullptr, nullptr, nullptr, nullptr, err,
                      cap);
}

template <typename K>
struct Launch {
    K* fn;
    const char* name;
    uint32_t block_dim;
    void* stream;
    template <typename... A>
    void operator()(A... a) const
    {
        void* args[] = {static_cast<void*>(a)...};
        fake_rt_launch(stream, block_dim, FAKE_CANN_MODE, name, reinterpret_cast<void*>(fn), &Run, sizeof...(A), args);
    }
};

template <typename K>
Launch<K> launch(K* fn, const char* name, uint32_t block_dim, void* /* l2ctrl */, void* stream)
{
    return Launch<K>{fn, name, block_dim, stream};
}
} // namespace fake_cann
