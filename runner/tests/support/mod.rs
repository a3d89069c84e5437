//! Running one stage's generated kernels on the CPU model, for stage tests: the
//! plan comes from the generator, the kernels from `generated/ascendc`, and every
//! workspace the stage touches is poisoned before the first launch.

#![allow(dead_code)] // each test binary uses part of this module

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use golden::tensor::Tensor;
use harness::sim::{BuildSpec, CoreMode, GmArg, LaunchStats, SimLibrary};
use kernelgen::kernels::{Cores, Step};
use kernelgen::plan::{Dim, Plan, StageKind};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every variant's plan, from the specs on disk.
pub fn plans() -> &'static [Plan] {
    static PLANS: OnceLock<Vec<Plan>> = OnceLock::new();
    PLANS.get_or_init(|| {
        kernelgen::generate(&repo_root(), &[])
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

/// The golden's description of a plan's layer: the one plan → golden conversion
/// (`runner::variant::layer_spec`), from the same variant's generated host plan.
pub fn layer_spec(p: &Plan) -> golden::LayerSpec {
    let host = runner::variant::by_name(&p.variant)
        .unwrap_or_else(|| panic!("no host plan {}", p.variant));
    runner::variant::layer_spec(host).unwrap_or_else(|e| panic!("{e}"))
}

/// Compiles the kernels `plan` launches in `stages` (from `generated/`, which must be fresh).
pub fn library(plan: &Plan, stages: &[StageKind]) -> SimLibrary {
    library_of(&[plan], stages)
}

/// One library with the kernels every plan in `plans` launches in `stages`.
pub fn library_of(plans: &[&Plan], stages: &[StageKind]) -> SimLibrary {
    let root = repo_root();
    let mut sources: Vec<PathBuf> = plans
        .iter()
        .flat_map(|p| launches(p, stages).map(|(k, ..)| k.to_string()))
        .map(|k| root.join(format!("generated/ascendc/kernels/{k}.cpp")))
        .collect();
    sources.sort();
    sources.dedup();
    SimLibrary::build(&BuildSpec::new(sources).include_dir(root.join("generated/ascendc/include")))
        .unwrap_or_else(|e| panic!("kernels do not build: {e}"))
}

/// `(kernel, cores, block_dim, args)` of the launches of `stages`, in plan order.
pub fn launches<'p>(
    plan: &'p Plan,
    stages: &'p [StageKind],
) -> impl Iterator<Item = (&'p str, Cores, u32, &'p [String])> {
    plan.kernels.steps.iter().filter_map(move |s| match s {
        Step::Launch(l) if stages.contains(&l.stage) => {
            Some((l.kernel.as_str(), l.cores, l.block_dim, l.args.as_slice()))
        }
        _ => None,
    })
}

/// Runtime extents of a launch, in the layout of `dsv4/tiling_data.h`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tiling {
    pub t: u32,
    pub b: u32,
    pub nb: u32,
    pub tp_rank: u32,
    pub group_t: u32,
}

impl Tiling {
    pub fn words(&self) -> [u32; 16] {
        let mut w = [0u32; 16];
        w[..5].copy_from_slice(&[self.t, self.b, self.nb, self.tp_rank, self.group_t]);
        w
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.words().iter().flat_map(|v| v.to_le_bytes()).collect()
    }
}

/// The capacity shape of `dims` with runtime axes at the given values.
pub fn shape(dims: &[Dim], vars: &[(&str, usize)]) -> Vec<usize> {
    dims.iter()
        .map(|d| match d {
            Dim::Const(n) => *n,
            Dim::Var(v) => {
                vars.iter()
                    .find(|(n, _)| n == v)
                    .unwrap_or_else(|| panic!("no value for axis {v}"))
                    .1
            }
        })
        .collect()
}

/// Runs the launches of `stages` in order. `tensors` holds the stage's inputs by ABI or
/// workspace name; every other argument is a plan workspace, allocated at capacity and
/// poisoned (0xFF: NaN in floats) unless already present. Returns each launch's counters.
pub fn run(
    lib: &SimLibrary,
    plan: &Plan,
    stages: &[StageKind],
    tensors: &mut BTreeMap<String, Tensor>,
    tiling: Tiling,
) -> Vec<(String, LaunchStats)> {
    run_words(lib, plan, stages, tensors, tiling.words())
}

/// [`run`] with every word of the tiling given (`dsv4/tiling_data.h` order), for stages that
/// read the pool and table extents past `group_t`.
pub fn run_words(
    lib: &SimLibrary,
    plan: &Plan,
    stages: &[StageKind],
    tensors: &mut BTreeMap<String, Tensor>,
    words: [u32; 16],
) -> Vec<(String, LaunchStats)> {
    let caps: Vec<(&str, usize)> = plan.axes.iter().map(|a| (a.name, a.max)).collect();
    let mut stats = Vec::new();
    for (kernel, cores, block_dim, args) in launches(plan, stages) {
        for a in args {
            if !tensors.contains_key(a) {
                let w = plan
                    .tensor(a)
                    .or_else(|| plan.kernels.workspaces.iter().find(|w| w.name == a))
                    .unwrap_or_else(|| {
                        panic!("{kernel}: argument {a} is neither given nor declared")
                    });
                tensors.insert(a.clone(), poisoned(w.dtype, shape(&w.shape, &caps)));
            }
        }
        let mut tiling_bytes: Vec<u8> = words.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut workspace = vec![0u8; 32];
        let mut bufs: Vec<(String, *mut u8, usize)> = args
            .iter()
            .map(|a| {
                let t = tensors.get_mut(a).unwrap();
                let bytes = t.as_le_bytes_mut();
                (a.clone(), bytes.as_mut_ptr(), bytes.len())
            })
            .collect();
        // SAFETY: each pointer comes from a distinct tensor of `tensors` (args are distinct
        // names), which is not touched again until the launch returns.
        let mut gm: Vec<GmArg> = bufs
            .drain(..)
            .map(|(n, p, l)| unsafe { GmArg::from_raw(n, p, l) })
            .collect();
        gm.push(GmArg::new("workspace", &mut workspace));
        gm.push(GmArg::new("tiling", &mut tiling_bytes));
        let mode = match cores {
            Cores::Aiv => CoreMode::Aiv,
            Cores::Aic => CoreMode::Aic,
            Cores::Mix => CoreMode::Mix,
        };
        let s = lib
            .launch(kernel, mode, block_dim, &mut gm)
            .unwrap_or_else(|e| panic!("{e}"));
        stats.push((kernel.to_string(), s));
    }
    stats
}

fn poisoned(dtype: kernelgen::plan::DType, shape: Vec<usize>) -> Tensor {
    use abi::DType as H;
    use kernelgen::plan::DType as G;
    let d = match dtype {
        G::Bf16 => H::Bf16,
        G::F32 => H::F32,
        G::I8 => H::I8,
        G::I32 => H::I32,
        G::I64 => H::I64,
    };
    let n: usize = shape.iter().product();
    Tensor::from_le_bytes(d, shape, &vec![0xFF; n * d.size()]).expect("poisoned tensor")
}
