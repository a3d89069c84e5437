//! Running stages of a generated layer for stage tests, through the harness runtime that
//! runs whole layers (`Runtime::prepare_stages`, `Runtime::run_stages`): the launches come
//! from the variant's generated host plan, the kernels from `generated/ascendc`, and every
//! argument a test does not give is allocated at capacity and poisoned. The dims and
//! on-chip budgets the tests check against come from the generator's plan.

#![allow(dead_code)] // each test binary uses part of this module

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use abi::plan::VariantPlan;
use golden::tensor::{Tensor, TensorMap};
use harness::backend::KernelSources;
use harness::backend::sim::Sim;
use harness::runtime::{Runtime, RuntimeError, RuntimeOptions, StepKind, Tiling};
use harness::sim::LaunchStats;
use kernelgen::plan::{Plan, StageKind};
use runner::variant;

/// Every variant's plan, from the specs on disk.
pub fn plans() -> &'static [Plan] {
    static PLANS: OnceLock<Vec<Plan>> = OnceLock::new();
    PLANS.get_or_init(|| {
        kernelgen::generate(&variant::repo_root(), &[])
            .unwrap_or_else(|e| panic!("specs do not generate: {e}"))
            .plans
    })
}

pub fn plan(variant: &str) -> &'static Plan {
    plans()
        .iter()
        .find(|p| p.variant == variant)
        .unwrap_or_else(|| panic!("no variant {variant}"))
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

/// The runtime of `stages` of `variant` on the sim (from `generated/`, which must be
/// fresh), prepared once per test binary: tests running in parallel share it instead of
/// compiling the same kernels at the same time.
pub fn stages(variant: &str, stages: &[StageKind]) -> &'static Runtime {
    type Prepared = Vec<(String, Vec<StageKind>, &'static Runtime)>;
    static PREPARED: Mutex<Prepared> = Mutex::new(Vec::new());
    let mut prepared = PREPARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((.., rt)) = prepared
        .iter()
        .find(|(v, s, _)| v == variant && s == stages)
    {
        return rt;
    }
    let names: Vec<&str> = stages.iter().map(|s| s.name()).collect();
    let rt = Runtime::prepare_stages(
        host(variant),
        &Sim::default(),
        &KernelSources::in_repo(&variant::repo_root()),
        &names,
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
                counters.expect("the sim counts every launch").stats,
            ),
            StepKind::Exchange { .. } => unreachable!("a stage run has no collectives"),
        })
        .collect())
}
