//! Stage qkv_proj_rope on the CPU model vs `golden::qkv` (swa.md §3.3, §5): the
//! fixture's weights and RoPE rows, a seeded unit-RMS x_normed of exactly t rows (reading
//! a row ≥ t traps), at capacity and capacity − 8. q, kv within (1e-4, 1/128); qr within
//! ±1 LSB everywhere; qr_scale within (2.5e-5, 5e-3). Workspace rows ≥ t stay poisoned;
//! every launch's peak UB/L1/L0 use equals its kernel's budget.
//!
//! CSA (`rope.table: positions`, hca_csa.md §2.3, §3) passes the full
//! `[max_positions, rope_dim]` table and `position_ids`; the kernels gather row p_t. Its
//! cases start requests at mixed positions, most near max_positions − 8, so no token's
//! position is its index: the golden rotates with the rows at the positions, and the same
//! outputs must fail against rows 0..t.
//!
//! `flash_tp2_sim_time` (ignored; `cargo test -p runner --test stage_qkv_proj_rope --
//! --ignored --nocapture`) runs the stage at FLASH dims, t = 256, and prints wall time
//! and GM bytes per kernel.

mod stage_checks;
mod support;

use std::collections::BTreeMap;

use abi::plan::{Launch, Step};
use golden::compare::ratio_allclose;
use golden::fixtures::{self, FixtureOptions, StartPositions};
use golden::qkv::{QkvWeights, qkv_proj_rope};
use golden::rope::RopeRows;
use golden::tensor::Tensor;
use golden::{Dims, LayerSpec};
use half::{bf16, f16};
use harness::backend::Tiling;
use harness::runtime::Runtime;
use kernelgen::plan::Plan;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stage_checks::{expect, valid_rows};
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
    /// The tokens' positions when the RoPE tables are the full position table (CSA);
    /// `None` when they are token-local rows.
    positions: Option<Vec<usize>>,
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
    for name in ["freqs_cos", "freqs_sin"] {
        let full = fx.inputs.values::<bf16>(name).unwrap();
        let rows = full[..t * spec.dims.rope_dim].to_vec();
        inputs.insert(
            name.to_string(),
            Tensor::from_vec(vec![t, spec.dims.rope_dim], rows).unwrap(),
        );
    }
    with_projection_inputs(spec.dims, t, &fx.inputs, inputs, None, seed)
}

/// A CSA case: one request per start (t = 8 · starts), the fixture's full
/// `[max_positions, rope_dim]` tables and its `position_ids`.
fn case_at(p: &Plan, starts: &[i64], seed: u64) -> Case {
    assert_eq!(p.rope.table, kernelgen::spec::RopeTable::Positions);
    let spec = layer_spec(p);
    let fx = fixtures::build(
        &spec,
        &FixtureOptions {
            seed,
            starts: StartPositions::List(starts.to_vec()),
            tokens: None,
        },
    )
    .unwrap_or_else(|e| panic!("fixture: {e}"));
    let t = starts.len() * spec.dims.seq;
    let mut inputs = BTreeMap::new();
    for name in ["freqs_cos", "freqs_sin", "position_ids"] {
        inputs.insert(name.to_string(), fx.inputs.get(name).unwrap().clone());
    }
    assert_eq!(
        inputs["freqs_cos"].shape(),
        [spec.dims.max_seq_len, spec.dims.rope_dim],
        "the full position table"
    );
    let positions: Vec<usize> = values::<i32>(&inputs, "position_ids")
        .iter()
        .map(|&p| usize::try_from(p).unwrap())
        .collect();
    assert_eq!(positions.len(), t);
    assert!(
        positions.iter().enumerate().all(|(i, &p)| p != i),
        "a position equal to its token index would not tell row p_t from row t"
    );
    with_projection_inputs(spec.dims, t, &fx.inputs, inputs, Some(positions), seed)
}

/// Adds the fixture's projection weights and a seeded x_normed of `t` rows to `inputs`.
fn with_projection_inputs(
    dims: Dims,
    t: usize,
    fixture: &golden::tensor::TensorMap,
    mut inputs: BTreeMap<String, Tensor>,
    positions: Option<Vec<usize>>,
    seed: u64,
) -> Case {
    for name in ["wq_a", "wq_b", "wq_b_scale", "wkv", "gamma_cq", "gamma_ckv"] {
        inputs.insert(name.to_string(), fixture.get(name).unwrap().clone());
    }
    let spec_dims = &dims;
    // rms_norm's output: rows of unit RMS (uniform on ±√3), rounded to bf16
    let mut r = ChaCha8Rng::seed_from_u64(seed ^ 0x9e37);
    let x: Vec<bf16> = (0..t * spec_dims.hidden)
        .map(|_| bf16::from_f32(r.random_range(-1.732f32..1.732)))
        .collect();
    inputs.insert(
        "x_normed".into(),
        Tensor::from_vec(vec![t, spec_dims.hidden], x).unwrap(),
    );
    Case {
        dims,
        t,
        inputs,
        positions,
    }
}

fn values<T: golden::tensor::Element>(m: &BTreeMap<String, Tensor>, name: &str) -> Vec<T> {
    m[name].values::<T>().unwrap().to_vec()
}

/// The golden's RoPE rows: the token-local tables, or the full table's rows at the
/// tokens' positions (as `golden::layer::csa` gathers them).
fn rope_rows(c: &Case) -> RopeRows {
    let d = &c.dims;
    let (cos, sin) = (
        values::<bf16>(&c.inputs, "freqs_cos"),
        values::<bf16>(&c.inputs, "freqs_sin"),
    );
    match &c.positions {
        None => RopeRows::from_tables(&cos, &sin, d.rope_dim, d.rope_dim / 2),
        Some(at) => RopeRows::gather(&cos, &sin, d.rope_dim, d.rope_dim / 2, at),
    }
}

fn golden(c: &Case) -> golden::qkv::Qkv {
    golden_with(c, &rope_rows(c))
}

fn golden_with(c: &Case, rope: &RopeRows) -> golden::qkv::Qkv {
    let d = &c.dims;
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
        rope,
    )
}

/// Whether the plan's KvFinish writes the kv rows into the pool itself (fusion on:
/// KvFinishInsert, cache_insert's launch taken as its prologue) instead of to kv.
fn inserts(p: &Plan) -> bool {
    support::host(&p.variant).steps.iter().any(|s| {
        matches!(s, Step::Launch(l) if l.stage == "qkv_proj_rope" && l.also.contains(&"cache_insert"))
    })
}

/// A slot mapping for [`inserts`] plans: token i → pool row `rows − 1 − 3i`, every seventh
/// token skipped (−1), the capacity's tokens ≥ t to row 0 (which no valid token maps to:
/// a kernel reading past t would write it).
fn insert_slots(p: &Plan, t: usize) -> (&'static str, Vec<i64>) {
    let name = ["swa_slot_mapping", "ori_slot_mapping"]
        .into_iter()
        .find(|n| p.tensor(n).is_some())
        .expect("a slot mapping");
    let rows = p.pools.kv_pool_rows as i64;
    let slots = (0..p.shape.local_t as i64)
        .map(|i| match i {
            i if i >= t as i64 => 0,
            i if i % 7 == 3 => -1,
            i => rows - 1 - 3 * i,
        })
        .collect();
    (name, slots)
}

/// The kv rows of an [`inserts`] run, read from the pool at `slots` (a skipped token's row:
/// `want`'s, as it is not written anywhere); every pool row no token maps to is unwritten.
fn kv_from_pool(
    tensors: &BTreeMap<String, Tensor>,
    slots: &[i64],
    want: &[bf16],
    hd: usize,
) -> Tensor {
    let pool = values::<bf16>(tensors, "kv_cache");
    let t = want.len() / hd;
    let mut mapped = vec![false; pool.len() / hd];
    let mut rows = Vec::with_capacity(t * hd);
    for (i, &slot) in slots[..t].iter().enumerate() {
        match usize::try_from(slot) {
            Ok(r) => {
                mapped[r] = true;
                rows.extend_from_slice(&pool[r * hd..(r + 1) * hd]);
            }
            Err(_) => rows.extend_from_slice(&want[i * hd..(i + 1) * hd]),
        }
    }
    for (r, _) in mapped.iter().enumerate().filter(|(_, m)| !**m) {
        assert!(
            pool[r * hd..(r + 1) * hd]
                .iter()
                .all(|v| v.to_bits() == u16::MAX),
            "kv_cache row {r}: no token maps to it, yet it was written"
        );
    }
    Tensor::from_vec(vec![t, hd], rows).unwrap()
}

/// Runs the stage for `c` and checks every output against the golden.
fn check_stage(p: &Plan, rt: &Runtime, c: &Case) {
    let want = golden(c);
    let mut tensors = c.inputs.clone();
    let slots = inserts(p).then(|| insert_slots(p, c.t));
    if let Some((name, s)) = &slots {
        let mapping = Tensor::from_vec(vec![s.len()], s.clone()).unwrap();
        tensors.insert(name.to_string(), mapping);
    }
    let stats = support::run(rt, &mut tensors, tiling(p, c.t));
    let d = &c.dims;
    let t = c.t;
    let kv = match &slots {
        Some((_, s)) => kv_from_pool(&tensors, s, &want.kv, d.head_dim),
        None => valid_rows("kv", &tensors["kv"], t),
    };
    let got = |name: &str| match name {
        "kv" => kv.clone(),
        _ => valid_rows(name, &tensors[name], t),
    };
    if c.positions.is_some() {
        // The same outputs against rows 0..t of the table (what a kernel ignoring
        // position_ids would read) must fail: the cases tell the two apart.
        let d = &c.dims;
        let (cos, sin) = (
            values::<bf16>(&c.inputs, "freqs_cos"),
            values::<bf16>(&c.inputs, "freqs_sin"),
        );
        let first_rows: Vec<usize> = (0..t).collect();
        let wrong = golden_with(
            c,
            &RopeRows::gather(&cos, &sin, d.rope_dim, d.rope_dim / 2, &first_rows),
        );
        for (name, width, rows) in [
            ("q", d.heads * d.head_dim, wrong.q),
            ("kv", d.head_dim, wrong.kv),
        ] {
            let r = ratio_allclose(
                name,
                &got(name),
                &Tensor::from_vec(vec![t, width], rows).unwrap(),
                1e-4,
                1.0 / 128.0,
                0.005,
            );
            println!("  against rows 0..t: {r}");
            assert!(
                !r.pass,
                "{name} also matches RoPE rows 0..t: {}",
                r.detail()
            );
        }
    }
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
    stage_checks::check_launches(p, &stats);
}

/// `nb`: the pool's blocks, which KvFinishInsert bounds its slots by.
fn tiling(p: &Plan, t: usize) -> Tiling {
    support::tiling(&[("t", t), ("group_t", t), ("nb", p.pools.kv_pool_blocks)])
}

#[test]
fn swa_small_tp1_matches_the_golden() {
    let p = plan("swa_small_tp1");
    // wq_a and wkv split K: one group launch writes both products' partials, and their
    // slice sums run side by side after it
    let launches: Vec<&Launch> = (support::host(&p.variant).steps.iter())
        .filter_map(|s| match s {
            Step::Launch(l) => Some(l),
            _ => None,
        })
        .collect();
    let binds = |l: &Launch, a: &str| l.args.contains(&a);
    assert!(launches.iter().any(|l| l.kernel.starts_with("matmul_group")
        && binds(l, "k_partials_q_latent")
        && binds(l, "k_partials_kv_latent")));
    assert!(
        launches
            .iter()
            .any(|l| l.kernel.starts_with("beside_k_slice_sum")
                && binds(l, "q_latent")
                && binds(l, "kv_latent"))
    );
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

/// The reference's deployment (FLASH dims, 8 tokens): wq_b (int8, B stored [K, N]) is a
/// weight stream of 8 rows on every core in one mixed launch: the vector cores take its
/// last columns and read part of the cube's B into L2 ahead of it between their units'
/// slices (`dsv4/matmul_group.h` ReadBeside); q_acc must still be the exact int32 product
/// qr · wq_b, as half scaled by 2^-deq_shift(q_lora) (both cores' columns rounded once, to
/// the same bits), and q the golden's.
#[test]
fn swa_deployment_tp1_shares_wq_b_and_reads_beside() {
    let variant = "swa_deployment_tp1";
    let p = plan(variant);
    let kernels = &support::planned(variant).kernels.kernels;
    let parts: Vec<Vec<&str>> = (support::host(variant).steps.iter())
        .filter_map(|s| match s {
            Step::Launch(l) if l.stage == "qkv_proj_rope" && l.args.contains(&"wq_b") => {
                let k = kernels.iter().find(|k| k.name == l.kernel)?;
                Some(k.parts.iter().map(|p| p.class).collect())
            }
            _ => None,
        })
        .collect();
    assert_eq!(parts, [vec!["Matmul", "VectorMatmul", "BReader"]]);
    let rt = support::stages(variant, STAGE);
    let c = case(p, p.shape.local_t, 13);
    let mut tensors = c.inputs.clone();
    support::run(rt, &mut tensors, tiling(p, c.t));
    assert_q_acc(variant, &c, &tensors);
    check_stage(p, rt, &c);
}

/// At 512 tokens FLASH's wq_b runs whole, QHeads after it: in two column ranges with QHeads
/// beside the second (`gemm::overlap`) the model has it quicker at 512 rows but slower at 16,
/// where the second range reads its B on the cube cores only, by more (`Timing::gains`); at
/// runtime token counts below the capacity q_acc is still the exact product and q the
/// golden's.
#[test]
fn swa_tp1_runs_wq_b_whole_then_q_heads() {
    let variant = "swa_tp1";
    let p = plan(variant);
    let kernels = &support::planned(variant).kernels.kernels;
    let launches: Vec<&Launch> = (support::host(variant).steps.iter())
        .filter_map(|s| match s {
            Step::Launch(l) => Some(l),
            _ => None,
        })
        .collect();
    let wq_b = (launches.iter())
        .position(|l| l.args.contains(&"wq_b"))
        .expect("wq_b's launch");
    assert!(
        launches[wq_b].kernel.starts_with("matmul_i8_kn")
            && launches[wq_b].args == ["qr", "wq_b", "q_acc"],
        "{variant}: wq_b whole: {:?}",
        launches[wq_b]
    );
    let next = launches[wq_b + 1];
    let parts: Vec<&str> = (kernels.iter().find(|k| k.name == next.kernel))
        .map(|k| k.parts.iter().map(|p| p.class).collect())
        .unwrap_or_default();
    assert!(
        next.kernel.starts_with("qkv_q_heads") || parts.contains(&"QHeads"),
        "{variant}: QHeads after it: {}",
        next.kernel
    );
    let rt = support::stages(variant, STAGE);
    for t in [16, 40] {
        let c = case(p, t, 15);
        let mut tensors = c.inputs.clone();
        support::run(rt, &mut tensors, tiling(p, c.t));
        assert_q_acc(variant, &c, &tensors);
        check_stage(p, rt, &c);
    }
}

/// q_acc is the exact int32 product qr · wq_b as half scaled by 2^-deq_shift(q_lora) (every
/// column rounded once, to the same bits, whichever cores wrote it).
fn assert_q_acc(variant: &str, c: &Case, tensors: &BTreeMap<String, Tensor>) {
    let (d, t) = (&c.dims, c.t);
    let n = d.heads * d.head_dim;
    let qr = values::<i8>(tensors, "qr");
    let w = values::<i8>(&c.inputs, "wq_b");
    let q_acc = values::<f16>(tensors, "q_acc");
    // DEQF16: the exact sum to f32, times 2^-shift, rounded once to half
    let scale = 1.0 / (1u32 << kernelgen::kernel_plan::gemm::deq_shift(d.q_lora)) as f32;
    for r in 0..t {
        let mut want = vec![0i32; n];
        for k in 0..d.q_lora {
            let a = i32::from(qr[r * d.q_lora + k]);
            for (col, acc) in want.iter_mut().enumerate() {
                *acc += a * i32::from(w[k * n + col]);
            }
        }
        let want: Vec<u16> = want
            .iter()
            .map(|&v| f16::from_f32(v as f32 * scale).to_bits())
            .collect();
        let got: Vec<u16> = q_acc[r * n..(r + 1) * n]
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert!(got == want, "{variant}: q_acc row {r} is not qr · wq_b");
    }
}

/// One start per request for `t` tokens: mostly near the table's end (max_positions − 8
/// and a little below, none a multiple of 8 but the first), every third one small, so
/// positions are mixed and none is its token's index.
fn csa_starts(p: &Plan, t: usize) -> Vec<i64> {
    let max = p.pools.max_positions as i64;
    let seq = p.shape.decode_seq;
    (0..(t / seq) as i64)
        .map(|b| {
            if b % 3 == 2 {
                3 + 17 * b
            } else {
                max - 8 - 5 * b
            }
        })
        .collect()
}

fn check_csa(variant: &str, seed: u64) {
    let p = plan(variant);
    let rt = support::stages(variant, STAGE);
    for t in [p.shape.local_t, p.shape.local_t - 8] {
        check_stage(p, rt, &case_at(p, &csa_starts(p, t), seed));
    }
}

#[test]
fn csa_small_tp1_gathers_rope_rows_by_position() {
    check_csa("csa_small_tp1", 13);
}

#[test]
fn csa_small_tp2_gathers_rope_rows_by_position() {
    check_csa("csa_small_tp2", 14);
}

#[test]
fn only_position_tables_pass_position_ids() {
    for v in support::variants() {
        if v.kernels.missing.iter().any(|u| u.stage == "qkv_proj_rope") {
            continue;
        }
        let positions = v.plan.rope.table == kernelgen::spec::RopeTable::Positions;
        // (kernel, the tensors it binds) of qkv_proj_rope's launches, a kernel run together
        // with others as each of its parts
        let mut kernels: Vec<(&str, &[&str])> = Vec::new();
        for s in &v.kernels.steps {
            let kernelgen::kernel_plan::Step::Launch(l) = s else {
                continue;
            };
            if l.stage != "qkv_proj_rope" {
                continue;
            }
            let k = v
                .kernels
                .kernels
                .iter()
                .find(|k| k.name == l.kernel)
                .unwrap();
            if !k.runs_together() {
                kernels.push((l.kernel, l.args));
                continue;
            }
            let mut at = 0;
            for part in &k.parts {
                kernels.push((&part.name, &l.args[at..at + part.args.len()]));
                at += part.args.len();
            }
        }
        // the stage's own kernels (the others' parts bind the tables too): KvFinish, and
        // QHeads on all heads or in column ranges beside wq_b's
        kernels.retain(|(k, args)| k.starts_with("qkv_") && args.contains(&"freqs_cos"));
        let count = |prefix: &str| {
            kernels
                .iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .count()
        };
        assert!(
            count("qkv_kv_finish") == 1
                && count("qkv_q_heads") >= 1
                && kernels.len() == 1 + count("qkv_q_heads"),
            "{}: QHeads and KvFinish",
            v.plan.variant
        );
        for (kernel, args) in kernels {
            let what = format!("{}: {kernel}", v.plan.variant);
            assert_eq!(args.contains(&"position_ids"), positions, "{what}");
            assert_eq!(kernel.contains("_positions"), positions, "{what}");
        }
    }
}
