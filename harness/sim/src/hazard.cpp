// The ordering sanitizer (model and rules in include/sim/hazard.h).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <new>

#include "kernel_operator.h"

namespace AscendC {
namespace sim {

using Clock = std::vector<uint32_t>;

const char* PipeName(Pipe p)
{
    static const char* const names[] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"};
    return names[static_cast<int>(p)];
}

Pipe PipeOf(const char* api, pipe_t p)
{
    switch (p) {
        case PIPE_S: return Pipe::S;
        case PIPE_V: return Pipe::V;
        case PIPE_M: return Pipe::M;
        case PIPE_MTE1: return Pipe::MTE1;
        case PIPE_MTE2: return Pipe::MTE2;
        case PIPE_MTE3: return Pipe::MTE3;
        case PIPE_FIX: return Pipe::FIX;
        default: Trap(api, "pipe " + std::to_string(int(p)) + " is not a single pipe of dav-c220");
    }
}

namespace {
constexpr EventPipes kEventPipes[] = {
    {Pipe::MTE2, Pipe::MTE1}, {Pipe::MTE1, Pipe::MTE2}, {Pipe::MTE1, Pipe::M},    {Pipe::M, Pipe::MTE1},
    {Pipe::MTE2, Pipe::V},    {Pipe::V, Pipe::MTE2},    {Pipe::MTE3, Pipe::V},    {Pipe::V, Pipe::MTE3},
    {Pipe::M, Pipe::V},       {Pipe::V, Pipe::M},       {Pipe::V, Pipe::V},       {Pipe::MTE3, Pipe::MTE1},
    {Pipe::MTE1, Pipe::MTE3}, {Pipe::MTE1, Pipe::V},    {Pipe::MTE2, Pipe::M},    {Pipe::M, Pipe::MTE2},
    {Pipe::V, Pipe::MTE1},    {Pipe::M, Pipe::FIX},     {Pipe::FIX, Pipe::M},     {Pipe::MTE3, Pipe::MTE2},
    {Pipe::MTE2, Pipe::MTE3}, {Pipe::S, Pipe::V},       {Pipe::V, Pipe::S},       {Pipe::S, Pipe::MTE2},
    {Pipe::MTE2, Pipe::S},    {Pipe::S, Pipe::MTE3},    {Pipe::MTE3, Pipe::S},    {Pipe::MTE2, Pipe::FIX},
    {Pipe::FIX, Pipe::MTE2},  {Pipe::FIX, Pipe::S},     {Pipe::M, Pipe::S},       {Pipe::FIX, Pipe::MTE3},
    {Pipe::MTE1, Pipe::FIX},  {Pipe::FIX, Pipe::MTE1},  {Pipe::FIX, Pipe::FIX},
};
static_assert(sizeof(kEventPipes) / sizeof(kEventPipes[0]) == static_cast<size_t>(HardEvent::MAX));

// The events each core type's event pool has on dav-c220 (impl/basic_api/kernel_event.h,
// HardEventAiv / HardEventAic); the others do not exist there.
bool EventOnCore(HardEvent e, CoreKind k)
{
    using H = HardEvent;
    switch (e) {
        case H::MTE3_MTE2:
        case H::MTE2_MTE3:
        case H::S_MTE2:
        case H::MTE2_S:
        case H::S_MTE3:
        case H::MTE3_S: return true;
        case H::MTE2_V:
        case H::V_MTE2:
        case H::MTE3_V:
        case H::V_MTE3:
        case H::V_V:
        case H::S_V:
        case H::V_S: return k == CoreKind::AIV;
        case H::MTE2_MTE1:
        case H::MTE1_MTE2:
        case H::MTE1_M:
        case H::M_MTE1:
        case H::MTE3_MTE1:
        case H::MTE1_MTE3:
        case H::MTE2_M:
        case H::M_MTE2:
        case H::M_FIX:
        case H::FIX_M:
        case H::MTE2_FIX:
        case H::FIX_MTE2:
        case H::FIX_S:
        case H::M_S:
        case H::FIX_MTE3:
        case H::MTE1_FIX:
        case H::FIX_MTE1:
        case H::FIX_FIX: return k == CoreKind::AIC;
        default: return false;
    }
}

// Pipes a core type has (PipeBarrier targets, docs 核内同步能力概述 tables 2 and 3).
bool PipeOnCore(Pipe p, CoreKind k)
{
    switch (p) {
        case Pipe::S:
        case Pipe::MTE2:
        case Pipe::MTE3: return true;
        case Pipe::V: return k == CoreKind::AIV;
        default: return k == CoreKind::AIC;
    }
}
} // namespace

EventPipes PipesOf(HardEvent e) { return kEventPipes[static_cast<int>(e)]; }

const char* EventName(HardEvent e)
{
    static const char* const names[] = {
        "MTE2_MTE1", "MTE1_MTE2", "MTE1_M",    "M_MTE1",    "MTE2_V",    "V_MTE2",    "MTE3_V",   "V_MTE3",
        "M_V",       "V_M",       "V_V",       "MTE3_MTE1", "MTE1_MTE3", "MTE1_V",    "MTE2_M",   "M_MTE2",
        "V_MTE1",    "M_FIX",     "FIX_M",     "MTE3_MTE2", "MTE2_MTE3", "S_V",       "V_S",      "S_MTE2",
        "MTE2_S",    "S_MTE3",    "MTE3_S",    "MTE2_FIX",  "FIX_MTE2",  "FIX_S",     "M_S",      "FIX_MTE3",
        "MTE1_FIX",  "FIX_MTE1",  "FIX_FIX"};
    int i = static_cast<int>(e);
    return i < static_cast<int>(HardEvent::MAX) ? names[i] : "?";
}

namespace {

// ---- API names: shadow stamps hold a 16-bit id (each thread caches its lookups).
std::mutex gApiMu;
std::vector<const char*> gApis{"?"};

uint16_t ApiIdSlow(const char* api)
{
    std::lock_guard<std::mutex> g(gApiMu);
    uint16_t id = 0;
    for (size_t i = 1; i < gApis.size(); ++i) {
        if (std::strcmp(gApis[i], api) == 0) {
            id = static_cast<uint16_t>(i);
        }
    }
    if (id == 0 && gApis.size() < 0xFFFF) {
        id = static_cast<uint16_t>(gApis.size());
        gApis.push_back(api);
    }
    return id;
}

const char* ApiName(uint16_t id)
{
    std::lock_guard<std::mutex> g(gApiMu);
    return id < gApis.size() ? gApis[id] : "?";
}

void JoinInto(Clock& into, const Clock& c)
{
    for (size_t i = 0; i < into.size(); ++i) {
        into[i] = into[i] > c[i] ? into[i] : c[i];
    }
}

// A local access: instruction `seq` (0: none) of `pipe`, made by API `api`.
struct LStamp {
    uint32_t seq;
    uint16_t api;
    uint8_t pipe;
    uint8_t pad;
};
// One 32-byte granule of local memory: its last writer, and the last reader of each pipe
// since (r[p] counts only if bit p of `readers` is set).
struct LCell {
    LStamp w;
    LStamp r[kPipes];
    uint8_t Readers() const { return w.pad; }
};

// A GM access packed in 64 bits: seq (32) | core (12) | pipe (3) | atomic (1) | api (16).
// 0 is "none"; api kSpill marks a reader word that indexes a stripe's spill list.
using GStamp = uint64_t;
constexpr uint16_t kSpill = 0xFFFF;
constexpr GStamp MakeG(uint32_t seq, uint32_t core, Pipe p, bool atomic, uint16_t api)
{
    return uint64_t(seq) | uint64_t(core & 0xFFF) << 32 | uint64_t(p) << 44 | uint64_t(atomic) << 47 |
           uint64_t(api) << 48;
}
uint32_t GSeq(GStamp s) { return static_cast<uint32_t>(s); }
uint32_t GCore(GStamp s) { return static_cast<uint32_t>(s >> 32) & 0xFFF; }
Pipe GPipe(GStamp s) { return static_cast<Pipe>((s >> 44) & 7); }
bool GAtomic(GStamp s) { return (s >> 47) & 1; }
uint16_t GApi(GStamp s) { return static_cast<uint16_t>(s >> 48); }
// Readers (and atomic adders) are told apart by (core, pipe, atomic).
uint32_t GKey(GStamp s) { return static_cast<uint32_t>(s >> 32) & 0xFFFF; }

struct FlagSlot {
    bool set = false;
    const char* by = nullptr;
    int32_t buf = -1;
    Clock clock;
};

} // namespace

// Zeroed shadow memory: calloc maps large blocks lazily, so a buffer region no core touches
// costs nothing. (Huge pages would fault fewer times in a streaming kernel, but zero 2 MiB
// for every sparse touch of a large pool: slower for a layer.)
void* ShadowAlloc(size_t bytes)
{
    void* p = std::calloc(bytes ? bytes : 1, 1);
    if (p == nullptr) {
        throw std::bad_alloc();
    }
    return p;
}
void ShadowFree(void* p, size_t) { std::free(p); }

// GM shadow of one argument: per 32-byte granule the last plain writer and the readers /
// atomic adders since (one inline, more in the stripe's spill list).
struct GmShadow {
    GStamp* cells = nullptr; // [granule * 2]: writer, readers
    uint64_t granules = 0;
    const uint8_t* base = nullptr;
};

struct LaunchHazards {
    static constexpr uint32_t kStripes = 4096; // locks, each over 4 KiB regions of GM
    LaunchChecks checks;
    uint32_t cores = 0;
    uint32_t width = 0; // clock entries: cores * kPipes, then the time entry
    uint32_t tIdx = 0;  // the time entry: the cycle by which everything the clock names is done
    std::vector<CoreTime> times; // by core, each slot written by its own core as it ends
    std::vector<GmShadow> gm;
    std::mutex stripe[kStripes];
    std::vector<std::vector<GStamp>> spill[kStripes];
};

struct CoreHazards {
    LaunchHazards* L = nullptr;
    uint32_t self = 0;
    CoreKind kind = CoreKind::AIV;
    uint32_t issued[kPipes] = {};
    Clock know[kPipes]; // K_P (K_S is `stall`)
    Clock stall;        // what the scalar unit waited for: holds for all it issues later
    uint64_t stallGen = 1;
    uint64_t seenGen[kPipes] = {};
    LCell* cells[static_cast<int>(Mem::COUNT)] = {};
    FlagSlot flags[static_cast<int>(HardEvent::MAX)][8];
    // API name -> id, direct mapped by the name's address (the names are literals)
    const char* apiKey[64] = {};
    uint16_t apiVal[64] = {};
    // the timeline (sim/timing.h), in cycles from the launch's start
    bool timed = false;
    uint32_t sNow = 0;               // when the scalar unit issues its next instruction
    uint32_t pipeFree[kPipes] = {};  // when each pipe can start its next call
    uint32_t done[kPipes] = {};      // when each pipe's last call is done (latency included)
    CoreTime time;
    OpWork work; // of the open call
    // the open call
    int depth = 0;
    bool hwSamePipe = false; // SamePipeOrderedByHardware
    const char* api = nullptr;
    uint16_t apiId = 0;
    Pipe pipe = Pipe::S;
    uint32_t seq = 0;

    uint32_t Own(Pipe p) const { return self * kPipes + static_cast<uint32_t>(p); }
    // K of pipe p, with what the scalar unit learnt since p last looked.
    Clock& Know(Pipe p)
    {
        if (p == Pipe::S) {
            return stall;
        }
        int i = static_cast<int>(p);
        if (seenGen[i] != stallGen) {
            JoinInto(know[i], stall);
            seenGen[i] = stallGen;
        }
        return know[i];
    }
    // The scalar unit's time: it issues in program order after what it waited for.
    uint32_t Issue() const { return std::max(sNow, stall[L->tIdx]); }
    // The clock an event fired on p carries: K_p and every instruction p issued so far, done
    // by the later of their completion and the scalar unit issuing the event.
    Clock Fired(Pipe p)
    {
        Clock c = Know(p);
        c[Own(p)] = issued[static_cast<int>(p)];
        c[L->tIdx] = std::max({c[L->tIdx], done[static_cast<int>(p)], Issue()});
        return c;
    }
    void Stall(const Clock& c)
    {
        JoinInto(stall, c);
        stallGen++;
    }
    bool Checking() const { return L->checks.hazards; }
};

namespace {

CoreHazards& Hz() { return *CurCore().hz; }

// Pairs of pipes the compiler's auto-sync orders on AIV (docs 关键特性说明 table 3, with
// PIPE_V after PIPE_V); `sRead` says whether the S side reads (GM scalar writes are not
// among the interfaces it covers).
bool AutoSynced(const CoreHazards& h, Pipe earlier, Pipe later, bool gm, bool sRead)
{
    if (!h.L->checks.autoSync || h.kind != CoreKind::AIV) {
        return false;
    }
    if (earlier == Pipe::V && later == Pipe::V) {
        return !gm;
    }
    Pipe other = earlier == Pipe::S ? later : later == Pipe::S ? earlier : Pipe::S;
    if (other == Pipe::S || (gm && !sRead)) {
        return false;
    }
    return other == Pipe::V || other == Pipe::MTE2 || other == Pipe::MTE3;
}

// Whether this core's instruction `seq` of `earlier` is ordered before the open call; if
// only the compiler's auto-sync orders the pair, adds the sync it inserts there.
bool OrderedOwn(CoreHazards& h, Pipe earlier, uint32_t seq, bool gm, bool sRead)
{
    Pipe later = h.pipe;
    if (earlier == later && (seq == h.seq || later == Pipe::S || h.hwSamePipe)) {
        return true;
    }
    if (h.Know(later)[h.Own(earlier)] >= seq) {
        return true;
    }
    if (!AutoSynced(h, earlier, later, gm, sRead)) {
        return false;
    }
    if (earlier == later) { // PipeBarrier<PIPE_V> before this call
        h.Know(later)[h.Own(later)] = h.seq - 1;
        h.Know(later)[h.L->tIdx] = std::max(h.Know(later)[h.L->tIdx], h.done[static_cast<int>(later)]);
    } else if (later == Pipe::S) { // SetFlag/WaitFlag<earlier_S>
        h.Stall(h.Fired(earlier));
    } else { // SetFlag/WaitFlag<S_later>
        Clock f = h.Fired(Pipe::S);
        JoinInto(h.Know(later), f);
    }
    return true;
}

const char* Kind(bool laterWrites, bool earlierWrites)
{
    return !earlierWrites ? "WAR" : laterWrites ? "WAW" : "RAW";
}

// The sync that would order `earlier` before `later` on one core, for the trap message.
std::string SyncHint(CoreKind k, Pipe earlier, Pipe later)
{
    if (earlier == later) {
        return std::string("needs PipeBarrier<PIPE_") + PipeName(later) + ">() between them";
    }
    for (int e = 0; e < static_cast<int>(HardEvent::MAX); ++e) {
        EventPipes p = kEventPipes[e];
        if (p.src == earlier && p.dst == later && EventOnCore(static_cast<HardEvent>(e), k)) {
            return std::string("needs SetFlag/WaitFlag<HardEvent::") + EventName(static_cast<HardEvent>(e)) +
                   "> (or a queue whose EnQue/DeQue or FreeTensor/AllocTensor carries it) between them";
        }
    }
    return std::string("no event links ") + PipeName(earlier) + " to " + PipeName(later) +
           " on this core: order them through a third pipe";
}

std::string Call(const char* api, Pipe p, uint32_t seq)
{
    return std::string(api) + " (" + PipeName(p) + " #" + std::to_string(seq) + ")";
}

const BufDesc* BufAt(Mem m, uint32_t off)
{
    const Core& c = CurCore();
    const BufDesc* hit = nullptr;
    for (const BufDesc& b : c.bufs) {
        if (b.mem == m && off >= b.offset && off < b.offset + b.len && (hit == nullptr || !b.released)) {
            hit = &b;
        }
    }
    return hit;
}

[[noreturn]] void LocalConflict(CoreHazards& h, Mem m, uint32_t granule, bool write, const LStamp& e, bool eWrote)
{
    uint32_t off = granule * kShadowGranule;
    Pipe ep = static_cast<Pipe>(e.pipe);
    std::string where = std::string(kMemName[static_cast<int>(m)]) + " [" + Hex(off) + ", " + Hex(off + 32) + ")";
    if (const BufDesc* b = BufAt(m, off)) {
        where += " (byte " + std::to_string(off - b->offset) + " of buffer " + DescribeBuf(*b) + ")";
    }
    Trap(h.api, std::string("pipe hazard (") + Kind(write, eWrote) + ") on " + where + ": " +
                    Call(h.api, h.pipe, h.seq) + (write ? " writes" : " reads") + " what " +
                    Call(ApiName(e.api), ep, e.seq) + (eWrote ? " wrote" : " reads") + ", and nothing orders " +
                    PipeName(ep) + " #" + std::to_string(e.seq) + " before " + PipeName(h.pipe) + " #" +
                    std::to_string(h.seq) + " (" + SyncHint(h.kind, ep, h.pipe) + ")");
}

} // namespace

void BeginOp(const char* api, Pipe pipe)
{
    CoreHazards& h = Hz();
    if (h.depth++ > 0) {
        return; // a call made inside another API call belongs to it
    }
    h.api = api;
    h.pipe = pipe;
    h.hwSamePipe = false;
    h.seq = ++h.issued[static_cast<int>(pipe)];
    if (h.Checking()) {
        size_t slot = (reinterpret_cast<uintptr_t>(api) >> 3) & 63;
        if (h.apiKey[slot] != api) {
            h.apiKey[slot] = api;
            h.apiVal[slot] = ApiIdSlow(api);
        }
        h.apiId = h.apiVal[slot];
    }
    if (h.timed) {
        h.work = OpWork();
    }
}

void EndOp()
{
    CoreHazards& h = Hz();
    if (--h.depth > 0 || !h.timed) {
        return;
    }
    // Start when the scalar unit has issued the call, its pipe is free and every edge into it
    // (flags, barriers, waits, the compiler's syncs: the time entry of K_P) has completed.
    const int p = static_cast<int>(h.pipe);
    const uint32_t issue = h.Issue();
    const uint32_t start = std::max({issue, h.pipeFree[p], h.Know(h.pipe)[h.L->tIdx]});
    const OpTime t = Cost(h.api, h.apiId, h.pipe, h.work, h.L->cores);
    // a scalar read of a preloaded line that has not arrived waits for it
    const uint32_t wait = h.work.scalarReady > start ? h.work.scalarReady - start : 0;
    const uint32_t cycles = static_cast<uint32_t>(std::ceil(t.cycles)) + wait;
    if (h.work.preloadLine != 0) {
        Preloaded(h.work.preloadLine - 1, start + static_cast<uint32_t>(kDavC220.gmReadLatency));
    }
    h.pipeFree[p] = start + cycles;
    h.done[p] = std::max(h.done[p], start + cycles + static_cast<uint32_t>(t.latency));
    h.sNow = h.pipe == Pipe::S ? h.done[p] : issue + static_cast<uint32_t>(kDavC220.issue);
    h.time.busy[p] += cycles;
    h.time.hbmBytes += h.work.gmHbmRead + h.work.gmWrite;
    h.time.l2Bytes += h.work.gmL2Read;
    if (h.L->checks.trace) {
        h.time.calls.push_back(TimedCall{h.api, h.pipe, start, cycles});
    }
}

OpWork* OpenWork()
{
    CoreHazards* h = CurCore().hz;
    return h != nullptr && h->timed && h->depth > 0 ? &h->work : nullptr;
}

Pipe OpenPipe() { return Hz().pipe; }

void SamePipeOrderedByHardware() { Hz().hwSamePipe = true; }

void HazardLocal(Mem m, uint32_t off, uint32_t len, bool write)
{
    CoreHazards& h = Hz();
    if (!h.Checking() || len == 0) {
        return;
    }
    if (h.depth == 0) {
        Trap("sim", "internal: local memory accessed outside an API call");
    }
    if (h.timed) {
        if (m == Mem::UB) {
            (write ? h.work.ubWrite : h.work.ubRead) += len;
        } else if (write && (m == Mem::L0A || m == Mem::L0B)) {
            (m == Mem::L0A ? h.work.l0aBytes : h.work.l0bBytes) += len;
        }
    }
    LCell* cells = h.cells[static_cast<int>(m)];
    const uint8_t pipe = static_cast<uint8_t>(h.pipe);
    const LStamp me{h.seq, h.apiId, pipe, 0};
    // this core's entries of the calling pipe's clock (the fast path; OrderedOwn decides
    // the rest, and may add the compiler's auto-sync to the clock)
    const uint32_t* known = h.Know(h.pipe).data() + h.Own(Pipe::S);
    auto ordered = [&](uint8_t p, uint32_t seq) {
        if (known[p] >= seq || (p == pipe && (seq == h.seq || pipe == static_cast<uint8_t>(Pipe::S)))) {
            return true;
        }
        bool ok = OrderedOwn(h, static_cast<Pipe>(p), seq, false, true);
        known = h.Know(h.pipe).data() + h.Own(Pipe::S);
        return ok;
    };
    uint32_t g1 = (off + len + kShadowGranule - 1) / kShadowGranule;
    for (uint32_t g = off / kShadowGranule; g < g1; ++g) {
        LCell& c = cells[g];
        const uint8_t readers = c.Readers(); // the writer stamp's pad byte holds the mask
        if (!write) {
            if ((readers >> pipe & 1) && c.r[pipe].seq == h.seq) {
                continue; // this call read it already
            }
            if (c.w.seq != 0 && !ordered(c.w.pipe, c.w.seq)) {
                LocalConflict(h, m, g, false, c.w, true);
            }
            c.r[pipe] = me;
            c.w.pad = static_cast<uint8_t>(readers | 1u << pipe);
            continue;
        }
        if (c.w.seq == h.seq && c.w.pipe == pipe) {
            continue; // this call wrote it already (and cleared the readers)
        }
        if (c.w.seq != 0 && !ordered(c.w.pipe, c.w.seq)) {
            LocalConflict(h, m, g, true, c.w, true);
        }
        for (uint8_t rest = readers; rest != 0; rest &= static_cast<uint8_t>(rest - 1)) {
            const uint8_t p = static_cast<uint8_t>(__builtin_ctz(rest));
            if (!ordered(p, c.r[p].seq)) {
                LocalConflict(h, m, g, true, c.r[p], false);
            }
        }
        c.w = me; // no readers since
    }
}

namespace {

// Whether GM access `e` (any core; `eWrote`: a plain or atomic write) is ordered before the
// open call of this core.
bool OrderedGm(CoreHazards& h, GStamp e, bool eWrote, bool laterWrites)
{
    Pipe ep = GPipe(e);
    if (GCore(e) == h.self) {
        bool sRead = ep == Pipe::S ? !eWrote : !laterWrites;
        return OrderedOwn(h, ep, GSeq(e), true, sRead);
    }
    return h.Know(h.pipe)[GCore(e) * kPipes + static_cast<uint32_t>(ep)] >= GSeq(e);
}

[[noreturn]] void GmConflict(CoreHazards& h, int gm, uint64_t granule, GmAcc acc, GStamp e, bool eWrote)
{
    const GmBuffer& buf = GmAt(gm);
    uint64_t off = granule * kShadowGranule;
    Pipe ep = GPipe(e);
    bool write = acc != GmAcc::Read;
    std::string verb = acc == GmAcc::Atomic ? " adds atomically to" : write ? " writes" : " reads";
    std::string everb = GAtomic(e) ? " added to atomically" : eWrote ? " wrote" : " read";
    std::string range = "GM buffer `" + buf.name + "` bytes [" + std::to_string(off) + ", " +
                        std::to_string(std::min<uint64_t>(off + 32, buf.len)) + ")";
    if (GCore(e) == h.self) {
        Trap(h.api, std::string("pipe hazard (") + Kind(write, eWrote) + ") on " + range + ": " +
                        Call(h.api, h.pipe, h.seq) + verb + " what " + Call(ApiName(GApi(e)), ep, GSeq(e)) +
                        everb + ", and nothing orders them (" + SyncHint(h.kind, ep, h.pipe) + ")");
    }
    Trap(h.api, std::string("cross-core race (") + Kind(write, eWrote) + ") on " + range + ": " +
                    Call(h.api, h.pipe, h.seq) + " on " + CurCore().label + verb + " what " +
                    Call(ApiName(GApi(e)), ep, GSeq(e)) + " on " + CoreLabel(GCore(e)) + everb +
                    ", and no cross-core flag (CrossCoreSetFlag after the earlier access on its pipe, "
                    "CrossCoreWaitFlag before the later) or SyncAll orders them");
}

} // namespace

void HazardGm(int gm, const uint8_t* p, uint64_t len, GmAcc acc)
{
    CoreHazards& h = Hz();
    if (!h.Checking() || len == 0 || gm < 0) {
        return;
    }
    if (h.depth == 0) {
        Trap("sim", "internal: GM accessed outside an API call");
    }
    LaunchHazards& L = *h.L;
    GmShadow& s = L.gm[gm];
    const GStamp me = MakeG(h.seq, h.self, h.pipe, acc == GmAcc::Atomic, h.apiId);
    const bool write = acc != GmAcc::Read;
    uint64_t off = static_cast<uint64_t>(p - s.base);
    uint64_t g0 = off / kShadowGranule, g1 = (off + len + kShadowGranule - 1) / kShadowGranule;
    for (uint64_t region = g0 >> 7; region <= (g1 - 1) >> 7; ++region) {
        uint32_t si = static_cast<uint32_t>((uint64_t(gm) * 7919u + region) % LaunchHazards::kStripes);
        std::unique_lock<std::mutex> lock(L.stripe[si]);
        std::vector<std::vector<GStamp>>& spill = L.spill[si];
        uint64_t a = std::max(g0, region << 7), b = std::min(g1, (region + 1) << 7);
        for (uint64_t g = a; g < b; ++g) {
            GStamp& w = s.cells[2 * g];
            GStamp& r = s.cells[2 * g + 1];
            // the plain writer: every access must come after it
            if (w != 0 && !OrderedGm(h, w, true, write)) {
                GmConflict(h, gm, g, acc, w, true);
            }
            // readers and atomic adders since: a read conflicts with the adders, an atomic
            // add with the readers, a plain write with all
            auto check = [&](GStamp e) {
                if (e == 0) {
                    return;
                }
                bool eAtomic = GAtomic(e);
                bool conflicts = acc == GmAcc::Write || (acc == GmAcc::Read ? eAtomic : !eAtomic);
                if (conflicts && !OrderedGm(h, e, eAtomic, write)) {
                    GmConflict(h, gm, g, acc, e, eAtomic);
                }
            };
            std::vector<GStamp>* list = (r != 0 && GApi(r) == kSpill) ? &spill[GSeq(r)] : nullptr;
            if (list != nullptr) {
                for (GStamp e : *list) {
                    check(e);
                }
            } else {
                check(r);
            }
            if (acc == GmAcc::Write) {
                w = me;
                r = 0;
                continue;
            }
            // record this reader / adder (one entry per core, pipe and kind: the latest)
            if (list != nullptr) {
                bool found = false;
                for (GStamp& e : *list) {
                    if (GKey(e) == GKey(me)) {
                        e = me;
                        found = true;
                    }
                }
                if (!found) {
                    list->push_back(me);
                }
            } else if (r == 0 || GKey(r) == GKey(me)) {
                r = me;
            } else {
                spill.push_back({r, me});
                r = MakeG(static_cast<uint32_t>(spill.size() - 1), 0, Pipe::S, false, kSpill);
            }
        }
    }
}

namespace {
// "SetFlag<HardEvent::X>(id)" for messages.
std::string FlagCall(const char* verb, HardEvent e, int32_t id)
{
    return std::string(verb) + "<HardEvent::" + EventName(e) + ">(" + std::to_string(id) + ")";
}

// The flag `verb` (SetFlag / WaitFlag) names, after checking it exists on this core.
FlagSlot& FlagOf(CoreHazards& h, const char* by, const char* verb, HardEvent e, int32_t id)
{
    if (id < 0 || id > 7) {
        Trap(by, FlagCall(verb, e, id) + ": event id out of range [0, 7]");
    }
    if (!EventOnCore(e, h.kind)) {
        Trap(by, FlagCall(verb, e, id) + ": this event does not exist on " + CurCore().label);
    }
    return h.flags[static_cast<int>(e)][id];
}
} // namespace

void FlagSet(const char* by, HardEvent e, int32_t id, int32_t buf)
{
    CoreHazards& h = Hz();
    FlagSlot& f = FlagOf(h, by, "SetFlag", e, id);
    if (f.set) {
        std::string holder = f.by;
        if (f.buf >= 0) {
            holder += " of " + DescribeBuf(CurCore().bufs[f.buf]);
        }
        Trap(by, FlagCall("SetFlag", e, id) + " while the flag is still set by " + holder +
                     " and not yet waited for: a flag is one bit, so one of the two sets is lost and a later "
                     "WaitFlag would hang (use ids from TPipe::AllocEventID / FetchEventID)");
    }
    f.set = true;
    f.by = by;
    f.buf = buf;
    if (h.Checking()) {
        f.clock = h.Fired(PipesOf(e).src);
    }
}

void FlagWait(const char* by, HardEvent e, int32_t id)
{
    CoreHazards& h = Hz();
    FlagSlot& f = FlagOf(h, by, "WaitFlag", e, id);
    if (!f.set) {
        Trap(by, FlagCall("WaitFlag", e, id) + " without a matching SetFlag (the core would hang)");
    }
    f.set = false;
    if (h.Checking()) {
        Pipe dst = PipesOf(e).dst;
        if (dst == Pipe::S) {
            h.Stall(f.clock);
        } else {
            JoinInto(h.Know(dst), f.clock);
        }
    }
}

void Barrier(const char* api, pipe_t p)
{
    CoreHazards& h = Hz();
    if (p == PIPE_ALL) {
        if (h.Checking()) {
            h.Stall(DrainedClock());
        }
        return;
    }
    Pipe q = PipeOf(api, p);
    if (q == Pipe::S) {
        Trap(api, "PipeBarrier<PIPE_S> is not supported: the scalar pipe is in order (docs PipeBarrier)");
    }
    if (!PipeOnCore(q, h.kind)) {
        Trap(api, std::string("PipeBarrier<PIPE_") + PipeName(q) + ">: " + CurCore().label + " has no such pipe");
    }
    if (h.Checking()) {
        Clock& k = h.Know(q);
        k[h.Own(q)] = std::max(k[h.Own(q)], h.issued[static_cast<int>(q)]);
        k[h.L->tIdx] = std::max(k[h.L->tIdx], h.done[static_cast<int>(q)]);
    }
}

std::vector<uint32_t> SetClock(Pipe pipe)
{
    CoreHazards& h = Hz();
    return h.Checking() ? h.Fired(pipe) : Clock();
}

std::vector<uint32_t> DrainedClock()
{
    CoreHazards& h = Hz();
    if (!h.Checking()) {
        return Clock();
    }
    Clock c = h.stall;
    for (int p = 0; p < kPipes; ++p) {
        JoinInto(c, h.Fired(static_cast<Pipe>(p)));
    }
    return c;
}

void StallUntil(const std::vector<uint32_t>& clock)
{
    CoreHazards& h = Hz();
    if (h.Checking() && clock.size() == h.stall.size()) {
        h.Stall(clock);
    }
}

void Join(std::vector<uint32_t>& into, const std::vector<uint32_t>& clock)
{
    if (into.size() < clock.size()) {
        into.resize(clock.size(), 0);
    }
    if (clock.size() == into.size()) {
        JoinInto(into, clock);
    }
}

LaunchHazards* CreateLaunchHazards(const LaunchChecks& checks, uint32_t cores, const std::vector<GmBuffer>& gm)
{
    auto* L = new LaunchHazards();
    L->checks = checks;
    L->cores = cores;
    L->tIdx = cores * kPipes;
    L->width = L->tIdx + 1;
    L->times.assign(cores, CoreTime());
    if (checks.hazards) {
        for (const GmBuffer& b : gm) {
            GmShadow s;
            s.base = b.base;
            s.granules = (b.len + kShadowGranule - 1) / kShadowGranule;
            s.cells = static_cast<GStamp*>(ShadowAlloc(s.granules * 2 * sizeof(GStamp)));
            L->gm.push_back(s);
        }
    }
    return L;
}

const std::vector<CoreTime>& LaunchTimes(const LaunchHazards* L) { return L->times; }

void DestroyLaunchHazards(LaunchHazards* L)
{
    if (L == nullptr) {
        return;
    }
    for (GmShadow& s : L->gm) {
        ShadowFree(s.cells, s.granules * 2 * sizeof(GStamp));
    }
    delete L;
}

namespace {
size_t CellBytes(uint32_t capacity) { return capacity / kShadowGranule * sizeof(LCell); }
} // namespace

void HazardCoreBegin()
{
    Core& c = CurCore();
    auto* h = new CoreHazards();
    h->L = c.launchHz;
    h->self = c.index;
    h->kind = c.kind;
    h->timed = h->Checking() && h->L->checks.timeline;
    if (h->Checking()) {
        for (auto& k : h->know) {
            k.assign(h->L->width, 0);
        }
        h->stall.assign(h->L->width, 0);
        for (int m = 0; m < static_cast<int>(Mem::COUNT); ++m) {
            if (c.arena[m].data != nullptr) {
                h->cells[m] = static_cast<LCell*>(ShadowAlloc(CellBytes(c.arena[m].capacity)));
            }
        }
    }
    c.hz = h;
}

void HazardCoreEnd(bool returned)
{
    Core& c = CurCore();
    CoreHazards* h = c.hz;
    if (h == nullptr) {
        return;
    }
    std::string dangling;
    for (int e = 0; e < static_cast<int>(HardEvent::MAX) && dangling.empty(); ++e) {
        for (int id = 0; id < 8; ++id) {
            const FlagSlot& f = h->flags[e][id];
            if (f.set) {
                dangling = std::string("HardEvent::") + EventName(static_cast<HardEvent>(e)) + " id " +
                           std::to_string(id) + " set by " + f.by +
                           (f.buf >= 0 ? " of " + DescribeBuf(c.bufs[f.buf]) : std::string());
                break;
            }
        }
    }
    for (int m = 0; m < static_cast<int>(Mem::COUNT); ++m) {
        ShadowFree(h->cells[m], CellBytes(c.arena[m].capacity));
    }
    if (h->timed) {
        h->time.end = h->sNow;
        for (int p = 0; p < kPipes; ++p) {
            h->time.end = std::max(h->time.end, h->done[p]);
        }
        h->L->times[h->self] = std::move(h->time);
    }
    delete h;
    c.hz = nullptr;
    if (returned && !dangling.empty()) {
        Trap("kernel end", "flag " + dangling +
                               " is still set when the kernel returns: its WaitFlag is missing (the next "
                               "kernel on this core would inherit it)");
    }
}

} // namespace sim
} // namespace AscendC
