//! Vector API of the sim against plain Rust references on random inputs.

#[path = "sim_kernels/support.rs"]
mod support;

use half::f16;
use harness::kernel_library::{CoreMode, GmArg, poison};
use rand::RngExt;
use support::{assert_close, assert_same, lib, rng};

const N: usize = 1000;

type BinaryFn = fn(f32, f32) -> f32;
type UnaryFn = fn(f32) -> f32;

fn random(seed: u64, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut r = rng(seed);
    (0..n).map(|_| r.random_range(lo..hi)).collect()
}

#[test]
fn binary_ops_match_f32_arithmetic() {
    let mut x = random(10, N, -8.0, 8.0);
    let mut y: Vec<f32> = random(11, N, 0.5, 4.0)
        .iter()
        .zip(random(12, N, -1.0, 1.0))
        .map(|(m, s)| m * s.signum())
        .collect();
    let mut out = vec![0f32; 6 * N];
    poison(&mut out);
    let stats = lib()
        .launch(
            "sim_vec_binary_f32",
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("x", &mut x),
                GmArg::new("y", &mut y),
                GmArg::new("out", &mut out),
            ],
        )
        .unwrap();
    let ops: [(&str, BinaryFn); 6] = [
        ("add", |a, b| a + b),
        ("sub", |a, b| a - b),
        ("mul", |a, b| a * b),
        ("div", |a, b| a / b),
        ("max", f32::max),
        ("min", f32::min),
    ];
    for (k, (name, f)) in ops.iter().enumerate() {
        let want: Vec<f32> = x.iter().zip(&y).map(|(&a, &b)| f(a, b)).collect();
        assert_same(name, &out[k * N..(k + 1) * N], &want);
    }
    assert_eq!(stats.vec_elem_ops, 6 * N as u64);
}

/// MulAddDst reads dst as its third operand: the product rounded to f32, then the sum
/// (the sim does not fuse them), in the count form and with a repeat stride of 0.
#[test]
fn mul_add_dst_adds_into_dst() {
    let mut x = random(13, N, -8.0, 8.0);
    let mut y = random(14, N, -4.0, 4.0);
    let mut out = vec![0f32; N + 256];
    poison(&mut out);
    lib()
        .launch(
            "sim_vec_mul_add_dst",
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("x", &mut x),
                GmArg::new("y", &mut y),
                GmArg::new("out", &mut out),
            ],
        )
        .unwrap();
    let want: Vec<f32> = x.iter().zip(&y).map(|(&a, &b)| a * b + b).collect();
    assert_same("count form", &out[..N], &want);
    let want: Vec<f32> = (0..256).map(|i| x[i] * y[i % 64] + x[i]).collect();
    assert_same("src1 repeat stride 0", &out[N..], &want);
}

#[test]
fn unary_and_scalar_ops_match_f32_math() {
    let mut x = random(20, N, -4.0, 4.0);
    let mut out = vec![0f32; 11 * N];
    poison(&mut out);
    lib()
        .launch(
            "sim_vec_unary_f32",
            CoreMode::Aiv,
            1,
            &mut [GmArg::new("x", &mut x), GmArg::new("out", &mut out)],
        )
        .unwrap();
    let ops: [(&str, UnaryFn); 11] = [
        ("exp", f32::exp),
        ("ln", |a| (a.abs() + 0.5).ln()),
        ("sqrt", |a| (a.abs() + 0.5).sqrt()),
        ("rsqrt", |a| 1.0 / (a.abs() + 0.5).sqrt()),
        ("reciprocal", |a| 1.0 / a),
        ("abs", f32::abs),
        ("relu", |a| a.max(0.0)),
        ("adds", |a| a + 1.5),
        ("muls", |a| a * -0.75),
        ("maxs", |a| a.max(0.25)),
        ("mins", |a| a.min(-0.25)),
    ];
    for (k, (name, f)) in ops.iter().enumerate() {
        let want: Vec<f32> = x.iter().map(|&a| f(a)).collect();
        // transcendentals: libm in both, allow an ulp or two of implementation difference
        assert_close(name, &out[k * N..(k + 1) * N], &want, 2e-7, 0.0);
    }
}

#[test]
fn half_results_round_to_nearest_even() {
    let n = 1024;
    let mut r = rng(30);
    let mut x: Vec<f16> = (0..n)
        .map(|_| f16::from_f32(r.random_range(-3.0..3.0)))
        .collect();
    let mut y: Vec<f16> = (0..n)
        .map(|_| f16::from_f32(r.random_range(-3.0..3.0)))
        .collect();
    let mut out = vec![f16::ZERO; 3 * n];
    poison(&mut out);
    lib()
        .launch(
            "sim_vec_half",
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("x", &mut x),
                GmArg::new("y", &mut y),
                GmArg::new("out", &mut out),
            ],
        )
        .unwrap();
    for i in 0..n {
        let (a, b) = (x[i].to_f32(), y[i].to_f32());
        assert_eq!(out[i], f16::from_f32(a + b), "add[{i}]");
        assert_eq!(out[n + i], f16::from_f32(a * b), "mul[{i}]");
        // exp rounded once from the f32 value
        assert_eq!(out[2 * n + i], f16::from_f32(a.exp()), "exp[{i}]");
    }
}

#[test]
fn level0_masks_strides_and_counter_mode() {
    let mut x = random(40, 512, -2.0, 2.0);
    let mut y = random(41, 512, -2.0, 2.0);
    let mut out = vec![0f32; 2560];
    poison(&mut out);
    lib()
        .launch(
            "sim_vec_level0",
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("x", &mut x),
                GmArg::new("y", &mut y),
                GmArg::new("out", &mut out),
            ],
        )
        .unwrap();
    let mut want = vec![0f32; 2560];
    for i in 0..512 {
        let (row, lane) = (i / 64, i % 64);
        want[i] = x[i] - y[row]; // Brcb'd row value, src1 block stride 0, rep stride 1
        want[512 + i] = if lane % 2 == 0 { x[i] * y[i] } else { 0.0 }; // mask bits 0x5555...
        want[1024 + i] = if lane < 48 { x[i].exp() } else { -1.0 }; // count mask 48
        want[1792 + i] = if i < 300 { x[i] * 2.0 } else { 0.0 }; // counter mode, 300 elements
    }
    for i in 0..256 {
        // dst contiguous, src every other 32-byte block, src repeats 16 blocks apart
        let (rep, lane) = (i / 64, i % 64);
        let src = rep * 128 + (lane / 8) * 16 + lane % 8;
        want[1536 + i] = x[src] + 1.5;
        want[2304 + i] = if lane < 16 { 3.5 } else { 0.0 };
    }
    assert_close("level0", &out, &want, 2e-7, 0.0);
}

#[test]
fn reductions_follow_block_and_repeat_semantics() {
    let mut x = random(50, N, -100.0, 100.0);
    let mut out = vec![0f32; 256];
    poison(&mut out);
    lib()
        .launch(
            "sim_vec_reduce",
            CoreMode::Aiv,
            1,
            &mut [GmArg::new("x", &mut x), GmArg::new("out", &mut out)],
        )
        .unwrap();
    let (imax, vmax) = x
        .iter()
        .enumerate()
        .fold((0, f32::MIN), |b, (i, &v)| if v > b.1 { (i, v) } else { b });
    assert_eq!(out[0], vmax);
    assert_eq!(out[1].to_bits() as usize, imax, "ReduceMax index bits");
    let sum: f64 = x.iter().map(|&v| v as f64).sum();
    assert!(
        (out[8] as f64 - sum).abs() <= 1e-4 * x.iter().map(|v| v.abs() as f64).sum::<f64>(),
        "ReduceSum"
    );
    for r in 0..8 {
        let rep = &x[r * 64..(r + 1) * 64];
        let (i, v) = rep
            .iter()
            .enumerate()
            .fold((0, f32::MIN), |b, (i, &v)| if v > b.1 { (i, v) } else { b });
        assert_eq!(out[16 + 2 * r], v, "WholeReduceMax value {r}");
        assert_eq!(
            out[17 + 2 * r].to_bits() as usize,
            i,
            "WholeReduceMax index {r}"
        );
        let s: f64 = rep[..40].iter().map(|&v| v as f64).sum();
        let scale: f64 = rep[..40].iter().map(|&v| v.abs() as f64).sum();
        assert!(
            (out[32 + r] as f64 - s).abs() <= 1e-6 * scale,
            "WholeReduceSum {r}: {} vs {s}",
            out[32 + r]
        );
    }
    for b in 0..16 {
        let blk = &x[b * 8..(b + 1) * 8];
        assert_eq!(
            out[40 + b],
            blk.iter().cloned().fold(f32::MIN, f32::max),
            "BlockReduceMax {b}"
        );
        // documented binary tree: ((x0+x1)+(x2+x3))+((x4+x5)+(x6+x7))
        let tree =
            ((blk[0] + blk[1]) + (blk[2] + blk[3])) + ((blk[4] + blk[5]) + (blk[6] + blk[7]));
        assert_eq!(out[56 + b], tree, "BlockReduceSum {b}");
        assert!(
            out[72 + b * 8..80 + b * 8].iter().all(|&v| v == x[b]),
            "Brcb block {b}"
        );
    }
    let vmax4 = x[..256].iter().cloned().fold(f32::MIN, f32::max);
    assert_eq!(out[200], vmax4, "level-0 ReduceMax");
}

#[test]
fn nan_and_inf_propagate_through_exp_max_and_reductions() {
    let mut x = random(60, 64, -3.0, 3.0);
    x[5] = f32::INFINITY;
    x[9] = f32::NEG_INFINITY;
    x[17] = f32::NAN;
    x[40] = f32::NAN;
    let mut out = vec![0f32; 160];
    poison(&mut out);
    lib()
        .launch(
            "sim_vec_nan",
            CoreMode::Aiv,
            1,
            &mut [GmArg::new("x", &mut x), GmArg::new("out", &mut out)],
        )
        .unwrap();
    let exp: Vec<f32> = x.iter().map(|v| v.exp()).collect();
    assert_close("exp", &out[..64], &exp, 2e-7, 0.0);
    assert_eq!(out[5], f32::INFINITY);
    assert_eq!(out[9], 0.0);
    for i in 0..64 {
        let m = out[64 + i];
        if x[i].is_nan() {
            assert!(m.is_nan(), "max(NaN, 0) is NaN at {i}");
        } else {
            assert_eq!(m, x[i].max(0.0), "max at {i}");
        }
    }
    assert!(out[128].is_nan(), "ReduceMax with NaN is NaN");
    assert_eq!(out[129].to_bits(), 17, "index of the first NaN");
    assert!(out[136].is_nan(), "ReduceSum with NaN is NaN");
    assert!(
        out[144].is_nan() && out[145].to_bits() == 17,
        "WholeReduceMax with NaN"
    );
}

#[test]
fn compare_select_and_gather() {
    let n = 256;
    let mut x = random(70, n, -1.0, 1.0);
    let mut y = random(71, n, -1.0, 1.0);
    let mut r = rng(72);
    let idx: Vec<u32> = (0..n).map(|_| r.random_range(0..n as u32)).collect();
    let mut off: Vec<u32> = idx.iter().map(|i| i * 4).collect(); // byte offsets
    let mut out = vec![0f32; 776];
    poison(&mut out);
    lib()
        .launch(
            "sim_vec_select",
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("x", &mut x),
                GmArg::new("y", &mut y),
                GmArg::new("off", &mut off),
                GmArg::new("out", &mut out),
            ],
        )
        .unwrap();
    let mask: Vec<u8> = out[768..776].iter().flat_map(|v| v.to_le_bytes()).collect();
    for i in 0..n {
        let lt = x[i] < y[i];
        assert_eq!((mask[i / 8] >> (i % 8)) & 1 == 1, lt, "mask bit {i}");
        assert_eq!(out[i], if lt { x[i] } else { y[i] }, "select tensor {i}");
        assert_eq!(
            out[256 + i],
            if lt { x[i] } else { 0.0 },
            "select scalar {i}"
        );
        assert_eq!(out[512 + i], x[idx[i] as usize], "gather {i}");
    }
}
