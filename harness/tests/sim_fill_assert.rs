//! Fill (L1 / L0B initialisation) and the exception-detection interfaces ascendc_assert
//! and Trap.

#[path = "sim_kernels/support.rs"]
mod support;

use half::bf16;
use harness::kernel_library::{CoreMode, GmArg, SimError, poison};
use rand::RngExt;
use support::{lib, rng};

#[test]
fn fill_sets_strided_l1_rows_and_whole_l0b_fractals() {
    let mut r = rng(70);
    let mut a: Vec<bf16> = (0..10 * 32)
        .map(|_| bf16::from_f32(r.random_range(-1.0..1.0)))
        .collect();
    let mut c = vec![0f32; 16 * 16];
    poison(&mut c);
    lib()
        .launch(
            "sim_fill_l1_l0b",
            CoreMode::Aic,
            1,
            &mut [GmArg::new("a", &mut a), GmArg::new("c", &mut c)],
        )
        .unwrap();
    for i in 0..16 {
        let want: f64 = if i < 10 {
            a[i * 32..(i + 1) * 32].iter().map(|v| v.to_f64()).sum()
        } else {
            64.0
        };
        for j in 0..16 {
            let got = f64::from(c[i * 16 + j]);
            assert!(
                (got - want).abs() <= 1e-5,
                "c[{i}][{j}] = {got}, want {want}"
            );
        }
    }
}

fn trap_message(kernel: &str, mode: CoreMode, args: &mut [GmArg<'_>]) -> String {
    match lib().launch(kernel, mode, 1, args) {
        Err(SimError::Trap { kernel: k, message }) => {
            assert_eq!(k, kernel);
            message
        }
        other => panic!("{kernel}: expected a trap, got {other:?}"),
    }
}

#[test]
fn fill_outside_l1_and_l0ab_traps() {
    let m = trap_message("trap_fill_ub", CoreMode::Aic, &mut []);
    assert!(
        m.contains("Fill") && m.contains("L1 (A1/B1), L0A (A2) or L0B (B2) only"),
        "{m}"
    );
}

#[test]
fn failed_assertion_traps_with_its_message_and_a_passing_one_does_not() {
    let mut x = vec![5i32, 0, 0, 0, 0, 0, 0, 0];
    let m = trap_message(
        "sim_assert_zero",
        CoreMode::Aiv,
        &mut [GmArg::new("x", &mut x)],
    );
    for part in [
        "ascendc_assert",
        "assertion `v == 0` failed at",
        "fill_assert.cpp",
        "x[0] = 5, block 0",
    ] {
        assert!(m.contains(part), "`{part}` missing from: {m}");
    }
    let mut x = vec![0i32; 8];
    lib()
        .launch(
            "sim_assert_zero",
            CoreMode::Aiv,
            2,
            &mut [GmArg::new("x", &mut x)],
        )
        .unwrap();
}

#[test]
fn trap_stops_the_launch() {
    let m = trap_message("sim_trap_call", CoreMode::Aiv, &mut []);
    assert!(m.contains("Trap") && m.contains("AscendC::Trap()"), "{m}");
}
