//! Stage qkv_proj_rope on the CPU model vs `golden::qkv` (swa.md §3.3, §5): the
//! fixture's weights and RoPE rows, a seeded unit-RMS x_normed of exactly t rows (reading
//! a row ≥ t traps), at capacity and capacity − 8. q, kv within (1e-4, 1/128); qr within
//! ±1 LSB everywhere; qr_scale within (2.5e-5, 5e-3). Workspace rows ≥ t stay poisoned;
//! every launch's peak UB/L1/L0 use stays within the stage budget.
//!
//! `flash_tp2_sim_time` (ignored; `cargo test -p runner --test stage_qkv_proj_rope --
//! --ignored --nocapture`) runs the stage at FLASH dims, t = 256, and prints wall time
//! and GM bytes per kernel.

mod support;

use std::collections::BTreeMap;

use golden::compare::{Report, ratio_allclose};
use golden::fixtures::{self, FixtureOptions};
use golden::qkv::{QkvWeights, qkv_proj_rope};
use golden::rope::RopeRows;
use golden::tensor::Tensor;
use golden::{Dims, LayerSpec};
use half::bf16;
use harness::runtime::{Runtime, Tiling};
use kernelgen::plan::Plan;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use support::plan;

const STAGE: &[&str] = &["qkv_proj_rope"];

/// The golden's description of a plan's variant (its TP degree set to 1: the stage is
/// per rank, and a TP 1 fixture with the rank's token count has the same tensors).
fn layer_spec(p: &Plan) -> LayerSpec {
    let mut spec = support::layer_spec(p);
    spec.dims.tp = 1;
    spec
}

/// The stage's inputs for `t` tokens: fixture weights and RoPE rows, and x_normed.
struct Case {
    dims: Dims,
    t: usize,
    inputs: BTreeMap<String, Tensor>,
}

/// The capacity fixture's tensors; for fewer tokens the RoPE rows are its first t rows
/// (token-local rows: what the host would pass for those tokens).
fn case(p: &Plan, t: usize, seed: u64) -> Case {
    let spec = layer_spec(p);
    let fx = fixtures::build(
        &spec,
        &FixtureOptions {
            seed,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("fixture: {e}"));
    let mut inputs = BTreeMap::new();
    for name in ["wq_a", "wq_b", "wq_b_scale", "wkv", "gamma_cq", "gamma_ckv"] {
        inputs.insert(name.to_string(), fx.inputs.get(name).unwrap().clone());
    }
    for name in ["freqs_cos", "freqs_sin"] {
        let full = fx.inputs.values::<bf16>(name).unwrap();
        let rows = full[..t * spec.dims.rope_dim].to_vec();
        inputs.insert(
            name.to_string(),
            Tensor::from_vec(vec![t, spec.dims.rope_dim], rows).unwrap(),
        );
    }
    // rms_norm's output: rows of unit RMS (uniform on ±√3), rounded to bf16
    let mut r = ChaCha8Rng::seed_from_u64(seed ^ 0x9e37);
    let x: Vec<bf16> = (0..t * spec.dims.hidden)
        .map(|_| bf16::from_f32(r.random_range(-1.732f32..1.732)))
        .collect();
    inputs.insert(
        "x_normed".into(),
        Tensor::from_vec(vec![t, spec.dims.hidden], x).unwrap(),
    );
    Case {
        dims: spec.dims,
        t,
        inputs,
    }
}

fn values<T: golden::tensor::Element>(m: &BTreeMap<String, Tensor>, name: &str) -> Vec<T> {
    m[name].values::<T>().unwrap().to_vec()
}

fn golden(c: &Case) -> golden::qkv::Qkv {
    let d = &c.dims;
    let rope = RopeRows::from_tables(
        &values::<bf16>(&c.inputs, "freqs_cos"),
        &values::<bf16>(&c.inputs, "freqs_sin"),
        d.rope_dim,
        d.rope_dim / 2,
    );
    qkv_proj_rope(
        d,
        &values::<bf16>(&c.inputs, "x_normed"),
        QkvWeights {
            wq_a: &values::<bf16>(&c.inputs, "wq_a"),
            wq_b: &values::<i8>(&c.inputs, "wq_b"),
            wq_b_scale: &values::<f32>(&c.inputs, "wq_b_scale"),
            wkv: &values::<bf16>(&c.inputs, "wkv"),
            gamma_cq: &values::<bf16>(&c.inputs, "gamma_cq"),
            gamma_ckv: &values::<bf16>(&c.inputs, "gamma_ckv"),
        },
        &rope,
    )
}

/// The first `rows` rows of a capacity-sized output as a `[rows, width]` tensor; the
/// rest must still be poisoned (0xFF bytes).
fn valid_rows(name: &str, t: &Tensor, rows: usize) -> Tensor {
    let width = t.numel() / t.shape()[0];
    let bytes = t.as_le_bytes();
    let cut = rows * width * t.dtype().size();
    assert!(
        bytes[cut..].iter().all(|&b| b == 0xFF),
        "{name}: a row >= t was written"
    );
    Tensor::from_le_bytes(t.dtype(), vec![rows, width], &bytes[..cut]).unwrap()
}

fn expect(report: Report) {
    assert!(report.pass, "{}", report.detail());
}

/// Runs the stage for `c` and checks every output against the golden.
fn check_stage(p: &Plan, rt: &Runtime, c: &Case) {
    let want = golden(c);
    let mut tensors = c.inputs.clone();
    let stats = support::run(rt, &mut tensors, tiling(c.t));
    let d = &c.dims;
    let t = c.t;
    let got = |name: &str| valid_rows(name, &tensors[name], t);
    let q_want = Tensor::from_vec(vec![t, d.heads * d.head_dim], want.q).unwrap();
    let kv_want = Tensor::from_vec(vec![t, d.head_dim], want.kv).unwrap();
    let qr_want = Tensor::from_vec(vec![t, d.q_lora], want.qr).unwrap();
    let scale_want = Tensor::from_vec(vec![t, 1], want.qr_scale).unwrap();
    expect(ratio_allclose(
        "q",
        &got("q"),
        &q_want,
        1e-4,
        1.0 / 128.0,
        0.005,
    ));
    expect(ratio_allclose(
        "kv",
        &got("kv"),
        &kv_want,
        1e-4,
        1.0 / 128.0,
        0.005,
    ));
    expect(ratio_allclose("qr", &got("qr"), &qr_want, 1.0, 0.0, 0.0));
    expect(ratio_allclose(
        "qr_scale",
        &got("qr_scale"),
        &scale_want,
        2.5e-5,
        5e-3,
        0.005,
    ));
    support::check_peaks(&p.variant, &stats);
    for (kernel, s) in &stats {
        println!(
            "{} t={t} {kernel}: GM {} B moved / {} B distinct = {:.3}",
            p.variant,
            s.gm_bytes(),
            s.gm_distinct_bytes(),
            s.gm_bytes() as f64 / s.gm_distinct_bytes().max(1) as f64
        );
    }
}

fn tiling(t: usize) -> Tiling {
    support::tiling(&[("t", t), ("group_t", t)])
}

#[test]
fn swa_small_tp1_matches_the_golden() {
    let p = plan("swa_small_tp1");
    let rt = support::stages("swa_small_tp1", STAGE);
    for t in [p.shape.local_t, p.shape.local_t - 8] {
        check_stage(p, rt, &case(p, t, 11));
    }
}

#[test]
fn swa_mini_tp2_matches_the_golden() {
    let p = plan("swa_mini_tp2");
    let rt = support::stages("swa_mini_tp2", STAGE);
    for t in [p.shape.local_t, p.shape.local_t - 8] {
        check_stage(p, rt, &case(p, t, 12));
    }
}

#[test]
fn csa_positions_table_is_not_supported_yet() {
    for v in support::variants() {
        if v.plan.rope.table == kernelgen::spec::RopeTable::Positions {
            assert!(
                v.kernels.missing.iter().any(|u| u.stage == "qkv_proj_rope"),
                "{}: qkv_proj_rope with a position table must be marked missing",
                v.plan.variant
            );
        }
    }
}
