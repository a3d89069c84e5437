// The checks every API call makes on its operands (liveness, bounds, alignment,
// definedness) and the vector mask planning, out of line so kernel translation units stay
// small. Every failure is a trap naming the API, the operand role and the buffer.
#include "kernel_operator.h"

namespace AscendC {
namespace sim {

std::string DescribeBuf(const BufDesc& b)
{
    return "`" + b.name + "` (" + kMemName[static_cast<int>(b.mem)] + " [" + Hex(b.offset) + ", +" + Hex(b.len) + "))";
}

const BufDesc& AliveRef(const TensorRef& t, const char* api, const char* role)
{
    Core& c = CurCore();
    if (t.buf < 0 || static_cast<size_t>(t.buf) >= c.bufs.size()) {
        Trap(api, std::string(role) + ": LocalTensor was never allocated (no TQue::AllocTensor / TBuf::Get)");
    }
    const BufDesc& b = c.bufs[t.buf];
    if (b.released) {
        Trap(api, std::string(role) + ": buffer " + DescribeBuf(b) + " used after its TPipe was destroyed");
    }
    if (b.gen != t.gen) {
        Trap(api, std::string(role) + ": use of freed LocalTensor: buffer " + DescribeBuf(b) +
                      " was released by FreeTensor");
    }
    if (b.enqueued) {
        Trap(api, std::string(role) + ": LocalTensor of buffer " + DescribeBuf(b) +
                      " used while enqueued (EnQue without DeQue)");
    }
    return b;
}

[[noreturn]] static void UnwrittenTrap(const BufDesc& b, uint32_t off, const char* api, const char* role)
{
    Trap(api, std::string(role) + ": read of never-written local memory at " + kMemName[static_cast<int>(b.mem)] + " " +
                  Hex(off) + " (byte " + std::to_string(off - b.offset) + " of buffer " + DescribeBuf(b) + ")");
}

uint8_t* AccessRef(const TensorRef& t, const char* api, const char* role, uint64_t byteOff, uint64_t len, Acc acc,
                   uint32_t align)
{
    const BufDesc& b = AliveRef(t, api, role);
    if (align > 1 && (t.off % align) != 0) {
        Trap(api, std::string(role) + ": misaligned address: " + kMemName[static_cast<int>(b.mem)] + " offset " +
                      Hex(t.off) + " is not " + std::to_string(align) + "-byte aligned, buffer " + DescribeBuf(b));
    }
    uint64_t start = static_cast<uint64_t>(t.off) + byteOff;
    if (start < b.offset || start + len > static_cast<uint64_t>(b.offset) + b.len) {
        Trap(api, std::string(role) + ": local memory overflow: access [" + Hex(start) + ", " + Hex(start + len) +
                      ") outside buffer " + DescribeBuf(b));
    }
    if ((acc == Acc::Read || acc == Acc::ReadWrite) && len > 0) {
        uint32_t bad = ReadLocal(b.mem, static_cast<uint32_t>(start), static_cast<uint32_t>(len));
        if (bad != UINT32_MAX) {
            UnwrittenTrap(b, bad, api, role);
        }
    }
    if ((acc == Acc::Write || acc == Acc::ReadWrite) && len > 0) {
        WriteLocal(b.mem, static_cast<uint32_t>(start), static_cast<uint32_t>(len));
    }
    return ArenaOf(b.mem).data + start;
}

void RequireDefined(const BufDesc& b, uint32_t absOff, const char* api, const char* role)
{
    if (!AllWritten(b.mem, absOff, kShadowGranule)) {
        UnwrittenTrap(b, absOff, api, role);
    }
}

uint8_t* GmAccessRef(const void* addr, int gm, const char* api, const char* role, uint64_t byteOff, uint64_t len)
{
    CheckAbort();
    if (addr == nullptr) {
        Trap(api, std::string(role) + ": GlobalTensor used before SetGlobalBuffer");
    }
    if (gm < 0) {
        Trap(api, std::string(role) + ": GM address " + Hex(reinterpret_cast<uint64_t>(addr)) +
                      " is not inside any registered GM buffer");
    }
    const GmBuffer& buf = GmAt(gm);
    int64_t s = static_cast<int64_t>(static_cast<const uint8_t*>(addr) - buf.base) + static_cast<int64_t>(byteOff);
    if (s < 0 || static_cast<uint64_t>(s) + len > buf.len) {
        Trap(api, std::string(role) + ": GM out of bounds: buffer `" + buf.name + "` (" + std::to_string(buf.len) +
                      " bytes) accessed at bytes [" + std::to_string(s) + ", " + std::to_string(s + int64_t(len)) +
                      ")");
    }
    return buf.base + s;
}

void FitTrap(const char* type, const char* field, Wide v, const char* fieldType, uint64_t max, uint64_t truncated)
{
    Trap(type, std::string(field) + " " + std::to_string(v) + " does not fit its " + fieldType + " [0, " +
                   std::to_string(max) + "]: the device would silently truncate it to " + std::to_string(truncated));
}

void InRange(const char* api, const char* field, uint64_t v, uint64_t lo, uint64_t hi)
{
    if (v < lo || v > hi) {
        Trap(api, std::string(field) + " " + std::to_string(v) + " outside its documented range [" +
                      std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
}

void RequireCoreKind(const char* api, CoreKind want)
{
    if (CurCore().kind != want) {
        Trap(api, std::string("this data path is only available on ") + (want == CoreKind::AIV ? "AIV" : "AIC") +
                      " cores (running on " + CurCore().label + ")");
    }
}

namespace {
void RequireKnownMask(const char* api)
{
    const Core& c = CurCore();
    if (c.maskLeftBy != nullptr) {
        Trap(api, std::string("isSetMask = false uses the mask register, which ") + c.maskLeftBy +
                      " left holding an internal pattern: set it (SetVectorMask) first");
    }
}
} // namespace

LanePlan PlanFromCount(const char* api, uint64_t mask, Wide repeatTime, uint32_t lanes, bool isSetMask)
{
    Core& c = CurCore();
    LanePlan p;
    p.lanes = lanes;
    if (!isSetMask) {
        RequireKnownMask(api);
    }
    if (c.maskMode == MaskMode::COUNTER) {
        if (isSetMask) {
            // the API turns an int mask into a bit pattern whatever the mode (SetMask)
            Trap(api, "an int mask in counter mode is written to the register as a bit pattern, not a count: "
                      "pass the count as mask[] = {count, 0} or set it and use isSetMask = false");
        }
        uint64_t count = c.maskLow;
        p.counter = true;
        p.repeats = static_cast<uint32_t>((count + lanes - 1) / lanes);
        p.lastLanes = static_cast<uint32_t>(count - uint64_t(p.repeats == 0 ? 0 : p.repeats - 1) * lanes);
        return p;
    }
    // level-0 repeatTime [0, 255] (docs 基础API/Memory矢量计算/SIMD计算说明/高维切分.md); its
    // uint8_t parameter is widened (sim/fields.h) so a larger value is seen, not truncated
    p.repeats = Fit<uint8_t>(api, "repeatTime", repeatTime);
    if (!isSetMask) {
        p.lo = c.maskLow;
        p.hi = c.maskHigh;
        return p;
    }
    if (mask > lanes) {
        Trap(api, "mask " + std::to_string(mask) + " exceeds the " + std::to_string(lanes) + " lanes of one repeat");
    }
    p.lo = mask >= 64 ? ~0ull : ((1ull << mask) - 1);
    p.hi = mask >= 128 ? ~0ull : (mask > 64 ? ((1ull << (mask - 64)) - 1) : 0);
    // the mask stays in the register after the call
    c.maskLow = p.lo;
    c.maskHigh = p.hi;
    c.maskLeftBy = nullptr;
    return p;
}

LanePlan PlanFromBits(const char* api, const uint64_t mask[], Wide repeatTime, uint32_t lanes, bool isSetMask)
{
    Core& c = CurCore();
    if (!isSetMask) {
        RequireKnownMask(api);
    } else {
        c.maskLow = mask[0];
        c.maskHigh = lanes > 64 ? mask[1] : 0;
        c.maskLeftBy = nullptr;
    }
    LanePlan p;
    p.lanes = lanes;
    if (c.maskMode == MaskMode::COUNTER) {
        // counter mode: the low word is the element count (docs 掩码: mask[] = {count, 0})
        uint64_t count = c.maskLow;
        p.counter = true;
        p.repeats = static_cast<uint32_t>((count + lanes - 1) / lanes);
        p.lastLanes = static_cast<uint32_t>(count - uint64_t(p.repeats == 0 ? 0 : p.repeats - 1) * lanes);
        return p;
    }
    // level-0 repeatTime [0, 255] (docs 基础API/Memory矢量计算/SIMD计算说明/高维切分.md); its
    // uint8_t parameter is widened (sim/fields.h) so a larger value is seen, not truncated
    p.repeats = Fit<uint8_t>(api, "repeatTime", repeatTime);
    p.lo = c.maskLow;
    p.hi = c.maskHigh;
    return p;
}

VecOperand MakeOperand(const char* api, const char* role, const TensorRef& t, uint32_t es, uint32_t blk, uint32_t rep,
                       const LanePlan& p, uint32_t align)
{
    const BufDesc& b = AliveRef(t, api, role);
    if (b.mem != Mem::UB) {
        Trap(api, std::string(role) + ": vector operands must be in UB, buffer " + DescribeBuf(b));
    }
    VecOperand o;
    o.buf = &b;
    o.arena = ArenaOf(Mem::UB).data;
    o.off = t.off;
    o.es = es;
    o.blk = blk;
    o.rep = rep;
    if (align > 1 && t.off % align != 0) {
        Trap(api, std::string(role) + ": misaligned address: UB offset " + Hex(t.off) + " is not " +
                      std::to_string(align) + "-byte aligned, buffer " + DescribeBuf(b));
    }
    if (p.repeats == 0) {
        return o;
    }
    // the farthest lane is in the last repeat (or, in counter mode, possibly the one before)
    uint64_t end = 0;
    uint32_t rs[2] = {p.repeats - 1, p.repeats >= 2 ? p.repeats - 2 : p.repeats - 1};
    for (uint32_t r : rs) {
        int h = p.HighLane(r);
        if (h >= 0) {
            end = std::max<uint64_t>(end, uint64_t(o.LaneOff(r, h)) + o.es);
        }
    }
    if (end > uint64_t(b.offset) + b.len) {
        Trap(api, std::string(role) + ": local memory overflow: access up to " + Hex(end) + " outside buffer " +
                      DescribeBuf(b));
    }
    return o;
}

void LaneTrap(const char* api, const char* role, const VecOperand& o, uint32_t off)
{
    UnwrittenTrap(*o.buf, off, api, role);
}

} // namespace sim
} // namespace AscendC
