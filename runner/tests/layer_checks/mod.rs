//! Shared pieces of the layer tests (SWA, HCA, CSA): the prepared runtime of a generated
//! variant, built once per test binary; a seeded case with its golden; the pass check;
//! repeated runs that must give identical bits.

#![allow(dead_code)] // each test binary uses part of this module

use std::sync::{Mutex, OnceLock};

use abi::plan::VariantPlan;
use golden::compare::{Report, compare_layer};
use golden::fixtures::{self, DEFAULT_SEED, Fixture, FixtureOptions, StartPositions};
use golden::tensor::TensorMap;
use golden::{self, LayerSpec};
use harness::backend::{KernelSources, sim::Sim};
use harness::runtime::{Runtime, RuntimeOptions};
use runner::variant;

/// The prepared runtime of the generated variant `name`, built once per test binary.
pub fn runtime(name: &str) -> &'static Runtime {
    static CACHE: OnceLock<Mutex<Vec<(String, &'static Runtime)>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    if let Some((_, rt)) = cache.iter().find(|(n, _)| n == name) {
        return rt;
    }
    let plan = variant::by_name(name).unwrap_or_else(|| panic!("no variant {name}"));
    let rt: &'static Runtime = Box::leak(Box::new(prepare(plan)));
    cache.push((name.to_string(), rt));
    rt
}

/// A runtime for `plan` on the sim with the repo's kernel sources.
pub fn prepare(plan: &'static VariantPlan) -> Runtime {
    let sources = KernelSources::in_repo(&variant::repo_root());
    Runtime::prepare(plan, &Sim::default(), &sources, RuntimeOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The seeded fixture of `spec` for `starts` and `tokens`, and the golden's outputs.
pub fn seeded(
    spec: &LayerSpec,
    starts: StartPositions,
    tokens: Option<usize>,
) -> (Fixture, TensorMap) {
    let opts = FixtureOptions {
        seed: DEFAULT_SEED,
        starts,
        tokens,
    };
    let f = fixtures::build(spec, &opts).unwrap_or_else(|e| panic!("{opts:?}: {e}"));
    let want = golden::run(spec, &f.inputs).unwrap();
    (f, want)
}

/// Every report passes, and they cover exactly `outputs`.
pub fn assert_pass(what: &str, reports: &[Report], outputs: &[&str]) {
    let lines: Vec<String> = reports.iter().map(Report::detail).collect();
    assert!(
        !reports.is_empty() && reports.iter().all(|r| r.pass),
        "{what}:\n{}",
        lines.join("\n")
    );
    let names: Vec<&str> = reports.iter().map(|r| r.output.as_str()).collect();
    assert_eq!(names, outputs, "{what}");
}

/// Runs `inputs` `runs` times: the outputs must be bit-identical (the kernels' parallel
/// order may not show in the result) and nothing written past its extent; the first run's
/// outputs must pass against `want`, covering exactly `outputs`.
pub fn judge_repeated(
    what: &str,
    rt: &Runtime,
    spec: &LayerSpec,
    (inputs, want): (&TensorMap, &TensorMap),
    runs: usize,
    outputs: &[&str],
) {
    let first = rt.run(inputs).unwrap_or_else(|e| panic!("{e}"));
    assert!(first.stray.is_empty(), "{:?}", first.stray);
    for rep in 2..=runs {
        let again = rt.run(inputs).unwrap_or_else(|e| panic!("{e}"));
        for (name, t) in first.outputs.iter() {
            let other = again.outputs.get(name).expect("same outputs");
            assert!(
                t.as_le_bytes() == other.as_le_bytes(),
                "{what}: {name}: run {rep} differs from run 1"
            );
        }
    }
    let reports = compare_layer(spec, inputs, &first.outputs, want);
    assert_pass(what, &reports, outputs);
}

/// One seeded case of the variant `name` against the golden, judged over `runs` runs;
/// returns the fixture's count of pooled state rows another request writes in the same step.
pub fn seeded_case(
    name: &str,
    (starts, tokens): (StartPositions, Option<usize>),
    runs: usize,
    outputs: &[&str],
) -> usize {
    let rt = runtime(name);
    let spec = variant::layer_spec(rt.plan()).unwrap();
    let what = format!("{name} {starts:?} {tokens:?}");
    let (f, want) = seeded(&spec, starts, tokens);
    judge_repeated(&what, rt, &spec, (&f.inputs, &want), runs, outputs);
    f.state_aliases
}
