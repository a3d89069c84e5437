//! Stage index_query (hca_csa.md §5.1, §5.2) on the CPU model vs
//! `golden::indexer::index_query` and `head_weights`: the CSA fixture's weights, full RoPE
//! tables and position_ids (requests start at mixed positions, most near max_positions − 8,
//! several with p0 mod 4 ≠ 0), seeded qr, qr_scale and x_normed of exactly t rows (reading a
//! row ≥ t traps), at capacity and capacity − 8 tokens. idx_q within ±1 on at most 1 %
//! (the index cache's comparator, §8.3), idx_q_scale and idx_weights within (1e-4, 1/128).
//! Rows ≥ t stay poisoned; every launch's peak on-chip use equals its kernel's budget.
//!
//! Every token of a request rotates with the request's step row (p0_b): the same idx_q
//! must fail against a golden that rotates each token at its own position.

mod stage_checks;
mod support;

use std::collections::BTreeMap;
use std::time::Instant;

use golden::arith::{narrow, widen};
use golden::compare::ratio_allclose;
use golden::fixtures::random::Draws;
use golden::fixtures::{self, FixtureOptions, StartPositions};
use golden::indexer::{IndexQuery, head_weights, index_query};
use golden::rope::RopeRows;
use golden::tensor::{Element, Tensor};
use golden::{CsaDims, Dims, LayerKind};
use half::bf16;
use harness::backend::Tiling;
use kernelgen::plan::Plan;
use stage_checks::{expect, tensor, valid_rows};
use support::plan;

const STAGE: &[&str] = &["index_query"];

/// The fixture's tensors the stage reads, beside the seeded qkv_proj_rope and rms_norm
/// outputs.
const FIXTURE_INPUTS: [&str; 7] = [
    "freqs_cos",
    "freqs_sin",
    "position_ids",
    "idx_wq_b",
    "idx_wq_b_scale",
    "weights_proj",
    "hadamard_idx",
];

struct Case {
    dims: Dims,
    csa: CsaDims,
    t: usize,
    inputs: BTreeMap<String, Tensor>,
}

/// One request per start (t = seq · starts): the fixture of a TP 1 layer with the rank's
/// requests (the stage is per rank), and seeded qr (int8), qr_scale and x_normed.
fn case(p: &Plan, starts: &[i64], seed: u64) -> Case {
    let mut spec = support::layer_spec(p);
    spec.dims.tp = 1;
    let LayerKind::Csa(csa) = spec.kind.clone() else {
        panic!("{} is not a CSA layer", p.variant)
    };
    let fx = fixtures::build(
        &spec,
        &FixtureOptions {
            seed,
            starts: StartPositions::List(starts.to_vec()),
            tokens: None,
        },
    )
    .unwrap_or_else(|e| panic!("fixture: {e}"));
    let d = spec.dims;
    let t = starts.len() * d.seq;
    let mut inputs: BTreeMap<String, Tensor> = FIXTURE_INPUTS
        .iter()
        .map(|&n| (n.to_string(), fx.inputs.get(n).unwrap().clone()))
        .collect();
    let draws = Draws::new(seed);
    let qr: Vec<i8> = draws
        .uniform("qr", t * d.q_lora, -127.0, 127.0)
        .iter()
        .map(|v| v.round() as i8)
        .collect();
    // qr_scale as qkv_proj_rope makes it: amax / 127 of an RMS-normed latent.
    let qr_scale = draws.uniform("qr_scale", t, 0.015, 0.035);
    let x = narrow(&draws.normal("x_normed", t * d.hidden, 1.0));
    inputs.insert("qr".into(), tensor(vec![t, d.q_lora], qr));
    inputs.insert("qr_scale".into(), tensor(vec![t, 1], qr_scale));
    inputs.insert("x_normed".into(), tensor(vec![t, d.hidden], x));
    Case {
        dims: d,
        csa,
        t,
        inputs,
    }
}

fn values<T: Element>(c: &Case, name: &str) -> Vec<T> {
    c.inputs[name].values::<T>().unwrap().to_vec()
}

fn positions(c: &Case) -> Vec<usize> {
    values::<i32>(c, "position_ids")
        .iter()
        .map(|&p| usize::try_from(p).unwrap())
        .collect()
}

/// The golden's queries rotated with the table rows at `at`, one per request of `seq`
/// tokens.
fn golden_query(c: &Case, seq: usize, at: &[usize]) -> IndexQuery {
    let d = Dims { seq, ..c.dims };
    let (half, rd) = (d.rope_dim / 2, d.rope_dim);
    // One row per token: its request's.
    let tokens: Vec<usize> = (0..at.len() * seq).map(|t| at[t / seq]).collect();
    let rows = RopeRows::gather(
        &values::<bf16>(c, "freqs_cos"),
        &values::<bf16>(c, "freqs_sin"),
        rd,
        half,
        &tokens,
    );
    index_query(
        &d,
        &c.csa,
        &values::<i8>(c, "qr"),
        &values::<f32>(c, "qr_scale"),
        &values::<i8>(c, "idx_wq_b"),
        &values::<f32>(c, "idx_wq_b_scale"),
        &values::<bf16>(c, "hadamard_idx"),
        &rows,
    )
}

fn check_stage(p: &Plan, c: &Case) {
    let rt = support::stages(&p.variant, STAGE);
    let (d, t) = (&c.dims, c.t);
    let (heads, width) = (c.csa.index_heads, c.csa.index_heads * c.csa.index_head_dim);
    let at = positions(c);
    let firsts: Vec<usize> = at.iter().step_by(d.seq).copied().collect();
    assert!(
        firsts.iter().any(|p| p % 4 != 0),
        "a request starting off a compression boundary"
    );
    let want = golden_query(c, d.seq, &firsts);
    let weights = head_weights(
        &widen(&values::<bf16>(c, "x_normed")),
        d.hidden,
        &values::<bf16>(c, "weights_proj"),
        c.csa.weights_scale(),
    );

    let mut tensors = c.inputs.clone();
    let clock = Instant::now();
    let stats = support::run(rt, &mut tensors, tiling(p, t));
    let sim = clock.elapsed().as_secs_f64();
    let got = |name: &str| valid_rows(name, &tensors[name], t);
    println!("{} t={t}: sim {sim:.3} s", p.variant);
    expect(ratio_allclose(
        "idx_q",
        &got("idx_q"),
        &tensor(vec![t, width], want.q),
        1.0,
        0.0,
        0.01,
    ));
    expect(ratio_allclose(
        "idx_q_scale",
        &got("idx_q_scale"),
        &tensor(vec![t, heads], want.scale),
        1e-4,
        1.0 / 128.0,
        0.005,
    ));
    expect(ratio_allclose(
        "idx_weights",
        &got("idx_weights"),
        &tensor(vec![t, heads], weights),
        1e-4,
        1.0 / 128.0,
        0.005,
    ));
    // Rotating each token at its own position instead of the step row must not pass.
    let own = golden_query(c, 1, &at);
    let r = ratio_allclose(
        "idx_q",
        &got("idx_q"),
        &tensor(vec![t, width], own.q),
        1.0,
        0.0,
        0.01,
    );
    println!("  against each token's own RoPE row: {r}");
    assert!(!r.pass, "idx_q also matches per-token rows: {}", r.detail());
    stage_checks::check_launches(p, &stats);
}

fn tiling(p: &Plan, t: usize) -> Tiling {
    support::tiling(&[
        ("t", t),
        ("b", t / p.shape.decode_seq),
        ("group_t", t * p.shape.tp),
    ])
}

/// One start per request for `t` tokens: mostly near the table's end (max_positions − 8
/// and below in steps of 5, so p0 mod 4 varies), every third one small.
fn starts(p: &Plan, t: usize) -> Vec<i64> {
    let max = p.pools.max_positions as i64;
    (0..(t / p.shape.decode_seq) as i64)
        .map(|b| {
            if b % 3 == 2 {
                3 + 17 * b
            } else {
                max - 8 - 5 * b
            }
        })
        .collect()
}

/// At capacity, below it, and at 16 tokens (8 tiles of 2 tokens: `index_q_quant` cuts each
/// into head parts to reach more of its blocks).
fn check_variant(variant: &str, seed: u64) {
    let p = plan(variant);
    for t in [p.shape.local_t, p.shape.local_t - 8, 16] {
        check_stage(p, &case(p, &starts(p, t), seed));
    }
}

#[test]
fn csa_small_tp1_matches_the_golden() {
    check_variant("csa_small_tp1", 21);
}

#[test]
fn csa_small_tp2_matches_the_golden() {
    check_variant("csa_small_tp2", 22);
}

/// The reference's deployment (FLASH dims, 8 tokens): the index queries' int8 product
/// gives narrow units of its columns to the vector cores (`vector_matmul.h`'s k lanes:
/// one call per column block covers 64 k), which also read some of the cube's B ahead of
/// it (`_rd`), the queries still the golden's.
#[test]
fn csa_deployment_tp1_shares_the_query_product_in_narrow_units() {
    let variant = "csa_deployment_tp1";
    let host = support::host(variant);
    let narrow = host.steps.iter().any(|s| {
        matches!(s, abi::plan::Step::Launch(l)
            if l.stage == "index_query" && l.kernel.contains("_vec") && l.kernel.contains("_l64_rd"))
    });
    assert!(narrow, "{variant}: idx_wq_b shares narrow units");
    let p = plan(variant);
    check_stage(p, &case(p, &starts(p, p.shape.local_t), 23));
}
