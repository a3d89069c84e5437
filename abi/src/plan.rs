//! The launch plan of a generated layer variant, as data: the kernels it compiles, the
//! steps it executes in order (kernel launches and the two TP collectives), the per-rank
//! workspaces those steps hand data through, and the constants a runtime needs (model
//! and deployment dims, the target chip's roofline profile). `generated/host/<variant>.rs`
//! renders one `pub const PLAN: VariantPlan` from the generator's `kernel_plan::KernelPlan`
//! (this module mirrors it; the generator renders text and never depends on the harness);
//! the harness runtime executes any plan.
//!
//! Workspaces are one list: the scratch buffers between kernels and the buffers the TP
//! collectives read and write. The reference system's four exchange windows and signal
//! arrays (swa.md §2.2) are a device detail of its one-sided puts and barrier counters;
//! here a collective is a [`Step`] that moves rows from every rank's `src` workspace to
//! the owning rank's `dst` workspace (threads on the sim, HCCL on an NPU).

use crate::{TensorDecl, VariantAbi};

/// Which cores a kernel runs on (dav-c220: a block of a mixed kernel is 1 AIC + 2 AIV).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cores {
    Aiv,
    Aic,
    Mix,
}

/// One distinct kernel: `generated/ascendc/kernels/<name>.cpp`, exporting the symbol
/// `name(GM_ADDR args…, GM_ADDR workspace, GM_ADDR tiling)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    pub name: &'static str,
    pub cores: Cores,
    /// GM parameter names in order; `workspace` and `tiling` follow.
    pub args: &'static [&'static str],
}

/// A kernel launch: which kernel, on how many blocks, bound to which tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    /// The stage it belongs to (`hc_pre`, `o_proj`, …).
    pub stage: &'static str,
    pub kernel: &'static str,
    pub cores: Cores,
    pub block_dim: u32,
    /// ABI tensor or workspace names bound to the kernel's parameters, in order.
    pub args: &'static [&'static str],
    /// Other stages whose work a fused launch does besides its own stage's (it runs where
    /// the first of its parts would have run): a run of one of them runs it too.
    pub also: &'static [&'static str],
}

impl Launch {
    /// Whether the launch does work of `stage`.
    pub fn serves(&self, stage: &str) -> bool {
        self.stage == stage || self.also.contains(&stage)
    }
}

/// Stage name of [`Step::GroupAllToAll`].
pub const GROUP_ALL_TO_ALL: &str = "o_group_all_to_all";
/// Stage name of [`Step::TokenScatter`] (the sum that follows it is a kernel of that stage).
pub const TOKEN_SCATTER: &str = "o_reduce_scatter";

/// What a variant executes, in order. A row is one index of a buffer's leading axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Launch(Launch),
    /// swa.md §3.8 step 1. Every rank's `src` holds `tp · local_groups` group slabs of
    /// `src_slab_rows` rows (group g at row `g · src_slab_rows`, tokens `[0, t)` valid).
    /// Rank d receives the slabs of its groups `g = d · local_groups + lg` from every rank
    /// r into `dst` rows `lg · dst_slab_rows + r · t` (compact stride t, rank-major).
    GroupAllToAll {
        src: &'static str,
        dst: &'static str,
        local_groups: usize,
        src_slab_rows: usize,
        dst_slab_rows: usize,
    },
    /// swa.md §3.8 step 3, data movement only: rows `[o · t, o · t + t)` of every rank r's
    /// `src` go to owner o's `dst` at rows `r · t`. The sum over ranks is a kernel.
    TokenScatter {
        src: &'static str,
        dst: &'static str,
    },
}

impl Step {
    /// The stage the step belongs to.
    pub fn stage(&self) -> &'static str {
        match self {
            Step::Launch(l) => l.stage,
            Step::GroupAllToAll { .. } => GROUP_ALL_TO_ALL,
            Step::TokenScatter { .. } => TOKEN_SCATTER,
        }
    }
}

/// The spec a plan was generated from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecSource {
    /// Repository-relative path, e.g. `specs/test/swa_small.yaml`.
    pub path: &'static str,
    /// The spec's `name`.
    pub name: &'static str,
    /// Short content hash of the spec file when it was generated.
    pub hash: &'static str,
}

/// YaRN frequency blending of a compressed layer's RoPE.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Yarn {
    pub factor: f64,
    pub beta_fast: f64,
    pub beta_slow: f64,
    pub original_max_positions: usize,
}

/// Model dimensions (swa.md §1.1, hca_csa.md §1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    pub hidden: usize,
    pub heads: usize,
    pub head_dim: usize,
    pub rope_dim: usize,
    pub q_lora_rank: usize,
    pub o_lora_rank: usize,
    pub o_groups: usize,
    pub hc_mult: usize,
    pub hc_sinkhorn_iters: usize,
    pub hc_eps: f32,
    pub rms_eps: f32,
    pub softmax_scale: f32,
    /// Sliding window rows per token.
    pub window: usize,
    pub rope_theta: f64,
    pub yarn: Option<Yarn>,
}

/// Deployment and per-rank capacities at the plan's TP degree (swa.md §1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deployment {
    pub tp: usize,
    pub decode_batch: usize,
    /// Tokens per request per step (S).
    pub decode_seq: usize,
    /// Requests per rank at capacity.
    pub b: usize,
    /// Token capacity per rank (LOCAL_T).
    pub local_t: usize,
    pub t_pad: usize,
    pub group_t_pad: usize,
    pub local_o_groups: usize,
    pub block_size: usize,
    pub kv_pool_blocks: usize,
    /// Position ceiling: start + S must not exceed it.
    pub max_positions: usize,
}

/// The compressor of an HCA/CSA layer (hca_csa.md §1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compressor {
    pub ratio: usize,
    pub overlap: bool,
    pub state_block_size: usize,
    /// The state is a ring of 2·ratio rows per request, pooled against the step's own rows
    /// before it is committed (CSA at 1M, pypto-lib PR #1013; csa_1m.md §4), not pages by
    /// position.
    pub state_ring: bool,
    pub state_pool_blocks: usize,
    pub cmp_pool_blocks: usize,
}

/// The lightning indexer of a CSA layer (hca_csa.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indexer {
    pub heads: usize,
    pub head_dim: usize,
    pub topk: usize,
    pub inner_state_pool_blocks: usize,
    pub key_pool_blocks: usize,
}

/// The target chip and its peak rates (ascendc.md §E), for roofline estimates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChipProfile {
    pub name: &'static str,
    pub aic_cores: usize,
    pub aiv_cores: usize,
    /// Dense cube multiply-adds × 2 per second, bf16/fp16 inputs.
    pub cube_bf16_flops: f64,
    /// Same for int8 inputs (twice the bf16 rate).
    pub cube_int8_ops: f64,
    /// Same for fp32 inputs (a quarter of the bf16 rate).
    pub cube_f32_flops: f64,
    /// Vector lanes per second (128 fp16 lanes per AIV per cycle).
    pub vector_elem_ops: f64,
    pub hbm_bytes_per_s: f64,
}

/// Everything a generated variant declares to the runtime.
#[derive(Debug, Clone, Copy)]
pub struct VariantPlan {
    pub abi: VariantAbi,
    pub spec: SpecSource,
    pub model: Model,
    pub deployment: Deployment,
    pub compressor: Option<Compressor>,
    pub indexer: Option<Indexer>,
    pub chip: ChipProfile,
    /// Distinct kernels, in first-use order.
    pub kernels: &'static [Kernel],
    pub steps: &'static [Step],
    /// Per-rank buffers between steps, allocated at capacity and poisoned before a run.
    pub workspaces: &'static [TensorDecl],
    /// Stages of the spec that have no kernels yet: the variant cannot run.
    pub missing: &'static [&'static str],
}

impl VariantPlan {
    pub fn name(&self) -> &'static str {
        self.abi.name
    }

    pub fn kernel(&self, name: &str) -> Option<&'static Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// An ABI tensor or workspace by name.
    pub fn buffer(&self, name: &str) -> Option<&'static TensorDecl> {
        self.abi
            .tensors
            .iter()
            .chain(self.workspaces)
            .find(|t| t.name == name)
    }

    /// Stage names in execution order, each once.
    pub fn stages(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for s in self.steps {
            if out.last() != Some(&s.stage()) {
                out.push(s.stage());
            }
        }
        out
    }
}
