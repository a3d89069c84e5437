//! Running stages of a generated layer for stage tests, through the harness runtime that
//! runs whole layers (`Runtime::prepare_stages`, `Runtime::run_stages`): the launches come
//! from the variant's generated host plan, the kernels from `generated/ascendc`, and every
//! argument a test does not give is allocated at capacity and poisoned. The dims and
//! on-chip budgets the tests check against come from the generator's plan.

#![allow(dead_code)] // each test binary uses part of this module

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use abi::plan::VariantPlan;
use golden::fixtures::{self, FixtureOptions, StartPositions};
use golden::tensor::{Tensor, TensorMap};
use harness::backend::sim::Sim;
use harness::backend::{KernelSources, LaunchCounters, Tiling};
use harness::kernel_library::LaunchStats;
use harness::runtime::{Runtime, RuntimeError, RuntimeOptions, StepKind};
use kernelgen::chip::Mem;
use kernelgen::plan::Plan;
use kernelgen::variant::Variant;
use runner::variant;

/// Every variant as the generator plans it, from the specs on disk.
pub fn variants() -> &'static [Variant] {
    static VARIANTS: OnceLock<Vec<Variant>> = OnceLock::new();
    VARIANTS.get_or_init(|| {
        kernelgen::generate(&variant::repo_root(), &[])
            .unwrap_or_else(|e| panic!("specs do not generate: {e}"))
            .variants
    })
}

pub fn planned(name: &str) -> &'static Variant {
    variants()
        .iter()
        .find(|v| v.plan.variant == name)
        .unwrap_or_else(|| panic!("no variant {name}"))
}

/// The dims, shapes and ABI of variant `name`.
pub fn plan(name: &str) -> &'static Plan {
    &planned(name).plan
}

/// The bytes of `mem` the plan gives `kernel` of variant `name`: the sizes its `InitBuffer`
/// calls receive, each rounded up to the memory's alignment.
pub fn budget(name: &str, kernel: &str, mem: Mem) -> usize {
    let v = planned(name);
    let k = v
        .kernels
        .kernels
        .iter()
        .find(|k| k.name == kernel)
        .unwrap_or_else(|| panic!("{name} plans no kernel {kernel}"));
    k.bytes_in(mem, v.plan.chip)
}

/// A launch's peak use of each on-chip memory.
pub fn peaks(st: &LaunchStats) -> [(Mem, u64); 5] {
    [
        (Mem::Ub, st.peak_ub),
        (Mem::L1, st.peak_l1),
        (Mem::L0a, st.peak_l0a),
        (Mem::L0b, st.peak_l0b),
        (Mem::L0c, st.peak_l0c),
    ]
}

/// Every launch's peak use of each on-chip memory is exactly its kernel's budget: the
/// kernel allocates what the plan passed it, no more and nothing besides. A kernel that runs
/// other stages' kernels together with this one's (`together.h`) stays within its budget: a
/// stage run hands those parts poisoned inputs, with which they may set up only some of
/// their buffers.
pub fn check_peaks(name: &str, stats: &[(String, LaunchStats)]) {
    for (kernel, st) in stats {
        let together = planned(name)
            .kernels
            .kernels
            .iter()
            .any(|k| k.name == *kernel && k.runs_together());
        for (mem, peak) in peaks(st) {
            let budget = budget(name, kernel, mem) as u64;
            let what =
                format!("{name}: {kernel} uses {peak} B of {mem}, the plan budgets {budget} B");
            if together {
                assert!(peak <= budget, "{what}");
            } else {
                assert_eq!(peak, budget, "{what}");
            }
        }
    }
}

/// Knob `param` of the first kernel of variant `name` whose name starts with `kernel`.
pub fn knob(name: &str, kernel: &str, param: &str) -> u32 {
    let v = planned(name);
    let k = v
        .kernels
        .kernels
        .iter()
        .find(|k| k.name.starts_with(kernel))
        .unwrap_or_else(|| panic!("{name} plans no kernel {kernel}…"));
    match k.params.iter().find(|(p, _)| *p == param) {
        Some((_, kernelgen::kernel_plan::Value::U32(v))) => *v,
        other => panic!("{}: knob {param} is {other:?}", k.name),
    }
}

/// The generated host plan of `name`: what the runtime executes.
pub fn host(name: &str) -> &'static VariantPlan {
    variant::by_name(name).unwrap_or_else(|| panic!("no host plan {name}"))
}

/// The golden's description of a plan's layer: the one plan → golden conversion
/// (`runner::variant::layer_spec`), from the same variant's generated host plan.
pub fn layer_spec(p: &Plan) -> golden::LayerSpec {
    variant::layer_spec(host(&p.variant)).unwrap_or_else(|e| panic!("{e}"))
}

/// One rank's inputs for `starts` (one request each): the seeded fixture of `p`'s layer at
/// TP 1 (a stage runs per rank, and a rank's inputs have the same shapes at every TP), and
/// that layer.
pub fn rank_fixture(p: &Plan, starts: &[i32], seed: u64) -> (golden::LayerSpec, TensorMap) {
    let mut spec = layer_spec(p);
    spec.dims.tp = 1;
    let opts = FixtureOptions {
        seed,
        starts: StartPositions::List(starts.iter().map(|&s| i64::from(s)).collect()),
        tokens: None,
    };
    let f = fixtures::build(&spec, &opts).unwrap_or_else(|e| panic!("{starts:?}: {e}"));
    (spec, f.inputs)
}

/// The runtime of `stages` of `variant` on the sim (from `generated/`, which must be
/// fresh), prepared once per test binary: tests running in parallel share it instead of
/// compiling the same kernels at the same time.
pub fn stages(variant: &str, stages: &[&'static str]) -> &'static Runtime {
    type Prepared = Vec<(String, Vec<&'static str>, &'static Runtime)>;
    static PREPARED: Mutex<Prepared> = Mutex::new(Vec::new());
    let mut prepared = PREPARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((.., rt)) = prepared
        .iter()
        .find(|(v, s, _)| v == variant && s == stages)
    {
        return rt;
    }
    let rt = Runtime::prepare_stages(
        host(variant),
        &Sim::default(),
        &KernelSources::in_repo(&variant::repo_root()),
        stages,
        RuntimeOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let rt: &'static Runtime = Box::leak(Box::new(rt));
    prepared.push((variant.to_string(), stages.to_vec(), rt));
    rt
}

/// Tiling words with the named `dsv4::TilingData` fields set, every other word 0.
pub fn tiling(fields: &[(&str, usize)]) -> Tiling {
    Tiling::from_fields(fields).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs the prepared stages on `tensors` (by ABI or workspace name) and adds every
/// buffer the launches bind, after the run, to them; returns each launch's kernel and
/// counters.
pub fn run(
    rt: &Runtime,
    tensors: &mut BTreeMap<String, Tensor>,
    tiling: Tiling,
) -> Vec<(String, LaunchStats)> {
    try_run(rt, tensors, tiling).unwrap_or_else(|e| panic!("{e}"))
}

/// [`run`], with a failed launch (a trap of the sim) as the error.
pub fn try_run(
    rt: &Runtime,
    tensors: &mut BTreeMap<String, Tensor>,
    tiling: Tiling,
) -> Result<Vec<(String, LaunchStats)>, RuntimeError> {
    Ok(try_run_counted(rt, tensors, tiling)?
        .into_iter()
        .map(|(kernel, c)| (kernel, c.stats))
        .collect())
}

/// [`run`] with each launch's whole counters (its modeled time per core among them).
pub fn run_counted(
    rt: &Runtime,
    tensors: &mut BTreeMap<String, Tensor>,
    tiling: Tiling,
) -> Vec<(String, LaunchCounters)> {
    try_run_counted(rt, tensors, tiling).unwrap_or_else(|e| panic!("{e}"))
}

fn try_run_counted(
    rt: &Runtime,
    tensors: &mut BTreeMap<String, Tensor>,
    tiling: Tiling,
) -> Result<Vec<(String, LaunchCounters)>, RuntimeError> {
    let given: TensorMap = tensors
        .iter()
        .map(|(n, t)| (n.clone(), t.clone()))
        .collect();
    let out = rt.run_stages(&given, &tiling)?;
    for (name, t) in out.tensors.iter() {
        tensors.insert(name.to_string(), t.clone());
    }
    Ok(out
        .steps
        .into_iter()
        .map(|s| match s.kind {
            StepKind::Launch {
                kernel, counters, ..
            } => (
                kernel.to_string(),
                counters.expect("the sim counts every launch"),
            ),
            StepKind::Exchange { .. } => unreachable!("a stage run has no collectives"),
        })
        .collect())
}
