//! The cube path (GM -> L1 -> L0A/L0B -> Mmad -> Fixpipe) on multi-tile matmuls with
//! tails in every dimension, against plain Rust references.

#[path = "sim_kernels/support.rs"]
mod support;

use half::{bf16, f16};
use harness::kernel_library::{CoreMode, GmArg, poison};
use rand::RngExt;
use support::{lib, rng};

#[test]
fn bf16_matmul_through_l1_l0_mmad_fixpipe_matches_fp32_reference() {
    const M: usize = 100;
    const N: usize = 72;
    const K: usize = 176;
    let mut r = rng(90);
    let mut a: Vec<bf16> = (0..M * K)
        .map(|_| bf16::from_f32(r.random_range(-1.0..1.0)))
        .collect();
    let mut b: Vec<bf16> = (0..K * N)
        .map(|_| bf16::from_f32(r.random_range(-1.0..1.0)))
        .collect();
    let mut c32 = vec![0f32; M * N];
    let mut c16 = vec![bf16::ZERO; M * N];
    poison(&mut c32);
    poison(&mut c16);
    let stats = lib()
        .launch(
            "sim_mm_bf16",
            CoreMode::Aic,
            2,
            &mut [
                GmArg::new("a", &mut a),
                GmArg::new("b", &mut b),
                GmArg::new("c32", &mut c32),
                GmArg::new("c16", &mut c16),
            ],
        )
        .unwrap();
    for i in 0..M {
        for j in 0..N {
            // f64 reference of the exact products; fp32 accumulation of 176 terms of
            // magnitude < 1 stays within 1e-5 absolute
            let want: f64 = (0..K)
                .map(|k| a[i * K + k].to_f64() * b[k * N + j].to_f64())
                .sum();
            let got = c32[i * N + j] as f64;
            assert!(
                (got - want).abs() <= 1e-5,
                "c32[{i}][{j}] = {got}, want {want}"
            );
            assert_eq!(
                c16[i * N + j],
                bf16::from_f32(c32[i * N + j]),
                "c16[{i}][{j}] is c32 rounded to nearest even"
            );
        }
    }
    assert_eq!(stats.mac_bf16, (M * N * K) as u64, "MACs = m·n·k");
    assert_eq!(stats.macs(), stats.mac_bf16);
    assert_eq!(stats.gm_write_bytes, (M * N * (4 + 2)) as u64);
    assert!(stats.peak_l0a > 0 && stats.peak_l0b > 0 && stats.peak_l0c > 0 && stats.peak_ub == 0);
}

#[test]
fn int8_matmul_is_exact_in_int32_and_deqf16_scales_it_to_half() {
    const M: usize = 70;
    const N: usize = 40;
    const K: usize = 200;
    let mut r = rng(91);
    let mut a: Vec<i8> = (0..M * K)
        .map(|_| r.random_range(i8::MIN..=i8::MAX))
        .collect();
    let mut bt: Vec<i8> = (0..N * K)
        .map(|_| r.random_range(i8::MIN..=i8::MAX))
        .collect();
    let mut c = vec![0i32; M * N];
    let mut c16 = vec![f16::ZERO; M * N];
    poison(&mut c);
    poison(&mut c16);
    let stats = lib()
        .launch(
            "sim_mm_int8",
            CoreMode::Aic,
            2,
            &mut [
                GmArg::new("a", &mut a),
                GmArg::new("bt", &mut bt),
                GmArg::new("c", &mut c),
                GmArg::new("c16", &mut c16),
            ],
        )
        .unwrap();
    for i in 0..M {
        for j in 0..N {
            let want: i32 = (0..K)
                .map(|k| a[i * K + k] as i32 * bt[j * K + k] as i32)
                .sum();
            assert_eq!(c[i * N + j], want, "c[{i}][{j}]");
            // DEQF16 with 2^-6: the exact product scaled, rounded once to half
            let want16 = f16::from_f64(want as f64 / 64.0);
            assert_eq!(c16[i * N + j].to_bits(), want16.to_bits(), "c16[{i}][{j}]");
        }
    }
    assert_eq!(stats.mac_i8, (M * N * K) as u64);
    // A is read once (one n tile); Bt once per m tile (two of them)
    assert_eq!(stats.gm_read_bytes, (M * K + 2 * N * K) as u64);
}
