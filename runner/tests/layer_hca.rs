//! The HCA layer end to end on the sim: the generated plans of hca_small at TP 1, 2 and 4
//! against the golden with the reference's comparators (x_out, compress_state, kv_cache,
//! cmp_kv) at the default starts at capacity and capacity − 8 tokens (below capacity the
//! default state table makes requests pool rows other requests write in the same step,
//! hca_csa.md §4.7), the reference's mixed list, and 1M-context starts; every case three
//! times with identical bits. The reference's own vectors replay through hca_ref.

use std::sync::OnceLock;

use golden::compare::{Report, compare_layer};
use golden::fixtures::{self, DEFAULT_SEED, FixtureOptions, StartPositions};
use golden::io;
use golden::tensor::TensorMap;
use golden::{self, LayerSpec};
use harness::backend::{KernelSources, sim::Sim};
use harness::runtime::{Runtime, RuntimeOptions};
use runner::variant;

/// The prepared runtime of a generated variant, built once per test binary.
fn runtime(name: &str) -> &'static Runtime {
    static CACHE: OnceLock<std::sync::Mutex<Vec<(String, &'static Runtime)>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap();
    if let Some((_, rt)) = cache.iter().find(|(n, _)| n == name) {
        return rt;
    }
    let plan = variant::by_name(name).unwrap_or_else(|| panic!("no variant {name}"));
    let sources = KernelSources::in_repo(&variant::repo_root());
    let rt: &'static Runtime = Box::leak(Box::new(
        Runtime::prepare(plan, &Sim::default(), &sources, RuntimeOptions::default())
            .unwrap_or_else(|e| panic!("{e}")),
    ));
    cache.push((name.to_string(), rt));
    rt
}

/// Runs `inputs` three times: the outputs must be bit-identical (the kernels' parallel
/// order may not show in the result); returns the reports of the first run against `want`.
fn judge(rt: &Runtime, spec: &LayerSpec, inputs: &TensorMap, want: &TensorMap) -> Vec<Report> {
    let first = rt.run(inputs).unwrap_or_else(|e| panic!("{e}"));
    assert!(first.stray.is_empty(), "{:?}", first.stray);
    for rep in 2..=3 {
        let again = rt.run(inputs).unwrap_or_else(|e| panic!("{e}"));
        for (name, t) in first.outputs.iter() {
            let other = again.outputs.get(name).expect("same outputs");
            assert!(
                t.as_le_bytes() == other.as_le_bytes(),
                "{name}: run {rep} differs from run 1"
            );
        }
    }
    let reports = compare_layer(spec, inputs, &first.outputs, want);
    let lines: Vec<String> = reports.iter().map(Report::detail).collect();
    assert!(
        !reports.is_empty() && reports.iter().all(|r| r.pass),
        "{}",
        lines.join("\n")
    );
    assert_eq!(
        reports
            .iter()
            .map(|r| r.output.as_str())
            .collect::<Vec<_>>(),
        ["x_out", "compress_state", "kv_cache", "cmp_kv"]
    );
    reports
}

/// One seeded case of `name` against the golden; returns the fixture's count of pooled
/// state rows another request writes in the same step.
fn case(name: &str, starts: StartPositions, tokens: Option<usize>) -> usize {
    let rt = runtime(name);
    let spec = variant::layer_spec(rt.plan()).unwrap();
    let opts = FixtureOptions {
        seed: DEFAULT_SEED,
        starts,
        tokens,
    };
    let f = fixtures::build(&spec, &opts).unwrap_or_else(|e| panic!("{name} {opts:?}: {e}"));
    let want = golden::run(&spec, &f.inputs).unwrap();
    judge(rt, &spec, &f.inputs, &want);
    f.state_aliases
}

/// Default starts at capacity and capacity − 8 tokens; the reference's mixed list (one
/// request each at 16384, 16384, 131072 and 524288); the largest legal start alone (8192
/// compressed rows fill the 256-block pool) and beside two requests without compressed rows.
fn every_start_set(name: &str) -> usize {
    let cap = variant::by_name(name).unwrap().deployment.local_t;
    let mut aliases = case(name, StartPositions::Default, Some(cap));
    aliases += case(name, StartPositions::Default, Some(cap - 8));
    case(
        name,
        StartPositions::List(vec![16384, 16384, 131072, 524288]),
        None,
    );
    case(name, StartPositions::Scalar(1_048_568), None);
    case(name, StartPositions::List(vec![10, 1_048_568, 100]), None);
    aliases
}

// At TP 1 and 2 the batches below capacity (15 and 7 requests) pool rows that other
// requests write in the same step: the sequential order is exercised.
#[test]
fn hca_small_tp1_passes_the_golden() {
    let aliases = every_start_set("hca_small_tp1");
    assert!(aliases > 0, "hca_small_tp1: no cross-request state reads");
}

#[test]
fn hca_small_tp2_passes_the_golden() {
    let aliases = every_start_set("hca_small_tp2");
    assert!(aliases > 0, "hca_small_tp2: no cross-request state reads");
}

#[test]
fn hca_small_tp4_passes_the_golden() {
    every_start_set("hca_small_tp4");
}

#[test]
fn the_reference_vectors_replay_through_hca_ref_at_tp1() {
    let dir = variant::repo_root().join("../shared/golden-vectors/hca_small_tp1");
    let saved = io::load_case(&dir).unwrap();
    let rt = runtime("hca_ref_tp1");
    let spec = variant::layer_spec(rt.plan()).unwrap();
    judge(rt, &spec, &saved.inputs, &saved.outputs);
}
