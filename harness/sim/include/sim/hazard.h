// The ordering sanitizer of the CPU model. The sim runs every API call to completion in
// program order; the device does not: a core's scalar unit (S) issues each instruction into
// the queue of its pipe (V, M, MTE1, MTE2, MTE3, FIX), the pipes run asynchronously, and
// cores run concurrently (docs 核内同步能力概述, 核间同步). This module decides for every
// access whether the device is bound to order it after every earlier conflicting access,
// and traps when it is not, naming both calls and the memory.
//
// Happens-before over (core, pipe) with vector clocks. Instruction k of pipe P on core c is
// (c, P, k). Each pipe keeps K_P: per (core', pipe'), how many instructions are known
// complete before P's next instruction starts. Ordering comes only from:
//  - program order on S, and PipeBarrier<P> on P (other pipes start an instruction before
//    the previous one finished: "同一流水中...并不意味着后一条指令开始执行时前一条指令执行结束");
//  - SetFlag<X_Y>(id): fires on X once X's earlier instructions completed, carrying K_X and
//    all of X; WaitFlag<X_Y>(id) merges it into Y. A flag is one bit: a set on a set flag
//    traps (one set would be lost), a wait on a clear one traps (the pipe would hang);
//  - what the scalar unit learns by stalling (WaitFlag<X_S>, PipeBarrier<PIPE_ALL>,
//    CrossCoreWaitFlag - which on A2 blocks every pipe -, SyncAll) holds for everything it
//    issues afterwards;
//  - the flags TQue / TPipe issue (sim/tpipe.h, the official implementation's events);
//  - the toolchain's auto-sync (--cce-auto-sync, on in the flows the npu backend builds
//    with; docs 关键特性说明 table 3): on AIV it orders V after V and S against V, MTE2 and
//    MTE3 in both directions where they touch the same memory. It is applied at the
//    conflict, as the sync the compiler inserts there;
//  - cross-core: CrossCoreSetFlag<mode, pipe> carries K_pipe and all of pipe; each count a
//    CrossCoreWaitFlag consumes merges the clocks that raised it; SyncAll (all pipes
//    trigger and wait) merges every participant's drained clock.
// Shadows: per 32-byte granule of each local memory the last writer and the last reader of
// each pipe; per 32-byte granule of each GM argument the last plain writer and every
// (core, pipe) that read it or added to it atomically since. Read-read pairs, accesses of
// one instruction, and atomic adds among themselves never conflict.
#pragma once

#include <vector>

#include "memory.h"
#include "timing.h"

namespace AscendC {
namespace sim {

enum class Pipe : uint8_t { S = 0, V, M, MTE1, MTE2, MTE3, FIX };
constexpr int kPipes = 7;
const char* PipeName(Pipe p);
// The pipe a pipe_t names; traps for PIPE_ALL and pipes A2 does not have.
Pipe PipeOf(const char* api, pipe_t p);

// Source and destination pipe of a HardEvent ("src_dst").
struct EventPipes {
    Pipe src;
    Pipe dst;
};
EventPipes PipesOf(HardEvent e);
const char* EventName(HardEvent e);

// One API call of the current core, issued on `pipe`: every local or GM access made while it
// is open is checked against, then recorded in, the shadows.
void BeginOp(const char* api, Pipe pipe);
void EndOp();
class Op {
public:
    Op(const char* api, Pipe pipe) { BeginOp(api, pipe); }
    ~Op() { EndOp(); }
    Op(const Op&) = delete;
    Op& operator=(const Op&) = delete;
};

// The work record of the open call, for sim/timing.h's reports (nullptr: no call is open or
// the timeline is off), and its pipe.
OpWork* OpenWork();
Pipe OpenPipe();

// Mmad: the hardware itself orders this call after the pipe's earlier Mmads on the same L0C
// (Mmad.md: only when (m / 16) * (n / 16) >= 10; below that PipeBarrier<PIPE_M> is needed).
void SamePipeOrderedByHardware();

// Accesses of the open Op (memory.h's ReadLocal/WriteLocal and the GM traffic notes call
// these); `p` points into registered GM buffer `gm`.
void HazardLocal(Mem m, uint32_t off, uint32_t len, bool write);
enum class GmAcc : uint8_t { Read, Write, Atomic };
void HazardGm(int gm, const uint8_t* p, uint64_t len, GmAcc acc);

// Intra-core synchronisation. `by` names the caller in messages (an API, or a queue's
// operation), `buf` the buffer it concerns (-1: none).
void FlagSet(const char* by, HardEvent e, int32_t id, int32_t buf);
void FlagWait(const char* by, HardEvent e, int32_t id);
void Barrier(const char* api, pipe_t p);

// Cross-core synchronisation (runtime.cpp calls these under the launch lock).
// The clock a cross-core set on `pipe` carries.
std::vector<uint32_t> SetClock(Pipe pipe);
// Every pipe of the calling core drained.
std::vector<uint32_t> DrainedClock();
// The calling core's scalar unit waited until `clock` held.
void StallUntil(const std::vector<uint32_t>& clock);
void Join(std::vector<uint32_t>& into, const std::vector<uint32_t>& clock);

// Per-launch state (created by the runtime before the cores start, destroyed after they
// joined) and per-core state (on the core's own thread).
struct LaunchChecks {
    bool hazards = true;  // the clock-based checks above
    bool autoSync = true; // model --cce-auto-sync=on
    bool timeline = true; // modeled device time (sim/timing.h); needs `hazards`
    bool trace = false;   // keep every call's interval for a trace
};
// The modeled time of one core: when its last pipe finished, how long each pipe was busy,
// and (with LaunchChecks::trace) every call as an interval on its pipe.
struct TimedCall {
    const char* api;
    Pipe pipe;
    uint32_t start;
    uint32_t cycles;
};
struct CoreTime {
    uint32_t end = 0;
    uint64_t busy[kPipes] = {};
    uint64_t hbmBytes = 0; // GM bytes through HBM (reads that missed L2, and writes)
    uint64_t l2Bytes = 0;  // GM bytes read as L2 hits
    std::vector<TimedCall> calls;
};
// The cores' times of a launch, in core order (filled as each core ends).
const std::vector<CoreTime>& LaunchTimes(const LaunchHazards* h);
struct LaunchHazards;
LaunchHazards* CreateLaunchHazards(const LaunchChecks& checks, uint32_t cores, const std::vector<GmBuffer>& gm);
void DestroyLaunchHazards(LaunchHazards* h);
void HazardCoreBegin();
// Frees the core's state; when the kernel `returned` normally, traps on intra-core flags it
// left set.
void HazardCoreEnd(bool returned);
// Cores a checked launch may have (its clocks hold cores x pipes counters).
constexpr uint32_t kMaxCheckedCores = 256;

} // namespace sim
} // namespace AscendC
