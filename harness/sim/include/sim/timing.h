// Modeled device time: what each API call costs on its pipe, from one table per chip.
//
// The ordering checker (sim/hazard.h) already knows every call's pipe and every edge the
// device is bound to respect; the timeline rides on it. Each call reports its work here
// while it runs (vector repeats, GM bytes, local copy bytes, cube fractals); when it ends,
// sim/hazard.h's timeline starts it when its pipe is free, the scalar unit has issued it and
// every ordering edge into it has completed, and it occupies the pipe for `Cost(...)` cycles;
// its result is visible `latency` cycles after that (GM round trips). Cores run their pipes
// independently; a launch's time is its op head plus the latest finish over its cores, or
// the shared HBM's time for all its bytes where that is longer (harness/src/kernel_library/
// timing.rs, KernelTime::cycles).
//
// Simple, stated models (README "Modeled time" lists what is omitted): GM bandwidth is
// shared by the launch's cores through the published linear fit t(N) = a + b / N bytes per
// cycle per core (the fit itself is Huawei's measurement of N cores loading at once); a
// byte this launch already read or wrote, or any byte of an L2 line the host marks warm (an
// earlier launch of the step touched the line and left it in L2: harness/src/backend/l2.rs),
// is an L2 hit at the single-core rate t(1), the cores' hits together at most l2BytesPerS
// over the launch (not a 1/N share per core: a launch's idle cores leave theirs to the
// others); a scalar GM read misses
// once per 64-byte line and core, unless DataCachePreload asked for the line: then it hits,
// waiting for the line if a GM read latency has not passed since the preload started; pipes
// hold one instruction at a time and
// the scalar unit issues without a queue limit.
#pragma once

#include <cstdint>

namespace AscendC {
namespace sim {

enum class Pipe : uint8_t;

// The dav-c220 (Atlas A2 / 910B) table. Sources, by key:
//  [ge]    hicann/ge compiler/graph/optimize/autofuse/att/gen_model_info/api_perf_register/
//          v1/perf_param_v1.cpp (Huawei's fitted per-API costs for A2/A3, cycles: vector APIs
//          `k·elements + b`; Load/Store `bytes / (a + b / block_dim) + h`; pipe heads; op head)
//  [pypto] hicann/pypto framework/src/cost_model/simulation: arch/PipeSimulatorFast.cpp (GM
//          read / write latency, cycles at freqTrans = 2000 per µs), arch/A2A3/
//          PostSimulatorA2A3.h (L1→L0 and cube latencies, µs per 1e6 bytes and µs heads),
//          config/CacheConfig.toml (L2 hit latency), config/TraceConfig.toml (1.8 GHz clock)
//  [doc]   asc-devkit docs, Mmad (fractal shapes: 16×16×16 for b16, 16×32×16 for int8 per cube
//          cycle), the 910B's 24 AIC / 48 AIV
//  [assumed] no public figure; the value and its reason are stated at the field.
struct ChipTiming {
    double clockHz;       // [pypto] TraceConfig sysClockTicks 1800000 per ms
    double opHead;        // [ge] GetOpHeadCost: 300 cycles per kernel
    double launchGapUs;   // [assumed] device-side task dispatch between stream-ordered kernels
    // GM through MTE2 (GM→UB/L1) and MTE3/FIX (→GM): bytes / (a + b / N) + h per instruction
    double loadA, loadB, loadHead;    // [ge] "Load" (a 9.9074, b 15.896, h 27.01)
    double storeA, storeB, storeHead; // [ge] "Store" (a 9.96, b 3.79, h 12.09)
    // a burst that does not continue the previous one: k · (pitch mod 256) cycles, pitch the
    // bytes between the two bursts' starts ([ge] "LoadStride" k 0.07, "StoreStride" k 0.02)
    double loadStrideK, storeStrideK;
    double gmReadLatency;             // [pypto] rGmLatency 1400 cycles
    double gmWriteLatency;            // [pypto] wGmLatency 300 cycles
    double l2HitLatency;              // [pypto] CacheConfig l2HitLatency 50 cycles
    double l2Bytes; // [assumed] 192 MB, the 910B's L2 as commonly quoted (pypto models 20 MiB)
    // [assumed] what L2 hits of all cores move per second at most: no public figure, so the
    // HBM peak of the chip profile (1.6 TB/s): conservative, and no launch beats its roofline
    double l2BytesPerS;
    // L1 → L0A / L0B (MTE1): bytes per cycle and head, [pypto] L1_TO_L0A {1.12719 µs/1e6 B,
    // 0.015 µs}, L1_TO_L0B {2.05893, 0.012} at 2000 cycles per µs
    double l0aBytesPerCycle, l0aHead, l0bBytesPerCycle, l0bHead;
    // Cube: one b16 fractal step (16×16×16 MACs) per cycle [doc]; int8 16×32×16; fp32 at a
    // quarter of the b16 MAC rate [doc, Mmad dtype table]; head [pypto] A_MUL_B 0.0107 µs
    double mmadHead;
    // Scalar unit (a GM read of a line the core has not read costs gmReadLatency)
    double scalarHit;     // [assumed] 4 cycles: a scalar data-cache hit, a UB scalar access
    double issue;         // [assumed] 1 cycle for the scalar unit to issue one instruction
    // Interconnect (HCCS) for the TP collectives
    double hccsBytesPerS;     // [assumed from the Atlas 800T A2 datasheet] 56 GB/s per peer link
    double collectiveLatencyUs; // [assumed] 5 µs per collective (HCCL small-message latency)
};

extern const ChipTiming kDavC220;

// The L2 cache line, the granule of the cross-launch L2 model (harness/src/backend/l2.rs):
// [doc] asc-devkit docs, SIMT-API/原子操作/原子操作简介.md ("Cache Line大小为512B")
constexpr uint64_t kL2LineBytes = 512;

// What the open call did, reported while it runs (sim/hazard.cpp keeps one per core).
struct OpWork {
    double vecRepeats = 0;  // 256-byte repeats (exact: reported by the vector engines)
    uint32_t vecLanes = 0;  // lanes per repeat of those repeats (64: 32-bit, 128: 16-bit; 0: none reported)
    uint64_t ubRead = 0, ubWrite = 0; // UB bytes the call touched (the measure when none is reported)
    uint64_t gmHbmRead = 0, gmL2Read = 0, gmWrite = 0;
    const uint8_t* burstStart = nullptr; // the previous GM burst of the call
    const uint8_t* burstEnd = nullptr;
    double stridePitch = 0; // sum over non-contiguous bursts of (pitch mod 256)
    uint64_t scalarMiss = 0, scalarHit = 0;
    uint32_t scalarReady = 0; // a preloaded line the call read arrives at this cycle
    uint64_t preloadLine = 0; // DataCachePreload: its line + 1
    uint64_t l0aBytes = 0, l0bBytes = 0; // written into L0A / L0B (MTE1 copies and fills)
    double cubeCycles = 0;
};

// Reports of the open call (no-ops while the timeline is off).
void WorkVector(uint64_t repeats, uint32_t lanes);
// GM bytes at `p` moved by the open call; `fresh`: those this launch had not touched yet.
void WorkGm(const uint8_t* p, uint64_t len, bool write, uint64_t fresh);
void WorkMmad(uint32_t m, uint32_t n, uint32_t k, uint32_t kPerCycle);
// DataCachePreload of the line holding `p`; once the call has a start, `Preloaded` says when
// the line is in the core's data cache (an earlier read or preload of it stands).
void WorkPreload(const uint8_t* p);
void Preloaded(uint64_t line, uint32_t ready);

// Cycles the call occupies its pipe and the latency after which its result is visible,
// for a launch of `cores` cores. `apiId` is the checker's id of `api` (the vector table is
// looked up once per API and core).
struct OpTime {
    double cycles;
    double latency;
};
OpTime Cost(const char* api, uint16_t apiId, Pipe pipe, const OpWork& w, uint32_t cores);

} // namespace sim
} // namespace AscendC
