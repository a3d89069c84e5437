//! The kernels and launches of a variant: which Ascend C kernels its stages run,
//! in what order, on how many cores, bound to which GM tensors, and the per-rank
//! workspaces that hand data from one kernel to the next.
//!
//! Every kernel is a thin instantiation of a hand-written building block
//! (`blocks/dsv4/*.h`, copied to `generated/ascendc/include`):
//! the generated `.cpp` only fixes compile-time parameters and the GM argument
//! list (FlashInfer's pattern). A kernel is named after exactly the parameters it
//! is specialised on, so two variants that need the same kernel share one file.
//!
//! Stage modules (`crate::stages`) add their launches through [`Builder`]; `gemm` is the
//! cube matmul the projection stages share. Launches and steps are the `abi` crate's
//! types, the ones the generated host tables are written in.

pub mod fuse;
pub mod gemm;
mod together;

use std::collections::BTreeSet;
use std::sync::Mutex;

pub use abi::plan::{Cores, Launch, Step};
use abi::{DType, Dim, Dir, Placement};

use crate::budget::{self, Buffer};
use crate::chip::{Chip, Mem};
use crate::plan::{Plan, TensorPlan};

/// The building block that runs independent kernels in one launch (`together`).
pub const TOGETHER: &str = "together.h";

/// The building blocks whose parts run at once, a block holding all of them: the cube's and
/// the vector cores' of a mixed launch, and the attention's last step and its finish beside
/// each other on the vector cores' TPipe.
pub const PARTS_AT_ONCE: &[&str] = &[
    "attention_combine.h",
    "attention_compressed.h",
    "attention_window_fused.h",
    "hc_pre.h",
];

/// A compile-time constant of a kernel specialisation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    U32(u32),
    F32(f32),
    Bool(bool),
}

impl Value {
    /// A count or size as a `uint32_t` parameter (the spec's bounds keep them in range).
    pub fn u32(v: usize) -> Value {
        Value::U32(u32::try_from(v).expect("kernel sizes fit u32"))
    }

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
    /// Its on-chip buffers: the plan decides every `InitBuffer` size and passes each as
    /// the knob `<NAME>_BYTES`; the budget check sums exactly these, per launch.
    pub buffers: Vec<Buffer>,
    /// A fused kernel's parts (`crate::kernel_plan::fuse`): each a kernel of its own whose
    /// params and buffers become the parameter struct `P<i>` of the class template;
    /// empty for a kernel of one building block call (its struct is `Params`).
    pub parts: Vec<Kernel>,
}

impl Kernel {
    /// The compile-time parameter `name`, if it has one.
    pub fn param(&self, name: &str) -> Option<Value> {
        self.params
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }

    /// The `uint32_t` parameter `name` as a size, if the kernel has it.
    pub fn u32_param(&self, name: &str) -> Option<usize> {
        match self.param(name) {
            Some(Value::U32(v)) => Some(v as usize),
            _ => None,
        }
    }

    /// The parameter structs the class template takes: `Params`, or `P0, P1, …`.
    pub fn param_structs(&self) -> String {
        if self.parts.is_empty() {
            "Params".into()
        } else {
            let names: Vec<String> = (0..self.parts.len()).map(|i| format!("P{i}")).collect();
            names.join(", ")
        }
    }

    /// Whether this kernel runs independent kernels together ([`TOGETHER`]): each part's
    /// parameter struct then names its class.
    pub fn runs_together(&self) -> bool {
        self.block == TOGETHER
    }

    /// The building blocks its file includes: its own, and a together kernel's parts'.
    pub fn includes(&self) -> Vec<&'static str> {
        let mut headers = vec![self.block];
        if self.runs_together() {
            for p in &self.parts {
                if !headers.contains(&p.block) {
                    headers.push(p.block);
                }
            }
        }
        headers
    }

    /// What a block of this kernel holds of `mem`: its buffers, or a fused kernel's
    /// largest part (a block runs its parts one after another, each on its own TPipe), or
    /// all of them where they run at once ([`PARTS_AT_ONCE`]); a matmul group's B reader
    /// runs beside its other parts.
    pub fn bytes_in(&self, mem: Mem, chip: &Chip) -> usize {
        let (beside, parts): (Vec<&Kernel>, Vec<&Kernel>) =
            self.parts.iter().partition(|p| p.class == "BReader");
        let beside: usize = beside.iter().map(|p| p.bytes_in(mem, chip)).sum();
        let parts = parts.iter().map(|p| p.bytes_in(mem, chip));
        beside
            + if self.parts.is_empty() {
                budget::bytes_in(&self.buffers, mem, chip)
            } else if PARTS_AT_ONCE.contains(&self.block) {
                parts.sum()
            } else {
                parts.max().unwrap_or(0)
            }
    }

    /// The kernel on columns `[first, first + cols)` of the product it reads (its block
    /// takes COL0 and NCOLS: `OwnColumns` in `dsv4/vec_common.h`).
    pub fn on_columns(&self, first: usize, cols: usize) -> Kernel {
        let mut k = self.clone();
        k.name = format!("{}_col{first}n{cols}", self.name);
        k.params.push(("COL0", Value::u32(first)));
        k.params.push(("NCOLS", Value::u32(cols)));
        k
    }

    /// Its buffers and its parts' (a fused kernel's are its parts').
    pub fn all_buffers(&self) -> Vec<&Buffer> {
        let mut all: Vec<&Buffer> = self.buffers.iter().collect();
        all.extend(self.parts.iter().flat_map(Kernel::all_buffers));
        all
    }

    /// The entry's kernel-type marking, spelled as the `.asc` samples of asc-devkit do.
    pub fn marking(&self) -> &'static str {
        match self.cores {
            Cores::Aiv => "__vector__",
            Cores::Aic => "__cube__",
            Cores::Mix => "__mix__(1, 2)",
        }
    }
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
    /// What its groupable matmul kernels (whole or chained k slices) were planned for beyond
    /// their parameters (for fusion).
    pub matmuls: Vec<MatmulOrigin>,
    /// Launches offered to run the launch before them as their prologue (for fusion).
    pub prologues: Vec<Prologue>,
    /// Vector kernels whose work spreads over however many blocks their launch has (at least
    /// those they were planned on), with no per-block workspace: the fusion pass may run
    /// several together in one launch.
    pub spreads: Vec<String>,
    /// The layer's read-only inputs: no kernel writes them, so launches that share only
    /// these are independent (for fusion).
    pub read_only: Vec<&'static str>,
    /// Vector kernels that can finish a product's C column range by column range (for
    /// fusion: `gemm::overlap`).
    pub by_columns: Vec<ByColumns>,
}

impl KernelPlan {
    /// The plan with each of `merges` (the steps it replaces, the launch and its kernel) in
    /// place of its steps, at the first's place.
    pub(crate) fn with_merged(mut self, merges: Vec<(Vec<usize>, Launch, Kernel)>) -> KernelPlan {
        let mut drop = vec![false; self.steps.len()];
        for (members, launch, kernel) in merges {
            self.steps[members[0]] = Step::Launch(launch);
            for &m in &members[1..] {
                drop[m] = true;
            }
            if !self.kernels.iter().any(|k| k.name == kernel.name) {
                self.kernels.push(kernel);
            }
        }
        let mut i = 0;
        self.steps.retain(|_| {
            i += 1;
            !drop[i - 1]
        });
        self.without_unused_kernels()
    }

    /// The plan without the kernels no launch uses any more (their files go with them).
    pub(crate) fn without_unused_kernels(mut self) -> KernelPlan {
        let used = |k: &Kernel| {
            self.steps
                .iter()
                .any(|s| matches!(s, Step::Launch(l) if l.kernel == k.name))
        };
        let kernels = std::mem::take(&mut self.kernels);
        self.kernels = kernels.into_iter().filter(|k| used(k)).collect();
        self
    }
}

/// The stages a launch of `stage` that does the work of `launches` serves besides its own
/// (`Launch::also`): theirs and those they serve, each once.
pub(crate) fn serves_also(stage: &str, launches: &[&Launch]) -> Vec<&'static str> {
    let mut also: Vec<&'static str> = Vec::new();
    for l in launches {
        for &s in std::iter::once(&l.stage).chain(l.also) {
            if s != stage && !also.contains(&s) {
                also.push(s);
            }
        }
    }
    also
}

/// Whether `step` binds tensor `name`.
pub(crate) fn binds(step: &Step, name: &str) -> bool {
    match step {
        Step::Launch(l) => l.args.contains(&name),
        Step::GroupAllToAll { src, dst, .. } | Step::TokenScatter { src, dst } => {
            *src == name || *dst == name
        }
    }
}

/// A fusion decision (`fuse`): a launch joining an earlier one, or why it does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Step `later` (a matmul) joins the group of step `first`.
    Joins { first: usize, later: usize },
    /// Step `later` stays: `why`.
    Stays {
        first: usize,
        later: usize,
        why: String,
    },
    /// Kernel `consumer`'s launch takes `producer`'s before it as its prologue.
    Takes { producer: String, consumer: String },
    /// The offer of `consumer` to take `producer` is declined: `why`.
    Declines {
        producer: String,
        consumer: String,
        why: String,
    },
    /// Step `product` (a cube product) runs in column ranges overlapped with the launch of
    /// `consumer` after it (steps of the plan as the overlaps before left it).
    Overlaps { product: usize, consumer: String },
    /// Step `product` and the launch of `consumer` after it run one after the other: `why`.
    Serial {
        product: usize,
        consumer: String,
        why: String,
    },
    /// Step `later` (a spreading vector launch) runs together with step `first`'s (steps of
    /// the plan as the runs merged before left it).
    Together { first: usize, later: usize },
    /// Step `later` does not join step `first`'s run together: `why`.
    Apart {
        first: usize,
        later: usize,
        why: String,
    },
    /// Step `product` (a cube product alone) runs with its vector cores reading its B into
    /// L2 ahead of it (steps of the plan as the passes before left it).
    Ahead { product: usize },
    /// Step `product` (a cube product) runs without: `why`.
    NotAhead { product: usize, why: String },
}

/// A consumer stage's offer to take the launch before it as its prologue: the fusion pass
/// runs both as `fused` when a launch of `producer` directly precedes the consumer's and no
/// other step binds `input`, which then stays on chip.
#[derive(Debug, Clone, PartialEq)]
pub struct Prologue {
    /// The kernel whose launch writes `input`, and the one that reads it.
    pub producer: String,
    pub consumer: String,
    /// The workspace the producer writes and the consumer reads.
    pub input: &'static str,
    /// The fused launch's blocks.
    pub block_dim: u32,
    /// Both in one kernel, its GM arguments the producer's but `input`, then the consumer's
    /// but `input` and those the producer binds too (each tensor once).
    pub fused: Kernel,
}

/// A vector kernel that reads a product's C column range by column range: the fusion pass
/// may run it overlapped with the product that writes C (`gemm::overlap`), each range beside
/// the product of the next.
#[derive(Debug, Clone, PartialEq)]
pub struct ByColumns {
    /// The kernel, and the tensor it reads as C.
    pub kernel: String,
    pub input: &'static str,
    /// The kernel on each of C's column ranges in order ([`Kernel::on_columns`]), with its
    /// blocks.
    pub ranges: Vec<(Kernel, u32)>,
}

/// What a matmul kernel was planned for beyond its parameters: the capacity of its rows,
/// the stage's spec tiles and whether A arrives from HBM. The fusion pass plans a group's
/// vector share from these and the parts' parameters (`gemm::group`).
#[derive(Debug, Clone, PartialEq)]
pub struct MatmulOrigin {
    pub kernel: String,
    pub max_rows: usize,
    pub tiles: [usize; 3],
    pub a_from_hbm: bool,
}

/// A stage the building blocks cannot realise for this plan, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unplanned {
    pub stage: &'static str,
    pub reason: String,
}

/// A float constant as it appears in a kernel name: exact (shortest round-trip
/// form) and an identifier, e.g. 1e-6 → `1em6`, 2.5e-5 → `2p5em5`.
pub fn float_tag(v: f32) -> String {
    format!("{v:e}").replace('-', "m").replace('.', "p")
}

/// The first of `needs` (what a building block handles, and how to say it when unmet)
/// that does not hold.
pub fn unmet<const N: usize>(needs: [(bool, String); N]) -> Option<String> {
    needs.into_iter().find(|(ok, _)| !ok).map(|(_, why)| why)
}

/// Collects a variant's kernel plan; stage modules add to it in stage order, each while
/// it is the [`Builder::stage`] being planned.
pub struct Builder<'p> {
    pub plan: &'p Plan,
    stage: &'static str,
    out: KernelPlan,
}

impl<'p> Builder<'p> {
    pub fn new(plan: &'p Plan) -> Self {
        let inputs = plan.tensors.iter().filter(|t| t.dir == Dir::In);
        Builder {
            plan,
            stage: "",
            out: KernelPlan {
                read_only: inputs.map(|t| t.name).collect(),
                ..KernelPlan::default()
            },
        }
    }

    /// The stage the following launches, steps and refusals belong to.
    pub fn stage(&mut self, name: &'static str) {
        self.stage = name;
    }

    pub fn finish(self) -> KernelPlan {
        self.out
    }

    /// Appends a launch of `kernel` on `block_dim` blocks with `args` bound in order.
    pub fn launch(&mut self, kernel: Kernel, block_dim: u32, args: &[&str]) {
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
            stage: self.stage,
            kernel: intern(&kernel.name),
            cores: kernel.cores,
            block_dim,
            args: intern_list(args),
            also: &[],
        }));
        match self.out.kernels.iter().find(|k| k.name == kernel.name) {
            // Same name means same specialisation: anything else is a naming bug.
            Some(known) => assert_eq!(known, &kernel, "two kernels named {}", kernel.name),
            None => self.out.kernels.push(kernel),
        }
    }

    /// Keeps what a matmul kernel was planned for, for the fusion pass (once per kernel).
    pub fn matmul_origin(&mut self, origin: MatmulOrigin) {
        if !self.out.matmuls.iter().any(|o| o.kernel == origin.kernel) {
            self.out.matmuls.push(origin);
        }
    }

    /// The last launch planned so far and its kernel (what a prologue would take).
    pub fn last_launch(&self) -> Option<(&Launch, &Kernel)> {
        let l = self.out.steps.iter().rev().find_map(|s| match s {
            Step::Launch(l) => Some(l),
            _ => None,
        })?;
        let k = self.out.kernels.iter().find(|k| k.name == l.kernel)?;
        Some((l, k))
    }

    /// [`launch`](Self::launch) of a vector kernel that spreads its work over any number of
    /// blocks at least `block_dim` and keeps nothing per block in GM, so it may run together
    /// with others ([`spreads`](Self::spreads)).
    pub fn launch_spreading(&mut self, kernel: Kernel, block_dim: u32, args: &[&str]) {
        self.spreads(&kernel.name);
        self.launch(kernel, block_dim, args);
    }

    /// Declares that `kernel` (a vector kernel, e.g. one a prologue offer fuses) spreads its
    /// work over any number of blocks at least those of its launch and keeps nothing per
    /// block in GM, so it may run together with others.
    pub fn spreads(&mut self, kernel: &str) {
        if !self.out.spreads.iter().any(|k| k == kernel) {
            self.out.spreads.push(kernel.into());
        }
    }

    /// Whether `tensor` was just received by a collective (the last step, which leaves
    /// nothing in L2 as a launch does).
    pub fn just_received(&self, tensor: &str) -> bool {
        matches!(self.out.steps.last(),
            Some(Step::GroupAllToAll { dst, .. } | Step::TokenScatter { dst, .. }) if *dst == tensor)
    }

    /// Declares that a vector kernel can finish a product's C column range by column range
    /// (for fusion: `gemm::overlap`).
    pub fn by_columns(&mut self, entry: ByColumns) {
        if !self.out.by_columns.iter().any(|e| e.kernel == entry.kernel) {
            self.out.by_columns.push(entry);
        }
    }

    /// Offers a prologue to the fusion pass.
    pub fn prologue(&mut self, offer: Prologue) {
        self.out.prologues.push(offer);
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

    /// Records that the stage cannot be planned, and why.
    pub fn missing(&mut self, reason: impl Into<String>) {
        self.out.missing.push(Unplanned {
            stage: self.stage,
            reason: reason.into(),
        });
    }
}

/// `name` as the `&'static str` a launch holds: each distinct name is leaked once, so
/// planning any number of variants keeps one copy.
fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.into());
    names.insert(leaked);
    leaked
}

/// An argument list as the `&'static` slice a launch holds, interned like [`intern`].
fn intern_list(args: &[&str]) -> &'static [&'static str] {
    static LISTS: Mutex<BTreeSet<&'static [&'static str]>> = Mutex::new(BTreeSet::new());
    let args: Vec<&'static str> = args.iter().map(|a| intern(a)).collect();
    let mut lists = LISTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = lists.get(args.as_slice()) {
        return known;
    }
    let leaked: &'static [&'static str] = Box::leak(args.into_boxed_slice());
    lists.insert(leaked);
    leaked
}
