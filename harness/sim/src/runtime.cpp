// Runtime of the CPU model: runs one launch (one thread per simulated core), implements
// the cross-core synchronisation, and exports the C ABI the Rust side calls
// (harness/src/kernel_library/ffi.rs mirrors these declarations).
//
// Error handling: a trap throws TrapError in its core; the thread records the first
// error of the launch, raises the abort flag and wakes every waiting core, which then
// unwinds with AbortLaunch. Deadlocks (every running core blocked) are reported the same
// way. All state lives in the Launch object, so concurrent launches do not interact
// (except through the process-wide lock that serialises GM atomic adds).
#include <array>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <thread>
#include <utility>

#include "kernel_operator.h"

namespace AscendC {
namespace sim {

thread_local Core* tlsCore = nullptr;
thread_local TPipe* tlsPipe = nullptr;

constexpr int kFlags = 16;
constexpr uint16_t kFlagMax = 15; // the hardware flag counters are 4 bits wide

// DMA traffic of one GM buffer during a launch: bytes moved each way; one bit per byte
// touched each way (so re-reads are told apart from first reads); and the launch's minimum:
// each value a byte holds read once and written once. A read counts toward it unless the
// byte was already read since it was last written, a write unless the byte was already
// written since it was last read, so a hand-off through a reused buffer (the cube's scores
// to the vector cores and back, A2 has no other path) counts every value it carries while
// a re-read or an overwrite nobody read does not. The bitmaps are calloc'ed: pages of a
// buffer region nobody touches are never materialised.
struct GmTraffic {
    std::atomic<uint64_t> readBytes{0};
    std::atomic<uint64_t> writeBytes{0};
    std::atomic<uint64_t> minReadBytes{0};
    std::atomic<uint64_t> minWriteBytes{0};
    uint64_t* readBits = nullptr;
    uint64_t* writeBits = nullptr;
    uint64_t* readSinceWrite = nullptr;
    uint64_t* writtenSinceRead = nullptr;
    uint64_t words = 0;
    uint64_t* lines = nullptr; // the caller's: L2 lines (kL2LineBytes) the launch touched, one bit each

    explicit GmTraffic(uint64_t len) : words((len + 63) / 64)
    {
        for (uint64_t** bits : {&readBits, &writeBits, &readSinceWrite, &writtenSinceRead}) {
            *bits = static_cast<uint64_t*>(std::calloc(words ? words : 1, sizeof(uint64_t)));
        }
    }
    ~GmTraffic()
    {
        for (uint64_t* bits : {readBits, writeBits, readSinceWrite, writtenSinceRead}) {
            std::free(bits);
        }
    }
    GmTraffic(const GmTraffic&) = delete;
    GmTraffic& operator=(const GmTraffic&) = delete;

    // The sum of f(word, mask) over the 64-bit words that bits [off, off+len) span, mask
    // selecting those bits of the word.
    template <class F>
    static uint64_t OverWords(uint64_t off, uint64_t len, F f)
    {
        uint64_t end = off + len, sum = 0;
        while (off < end) {
            uint64_t b = off % 64;
            uint64_t n = std::min<uint64_t>(64 - b, end - off);
            sum += f(off / 64, n == 64 ? ~0ull : ((1ull << n) - 1) << b);
            off += n;
        }
        return sum;
    }
    // Sets bits [off, off+len) of `bits` (several cores may mark the same word); returns how
    // many of them were clear before in `bits` and are clear in `other`, outside the L2 lines
    // `warm` holds (bytes neither this launch nor, in L2, an earlier one had touched: the
    // timeline's HBM bytes, sim/timing.h).
    static uint64_t Mark(uint64_t* bits, const uint64_t* other, const uint64_t* warm, uint64_t off, uint64_t len)
    {
        static_assert(kL2LineBytes % 64 == 0, "a word of byte bits lies in one line");
        return OverWords(off, len, [&](uint64_t w, uint64_t mask) {
            uint64_t before = __atomic_fetch_or(&bits[w], mask, __ATOMIC_RELAXED);
            uint64_t seen = __atomic_load_n(&other[w], __ATOMIC_RELAXED);
            uint64_t line = w * 64 / kL2LineBytes;
            if (warm != nullptr && (warm[line / 64] >> (line % 64) & 1) != 0) {
                return uint64_t{0};
            }
            return static_cast<uint64_t>(__builtin_popcountll(mask & ~before & ~seen));
        });
    }
    // Marks the L2 lines bytes [off, off+len) lie in.
    static void MarkLines(uint64_t* lines, uint64_t off, uint64_t len)
    {
        uint64_t first = off / kL2LineBytes;
        OverWords(first, (off + len - 1) / kL2LineBytes - first + 1, [&](uint64_t w, uint64_t mask) {
            __atomic_fetch_or(&lines[w], mask, __ATOMIC_RELAXED);
            return uint64_t{0};
        });
    }
    // One pass of [off, off+len) one way (`mine`: reads since the last write, or writes since
    // the last read) that ends the other way's run (`theirs`); returns the bytes that start a
    // run: those the minimum counts.
    static uint64_t Pass(uint64_t* mine, uint64_t* theirs, uint64_t off, uint64_t len)
    {
        return OverWords(off, len, [&](uint64_t w, uint64_t mask) {
            uint64_t before = __atomic_fetch_or(&mine[w], mask, __ATOMIC_RELAXED);
            __atomic_fetch_and(&theirs[w], ~mask, __ATOMIC_RELAXED);
            return static_cast<uint64_t>(__builtin_popcountll(mask & ~before));
        });
    }
    static uint64_t Count(const uint64_t* bits, uint64_t words)
    {
        uint64_t n = 0;
        for (uint64_t i = 0; i < words; ++i) {
            n += static_cast<uint64_t>(__builtin_popcountll(bits[i]));
        }
        return n;
    }
};

struct Launch {
    std::string kernel;
    CoreMode mode = CoreMode::AivOnly;
    uint32_t blockDim = 1;
    std::vector<GmBuffer> gm;
    std::vector<std::unique_ptr<GmTraffic>> traffic; // one per entry of `gm`

    std::atomic<bool> aborted{false};
    std::mutex mu;
    std::condition_variable cv;
    std::string error;

    std::vector<std::unique_ptr<Core>> cores;
    uint32_t alive = 0;
    uint32_t waiting = 0;
    std::vector<std::string> waitingFor;
    std::vector<std::function<bool()>> waitingUntil; // the condition each waiting core needs
    // SIM_ORDERED: one core runs at a time (`running`), until it waits or ends; then the
    // lowest-numbered core that can run takes over. Whichever core touches a GM byte first
    // pays its HBM read (sim/timing.h), so with cores racing on threads the modeled time
    // would differ from run to run; in this fixed order it is the same on every run.
    bool ordered = false;
    uint32_t running = 0;
    std::vector<bool> ended;
    // Cross-core flags: per core and flag id, the sets raised on it that no wait consumed
    // yet (each with the clock its setters published, sim/hazard.h), and the sets a core
    // made that still wait for their partners (modes 0, 1 and the AIV side of mode 2).
    using Clock = std::vector<uint32_t>;
    std::vector<std::array<std::deque<Clock>, kFlags>> raised;
    std::vector<std::array<std::deque<Clock>, kFlags>> pending[3];
    bool usesSyncAll = false;
    bool usesSyncAllFlags = false; // a CrossCoreSetFlag on an id SyncAll uses (11..14)
    uint64_t barrierGen[2] = {0, 0};
    uint32_t barrierCount[2] = {0, 0};
    Clock barrierJoin[2];
    Clock barrierResult[2][2]; // by generation parity
    LaunchHazards* hazards = nullptr;

    uint32_t AicOf(uint32_t block) const { return mode == CoreMode::Mix12 ? block * 3 : block; }
    uint32_t AivOf(uint32_t block, uint32_t sub) const
    {
        return mode == CoreMode::Mix12 ? block * 3 + 1 + sub : block;
    }
    uint32_t CountOf(CoreKind k) const
    {
        uint32_t n = 0;
        for (auto& c : cores) {
            n += c->kind == k ? 1 : 0;
        }
        return n;
    }

    // Records the first error and wakes everyone. Caller must not hold `mu`.
    void Fail(const std::string& msg)
    {
        std::lock_guard<std::mutex> g(mu);
        FailLocked(msg);
    }
    void FailLocked(const std::string& msg)
    {
        if (error.empty()) {
            error = msg;
        }
        aborted.store(true);
        cv.notify_all();
    }
    // With `mu` held: if every running core waits for a condition that does not hold,
    // nobody can make progress. (A waiter whose condition already holds has merely not
    // been scheduled yet.)
    void CheckDeadlockLocked()
    {
        if (alive > 0 && waiting == alive) {
            for (auto& until : waitingUntil) {
                if (until && until()) {
                    return;
                }
            }
            std::string msg = "kernel `" + kernel + "`: deadlock: every running core is blocked:";
            for (size_t i = 0; i < cores.size(); ++i) {
                if (!waitingFor[i].empty()) {
                    msg += "\n  " + cores[i]->label + " in " + waitingFor[i];
                }
            }
            FailLocked(msg);
        }
    }
    // Ordered: hands the run to the lowest-numbered core but `me` that can run (one that
    // has not ended and waits for nothing, or for what now holds), if any. With `mu` held.
    void HandOnLocked(uint32_t me)
    {
        for (uint32_t i = 0; i < cores.size(); ++i) {
            if (i != me && !ended[i] && (!waitingUntil[i] || waitingUntil[i]())) {
                running = i;
                cv.notify_all();
                return;
            }
        }
    }
    // Ordered: blocks core `me` until it runs (with `lk` on `mu`), or the launch aborts.
    void AwaitTurnLocked(std::unique_lock<std::mutex>& lk, uint32_t me)
    {
        cv.wait(lk, [&] { return aborted.load() || running == me; });
    }
    // Blocks the calling core until pred() holds (with `lk` on `mu`), or the launch aborts.
    template <typename Pred>
    void WaitLocked(std::unique_lock<std::mutex>& lk, Core& me, const std::string& what, Pred pred)
    {
        if (pred()) {
            return;
        }
        waiting++;
        waitingFor[me.index] = what;
        waitingUntil[me.index] = pred;
        CheckDeadlockLocked();
        if (ordered) {
            HandOnLocked(me.index);
        }
        cv.wait(lk, [&] { return aborted.load() || (pred() && (!ordered || running == me.index)); });
        waiting--;
        waitingFor[me.index].clear();
        waitingUntil[me.index] = nullptr;
        if (aborted.load() && !pred()) {
            throw AbortLaunch{};
        }
    }
};

std::string Hex(uint64_t v)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

[[noreturn]] void Trap(const char* api, const std::string& what)
{
    Core* c = tlsCore;
    std::string msg = "kernel `" + std::string(c ? c->kernel : "?") + "`: " + (c ? c->label : "?") + ": " + api +
                      ": " + what;
    throw TrapError{msg};
}

bool LaunchAborted() { return tlsCore->launch->aborted.load(std::memory_order_relaxed); }

int FindGm(const void* p)
{
    const auto* q = static_cast<const uint8_t*>(p);
    const auto& gm = tlsCore->launch->gm;
    int atEnd = -1;
    for (size_t i = 0; i < gm.size(); ++i) {
        if (q >= gm[i].base && q < gm[i].base + gm[i].len) {
            return static_cast<int>(i);
        }
        if (q == gm[i].base + gm[i].len) {
            atEnd = static_cast<int>(i);
        }
    }
    return atEnd;
}

const GmBuffer& GmAt(int idx) { return tlsCore->launch->gm[idx]; }

const std::string& CoreLabel(uint32_t index) { return tlsCore->launch->cores[index]->label; }

namespace {
void NoteGm(int gm, const uint8_t* p, uint64_t len, bool write)
{
    if (gm < 0 || len == 0) {
        return;
    }
    Launch& L = *tlsCore->launch;
    GmTraffic& t = *L.traffic[gm];
    uint64_t off = static_cast<uint64_t>(p - L.gm[gm].base);
    (write ? t.writeBytes : t.readBytes).fetch_add(len, std::memory_order_relaxed);
    (write ? t.minWriteBytes : t.minReadBytes)
        .fetch_add(write ? GmTraffic::Pass(t.writtenSinceRead, t.readSinceWrite, off, len)
                         : GmTraffic::Pass(t.readSinceWrite, t.writtenSinceRead, off, len),
                   std::memory_order_relaxed);
    const uint64_t* warm = L.gm[gm].warm;
    uint64_t fresh = write ? GmTraffic::Mark(t.writeBits, t.readBits, warm, off, len)
                           : GmTraffic::Mark(t.readBits, t.writeBits, warm, off, len);
    if (t.lines != nullptr) {
        GmTraffic::MarkLines(t.lines, off, len);
    }
    WorkGm(p, len, write, fresh);
}
} // namespace

void NoteGmRead(int gm, const uint8_t* p, uint64_t len)
{
    HazardGm(gm, p, len, GmAcc::Read);
    NoteGm(gm, p, len, false);
}
void NoteGmWrite(int gm, const uint8_t* p, uint64_t len, bool atomic)
{
    HazardGm(gm, p, len, atomic ? GmAcc::Atomic : GmAcc::Write);
    NoteGm(gm, p, len, true);
}

// One lock for every launch of the process: concurrent launches (TP ranks) may share a
// GM buffer through GmArg::from_raw, and their atomic adds must not interleave.
static std::mutex gAtomicMu;
void AtomicLock() { gAtomicMu.lock(); }
void AtomicUnlock() { gAtomicMu.unlock(); }

int32_t CarveBuffer(const char* api, TPosition pos, uint32_t len, const std::string& name)
{
    Core& c = CurCore();
    Mem m;
    if (!MemOf(pos, m)) {
        Trap(api, std::string("position ") + PosName(pos) + " is not modelled by the sim");
    }
    bool wantAiv = m == Mem::UB;
    if ((c.kind == CoreKind::AIV) != wantAiv) {
        Trap(api, std::string(kMemName[static_cast<int>(m)]) + " (" + PosName(pos) + " for " + name +
                      ") does not exist on " + c.label);
    }
    Arena& a = c.arena[static_cast<int>(m)];
    uint32_t size = AlignUp(len, ONE_BLK_SIZE);
    if (uint64_t(a.used) + size > a.capacity) {
        Trap(api, std::string("local memory overflow: ") + name + " needs " + std::to_string(size) + " bytes at " +
                      kMemName[static_cast<int>(m)] + " offset " + std::to_string(a.used) + ", capacity " +
                      std::to_string(a.capacity) + " bytes");
    }
    BufDesc b;
    b.name = name;
    b.pos = pos;
    b.mem = m;
    b.offset = a.used;
    b.len = size;
    a.used += size;
    a.peak = std::max(a.peak, a.used);
    Poison(m, b.offset, b.len);
    c.bufs.push_back(std::move(b));
    return static_cast<int32_t>(c.bufs.size() - 1);
}

namespace {
// Cross-core synchronisation needs the hardware scheduler, which AIV_ONLY / AIC_ONLY kernels
// do not enable (docs CrossCoreSetFlag 约束说明, SyncAll): the kernel must state a MIX_*
// type.
void RequireScheduler(const char* api)
{
    KernelMetaType t = CurCore().declared;
    if (t == KERNEL_TYPE_MAX || t == KERNEL_TYPE_AIV_ONLY || t == KERNEL_TYPE_AIC_ONLY) {
        Trap(api, std::string("cross-core synchronisation in a kernel ") +
                      (t == KERNEL_TYPE_MAX              ? "that states no kernel type"
                       : t == KERNEL_TYPE_AIV_ONLY ? "declared KERNEL_TYPE_AIV_ONLY"
                                                   : "declared KERNEL_TYPE_AIC_ONLY") +
                      ": the hardware scheduler is only on for mixed kernels (declare "
                      "KERNEL_TYPE_MIX_AIV_1_0 / KERNEL_TYPE_MIX_AIC_1_0 or a mixed 1:1 / 1:2 type, or mark the "
                      "kernel __mix__(1, 2))");
    }
}
} // namespace

void CrossCoreSet(uint8_t mode, pipe_t pipe, uint16_t flagId)
{
    const char* api = "CrossCoreSetFlag";
    Core& me = CurCore();
    Launch& L = *me.launch;
    if (flagId >= kFlags) {
        Trap(api, "flag id " + std::to_string(flagId) + " out of range [0, 15]");
    }
    if (pipe == PIPE_S || pipe == PIPE_ALL) {
        Trap(api, std::string("pipe ") + (pipe == PIPE_S ? "PIPE_S" : "PIPE_ALL") +
                      " is not allowed: a cross-core set is issued on PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, "
                      "PIPE_MTE3 or PIPE_FIX (docs CrossCoreSetFlag)");
    }
    if ((mode == 1 || mode == 2) && L.mode != CoreMode::Mix12) {
        Trap(api, "mode " + std::to_string(mode) + " synchronises the cores of a 1:2 group; this launch is not mixed");
    }
    if (mode == 1 && me.kind != CoreKind::AIV) {
        Trap(api, "mode 1 synchronises the two AIVs of a group; called on an AIC");
    }
    if (mode > 2) {
        Trap(api, "mode " + std::to_string(mode) + " is not available on dav-c220 (modes 0, 1, 2)");
    }
    RequireScheduler(api);
    Pipe on = PipeOf(api, pipe);
    std::string problem;
    {
        std::lock_guard<std::mutex> g(L.mu);
        if (flagId >= 11 && flagId <= 14) {
            L.usesSyncAllFlags = true;
            if (L.usesSyncAll) {
                problem = "flag id " + std::to_string(flagId) + " is one SyncAll uses (11..14)";
            }
        }
        Launch::Clock clock = SetClock(on);
        auto raise = [&](uint32_t core, const Launch::Clock& c) {
            L.raised[core][flagId].push_back(c);
            if (L.raised[core][flagId].size() > kFlagMax) {
                problem = "flag " + std::to_string(flagId) + " of " + L.cores[core]->label +
                          " has more than 15 unconsumed sets (the hardware counter overflows)";
            }
        };
        // A set that completes a group: pops one pending set of each partner, joins them.
        auto complete = [&](int m, const std::vector<uint32_t>& partners) {
            for (uint32_t p : partners) {
                if (p != me.index && L.pending[m][p][flagId].empty()) {
                    L.pending[m][me.index][flagId].push_back(clock);
                    return std::optional<Launch::Clock>();
                }
            }
            Launch::Clock joined = clock;
            for (uint32_t p : partners) {
                if (p != me.index) {
                    Join(joined, L.pending[m][p][flagId].front());
                    L.pending[m][p][flagId].pop_front();
                }
            }
            return std::optional<Launch::Clock>(joined);
        };
        if (mode == 0) {
            std::vector<uint32_t> same;
            for (auto& c : L.cores) {
                if (c->kind == me.kind) {
                    same.push_back(c->index);
                }
            }
            if (auto joined = complete(0, same)) {
                for (uint32_t c : same) {
                    raise(c, *joined);
                }
            }
        } else if (mode == 1) {
            uint32_t peer = L.AivOf(me.blockIdx, 1 - me.subBlockIdx);
            if (auto joined = complete(1, {me.index, peer})) {
                raise(peer, *joined);
                raise(me.index, *joined);
            }
        } else if (me.kind == CoreKind::AIC) {
            raise(L.AivOf(me.blockIdx, 0), clock);
            raise(L.AivOf(me.blockIdx, 1), clock);
        } else {
            uint32_t peer = L.AivOf(me.blockIdx, 1 - me.subBlockIdx);
            if (auto joined = complete(2, {me.index, peer})) {
                raise(L.AicOf(me.blockIdx), *joined);
            }
        }
        L.cv.notify_all();
    }
    if (!problem.empty()) {
        Trap(api, problem);
    }
}

void CrossCoreWait(uint16_t flagId)
{
    const char* api = "CrossCoreWaitFlag";
    Core& me = CurCore();
    Launch& L = *me.launch;
    if (flagId >= kFlags) {
        Trap(api, "flag id " + std::to_string(flagId) + " out of range [0, 15]");
    }
    RequireScheduler(api);
    Launch::Clock clock;
    {
        std::unique_lock<std::mutex> lk(L.mu);
        auto& q = L.raised[me.index][flagId];
        L.WaitLocked(lk, me, "CrossCoreWaitFlag(" + std::to_string(flagId) + ")", [&] { return !q.empty(); });
        clock = std::move(q.front());
        q.pop_front();
    }
    // on A2 the wait blocks every pipe of the core (the template's pipe is ignored)
    StallUntil(clock);
}

void SyncAllCores(bool aivOnly, const char* api)
{
    Core& me = CurCore();
    Launch& L = *me.launch;
    if (aivOnly && me.kind != CoreKind::AIV) {
        Trap(api, "SyncAll<isAIVOnly = true> called on an AIC");
    }
    RequireScheduler(api);
    int idx = aivOnly ? 0 : 1;
    uint32_t participants = aivOnly ? L.CountOf(CoreKind::AIV) : static_cast<uint32_t>(L.cores.size());
    // the hardware SyncAll drains every pipe first (PipeBarrier<PIPE_ALL>), then meets
    Launch::Clock drained = DrainedClock();
    Launch::Clock result;
    {
        std::unique_lock<std::mutex> lk(L.mu);
        L.usesSyncAll = true;
        if (L.usesSyncAllFlags) {
            lk.unlock();
            Trap(api, "the kernel also uses CrossCoreSetFlag on flag ids 11..14, which SyncAll uses");
        }
        uint64_t gen = L.barrierGen[idx];
        Join(L.barrierJoin[idx], drained);
        if (++L.barrierCount[idx] == participants) {
            L.barrierCount[idx] = 0;
            L.barrierResult[idx][gen & 1] = std::move(L.barrierJoin[idx]);
            L.barrierJoin[idx].clear();
            L.barrierGen[idx]++;
            L.cv.notify_all();
        } else {
            L.WaitLocked(lk, me, std::string(api) + " barrier", [&] { return L.barrierGen[idx] != gen; });
        }
        result = L.barrierResult[idx][gen & 1];
    }
    StallUntil(result);
}

void DeclareKernelType(KernelMetaType t, const char* api)
{
    CurCore().declared = t;
    CoreMode m = CurCore().launch->mode;
    bool ok = false;
    const char* name = "?";
    switch (t) {
        case KERNEL_TYPE_AIV_ONLY: ok = m == CoreMode::AivOnly; name = "KERNEL_TYPE_AIV_ONLY"; break;
        case KERNEL_TYPE_AIC_ONLY: ok = m == CoreMode::AicOnly; name = "KERNEL_TYPE_AIC_ONLY"; break;
        case KERNEL_TYPE_MIX_AIV_1_0: ok = m == CoreMode::AivOnly; name = "KERNEL_TYPE_MIX_AIV_1_0"; break;
        case KERNEL_TYPE_MIX_AIC_1_0: ok = m == CoreMode::AicOnly; name = "KERNEL_TYPE_MIX_AIC_1_0"; break;
        case KERNEL_TYPE_MIX_AIC_1_2: ok = m == CoreMode::Mix12; name = "KERNEL_TYPE_MIX_AIC_1_2"; break;
        default: name = "an unsupported kernel type"; break;
    }
    if (!ok) {
        const char* mode = m == CoreMode::AivOnly ? "AIV-only" : m == CoreMode::AicOnly ? "AIC-only" : "MIX 1:2";
        Trap(api, std::string("kernel declares ") + name + " but was launched " + mode);
    }
}

namespace {

// A cross-core set no wait consumed, or one still waiting for its partners, is left for the
// next kernel on that core: report it (empty string: none).
std::string DanglingCrossCoreFlags(const Launch& L)
{
    for (size_t c = 0; c < L.cores.size(); ++c) {
        for (int f = 0; f < kFlags; ++f) {
            size_t raised = L.raised[c][f].size();
            size_t waiting = L.pending[0][c][f].size() + L.pending[1][c][f].size() + L.pending[2][c][f].size();
            if (raised + waiting > 0) {
                return "kernel `" + L.kernel + "`: " + L.cores[c]->label + ": cross-core flag " + std::to_string(f) +
                       " has " + std::to_string(raised) + " set(s) no CrossCoreWaitFlag consumed and " +
                       std::to_string(waiting) + " set(s) whose partners never set it, when the kernel ends";
            }
        }
    }
    return std::string();
}

using G = uint8_t*;
constexpr size_t kMaxArgs = 64; // fused kernels take their parts' arguments together

template <size_t... I>
void CallWith(void* fn, G* a, std::index_sequence<I...>)
{
    using F = void (*)(decltype((void)I, G())...);
    reinterpret_cast<F>(fn)(a[I]...);
}
template <size_t N>
void CallN(void* fn, G* a)
{
    CallWith(fn, a, std::make_index_sequence<N>{});
}
template <size_t... N>
constexpr std::array<void (*)(void*, G*), sizeof...(N)> MakeCallers(std::index_sequence<N...>)
{
    return {&CallN<N>...};
}
// Trampolines by argument count: kernels take a varying number of GM_ADDR arguments.
constexpr auto kCallers = MakeCallers(std::make_index_sequence<kMaxArgs + 1>{});

// Bounds of the sections the kernel-type markings put entries in (types.h); the linker
// defines them for the sections this library has.
extern "C" {
extern const char __start_sim_kernel_vector[] __attribute__((weak, visibility("hidden")));
extern const char __stop_sim_kernel_vector[] __attribute__((weak, visibility("hidden")));
extern const char __start_sim_kernel_cube[] __attribute__((weak, visibility("hidden")));
extern const char __stop_sim_kernel_cube[] __attribute__((weak, visibility("hidden")));
extern const char __start_sim_kernel_mix_1_2[] __attribute__((weak, visibility("hidden")));
extern const char __stop_sim_kernel_mix_1_2[] __attribute__((weak, visibility("hidden")));
}

// The type an entry's `__vector__` / `__cube__` / `__mix__(1, 2)` marking declares, and the
// marking's spelling; KERNEL_TYPE_MAX for an unmarked entry.
std::pair<KernelMetaType, const char*> MarkedKernelType(const void* fn)
{
    auto in = [fn](const char* start, const char* stop) {
        auto p = reinterpret_cast<uintptr_t>(fn);
        return start != nullptr && reinterpret_cast<uintptr_t>(start) <= p && p < reinterpret_cast<uintptr_t>(stop);
    };
    if (in(__start_sim_kernel_vector, __stop_sim_kernel_vector)) {
        return {KERNEL_TYPE_AIV_ONLY, "__vector__"};
    }
    if (in(__start_sim_kernel_cube, __stop_sim_kernel_cube)) {
        return {KERNEL_TYPE_AIC_ONLY, "__cube__"};
    }
    if (in(__start_sim_kernel_mix_1_2, __stop_sim_kernel_mix_1_2)) {
        return {KERNEL_TYPE_MIX_AIC_1_2, "__mix__(1, 2)"};
    }
    return {KERNEL_TYPE_MAX, nullptr};
}

void RunCore(Launch& L, Core& c, void* fn, std::vector<G> args)
{
    tlsCore = &c;
    tlsPipe = nullptr;
    std::vector<std::vector<uint8_t>> storage;
    for (int m = 0; m < static_cast<int>(Mem::COUNT); ++m) {
        bool present = (m == static_cast<int>(Mem::UB)) == (c.kind == CoreKind::AIV);
        if (!present) {
            continue;
        }
        uint32_t cap = kMemCapacity[m];
        storage.emplace_back(cap, kPoisonByte);
        uint8_t* data = storage.back().data();
        storage.emplace_back(cap / kShadowGranule, 0);
        c.arena[m].data = data;
        c.arena[m].shadow = storage.back().data();
        c.arena[m].capacity = cap;
    }
    c.launchHz = L.hazards;
    if (L.ordered) {
        std::unique_lock<std::mutex> lk(L.mu);
        L.AwaitTurnLocked(lk, c.index);
    }
    try {
        HazardCoreBegin();
        auto marked = MarkedKernelType(fn);
        if (marked.second != nullptr) {
            DeclareKernelType(marked.first, marked.second);
        }
        kCallers[args.size()](fn, args.data());
        HazardCoreEnd(true);
    } catch (const TrapError& e) {
        L.Fail(e.message);
    } catch (const AbortLaunch&) {
    } catch (const std::exception& e) {
        L.Fail("kernel `" + L.kernel + "`: " + c.label + ": C++ exception: " + e.what());
    } catch (...) {
        L.Fail("kernel `" + L.kernel + "`: " + c.label + ": unknown C++ exception");
    }
    HazardCoreEnd(false);
    for (auto& a : c.arena) {
        a.data = nullptr;
        a.shadow = nullptr;
    }
    {
        std::lock_guard<std::mutex> g(L.mu);
        L.alive--;
        if (L.ordered) {
            L.ended[c.index] = true;
            L.HandOnLocked(c.index);
        }
        L.CheckDeadlockLocked();
        L.cv.notify_all();
    }
    tlsCore = nullptr;
    tlsPipe = nullptr;
}

} // namespace
} // namespace sim
} // namespace AscendC

extern "C" {

// Keep in sync with harness/src/kernel_library/ffi.rs (and sim_launch with the fake CANN's
// runner/tests/fake_cann/device.h).
struct SimGmArg {
    uint8_t* ptr;
    uint64_t len;
    const char* name;
    // L2 lines (sim_l2_line_bytes each, one bit per line, bit i of word i / 64) of the
    // buffer: `warm` those an earlier launch left in L2 (the timeline reads them as hits),
    // `lines` receives those this launch touched (zeroed by the caller). Either may be null.
    const uint64_t* warm;
    uint64_t* lines;
};

struct SimStats {
    uint64_t gm_read_bytes;
    uint64_t gm_write_bytes;
    uint64_t scalar_gm_reads;
    uint64_t scalar_gm_writes;
    uint64_t mac_bf16;
    uint64_t mac_f16;
    uint64_t mac_f32;
    uint64_t mac_i8;
    uint64_t vec_elem_ops;
    uint64_t peak_ub;
    uint64_t peak_l1;
    uint64_t peak_l0a;
    uint64_t peak_l0b;
    uint64_t peak_l0c;
    uint64_t gm_distinct_read_bytes;
    uint64_t gm_distinct_write_bytes;
    uint64_t gm_min_read_bytes;
    uint64_t gm_min_write_bytes;
};

// DMA traffic of one GM argument of a launch.
struct SimArgTraffic {
    uint64_t read_bytes;
    uint64_t write_bytes;
    uint64_t distinct_read_bytes;
    uint64_t distinct_write_bytes;
    uint64_t min_read_bytes;
    uint64_t min_write_bytes;
};

// The modeled time of one core of a launch (sim/timing.h), in cycles from the launch start.
struct SimCoreTiming {
    uint32_t aic;  // 1: an AIC, 0: an AIV
    uint32_t end;  // when its last pipe finished
    uint64_t busy[7]; // per pipe (S, V, M, MTE1, MTE2, MTE3, FIX): cycles busy
    uint64_t hbm_bytes; // GM bytes through HBM (reads missing L2, writes)
    uint64_t l2_bytes;  // GM bytes read as L2 hits
};

// The chip figures the host side of the model needs (sim/timing.h's table).
struct SimChipTiming {
    double clock_hz;
    double op_head_cycles;
    double launch_gap_us;
    double hccs_bytes_per_s;
    double collective_latency_us;
    double l2_bytes;
    double load_a, load_b;      // the shared GM rate: (load_a · N + load_b) bytes per cycle for N cores
    double gm_peak_bytes_per_s; // all GM traffic, L2 hits included, at most this
    double l2_line_bytes;       // the granule of SimGmArg's `warm` and `lines`
};

// One call of a traced launch: its core, pipe (as in SimCoreTiming::busy), API, interval.
typedef void (*SimCallFn)(void* ctx, uint32_t core, uint32_t pipe, const char* api, uint32_t start, uint32_t cycles);

__attribute__((visibility("default"))) uint32_t sim_abi_version(void) { return 6; }

__attribute__((visibility("default"))) void sim_chip_timing(SimChipTiming* out)
{
    const AscendC::sim::ChipTiming& c = AscendC::sim::kDavC220;
    *out = SimChipTiming{c.clockHz,       c.opHead,  c.launchGapUs, c.hccsBytesPerS, c.collectiveLatencyUs,
                         c.l2Bytes,       c.loadA,   c.loadB,       c.l2BytesPerS,
                         double(AscendC::sim::kL2LineBytes)};
}

// Bits of sim_launch's `checks`.
constexpr uint32_t SIM_CHECK_HAZARDS = 1;   // pipe hazards and cross-core races (sim/hazard.h)
constexpr uint32_t SIM_CHECK_AUTO_SYNC = 2; // model the compiler's --cce-auto-sync=on
constexpr uint32_t SIM_TIMELINE = 4;        // modeled device time (needs SIM_CHECK_HAZARDS)
constexpr uint32_t SIM_TRACE = 8;           // report every call's interval to `onCall`
constexpr uint32_t SIM_ORDERED = 16;         // one core at a time in a fixed order (Launch::ordered)

// Runs `fn` (a kernel taking `nargs` GM_ADDR arguments) on blockDim blocks.
// mode: 0 AIV-only, 1 AIC-only, 2 MIX 1:2; checks: SIM_CHECK_* bits. Returns 0 on
// success, 1 if the kernel trapped or deadlocked, 2 for invalid launch arguments; `err`
// receives the message. `traffic` (nullable) receives one entry per argument; `times`
// (nullable, one entry per core: blockDim, or 3 · blockDim for MIX) the modeled time of each
// core with SIM_TIMELINE; with SIM_TRACE, `onCall` receives every call after the launch.
__attribute__((visibility("default"))) int32_t sim_launch(const char* kernel, void* fn, uint32_t mode,
                                                          uint32_t blockDim, uint32_t checks, const SimGmArg* args,
                                                          uint32_t nargs, SimStats* stats, SimArgTraffic* traffic,
                                                          SimCoreTiming* times, SimCallFn onCall, void* ctx,
                                                          char* err, uint64_t errCap)
{
    using namespace AscendC::sim;
    auto report = [&](const std::string& m) {
        if (err != nullptr && errCap > 0) {
            size_t n = std::min<size_t>(m.size(), errCap - 1);
            std::memcpy(err, m.data(), n);
            err[n] = '\0';
        }
    };
    std::string kname = kernel ? kernel : "?";
    if (fn == nullptr || mode > 2 || blockDim == 0 || nargs > kMaxArgs) {
        report("kernel `" + kname + "`: invalid launch: fn must be non-null, mode 0..2, blockDim >= 1, at most " +
               std::to_string(kMaxArgs) + " arguments");
        return 2;
    }
    uint32_t perBlock = mode == 2 ? 3 : 1;
    if (uint64_t(blockDim) * perBlock > 4096) {
        report("kernel `" + kname + "`: invalid launch: blockDim " + std::to_string(blockDim) +
               " needs more than 4096 simulated cores");
        return 2;
    }
    LaunchChecks lc;
    lc.hazards = (checks & SIM_CHECK_HAZARDS) != 0;
    lc.autoSync = (checks & SIM_CHECK_AUTO_SYNC) != 0;
    lc.timeline = lc.hazards && (checks & SIM_TIMELINE) != 0;
    lc.trace = lc.timeline && (checks & SIM_TRACE) != 0 && onCall != nullptr;
    if (lc.hazards && uint64_t(blockDim) * perBlock > kMaxCheckedCores) {
        report("kernel `" + kname + "`: invalid launch: the hazard checker follows at most " +
               std::to_string(kMaxCheckedCores) + " simulated cores (blockDim " + std::to_string(blockDim) +
               "); turn it off for larger launches");
        return 2;
    }
    Launch L;
    L.kernel = kname;
    L.mode = static_cast<CoreMode>(mode);
    L.blockDim = blockDim;
    std::vector<uint8_t*> gmArgs;
    for (uint32_t i = 0; i < nargs; ++i) {
        L.gm.push_back(GmBuffer{args[i].ptr, args[i].len, args[i].name ? args[i].name : ("arg" + std::to_string(i)),
                                args[i].warm});
        L.traffic.push_back(std::make_unique<GmTraffic>(args[i].len));
        L.traffic.back()->lines = args[i].lines;
        gmArgs.push_back(args[i].ptr);
    }
    auto addCore = [&](CoreKind kind, uint32_t block, uint32_t sub) {
        auto c = std::make_unique<Core>();
        c->launch = &L;
        c->index = static_cast<uint32_t>(L.cores.size());
        c->kernel = L.kernel.c_str();
        c->kind = kind;
        c->blockIdx = block;
        c->subBlockIdx = sub;
        c->blockDim = blockDim;
        c->taskRation = (mode == 2 && kind == CoreKind::AIV) ? 2 : 1;
        c->label = std::string(kind == CoreKind::AIV ? "AIV" : "AIC") + " core (block " + std::to_string(block) +
                   (mode == 2 && kind == CoreKind::AIV ? ", sub " + std::to_string(sub) : std::string()) + ")";
        L.cores.push_back(std::move(c));
    };
    for (uint32_t b = 0; b < blockDim; ++b) {
        if (mode == 0) {
            addCore(CoreKind::AIV, b, 0);
        } else if (mode == 1) {
            addCore(CoreKind::AIC, b, 0);
        } else {
            addCore(CoreKind::AIC, b, 0);
            addCore(CoreKind::AIV, b, 0);
            addCore(CoreKind::AIV, b, 1);
        }
    }
    size_t n = L.cores.size();
    L.alive = static_cast<uint32_t>(n);
    L.waitingFor.assign(n, std::string());
    L.waitingUntil.assign(n, nullptr);
    L.ordered = (checks & SIM_ORDERED) != 0;
    L.ended.assign(n, false);
    L.raised.assign(n, {});
    for (auto& p : L.pending) {
        p.assign(n, {});
    }
    L.hazards = CreateLaunchHazards(lc, static_cast<uint32_t>(n), L.gm);
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        threads.emplace_back(RunCore, std::ref(L), std::ref(*L.cores[i]), fn, gmArgs);
    }
    for (auto& t : threads) {
        t.join();
    }
    if (lc.timeline && L.error.empty()) {
        const std::vector<CoreTime>& ct = LaunchTimes(L.hazards);
        for (size_t i = 0; i < ct.size(); ++i) {
            if (times != nullptr) {
                times[i].aic = L.cores[i]->kind == CoreKind::AIC ? 1 : 0;
                times[i].end = ct[i].end;
                std::copy(std::begin(ct[i].busy), std::end(ct[i].busy), times[i].busy);
                times[i].hbm_bytes = ct[i].hbmBytes;
                times[i].l2_bytes = ct[i].l2Bytes;
            }
            if (lc.trace) {
                for (const TimedCall& c : ct[i].calls) {
                    onCall(ctx, static_cast<uint32_t>(i), static_cast<uint32_t>(c.pipe), c.api, c.start, c.cycles);
                }
            }
        }
    }
    DestroyLaunchHazards(L.hazards);
    if (L.error.empty()) {
        L.error = DanglingCrossCoreFlags(L);
    }
    if (stats != nullptr) {
        SimStats s{};
        for (auto& c : L.cores) {
            const Counters& k = c->counters;
            s.gm_read_bytes += k.gmReadBytes;
            s.gm_write_bytes += k.gmWriteBytes;
            s.scalar_gm_reads += k.scalarGmReads;
            s.scalar_gm_writes += k.scalarGmWrites;
            s.mac_bf16 += k.macBf16;
            s.mac_f16 += k.macF16;
            s.mac_f32 += k.macF32;
            s.mac_i8 += k.macI8;
            s.vec_elem_ops += k.vecElemOps;
            s.peak_ub = std::max<uint64_t>(s.peak_ub, c->arena[int(Mem::UB)].peak);
            s.peak_l1 = std::max<uint64_t>(s.peak_l1, c->arena[int(Mem::L1)].peak);
            s.peak_l0a = std::max<uint64_t>(s.peak_l0a, c->arena[int(Mem::L0A)].peak);
            s.peak_l0b = std::max<uint64_t>(s.peak_l0b, c->arena[int(Mem::L0B)].peak);
            s.peak_l0c = std::max<uint64_t>(s.peak_l0c, c->arena[int(Mem::L0C)].peak);
        }
        for (auto& t : L.traffic) {
            s.gm_distinct_read_bytes += GmTraffic::Count(t->readBits, t->words);
            s.gm_distinct_write_bytes += GmTraffic::Count(t->writeBits, t->words);
            s.gm_min_read_bytes += t->minReadBytes.load();
            s.gm_min_write_bytes += t->minWriteBytes.load();
        }
        *stats = s;
    }
    if (traffic != nullptr) {
        for (uint32_t i = 0; i < nargs; ++i) {
            const GmTraffic& t = *L.traffic[i];
            traffic[i] = SimArgTraffic{t.readBytes.load(), t.writeBytes.load(), GmTraffic::Count(t.readBits, t.words),
                                       GmTraffic::Count(t.writeBits, t.words), t.minReadBytes.load(),
                                       t.minWriteBytes.load()};
        }
    }
    if (!L.error.empty()) {
        report(L.error);
        return 1;
    }
    return 0;
}

} // extern "C"
