// Cube path of the model: LoadData2D, Mmad and Fixpipe (layouts documented in
// include/sim/cube.h and include/sim/fixpipe.h). Compiled once into the runtime library
// so kernel translation units only carry thin wrappers.
#include <cstring>

#include "kernel_operator.h"

namespace AscendC {
namespace sim {

namespace {
// unitFlag takes 0, 2 or 3 (docs 基础API/矩阵计算（ISASI）/Mmad计算/Mmad.md, 矩阵计算的搬出/Fixpipe（L0C到GM数据搬运）.md)
void CheckUnitFlag(const char* api, uint8_t unitFlag)
{
    if (unitFlag != 0 && unitFlag != 2 && unitFlag != 3) {
        Trap(api, "unitFlag " + std::to_string(unitFlag) + " is not one of the documented values 0, 2, 3");
    }
}
} // namespace

void LoadData2D(const TensorRef& dst, const TensorRef& src, uint32_t elemSize, const LoadData2DParams& p)
{
    const char* api = "LoadData";
    Op op(api, Pipe::MTE1);
    RequireCoreKind(api, CoreKind::AIC);
    Mem md = AliveRef(dst, api, "dst").mem;
    if (AliveRef(src, api, "src").mem != Mem::L1 || (md != Mem::L0A && md != Mem::L0B)) {
        Trap(api, "LoadData2D supports L1 (A1/B1) -> L0A (A2) / L0B (B2) only");
    }
    if (p.ifTranspose && elemSize != 2) {
        Trap(api, "ifTranspose needs a 16-bit element type");
    }
    if (p.addrMode != 0) {
        Trap(api, "addrMode 1 is only supported on the GM -> L1 path");
    }
    // startIndex, srcStride, dstGap [0, 65535] and repeatTimes [0, 255] (0: NOP) are the
    // whole range of their fields (docs 基础API/矩阵计算（ISASI）/矩阵计算的搬入/LoadData_2D.md):
    // the LoadData2DParams constructor traps on a value that does not fit (sim/fields.h).
    if (p.repeatTimes == 0) {
        return;
    }
    AccessRef(dst, api, "dst", 0, 0, Acc::None, 512);
    AccessRef(src, api, "src", 0, 0, Acc::None, 32);
    Arena& as = ArenaOf(Mem::L1);
    Arena& ad = ArenaOf(md);
    for (uint32_t r = 0; r < p.repeatTimes; ++r) {
        uint64_t so = (uint64_t(p.startIndex) + uint64_t(r) * p.srcStride) * 512;
        uint64_t dof = uint64_t(r) * (p.dstGap + 1u) * 512;
        const uint8_t* s = AccessRef(src, api, "src", so, 512, Acc::None, 32);
        uint8_t* d = AccessRef(dst, api, "dst", dof, 512, Acc::None, 512);
        // definedness moves with the data, so the fractal is read without the poison check
        const uint32_t sAbs = src.off + static_cast<uint32_t>(so), dAbs = dst.off + static_cast<uint32_t>(dof);
        HazardLocal(Mem::L1, sAbs, 512, false);
        const uint8_t* ss = as.shadow + sAbs / kShadowGranule;
        if (!p.ifTranspose) {
            uint8_t defined[16];
            std::memcpy(defined, ss, 16);
            std::memmove(d, s, 512);
            WriteLocal(md, dAbs, 512);
            std::memcpy(ad.shadow + dAbs / kShadowGranule, defined, 16);
        } else {
            // dst[j][i] = src[i][j]; a transposed row is defined only if all source rows are
            uint16_t in[256], out[256];
            std::memcpy(in, s, 512);
            for (int i = 0; i < 16; ++i) {
                for (int j = 0; j < 16; ++j) {
                    out[j * 16 + i] = in[i * 16 + j];
                }
            }
            bool all = std::memchr(ss, 0, 16) == nullptr;
            std::memcpy(d, out, 512);
            WriteLocal(md, dAbs, 512, all);
        }
    }
}

void LoadData2DTranspose(const TensorRef& dst, const TensorRef& src, uint32_t elemSize,
                         const LoadData2dTransposeParams& p)
{
    const char* api = "LoadDataWithTranspose";
    Op op(api, Pipe::MTE1);
    RequireCoreKind(api, CoreKind::AIC);
    Mem md = AliveRef(dst, api, "dst").mem;
    if (AliveRef(src, api, "src").mem != Mem::L1 || (md != Mem::L0A && md != Mem::L0B)) {
        Trap(api, "LoadDataWithTranspose supports L1 (A1/B1) -> L0A (A2) / L0B (B2) only");
    }
    if (elemSize != 1 && elemSize != 2) {
        Trap(api, "only 8-bit and 16-bit element types are modelled (b32/b4 squares are not)");
    }
    if (p.repeatTimes == 0) {
        return;
    }
    // A square is `side` rows of 32 bytes: 16 x 16 b16 (one fractal), 32 x 32 b8 (two).
    const uint32_t side = elemSize == 2 ? 16 : 32;
    const uint32_t fractals = side / 16;
    const uint64_t squareBytes = uint64_t(side) * 32;
    AccessRef(dst, api, "dst", 0, 0, Acc::None, 512);
    AccessRef(src, api, "src", 0, 0, Acc::None, 32);
    Arena& as = ArenaOf(Mem::L1);
    Arena& ad = ArenaOf(md);
    for (uint32_t r = 0; r < p.repeatTimes; ++r) {
        int64_t sq = p.addrMode == 0 ? int64_t(p.startIndex) + int64_t(r) * p.srcStride
                                     : int64_t(p.startIndex) - int64_t(r) * p.srcStride;
        if (sq < 0) {
            Trap(api, "addrMode 1 steps before the start of src (square " + std::to_string(sq) + ")");
        }
        uint64_t so = uint64_t(sq) * squareBytes;
        const uint8_t* s = AccessRef(src, api, "src", so, squareBytes, Acc::None, 32);
        HazardLocal(Mem::L1, src.off + static_cast<uint32_t>(so), static_cast<uint32_t>(squareBytes), false);
        const uint8_t* ss = as.shadow + (src.off + so) / kShadowGranule;
        bool defined = std::memchr(ss, 0, side) == nullptr;
        for (uint32_t j = 0; j < fractals; ++j) {
            uint64_t dof = (uint64_t(r) * (p.dstGap + 1u) + uint64_t(j) * (p.dstFracGap + 1u)) * 512;
            uint8_t* d = AccessRef(dst, api, "dst", dof, 512, Acc::None, 512);
            // dst row k of fractal j is column 16j + k of the square, element c its row c
            for (uint32_t k = 0; k < 16; ++k) {
                for (uint32_t c = 0; c < side; ++c) {
                    std::memcpy(d + (k * side + c) * elemSize, s + c * 32 + (16 * j + k) * elemSize, elemSize);
                }
            }
            WriteLocal(md, dst.off + static_cast<uint32_t>(dof), 512, defined);
        }
    }
}

namespace {

// C[M x N] += A[M x K] * B[K x N], all row-major, M and N multiples of 16, in 4 x 16
// register tiles written with vector extensions (a generic loop with run-time sizes does
// not keep its accumulators in registers). fp-contract=fast lets the multiply-add fuse;
// for bf16/fp16/int8 inputs the products are exact, so fusing changes nothing.
template <typename A>
__attribute__((optimize("fp-contract=fast"))) void GemmTile(const A* a, const A* b, A* c, uint32_t M, uint32_t N,
                                                            uint32_t K)
{
    typedef A V8 __attribute__((vector_size(8 * sizeof(A))));
    auto load = [](const A* p) {
        V8 v;
        std::memcpy(&v, p, sizeof(V8));
        return v;
    };
    auto store = [](A* p, V8 v) { std::memcpy(p, &v, sizeof(V8)); };
    for (uint32_t j0 = 0; j0 < N; j0 += 16) {
        for (uint32_t i0 = 0; i0 < M; i0 += 4) {
            A* ct = c + size_t(i0) * N + j0;
            V8 c00 = load(ct), c01 = load(ct + 8);
            V8 c10 = load(ct + N), c11 = load(ct + N + 8);
            V8 c20 = load(ct + 2 * N), c21 = load(ct + 2 * N + 8);
            V8 c30 = load(ct + 3 * N), c31 = load(ct + 3 * N + 8);
            const A* ar = a + size_t(i0) * K;
            const A* br = b + j0;
            for (uint32_t k = 0; k < K; ++k, br += N) {
                V8 b0 = load(br), b1 = load(br + 8);
                A a0 = ar[k], a1 = ar[K + k], a2 = ar[2 * K + k], a3 = ar[3 * K + k];
                c00 += b0 * a0;
                c01 += b1 * a0;
                c10 += b0 * a1;
                c11 += b1 * a1;
                c20 += b0 * a2;
                c21 += b1 * a2;
                c30 += b0 * a3;
                c31 += b1 * a3;
            }
            store(ct, c00);
            store(ct + 8, c01);
            store(ct + N, c10);
            store(ct + N + 8, c11);
            store(ct + 2 * N, c20);
            store(ct + 2 * N + 8, c21);
            store(ct + 3 * N, c30);
            store(ct + 3 * N + 8, c31);
        }
    }
}

template <typename A, typename U>
inline A Widen(U v)
{
    if constexpr (std::is_same_v<U, bfloat16_t>) {
        return Bf16BitsToF32(v.bits_);
    } else if constexpr (std::is_same_v<U, half>) {
        return F16BitsToF32(v.bits_);
    } else {
        return static_cast<A>(v);
    }
}

// A: fp32 accumulator type (float or int32_t); U: input element type.
template <typename A, typename U>
void MmadTyped(const TensorRef& dst, const TensorRef& fm, const TensorRef& filter, const MmadParams& p)
{
    const char* api = "Mmad";
    Op op(api, Pipe::M);
    RequireCoreKind(api, CoreKind::AIC);
    const BufDesc& ba = AliveRef(fm, api, "fm");
    const BufDesc& bb = AliveRef(filter, api, "filter");
    const BufDesc& bc = AliveRef(dst, api, "dst");
    if (ba.mem != Mem::L0A || bb.mem != Mem::L0B || bc.mem != Mem::L0C) {
        Trap(api, "operands must be dst in L0C (CO1), fm in L0A (A2), filter in L0B (B2)");
    }
    if (p.cmatrixSource || p.isBias) {
        Trap(api, "bias-table initialisation (cmatrixSource / isBias) is not modelled by the sim");
    }
    // m, n, k [0, 4095], 0 a NOP (docs 基础API/矩阵计算（ISASI）/Mmad计算/Mmad.md)
    InRange(api, "m", p.m, 0, 4095);
    InRange(api, "n", p.n, 0, 4095);
    InRange(api, "k", p.k, 0, 4095);
    CheckUnitFlag(api, p.unitFlag);
    if (p.m == 0 || p.n == 0 || p.k == 0) {
        return;
    }
    if ((p.m / 16) * (p.n / 16) >= 10) {
        SamePipeOrderedByHardware(); // Mmad.md: smaller products need PipeBarrier<PIPE_M>
    }
    constexpr uint32_t c0 = 32 / sizeof(U);
    const uint32_t mB = (p.m + 15) / 16, nB = (p.n + 15) / 16;
    const uint32_t kB = (std::is_same_v<U, float> && p.kDirectionAlign) ? (p.k + 15) / 16 * 2 : (p.k + c0 - 1) / c0;
    const uint32_t mPad = mB * 16, nPad = nB * 16, kPad = kB * c0;
    const U* a = reinterpret_cast<const U*>(AccessRef(fm, api, "fm", 0, uint64_t(mB) * kB * 512, Acc::None, 512));
    const U* b = reinterpret_cast<const U*>(AccessRef(filter, api, "filter", 0, uint64_t(kB) * nB * 512, Acc::None, 512));
    A* c = reinterpret_cast<A*>(AccessRef(dst, api, "dst", 0, uint64_t(mB) * nB * 1024, Acc::None, 1024));
    // the cube reads whole fractals; definedness matters for the rows the result depends on
    // (each fractal row is one 32-byte block)
    const bool accumulate = !p.cmatrixInitVal;
    HazardLocal(Mem::L0A, fm.off, mB * kB * 512, false);
    HazardLocal(Mem::L0B, filter.off, kB * nB * 512, false);
    if (accumulate) {
        HazardLocal(Mem::L0C, dst.off, mB * nB * 1024, false);
    }
    for (uint32_t mb = 0; mb < mB; ++mb) {
        for (uint32_t kb = 0; kb < kB; ++kb) {
            for (uint32_t r = 0; r < 16 && mb * 16 + r < p.m; ++r) {
                RequireDefined(ba, fm.off + ((mb * kB + kb) * 16 + r) * 32, api, "fm");
            }
        }
    }
    for (uint32_t kb = 0; kb < kB; ++kb) {
        for (uint32_t nb = 0; nb < nB; ++nb) {
            for (uint32_t r = 0; r < 16 && nb * 16 + r < p.n; ++r) {
                RequireDefined(bb, filter.off + ((kb * nB + nb) * 16 + r) * 32, api, "filter");
            }
        }
    }
    if (accumulate) {
        for (uint32_t nb = 0; nb < nB; ++nb) {
            uint32_t cols = std::min<uint32_t>(16, p.n - nb * 16);
            for (uint32_t i = 0; i < p.m; ++i) {
                uint32_t o = dst.off + (nb * mPad + i) * 64;
                RequireDefined(bc, o, api, "dst (accumulated)");
                if (cols > 8) {
                    RequireDefined(bc, o + 32, api, "dst (accumulated)");
                }
            }
        }
    }
    Core& core = CurCore();
    std::vector<A>* scratch;
    if constexpr (std::is_same_v<A, float>) {
        scratch = core.scratchF;
    } else {
        scratch = core.scratchI;
    }
    std::vector<A>& as = scratch[0];
    std::vector<A>& bs = scratch[1];
    std::vector<A>& cs = scratch[2];
    as.resize(size_t(mPad) * kPad);
    bs.resize(size_t(kPad) * nPad);
    cs.resize(size_t(mPad) * nPad);
    // unpack the fractal layouts into row-major scratch once per call
    for (uint32_t mb = 0; mb < mB; ++mb) {
        for (uint32_t kb = 0; kb < kB; ++kb) {
            const U* f = a + size_t(mb * kB + kb) * 16 * c0;
            for (uint32_t r = 0; r < 16; ++r) {
                A* row = &as[size_t(mb * 16 + r) * kPad + kb * c0];
                for (uint32_t e = 0; e < c0; ++e) {
                    row[e] = Widen<A>(f[r * c0 + e]);
                }
            }
        }
    }
    for (uint32_t kb = 0; kb < kB; ++kb) {
        for (uint32_t nb = 0; nb < nB; ++nb) {
            const U* f = b + size_t(kb * nB + nb) * 16 * c0;
            for (uint32_t e = 0; e < c0; ++e) {
                A* row = &bs[size_t(kb * c0 + e) * nPad + nb * 16];
                for (uint32_t nn = 0; nn < 16; ++nn) {
                    row[nn] = Widen<A>(f[nn * c0 + e]);
                }
            }
        }
    }
    for (uint32_t nb = 0; nb < nB; ++nb) {
        for (uint32_t i = 0; i < mPad; ++i) {
            A* crow = &cs[size_t(i) * nPad + nb * 16];
            if (accumulate) {
                std::memcpy(crow, c + (size_t(nb) * mPad + i) * 16, 16 * sizeof(A));
            } else {
                std::memset(crow, 0, 16 * sizeof(A));
            }
        }
    }
    GemmTile<A>(as.data(), bs.data(), cs.data(), mPad, nPad, kPad);
    for (uint32_t nb = 0; nb < nB; ++nb) {
        for (uint32_t i = 0; i < mPad; ++i) {
            std::memcpy(c + (size_t(nb) * mPad + i) * 16, &cs[size_t(i) * nPad + nb * 16], 16 * sizeof(A));
        }
    }
    WriteLocal(Mem::L0C, dst.off, mB * nB * 1024);
    uint64_t macs = uint64_t(p.m) * p.n * p.k;
    // depth per cube cycle of a 16×16 output fractal: b16 16, int8 32, fp32 a quarter of b16
    WorkMmad(p.m, p.n, p.k, sizeof(U) == 1 ? 32 : sizeof(U) == 2 ? 16 : 4);
    if constexpr (std::is_same_v<U, bfloat16_t>) {
        core.counters.macBf16 += macs;
    } else if constexpr (std::is_same_v<U, half>) {
        core.counters.macF16 += macs;
    } else if constexpr (std::is_same_v<U, float>) {
        core.counters.macF32 += macs;
    } else {
        core.counters.macI8 += macs;
    }
}

} // namespace

void MmadRun(ElemKind in, const TensorRef& dst, const TensorRef& fm, const TensorRef& filter, const MmadParams& p)
{
    switch (in) {
        case ElemKind::BF16: MmadTyped<float, bfloat16_t>(dst, fm, filter, p); break;
        case ElemKind::F16: MmadTyped<float, half>(dst, fm, filter, p); break;
        case ElemKind::F32: MmadTyped<float, float>(dst, fm, filter, p); break;
        case ElemKind::I8: MmadTyped<int32_t, int8_t>(dst, fm, filter, p); break;
        default: Trap("Mmad", "unsupported input type");
    }
}

namespace {
// DEQF16's scalar M1: QUANT_PRE bits 0..31 as a float the hardware reads as (1, 8, 10)
// (bits 13..31; docs 基础API/矩阵计算（ISASI）/矩阵搬出关键特性说明/随路量化.md, table 1).
// With the mode control bit (36) set the int32 would first shift right N bits to int16:
// not modelled, so it traps.
inline float DeqScale(uint64_t quantPre)
{
    if ((quantPre >> 36) & 1) {
        Trap("Fixpipe", "DEQF16 with the mode control bit (deqScalar bit 36) is not modelled");
    }
    const uint32_t bits = static_cast<uint32_t>(quantPre) & 0xFFFFE000u;
    float m1;
    std::memcpy(&m1, &bits, sizeof(m1));
    return m1;
}

// One L0C element out: optional ReLU, then NoQuant, a float cast (F322F16 / F322BF16) or
// DEQF16 (int32 -> float, times `deq`, to half), each rounding to nearest even.
template <typename T, typename U>
inline T FixConvert(U v, bool relu, float deq)
{
    if (relu) {
        if constexpr (std::is_integral_v<U>) {
            v = v > 0 ? v : 0;
        } else {
            v = (v > 0.0f || std::isnan(v)) ? v : 0.0f;
        }
    }
    if constexpr (std::is_same_v<T, U>) {
        return v;
    } else if constexpr (std::is_integral_v<U>) {
        return RoundToFloatType<T>(static_cast<float>(v) * deq, RoundMode::CAST_RINT, true);
    } else {
        return RoundToFloatType<T>(v, RoundMode::CAST_RINT, true); // no Inf/NaN mode in Fixpipe
    }
}

template <typename T, typename U>
void FixpipeTyped(bool nd, void* dstAddr, int dstGm, const TensorRef& src, const FixpipeParamsV220& p,
                  float deq = 1.0f)
{
    const char* api = "Fixpipe";
    Op op(api, Pipe::FIX);
    RequireCoreKind(api, CoreKind::AIC);
    const BufDesc& bs = AliveRef(src, api, "src");
    if (bs.mem != Mem::L0C) {
        Trap(api, "Fixpipe source must be in L0C (CO1)");
    }
    // FixpipeParamsV220 ranges (docs 基础API/矩阵计算（ISASI）/矩阵计算的搬出/Fixpipe（L0C到GM数据搬运）.md):
    // nSize [0, 4095]; mSize [0, 8192] with NZ2ND, else [0, 65535]; dstStride not 0;
    // srcNdStride [0, 512]; srcStride, ndNum and dstNdStride [0, 65535] are their uint16_t
    // fields. A zero nSize, mSize or ndNum is a NOP.
    InRange(api, "nSize", p.nSize, 0, 4095);
    InRange(api, "mSize", p.mSize, 0, nd ? 8192 : 65535);
    InRange(api, "dstStride", p.dstStride, 1, UINT32_MAX);
    InRange(api, "srcNdStride", p.srcNdStride, 0, 512);
    CheckUnitFlag(api, p.unitFlag);
    if (p.nSize == 0 || p.mSize == 0 || p.ndNum == 0) {
        return;
    }
    const uint32_t nB = (p.nSize + 15) / 16;
    const uint64_t fractalElems = 16 * 16;
    uint64_t srcElems =
        uint64_t(p.ndNum - 1) * p.srcNdStride * fractalElems + (uint64_t(nB - 1) * p.srcStride + p.mSize) * 16;
    const U* s = reinterpret_cast<const U*>(AccessRef(src, api, "src", 0, srcElems * sizeof(U), Acc::None, 64));
    HazardLocal(Mem::L0C, src.off, static_cast<uint32_t>(srcElems * sizeof(U)), false);
    uint64_t dstSpan;
    if (nd) {
        dstSpan = (uint64_t(p.ndNum - 1) * p.dstNdStride + uint64_t(p.mSize - 1) * p.dstStride + p.nSize) * sizeof(T);
    } else {
        if (p.ndNum != 1 || p.nSize % 16 != 0) {
            Trap(api, "CFG_NZ output needs ndNum == 1 and nSize a multiple of 16");
        }
        dstSpan = uint64_t(nB - 1) * p.dstStride * 32 + (uint64_t(p.mSize) * 16) * sizeof(T);
    }
    uint8_t* d = GmAccessRef(dstAddr, dstGm, api, "dst", 0, dstSpan);
    std::vector<T> row(nB * 16);
    for (uint32_t q = 0; q < p.ndNum; ++q) {
        const U* sq = s + uint64_t(q) * p.srcNdStride * fractalElems;
        for (uint32_t i = 0; i < p.mSize; ++i) {
            for (uint32_t jb = 0; jb < nB; ++jb) {
                uint32_t cols = std::min<uint32_t>(16, p.nSize - jb * 16);
                uint64_t e = (uint64_t(jb) * p.srcStride + i) * 16;
                uint32_t off = src.off + static_cast<uint32_t>(e * sizeof(U));
                RequireDefined(bs, off, api, "src");
                if (cols * sizeof(U) > 32) {
                    RequireDefined(bs, off + 32, api, "src");
                }
                for (uint32_t j = 0; j < cols; ++j) {
                    row[jb * 16 + j] = FixConvert<T, U>(sq[e + j], p.reluEn, deq);
                }
                if (!nd) {
                    uint64_t o = uint64_t(jb) * p.dstStride * 32 + uint64_t(i) * 16 * sizeof(T);
                    GmStore(api, KindOf<T>(), dstGm, d + o, reinterpret_cast<const uint8_t*>(&row[jb * 16]), 16 * sizeof(T));
                }
            }
            if (nd) {
                uint64_t o = (uint64_t(q) * p.dstNdStride + uint64_t(i) * p.dstStride) * sizeof(T);
                GmStore(api, KindOf<T>(), dstGm, d + o, reinterpret_cast<const uint8_t*>(row.data()), p.nSize * sizeof(T));
            }
        }
    }
}
} // namespace

void FixpipeRun(ElemKind out, ElemKind in, bool nd, void* dstAddr, int dstGm, const TensorRef& src,
                const FixpipeParamsV220& p)
{
    const char* api = "Fixpipe";
    QuantMode_t q = p.quantPre;
    if (in == ElemKind::F32 && out == ElemKind::F32 && q == QuantMode_t::NoQuant) {
        FixpipeTyped<float, float>(nd, dstAddr, dstGm, src, p);
    } else if (in == ElemKind::I32 && out == ElemKind::I32 && q == QuantMode_t::NoQuant) {
        FixpipeTyped<int32_t, int32_t>(nd, dstAddr, dstGm, src, p);
    } else if (in == ElemKind::F32 && out == ElemKind::F16 && q == QuantMode_t::F322F16) {
        FixpipeTyped<half, float>(nd, dstAddr, dstGm, src, p);
    } else if (in == ElemKind::F32 && out == ElemKind::BF16 && q == QuantMode_t::F322BF16) {
        FixpipeTyped<bfloat16_t, float>(nd, dstAddr, dstGm, src, p);
    } else if (in == ElemKind::I32 && out == ElemKind::F16 && q == QuantMode_t::DEQF16) {
        FixpipeTyped<half, int32_t>(nd, dstAddr, dstGm, src, p, DeqScale(p.deqScalar));
    } else {
        Trap(api, "unsupported (L0C type, output type, quantPre = " + std::to_string(int(q)) +
                      ") combination: use NoQuant for float/int32 output, F322F16 for half, F322BF16 for "
                      "bfloat16_t, DEQF16 for int32 to half");
    }
}

} // namespace sim
} // namespace AscendC
