//! Throughput of the sim on the two shapes of work a layer consists of, each next to a
//! baseline measured in the same run:
//!  - a 1024 x 1024 x 1024 bf16 matmul through the cube path (GM -> L1 -> L0A/L0B ->
//!    Mmad -> Fixpipe), on one simulated core and on one core per host CPU, against the
//!    `gemm` crate (f32, single thread) and a plain i-k-j triple loop;
//!  - a streaming vector kernel (y = x * 0.5 + 1 in fp32, double-buffered DataCopy) against
//!    the same loop in Rust.
//!
//! Each sim launch runs with the ordering checker (the default) and without it, so the
//! checker's overhead is measured too.
//!
//! Run: `cargo bench -p harness --bench sim_throughput`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use half::bf16;
use harness::kernel_library::{BuildSpec, Checks, CoreMode, GmArg, SimLibrary};

const KERNELS: &str = r#"#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t M = 1024, N = 1024, K = 1024, BM = 128, BN = 128, BK = 128;

// Orders pipe SRC's earlier work before pipe DST's later work, on an id no queue holds.
template <HardEvent E>
__aicore__ inline void Handshake()
{
    int32_t id = GetTPipePtr()->FetchEventID<E>();
    SetFlag<E>(id);
    WaitFlag<E>(id);
}

// C (fp32) = A (M x K bf16) * B (K x N bf16); block b computes m tiles b, b + blockDim, ...
extern "C" __global__ __aicore__ void bench_mm_bf16(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    TPipe pipe;
    TBuf<TPosition::A1> a1;
    TBuf<TPosition::B1> b1;
    TBuf<TPosition::A2> a2;
    TBuf<TPosition::B2> b2;
    TBuf<TPosition::CO1> co1;
    pipe.InitBuffer(a1, BM * BK * 2);
    pipe.InitBuffer(b1, BK * BN * 2);
    pipe.InitBuffer(a2, BM * BK * 2);
    pipe.InitBuffer(b2, BK * BN * 2);
    pipe.InitBuffer(co1, BM * BN * 4);
    GlobalTensor<bfloat16_t> ga, gb;
    GlobalTensor<float> gc;
    ga.SetGlobalBuffer((__gm__ bfloat16_t*)a);
    gb.SetGlobalBuffer((__gm__ bfloat16_t*)b);
    gc.SetGlobalBuffer((__gm__ float*)c);
    constexpr uint32_t mB = BM / 16, nB = BN / 16, kB = BK / 16;
    for (uint32_t mt = GetBlockIdx(); mt < M / BM; mt += GetBlockNum()) {
        for (uint32_t nt = 0; nt < N / BN; ++nt) {
            LocalTensor<float> c0 = co1.Get<float>();
            for (uint32_t k0 = 0; k0 < K; k0 += BK) {
                LocalTensor<bfloat16_t> l1a = a1.Get<bfloat16_t>(), l1b = b1.Get<bfloat16_t>();
                DataCopy(l1a, ga[mt * BM * K + k0], Nd2NzParams(1, BM, BK, 0, K, BM, 1, 0));
                DataCopy(l1b, gb[k0 * N + nt * BN], Nd2NzParams(1, BK, BN, 0, N, BK, 1, 0));
                Handshake<HardEvent::MTE2_MTE1>(); // the tiles are in L1
                Handshake<HardEvent::M_MTE1>();    // the previous Mmad read L0A / L0B
                LocalTensor<bfloat16_t> l0a = a2.Get<bfloat16_t>(), l0b = b2.Get<bfloat16_t>();
                for (uint32_t mb = 0; mb < mB; ++mb) {
                    LoadData(l0a[mb * kB * 256], l1a, LoadData2DParams(mb, kB, mB, 0, 0, false, 0));
                }
                for (uint32_t kb = 0; kb < kB; ++kb) {
                    LoadData(l0b[kb * nB * 256], l1b, LoadData2DParams(kb, nB, kB, 0, 0, true, 0));
                }
                Handshake<HardEvent::MTE1_M>();    // the operands are in L0A / L0B
                Handshake<HardEvent::MTE1_MTE2>(); // L1 may take the next tiles
                Mmad(c0, l0a, l0b, MmadParams(BM, BN, BK, 0, false, k0 == 0));
            }
            Handshake<HardEvent::M_FIX>();
            Fixpipe(gc[mt * BM * N + nt * BN], c0, FixpipeParamsV220(BN, BM, BM, N, false));
            Handshake<HardEvent::FIX_M>(); // the next tile's first Mmad overwrites c0
        }
    }
}

// y = x * 0.5 + 1 over `per` floats per core, 8 KiB tiles, double-buffered queues.
constexpr uint32_t TILE = 2048;
extern "C" __global__ __aicore__ void bench_stream(GM_ADDR x, GM_ADDR y, GM_ADDR len)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 2> qin;
    TQue<TPosition::VECOUT, 2> qout;
    pipe.InitBuffer(qin, 2, TILE * 4);
    pipe.InitBuffer(qout, 2, TILE * 4);
    GlobalTensor<uint32_t> gl;
    gl.SetGlobalBuffer((__gm__ uint32_t*)len);
    uint32_t per = gl.GetValue(0) / GetBlockNum();
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * per);
    gy.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * per);
    for (uint32_t t = 0; t < per / TILE; ++t) {
        LocalTensor<float> in = qin.AllocTensor<float>();
        DataCopy(in, gx[t * TILE], TILE);
        qin.EnQue(in);
        in = qin.DeQue<float>();
        LocalTensor<float> out = qout.AllocTensor<float>();
        Muls(out, in, 0.5f, TILE);
        Adds(out, out, 1.0f, TILE);
        qin.FreeTensor(in);
        qout.EnQue(out);
        out = qout.DeQue<float>();
        DataCopy(gy[t * TILE], out, TILE);
        qout.FreeTensor(out);
    }
}
"#;

const DIM: usize = 1024;

fn best_of<F: FnMut()>(runs: usize, mut f: F) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .expect("at least one run")
}

fn gflops(d: Duration) -> f64 {
    2.0 * (DIM * DIM * DIM) as f64 / d.as_secs_f64() / 1e9
}

fn main() {
    let dir: PathBuf = std::env::temp_dir().join("harness-sim-bench");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let src = dir.join("sim_bench_kernels.cpp");
    std::fs::write(&src, KERNELS).expect("write bench kernels");
    let t = Instant::now();
    let lib = SimLibrary::build(&BuildSpec::new([&src])).unwrap_or_else(|e| panic!("{e}"));
    let bare = SimLibrary::build(&BuildSpec::new([&src]))
        .unwrap_or_else(|e| panic!("{e}"))
        .with_checks(Checks::UNCHECKED);
    println!("build (or cache hit): {:.2} s", t.elapsed().as_secs_f64());
    let host_cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);

    // ---- matmul ----
    let mut seed = 0x2545_f491_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let mut a: Vec<bf16> = (0..DIM * DIM).map(|_| bf16::from_f32(next())).collect();
    let mut b: Vec<bf16> = (0..DIM * DIM).map(|_| bf16::from_f32(next())).collect();
    let mut c = vec![0f32; DIM * DIM];
    for cores in [1usize, host_cores] {
        for (label, l) in [("checked", &lib), ("unchecked", &bare)] {
            let mut stats = None;
            let d = best_of(3, || {
                stats = Some(
                    l.launch(
                        "bench_mm_bf16",
                        CoreMode::Aic,
                        cores as u32,
                        &mut [
                            GmArg::new("a", &mut a),
                            GmArg::new("b", &mut b),
                            GmArg::new("c", &mut c),
                        ],
                    )
                    .unwrap_or_else(|e| panic!("{e}")),
                );
            });
            let stats = stats.expect("ran");
            assert_eq!(stats.mac_bf16, (DIM * DIM * DIM) as u64);
            println!(
                "sim cube bf16 1024^3 ({label}), {cores} simulated core(s) on {host_cores} host core(s): {:.3} s, {:.2} GFLOP/s total, {:.2} GFLOP/s per host core in use",
                d.as_secs_f64(),
                gflops(d),
                gflops(d) / cores.min(host_cores) as f64
            );
        }
    }
    // baselines on the same (bf16-valued) data in f32
    let af: Vec<f32> = a.iter().map(|v| v.to_f32()).collect();
    let bf: Vec<f32> = b.iter().map(|v| v.to_f32()).collect();
    let mut cg = vec![0f32; DIM * DIM];
    let d = best_of(3, || unsafe {
        // SAFETY: row-major DIM x DIM buffers with the strides given.
        gemm::gemm(
            DIM,
            DIM,
            DIM,
            cg.as_mut_ptr(),
            1,
            DIM as isize,
            false,
            af.as_ptr(),
            1,
            DIM as isize,
            bf.as_ptr(),
            1,
            DIM as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    });
    println!(
        "baseline gemm crate f32, 1 thread: {:.3} s, {:.2} GFLOP/s",
        d.as_secs_f64(),
        gflops(d)
    );
    let max_diff = c
        .iter()
        .zip(&cg)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max);
    println!("  sim vs gemm max |diff| = {max_diff:.2e}");
    let mut cn = vec![0f32; DIM * DIM];
    let d = best_of(1, || {
        cn.fill(0.0);
        for i in 0..DIM {
            for k in 0..DIM {
                let aik = af[i * DIM + k];
                let (row, brow) = (&mut cn[i * DIM..(i + 1) * DIM], &bf[k * DIM..(k + 1) * DIM]);
                for (cv, bv) in row.iter_mut().zip(brow) {
                    *cv += aik * bv;
                }
            }
        }
    });
    println!(
        "baseline plain i-k-j loop f32, 1 thread: {:.3} s, {:.2} GFLOP/s",
        d.as_secs_f64(),
        gflops(d)
    );

    // ---- streaming vector kernel ----
    let n: usize = 16 << 20; // 64 MiB in, 64 MiB out
    let mut x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let mut y = vec![0f32; n];
    let mut len = vec![n as u32];
    let bytes = (2 * n * 4) as f64;
    for cores in [1usize, host_cores] {
        for (label, l) in [("checked", &lib), ("unchecked", &bare)] {
            y.fill(0.0);
            let d = best_of(3, || {
                l.launch(
                    "bench_stream",
                    CoreMode::Aiv,
                    cores as u32,
                    &mut [
                        GmArg::new("x", &mut x),
                        GmArg::new("y", &mut y),
                        GmArg::new("len", &mut len),
                    ],
                )
                .unwrap_or_else(|e| panic!("{e}"));
            });
            assert!(y.iter().zip(&x).all(|(y, x)| *y == x * 0.5 + 1.0));
            println!(
                "sim vector stream y = 0.5x + 1 (fp32, {label}, {cores} core(s)): {:.3} s, {:.2} GB/s moved",
                d.as_secs_f64(),
                bytes / d.as_secs_f64() / 1e9
            );
        }
    }
    let d = best_of(3, || {
        for (yv, xv) in y.iter_mut().zip(&x) {
            *yv = xv * 0.5 + 1.0;
        }
    });
    println!(
        "baseline Rust loop y = 0.5x + 1, 1 thread: {:.3} s, {:.2} GB/s",
        d.as_secs_f64(),
        bytes / d.as_secs_f64() / 1e9
    );
}
