//! The HCA layer end to end on the sim: the generated plans of hca_small at TP 1, 2 and 4
//! against the golden with the reference's comparators (x_out, compress_state, kv_cache,
//! cmp_kv), at the default starts at capacity and capacity − 8 tokens, and a list whose
//! requests see no, one tile and more than one tile of compressed rows.

use std::sync::OnceLock;

use harness::backend::{KernelSources, sim::Sim};
use harness::compare::{Report, compare_layer};
use harness::fixtures::{self, DEFAULT_SEED, FixtureOptions, StartPositions};
use harness::golden;
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

/// One seeded case of `name` against the golden.
fn case(name: &str, starts: StartPositions, tokens: Option<usize>) {
    let rt = runtime(name);
    let spec = variant::layer_spec(rt.plan()).unwrap();
    let opts = FixtureOptions {
        seed: DEFAULT_SEED,
        starts,
        tokens,
    };
    let f = fixtures::build(&spec, &opts).unwrap_or_else(|e| panic!("{name} {opts:?}: {e}"));
    let want = golden::run(&spec, &f.inputs).unwrap();
    let out = rt.run(&f.inputs).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.stray.is_empty(), "{:?}", out.stray);
    let reports = compare_layer(&spec, &f.inputs, &out.outputs, &want);
    let lines: Vec<String> = reports.iter().map(Report::detail).collect();
    assert!(
        !reports.is_empty() && reports.iter().all(|r| r.pass),
        "{name} {opts:?}:\n{}",
        lines.join("\n")
    );
    assert_eq!(
        reports
            .iter()
            .map(|r| r.output.as_str())
            .collect::<Vec<_>>(),
        ["x_out", "compress_state", "kv_cache", "cmp_kv"]
    );
}

/// Default starts at capacity; capacity − 8 tokens with requests at 8192 and 10 (the default
/// set below capacity makes the fixture's default state table alias pooled rows of one
/// request with rows another request writes in the same step, hca_csa.md §4.7, and cmp_kv
/// then depends on the order of writes and pools); requests with 0, 1, 128 and 132
/// compressed rows.
fn every_start_set(name: &str) {
    let cap = variant::by_name(name).unwrap().deployment.local_t;
    let seq = variant::by_name(name).unwrap().deployment.decode_seq;
    case(name, StartPositions::Default, Some(cap));
    let below: Vec<i64> = (0..(cap - 8) / seq)
        .map(|b| if b % 2 == 0 { 8192 } else { 10 })
        .collect();
    case(name, StartPositions::List(below), None);
    case(name, StartPositions::List(vec![17000, 0, 16376, 127]), None);
}

#[test]
fn hca_small_tp1_passes_the_golden() {
    every_start_set("hca_small_tp1");
}

#[test]
fn hca_small_tp2_passes_the_golden() {
    every_start_set("hca_small_tp2");
}

#[test]
fn hca_small_tp4_passes_the_golden() {
    every_start_set("hca_small_tp4");
}
