//! The kernels and launches of a variant: which Ascend C kernels its stages run,
//! in what order, on how many cores, bound to which GM tensors, and the per-rank
//! workspaces that hand data from one kernel to the next.
//!
//! Every kernel is a thin instantiation of a hand-written building block
//! (`templates/ascendc/include/dsv4/*.h`, copied to `generated/ascendc/include`):
//! the generated `.cpp` only fixes compile-time parameters and the GM argument
//! list (FlashInfer's pattern). A kernel is named after exactly the parameters it
//! is specialised on, so two variants that need the same kernel share one file.
//!
//! One module per stage derives that stage's launches from the plan; `gemm`
//! provides the cube matmul kernel the projection stages share.

mod cache_insert;
mod collectives;
mod compressor;
mod gemm;
mod hc_post;
mod hc_pre;
mod o_proj;
mod qkv_proj_rope;
mod rms_norm;
mod sparse_attention;

use crate::plan::{DType, Dim, Dir, Placement, Plan, StageKind, StagePlan, TensorPlan};

/// Which cores a kernel runs on (dav-c220: a block of a mixed kernel is 1 AIC + 2 AIV).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cores {
    Aiv,
    Aic,
    Mix,
}

impl Cores {
    /// `KERNEL_TASK_TYPE_DEFAULT` argument.
    pub fn task_type(self) -> &'static str {
        match self {
            Cores::Aiv => "KERNEL_TYPE_AIV_ONLY",
            Cores::Aic => "KERNEL_TYPE_AIC_ONLY",
            Cores::Mix => "KERNEL_TYPE_MIX_AIC_1_2",
        }
    }

    /// `abi::plan::Cores` variant.
    pub fn rust(self) -> &'static str {
        match self {
            Cores::Aiv => "Aiv",
            Cores::Aic => "Aic",
            Cores::Mix => "Mix",
        }
    }
}

/// A compile-time constant of a kernel specialisation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    U32(u32),
    F32(f32),
    Bool(bool),
}

impl Value {
    /// C++ type and literal.
    pub fn cpp(self) -> (&'static str, String) {
        match self {
            Value::U32(v) => ("uint32_t", v.to_string()),
            // `{:?}` round-trips f32 exactly.
            Value::F32(v) => ("float", format!("{v:?}f")),
            Value::Bool(v) => ("bool", v.to_string()),
        }
    }
}

/// One distinct kernel: `generated/ascendc/kernels/<name>.cpp`.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// Symbol and file stem, made of the parameters it is specialised on.
    pub name: String,
    /// One line saying what it computes.
    pub doc: String,
    /// Building block header under `dsv4/`, e.g. `rms_norm.h`.
    pub block: &'static str,
    /// Class template in namespace `dsv4` with `static void Run(GM_ADDR…)`.
    pub class: &'static str,
    pub cores: Cores,
    /// `static constexpr` members of the parameter struct, in order.
    pub params: Vec<(&'static str, Value)>,
    /// GM parameter names, in order; `workspace` and `tiling` follow.
    pub args: Vec<&'static str>,
}

/// A kernel launch: which kernel, on how many blocks, bound to which tensors.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub stage: StageKind,
    pub kernel: String,
    pub cores: Cores,
    pub block_dim: u32,
    /// ABI tensor or workspace names bound to [`Kernel::args`], in order.
    pub args: Vec<String>,
}

/// What a variant executes, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Launch(Launch),
    /// swa.md §3.8 step 1: group slabs of `src` (`[o_groups · T_PAD, o_group_in]` on every
    /// rank) to the owner rank's `dst` (`[local_o_groups · GROUP_T_PAD, o_group_in]`), rows
    /// of source rank r at `lg · GROUP_T_PAD + r · t`.
    GroupAllToAll {
        src: String,
        dst: String,
    },
    /// swa.md §3.8 step 3, data movement only: rows `[o · t, o · t + t)` of every rank's
    /// `src` to owner o's `dst` at rows `r · t` (r = source rank). The sum is a kernel.
    TokenScatter {
        src: String,
        dst: String,
    },
}

/// The kernels, steps and workspaces of one variant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelPlan {
    /// Distinct kernels, in first-use order.
    pub kernels: Vec<Kernel>,
    pub steps: Vec<Step>,
    /// Per-rank GM scratch between kernels, in first-use order. Poisoned before a run.
    pub workspaces: Vec<TensorPlan>,
    /// Stages the building blocks cannot realise: errors unless the spec is a draft (then
    /// the variant renders but cannot run).
    pub missing: Vec<Unplanned>,
}

/// A stage the building blocks cannot realise for this plan, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unplanned {
    pub stage: StageKind,
    pub reason: String,
}

/// A float constant as it appears in a kernel name: exact (shortest round-trip
/// form) and an identifier, e.g. 1e-6 → `1em6`, 2.5e-5 → `2p5em5`.
pub(super) fn float_tag(v: f32) -> String {
    format!("{v:e}").replace('-', "m").replace('.', "p")
}

/// The first of `needs` (what a building block handles, and how to say it when unmet)
/// that does not hold.
pub(super) fn unmet<const N: usize>(needs: [(bool, String); N]) -> Option<String> {
    needs.into_iter().find(|(ok, _)| !ok).map(|(_, why)| why)
}

/// Collects a variant's kernel plan; stage modules add to it in stage order.
pub struct Builder<'p> {
    pub plan: &'p Plan,
    out: KernelPlan,
}

impl<'p> Builder<'p> {
    fn new(plan: &'p Plan) -> Self {
        Builder {
            plan,
            out: KernelPlan::default(),
        }
    }

    /// Appends a launch of `kernel` on `block_dim` blocks with `args` bound in order.
    pub fn launch(&mut self, stage: StageKind, kernel: Kernel, block_dim: u32, args: &[&str]) {
        assert_eq!(
            args.len(),
            kernel.args.len(),
            "launch of {} binds {} tensors to {} parameters",
            kernel.name,
            args.len(),
            kernel.args.len()
        );
        assert!(block_dim > 0, "launch of {} on zero blocks", kernel.name);
        self.out.steps.push(Step::Launch(Launch {
            stage,
            kernel: kernel.name.clone(),
            cores: kernel.cores,
            block_dim,
            args: args.iter().map(|a| a.to_string()).collect(),
        }));
        match self.out.kernels.iter().find(|k| k.name == kernel.name) {
            // Same name means same specialisation: anything else is a naming bug.
            Some(known) => assert_eq!(known, &kernel, "two kernels named {}", kernel.name),
            None => self.out.kernels.push(kernel),
        }
    }

    pub fn step(&mut self, step: Step) {
        self.out.steps.push(step);
    }

    /// Declares a per-rank workspace; declaring a name again must agree.
    pub fn workspace(&mut self, name: &'static str, shape: Vec<Dim>, dtype: DType) {
        let t = TensorPlan {
            name,
            shape,
            dtype,
            dir: Dir::Out,
            placement: Placement::PerRank,
        };
        match self.out.workspaces.iter().find(|w| w.name == name) {
            Some(known) => assert_eq!(known, &t, "workspace {name} declared twice differently"),
            None => self.out.workspaces.push(t),
        }
    }

    /// Declares the flat per-rank scratch `name` of at least `elems` elements: launches
    /// run one after another, so all that use it share one, sized for the largest.
    pub fn scratch(&mut self, name: &'static str, elems: usize, dtype: DType) {
        match self.out.workspaces.iter_mut().find(|w| w.name == name) {
            Some(known) => match known.shape.as_mut_slice() {
                [Dim::Const(n)] if known.dtype == dtype => *n = (*n).max(elems),
                _ => panic!("scratch {name} declared as a {:?} workspace", known.shape),
            },
            None => self.workspace(name, vec![Dim::Const(elems)], dtype),
        }
    }

    /// Records that `stage` cannot be planned, and why.
    fn missing(&mut self, stage: StageKind, reason: impl Into<String>) {
        self.out.missing.push(Unplanned {
            stage,
            reason: reason.into(),
        });
    }
}

/// The kernel plan of `plan`: each stage's launches, in stage order.
pub fn plan(plan: &Plan) -> KernelPlan {
    let mut b = Builder::new(plan);
    for s in &plan.stages {
        stage(&mut b, s);
    }
    b.out
}

fn stage(b: &mut Builder, s: &StagePlan) {
    match s.kind {
        StageKind::HcPre => hc_pre::plan(b, s),
        StageKind::RmsNorm => rms_norm::plan(b, s),
        StageKind::QkvProjRope => qkv_proj_rope::plan(b, s),
        StageKind::CacheInsert => cache_insert::plan(b, s),
        StageKind::SparseAttention => sparse_attention::plan(b, s),
        StageKind::OGroupAllToAll | StageKind::OReduceScatter => collectives::plan(b, s),
        StageKind::OProj => o_proj::plan(b, s),
        StageKind::HcPost => hc_post::plan(b, s),
        StageKind::Compressor => compressor::plan(b, s),
        StageKind::Indexer => b.missing(s.kind, "the lightning indexer has no kernels yet"),
    }
}
