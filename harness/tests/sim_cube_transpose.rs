//! LoadDataWithTranspose: matmuls whose B is stored [K, N] (K on the L1 rows) reach L0B
//! through square transposes, int8 (32x32 squares of two fractals) and bf16 (one
//! fractal), against plain Rust references; undefined source rows stay undefined.

#[path = "sim_kernels/support.rs"]
mod support;

use half::bf16;
use harness::kernel_library::{CoreMode, GmArg, SimError, poison};
use rand::RngExt;
use support::{lib, rng};

const M: usize = 40;
const N: usize = 96;
const K: usize = 64;

#[test]
fn int8_b_stored_k_by_n_is_exact() {
    let mut r = rng(120);
    let mut a: Vec<i8> = (0..M * K)
        .map(|_| r.random_range(i8::MIN..=i8::MAX))
        .collect();
    let mut b: Vec<i8> = (0..K * N)
        .map(|_| r.random_range(i8::MIN..=i8::MAX))
        .collect();
    let mut c = vec![0i32; M * N];
    poison(&mut c);
    lib()
        .launch(
            "sim_mm_int8_kn",
            CoreMode::Aic,
            1,
            &mut [
                GmArg::new("a", &mut a),
                GmArg::new("b", &mut b),
                GmArg::new("c", &mut c),
            ],
        )
        .unwrap();
    for i in 0..M {
        for j in 0..N {
            let want: i32 = (0..K)
                .map(|k| a[i * K + k] as i32 * b[k * N + j] as i32)
                .sum();
            assert_eq!(c[i * N + j], want, "c[{i}][{j}]");
        }
    }
}

#[test]
fn bf16_b_stored_k_by_n_matches_fp32_reference() {
    let mut r = rng(121);
    let mut draw = |n| -> Vec<bf16> {
        (0..n)
            .map(|_| bf16::from_f32(r.random_range(-1.0..1.0)))
            .collect()
    };
    let mut a = draw(M * K);
    let mut b = draw(K * N);
    let mut c = vec![0f32; M * N];
    poison(&mut c);
    lib()
        .launch(
            "sim_mm_bf16_kn",
            CoreMode::Aic,
            1,
            &mut [
                GmArg::new("a", &mut a),
                GmArg::new("b", &mut b),
                GmArg::new("c", &mut c),
            ],
        )
        .unwrap();
    for i in 0..M {
        for j in 0..N {
            let want: f64 = (0..K)
                .map(|k| a[i * K + k].to_f64() * b[k * N + j].to_f64())
                .sum();
            let got = f64::from(c[i * N + j]);
            assert!(
                (got - want).abs() <= 1e-5,
                "c[{i}][{j}] = {got}, want {want}"
            );
        }
    }
}

#[test]
fn a_square_with_unwritten_rows_transposes_to_undefined_rows() {
    let mut b: Vec<i8> = (0..32 * 32).map(|i| (i % 7) as i8).collect();
    let err = lib()
        .launch(
            "sim_transpose_undefined",
            CoreMode::Aic,
            1,
            &mut [GmArg::new("b", &mut b)],
        )
        .unwrap_err();
    let SimError::Trap { message, .. } = err else {
        panic!("expected a trap, got {err:?}");
    };
    assert!(
        message.contains("Mmad") && message.contains("never-written") && message.contains("filter"),
        "{message}"
    );
}
