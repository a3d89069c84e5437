//! The SWA layer end to end on the sim: the generated plans of the small specs at TP 1, 2
//! and 4 (and 3 and 6, six output groups; and Pro's wide dims at TP 1) against the golden
//! with the reference's comparators, at default, mixed and near-1M start positions, at
//! capacity and capacity − 8 tokens; the reference's own vectors replayed; and a corrupted
//! plan that must fail.

mod layer_checks;

use abi::plan::{Step, VariantPlan};
use golden::compare::{Report, compare_layer};
use golden::fixtures::{self, FixtureOptions, StartPositions};
use golden::io;
use golden::tensor::TensorMap;
use golden::{self, LayerSpec};
use harness::runtime::Runtime;
use layer_checks::{assert_pass, prepare, runtime, seeded};
use runner::variant;

const OUTPUTS: [&str; 2] = ["x_out", "kv_cache"];

/// Runs `inputs` on `rt` and compares with `want`.
fn judge(rt: &Runtime, spec: &LayerSpec, inputs: &TensorMap, want: &TensorMap) -> Vec<Report> {
    let out = rt.run(inputs).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.stray.is_empty(), "{:?}", out.stray);
    compare_layer(spec, inputs, &out.outputs, want)
}

/// One seeded case of `name` against the golden.
fn case(name: &str, starts: StartPositions, tokens: Option<usize>) {
    let rt = runtime(name);
    let spec = variant::layer_spec(rt.plan()).unwrap();
    let what = format!("{name} {starts:?} {tokens:?}");
    let (f, want) = seeded(&spec, starts, tokens);
    assert_pass(&what, &judge(rt, &spec, &f.inputs, &want.outputs), &OUTPUTS);
}

/// The starts of a run at capacity − 8 tokens. At TP > 1 the reference's default set
/// (its sub-capacity batches are collision-free for that set, swa.md §7 pitfall 9); at
/// TP 1 the default set below capacity aliases in the pool (the fixture refuses it, as
/// the reference's validator does), so every request starts at 8192: each one's writes
/// then stay on its own physical page.
fn below_capacity(name: &str) -> (StartPositions, Option<usize>) {
    let plan = variant::by_name(name).unwrap();
    let (cap, seq) = (plan.deployment.local_t, plan.deployment.decode_seq);
    if plan.deployment.tp == 1 {
        let requests = (cap - 8) / seq;
        (StartPositions::List(vec![8192; requests]), None)
    } else {
        (StartPositions::Default, Some(cap - 8))
    }
}

/// The default starts at capacity, and capacity − 8 tokens ([`below_capacity`]); the
/// reference's mixed list (`16384,16384,131072,524288`, one request each); near-1M starts
/// filling the capacity (the largest legal start first), and the largest legal start alone.
fn every_start_set(name: &str) {
    let plan = variant::by_name(name).unwrap();
    let cap = plan.deployment.local_t;
    let batch = plan.deployment.b;
    case(name, StartPositions::Default, Some(cap));
    let (starts, tokens) = below_capacity(name);
    case(name, starts, tokens);
    case(
        name,
        StartPositions::List(vec![16384, 16384, 131072, 524288]),
        None,
    );
    let near_1m = (0..batch as i64).map(|b| 1_048_568 - 977 * b).collect();
    case(name, StartPositions::List(near_1m), None);
    case(name, StartPositions::Scalar(1_048_568), None);
}

#[test]
fn swa_mini_tp1_passes_the_golden() {
    every_start_set("swa_mini_tp1");
}

#[test]
fn swa_mini_tp2_passes_the_golden() {
    every_start_set("swa_mini_tp2");
}

#[test]
fn swa_mini_tp4_passes_the_golden() {
    every_start_set("swa_mini_tp4");
}

/// TP degrees that are not powers of two: six output groups over 3 and 6 ranks.
#[test]
fn swa_groups6_tp3_and_tp6_pass_the_golden() {
    every_start_set("swa_groups6_tp3");
    every_start_set("swa_groups6_tp6");
}

/// A hidden size that is not a power of two (7 · 128, as Pro's 7 · 1024): every tiling of
/// `hidden` divides it without 4096- or power-of-two assumptions.
#[test]
fn swa_d896_at_tp1_2_4_passes_the_golden() {
    for name in ["swa_d896_tp1", "swa_d896_tp2", "swa_d896_tp4"] {
        let cap = variant::by_name(name).unwrap().deployment.local_t;
        case(name, StartPositions::Default, Some(cap));
        let (starts, tokens) = below_capacity(name);
        case(name, starts, tokens);
    }
}

/// Pro's wide dims at a small hidden size: wq_b's 65,536 columns (one past any 16-bit
/// stride, copied row by row), int8 sums over q_lora = 1536 past 2^24 (exact in int32),
/// 128 heads in 16 output groups, two tokens per request on 128-row pages.
#[test]
fn swa_wide_tp1_passes_the_golden() {
    let name = "swa_wide_tp1";
    case(name, StartPositions::Default, None);
    case(name, StartPositions::List(vec![3, 127, 8190, 16382]), None);
}

#[test]
fn swa_small_at_tp1_and_tp2_passes_the_golden() {
    for name in ["swa_small_tp1", "swa_small_tp2"] {
        let cap = variant::by_name(name).unwrap().deployment.local_t;
        case(name, StartPositions::Default, Some(cap));
        let (starts, tokens) = below_capacity(name);
        case(name, starts, tokens);
    }
}

#[test]
fn the_reference_vectors_replay_through_swa_small_at_tp1() {
    let dir = variant::repo_root().join("../shared/golden-vectors/swa_small_tp1");
    let saved = io::load_case(&dir).unwrap();
    let rt = runtime("swa_small_tp1");
    let spec = variant::layer_spec(rt.plan()).unwrap();
    let reports = judge(rt, &spec, &saved.inputs, &saved.outputs);
    assert_pass("reference vectors", &reports, &OUTPUTS);
}

#[test]
fn a_plan_that_skips_the_cache_insert_fails_on_x_out() {
    // Without the insert, the window reads the pool's stale rows where this step's own
    // tokens belong: attention, and so x_out, must come out wrong. (Fused plans insert
    // the rows in KvFinish's launch: the unfused plan has the launch to leave out.)
    let good = variant::by_name("swa_small_unfused_tp2").unwrap();
    let steps: Vec<Step> = good
        .steps
        .iter()
        .filter(|s| s.stage() != "cache_insert")
        .copied()
        .collect();
    assert_eq!(steps.len() + 1, good.steps.len(), "one cache-insert launch");
    let broken: &'static VariantPlan = Box::leak(Box::new(VariantPlan {
        steps: Box::leak(steps.into_boxed_slice()),
        ..*good
    }));
    let rt = prepare(broken);
    let spec = variant::layer_spec(good).unwrap();
    let f = fixtures::build(&spec, &FixtureOptions::default()).unwrap();
    let want = golden::run(&spec, &f.inputs).unwrap();
    let reports = judge(&rt, &spec, &f.inputs, &want);
    let x_out = reports.iter().find(|r| r.output == "x_out").unwrap();
    assert!(!x_out.pass, "{}", x_out.detail());
    let kv = reports.iter().find(|r| r.output == "kv_cache").unwrap();
    assert!(!kv.pass, "{}", kv.detail());
}

/// The plan with `fuse: false` gives the fused plan's bits, and both pass.
#[test]
fn swa_small_unfused_gives_the_fused_bits() {
    layer_checks::fused_as_unfused("swa_small_tp2", "swa_small_unfused_tp2", &OUTPUTS);
}
