//! Shared pieces of the layer tests (SWA, HCA, CSA): the prepared runtime of a generated
//! variant, built once per test binary; a seeded case with its golden; the pass check;
//! repeated runs that must give identical bits.

#![allow(dead_code)] // each test binary uses part of this module

use std::sync::{Mutex, OnceLock};

use abi::plan::VariantPlan;
use golden::compare::{Report, judge_layer, layer_probes};
use golden::fixtures::{self, DEFAULT_SEED, Fixture, FixtureOptions, StartPositions};
use golden::tensor::TensorMap;
use golden::{self, LayerSpec, Traced};
use harness::backend::{KernelSources, sim::Sim};
use harness::runtime::{Runtime, RuntimeError, RuntimeOptions};
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

/// A runtime for `plan` on the sim with the repo's kernel sources, probing what the
/// layer's comparison needs.
pub fn prepare(plan: &'static VariantPlan) -> Runtime {
    let sources = KernelSources::in_repo(&variant::repo_root());
    prepare_from(plan, &sources).unwrap_or_else(|e| panic!("{e}"))
}

/// [`prepare`] with kernels from `sources`.
pub fn prepare_from(
    plan: &'static VariantPlan,
    sources: &KernelSources,
) -> Result<Runtime, RuntimeError> {
    let spec = variant::layer_spec(plan).unwrap();
    let options = RuntimeOptions {
        probes: layer_probes(&spec),
        ..RuntimeOptions::default()
    };
    Runtime::prepare(plan, &Sim::default(), sources, options)
}

/// The seeded fixture of `spec` for `starts` and `tokens`, and the golden's traced run.
pub fn seeded(
    spec: &LayerSpec,
    starts: StartPositions,
    tokens: Option<usize>,
) -> (Fixture, Traced) {
    let opts = FixtureOptions {
        seed: DEFAULT_SEED,
        starts,
        tokens,
    };
    let f = fixtures::build(spec, &opts).unwrap_or_else(|e| panic!("{opts:?}: {e}"));
    let want = golden::run_traced(spec, &f.inputs).unwrap();
    (f, want)
}

/// The CSA outputs the reference validates (saved cases carry no more), both semantics.
pub const CSA_SAVED_OUTPUTS: [&str; 7] = [
    "x_out",
    "compress_state",
    "inner_compress_state",
    "kv_cache",
    "cmp_kv",
    "idx_kv_cache",
    "idx_kv_scale",
];

/// Everything a seeded CSA case judges: those, and the indexer's intermediates.
pub fn csa_outputs() -> Vec<&'static str> {
    [
        &CSA_SAVED_OUTPUTS[..],
        &["idx_q", "idx_q_scale", "idx_weights", "topk_idx"],
    ]
    .concat()
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

/// Saved outputs as the expected side (no trace).
pub fn saved(outputs: &TensorMap) -> Traced {
    Traced {
        outputs: outputs.clone(),
        trace: TensorMap::new(),
    }
}

/// Runs `inputs` `runs` times: the outputs must be bit-identical (the kernels' parallel
/// order may not show in the result) and nothing written past its extent; the first run's
/// outputs must pass against `want`, covering exactly `outputs`. Returns the judgement's
/// notes.
pub fn judge_repeated(
    what: &str,
    rt: &Runtime,
    spec: &LayerSpec,
    (inputs, want): (&TensorMap, &Traced),
    runs: usize,
    outputs: &[&str],
) -> Vec<String> {
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
    let judged = judge_layer(spec, inputs, (&first.outputs, &first.probes), want).unwrap();
    assert_pass(what, &judged.reports, outputs);
    judged.notes
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

/// The variant `name` at the default starts at capacity and capacity − 8 tokens, then at
/// each of `others` (one request per entry), each judged over `runs` runs; returns the
/// default runs' count of pooled state rows another request writes in the same step.
pub fn start_sets(name: &str, others: Vec<StartPositions>, runs: usize, outputs: &[&str]) -> usize {
    let cap = variant::by_name(name).unwrap().deployment.local_t;
    let mut aliases = seeded_case(name, (StartPositions::Default, Some(cap)), runs, outputs);
    aliases += seeded_case(
        name,
        (StartPositions::Default, Some(cap - 8)),
        runs,
        outputs,
    );
    for starts in others {
        seeded_case(name, (starts, None), runs, outputs);
    }
    aliases
}

/// Fusion changes launches, not results: `fused` (a plan with merged launches) and
/// `unfused` (the same spec with `fuse: false`) give the same bytes in every output on the
/// same inputs, those pass against the golden, and the fused plan has fewer launches (so
/// a fusion that stopped happening fails here too).
pub fn fused_as_unfused(fused: &str, unfused: &str, outputs: &[&str]) {
    let launches = |name: &str| {
        variant::by_name(name)
            .unwrap()
            .steps
            .iter()
            .filter(|s| matches!(s, abi::plan::Step::Launch(_)))
            .count()
    };
    assert!(
        launches(fused) < launches(unfused),
        "{fused}: {} launches, {unfused}: {}",
        launches(fused),
        launches(unfused)
    );
    let (a, b) = (runtime(fused), runtime(unfused));
    let spec = variant::layer_spec(a.plan()).unwrap();
    let (f, want) = seeded(&spec, StartPositions::Default, None);
    let what = format!("{unfused} beside {fused}");
    judge_repeated(&what, b, &spec, (&f.inputs, &want), 1, outputs);
    let (x, y) = (a.run(&f.inputs).unwrap(), b.run(&f.inputs).unwrap());
    for (name, t) in x.outputs.iter() {
        assert!(
            t.as_le_bytes() == y.outputs.get(name).unwrap().as_le_bytes(),
            "{name}: {fused} and {unfused} differ"
        );
    }
}
