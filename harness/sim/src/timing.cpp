// The cost table of the modeled device time and the cost of one call (sim/timing.h states
// the model and the sources).
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "kernel_operator.h"

namespace AscendC {
namespace sim {

const ChipTiming kDavC220 = {
    /*clockHz*/ 1.8e9,
    /*opHead*/ 300.0,
    // No public figure for the gap between two kernels enqueued on one stream; 2 µs is the
    // order of a stream-ordered launch on a discrete accelerator (e.g. 2.6 µs async enqueue
    // per launch measured in ahrefs/ocannl#488, CUDA). An assumption, not an Ascend figure.
    /*launchGapUs*/ 2.0,
    /*loadA*/ 9.9074, /*loadB*/ 15.896, /*loadHead*/ 27.01,
    /*storeA*/ 9.96, /*storeB*/ 3.79, /*storeHead*/ 12.09,
    /*loadStrideK*/ 0.07, /*storeStrideK*/ 0.02,
    /*gmReadLatency*/ 1400.0,
    /*gmWriteLatency*/ 300.0,
    /*l2HitLatency*/ 50.0,
    /*l2Bytes*/ 192e6,
    /*l2BytesPerS*/ 1.6e12,
    /*l0aBytesPerCycle*/ 1e6 / (1.12719 * 2000.0), /*l0aHead*/ 0.015 * 2000.0,
    /*l0bBytesPerCycle*/ 1e6 / (2.05893 * 2000.0), /*l0bHead*/ 0.012 * 2000.0,
    /*mmadHead*/ 0.0107 * 2000.0,
    /*scalarHit*/ 4.0,
    /*issue*/ 1.0,
    // 392 GB/s HCCS per NPU in an 8-NPU full mesh (Atlas 800T A2 datasheet figure, as
    // commonly quoted), i.e. 56 GB/s to each peer: not checked against a primary source.
    /*hccsBytesPerS*/ 56e9,
    // HCCL publishes no small-message latency for A2; 5 µs is an assumption.
    /*collectiveLatencyUs*/ 5.0,
};

namespace {

// Linear cost of a vector API: `head` cycles plus `k` cycles per element of the lane width
// (16-bit: 128 lanes per 256-byte repeat, 32-bit: 64).
struct VecCost {
    const char* api;
    double kF16;
    double kF32;
    double head;
};

// [ge] v1 table, `float16tofloat16` and `float32tofloat32` (k per element, b); the rows
// marked "assumed" have no entry there and borrow the named API's figures.
const VecCost kVec[] = {
    {"Abs", 0.0077, 0.0147, 20.06},
    {"Add", 0.0103, 0.0206, 23.22},
    {"Adds", 0.0071, 0.0141, 22.09},
    {"BlockReduceMax", 0.0547, 0.0198, 16.74},
    {"BlockReduceSum", 0.0547, 0.0198, 16.74}, // assumed: as BlockReduceMax
    {"Brcb", 0.0074, 0.0146, 13.07},
    {"Cast", 0.0087, 0.0147, 20.44},     // f32→f16 / f16→f32 rows
    {"Compare", 0.0155, 0.0310, 21.03},  // CompareXXAligned
    {"DataCopy", 0.0076, 0.0152, 11.64}, // Ub2ub
    {"Div", 0.0460, 0.0454, 29.12},
    {"Duplicate", 0.0078, 0.0156, 17.00},
    {"Exp", 0.0311, 0.0307, 28.04},
    {"Gather", 0.1873, 0.1875, 17.02},
    {"GatherMask", 0.0156, 0.0313, 14.02},
    {"Ln", 0.0311, 0.0307, 28.04}, // assumed: as Exp
    {"Max", 0.0111, 0.0215, 20.13},
    {"Maxs", 0.0071, 0.0141, 20.09},
    {"Min", 0.0111, 0.0215, 20.13},
    {"Mins", 0.0071, 0.0142, 20.09},
    {"MrgSort", 0.1873, 0.1875, 17.02}, // assumed: as Gather (per element moved)
    {"Mul", 0.0110, 0.0206, 23.23},
    {"MulAddDst", 0.0220, 0.0412, 23.23}, // assumed: Mul at half its rate (asc-devkit
                                          // Vector指令理论性能汇总: 32 vs 64 f32 per cycle)
    {"Muls", 0.0071, 0.0142, 23.10},
    {"Reciprocal", 0.0078, 0.0146, 21.06},
    {"ReduceMax", 0.0547, 0.1094, 21.00}, // assumed: as WholeReduceMax
    {"ReduceSum", 0.0547, 0.1094, 35.00}, // assumed: as WholeReduceSum
    {"Relu", 0.0077, 0.0154, 20.02},
    {"Rsqrt", 0.0071, 0.0143, 21.10},
    {"Select", 0.0118, 0.0229, 45.97},
    {"Sort32", 0.1873, 0.1875, 17.02}, // assumed: as Gather
    {"Sqrt", 0.0312, 0.0313, 29.01},
    {"Sub", 0.0107, 0.0213, 22.13},
    {"WholeReduceMax", 0.0547, 0.1094, 21.00},
    {"WholeReduceSum", 0.0547, 0.1094, 35.00},
};
// Any other vector call: [ge] "Copy" (assumed).
const VecCost kVecDefault = {"(other)", 0.0078, 0.0157, 13.0};

// Per core (one thread per core for the launch): the 64-byte lines in its data cache (read
// by its scalar unit or preloaded) with the cycle each arrives, and the vector table's row
// of each API by the checker's API id.
thread_local std::unordered_map<uint64_t, uint32_t> tlsScalarLines;
thread_local std::vector<const VecCost*> tlsVecRows;

const VecCost& LookUp(const char* api)
{
    for (const VecCost& c : kVec) {
        if (std::strcmp(c.api, api) == 0) {
            return c;
        }
    }
    return kVecDefault;
}

// apiId 0 is the checker's "no id" (its table full): looked up every time.
const VecCost& VectorCost(const char* api, uint16_t apiId)
{
    if (apiId == 0) {
        return LookUp(api);
    }
    if (apiId >= tlsVecRows.size()) {
        tlsVecRows.resize(apiId + 1, nullptr);
    }
    const VecCost*& row = tlsVecRows[apiId];
    if (row == nullptr) {
        row = &LookUp(api);
    }
    return *row;
}

} // namespace

void WorkVector(uint64_t repeats, uint32_t lanes)
{
    if (OpWork* w = OpenWork()) {
        w->vecRepeats += static_cast<double>(repeats);
        w->vecLanes = std::max(w->vecLanes, lanes);
    }
}

void WorkGm(const uint8_t* p, uint64_t len, bool write, uint64_t fresh)
{
    OpWork* w = OpenWork();
    if (w == nullptr) {
        return;
    }
    if (OpenPipe() == Pipe::S) {
        uint64_t first = reinterpret_cast<uintptr_t>(p) / 64, last = (reinterpret_cast<uintptr_t>(p) + len - 1) / 64;
        for (uint64_t line = first; line <= last; ++line) {
            if (write) {
                w->scalarHit++;
                continue;
            }
            auto [at, miss] = tlsScalarLines.try_emplace(line, 0u);
            (miss ? w->scalarMiss : w->scalarHit)++;
            w->scalarReady = std::max(w->scalarReady, at->second);
        }
        return;
    }
    if (w->burstEnd != nullptr && p != w->burstEnd) {
        w->stridePitch += static_cast<double>((p > w->burstStart ? p - w->burstStart : w->burstStart - p) % 256);
    }
    w->burstStart = p;
    w->burstEnd = p + len;
    if (write) {
        w->gmWrite += len;
    } else {
        w->gmHbmRead += fresh;
        w->gmL2Read += len - fresh;
    }
}

void WorkPreload(const uint8_t* p)
{
    if (OpWork* w = OpenWork()) {
        w->preloadLine = reinterpret_cast<uintptr_t>(p) / 64 + 1;
    }
}

void Preloaded(uint64_t line, uint32_t ready) { tlsScalarLines.try_emplace(line, ready); }

void WorkMmad(uint32_t m, uint32_t n, uint32_t k, uint32_t kPerCycle)
{
    if (OpWork* w = OpenWork()) {
        // fractal steps of 16 rows × 16 columns × kPerCycle depth, one per cube cycle
        w->cubeCycles += std::ceil(m / 16.0) * std::ceil(n / 16.0) * std::ceil(k / double(kPerCycle));
    }
}

OpTime Cost(const char* api, uint16_t apiId, Pipe pipe, const OpWork& w, uint32_t cores)
{
    const ChipTiming& c = kDavC220;
    double n = std::max<uint32_t>(cores, 1);
    switch (pipe) {
        case Pipe::V: {
            const VecCost& v = VectorCost(api, apiId);
            double repeats = w.vecRepeats;
            uint32_t lanes = w.vecLanes;
            if (lanes == 0) { // calls without an engine report: their UB bytes, 32-bit lanes
                repeats = std::ceil(double(std::max(w.ubRead, w.ubWrite)) / 256.0);
                lanes = 64;
            }
            double k = lanes >= 128 ? v.kF16 : v.kF32;
            return {v.head + k * repeats * lanes, 0};
        }
        case Pipe::MTE2: {
            if (w.gmHbmRead + w.gmL2Read == 0) { // local fills (Fill into L1)
                return {c.loadHead, 0};
            }
            double t = c.loadA + c.loadB / n;
            // a hit at one core's full rate; the cores' hits together are bounded over the
            // launch (KernelTime's shared floor), so idle cores leave their share to others
            double l2 = c.loadA + c.loadB;
            double cycles = c.loadHead + w.gmHbmRead / t + w.gmL2Read / l2 + c.loadStrideK * w.stridePitch;
            return {cycles, w.gmHbmRead > 0 ? c.gmReadLatency : c.l2HitLatency};
        }
        case Pipe::MTE3:
        case Pipe::FIX: {
            double t = c.storeA + c.storeB / n;
            return {c.storeHead + w.gmWrite / t + c.storeStrideK * w.stridePitch,
                    w.gmWrite > 0 ? c.gmWriteLatency : 0};
        }
        case Pipe::MTE1:
            return {(w.l0aBytes ? c.l0aHead + w.l0aBytes / c.l0aBytesPerCycle : 0) +
                        (w.l0bBytes ? c.l0bHead + w.l0bBytes / c.l0bBytesPerCycle : 0) +
                        (w.l0aBytes + w.l0bBytes == 0 ? c.l0aHead : 0),
                    0};
        case Pipe::M:
            return {c.mmadHead + w.cubeCycles, 0};
        case Pipe::S:
            return {w.scalarMiss * c.gmReadLatency + std::max<double>(double(w.scalarHit), 1.0) * c.scalarHit, 0};
    }
    return {0, 0};
}

} // namespace sim
} // namespace AscendC
