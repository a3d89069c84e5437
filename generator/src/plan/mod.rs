//! The plan: everything a variant (one spec at one TP degree) needs, derived once
//! from the validated spec and typed. Templates read only this.

mod abi;
pub mod budget;
mod derive;
mod graph;
mod stages;
mod validate;

use crate::chip::{Chip, Mem};
use crate::diag::{Diagnostics, SpecError};
use crate::kernels::{self, KernelPlan};
use crate::spec::{KvSource, LayerKind, RopeTable, Spec};

pub use abi::{Axis, DType, Dim, Dir, Placement, TensorPlan};
pub use budget::Buffer;

/// Validates `spec` and derives one plan per TP degree, in the order of its `tp` list.
pub fn build(spec: &Spec) -> Result<Vec<Plan>, Vec<SpecError>> {
    let mut diags = Diagnostics::new(&spec.path, &spec.text);
    let Some(base) = validate::check(spec, &mut diags) else {
        return Err(diags.errors);
    };
    let mut plans: Vec<Plan> = base
        .tp
        .iter()
        .filter_map(|tp| derive::for_tp(spec, &base, tp, &mut diags))
        .collect();
    // Kernels are planned from valid plans only: a refused value would only repeat its error.
    if !diags.is_clean() {
        return Err(diags.errors);
    }
    for p in &mut plans {
        p.kernels = kernels::plan(p);
    }
    check_planned(&base, &plans, &mut diags);
    if diags.is_clean() {
        Ok(plans)
    } else {
        Err(diags.errors)
    }
}

/// Every stage of a spec has kernels at every TP degree, or the spec says `draft: true`
/// (and then some stage has none: a draft that is complete says so too).
fn check_planned(base: &validate::Base, plans: &[Plan], d: &mut Diagnostics) {
    const RULE: &str = "every stage has kernels; a knowingly incomplete spec says `draft: true`";
    // One error per stage and reason, naming the TP degrees it holds at.
    let mut unplanned: Vec<(StageKind, &str, Vec<usize>)> = Vec::new();
    for p in plans {
        for u in &p.kernels.missing {
            match unplanned
                .iter_mut()
                .find(|(k, r, _)| *k == u.stage && *r == u.reason)
            {
                Some((_, _, tps)) => tps.push(p.shape.tp),
                None => unplanned.push((u.stage, &u.reason, vec![p.shape.tp])),
            }
        }
    }
    match base.draft {
        Some(_) if !unplanned.is_empty() => {}
        Some(loc) => d.error(
            loc,
            "the spec is marked draft but every stage has kernels",
            "`draft: true` marks a spec with stages that have no kernels yet",
        ),
        None => {
            for (kind, reason, tps) in unplanned {
                let st = base
                    .stages
                    .iter()
                    .find(|s| s.kind == kind)
                    .expect("a planned stage is in the spec");
                let tps: Vec<String> = tps.iter().map(usize::to_string).collect();
                d.error(
                    st.loc,
                    format!(
                        "stage {} has no kernels at TP {}: {reason}",
                        kind.name(),
                        tps.join(", ")
                    ),
                    RULE,
                );
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Plan {
    /// `<spec name>_tp<N>`: module, namespace and directory name.
    pub variant: String,
    pub spec_name: String,
    pub spec_path: String,
    pub spec_hash: String,
    pub layer: LayerKind,
    pub chip: &'static Chip,
    pub model: ModelDims,
    pub rope: RopePlan,
    pub shape: TpShape,
    pub pools: Pools,
    pub compressor: Option<CompressorPlan>,
    pub indexer: Option<IndexerPlan>,
    pub attention: AttentionPlan,
    /// Execution order; the TP collectives are left out at TP 1, where they are identity.
    pub stages: Vec<StagePlan>,
    /// The host ABI in the reference's parameter order.
    pub tensors: Vec<TensorPlan>,
    /// Runtime axes of the ABI shapes and their capacities.
    pub axes: Vec<Axis>,
    /// The kernels the stages launch, in order, and the per-rank workspaces between
    /// them (the only buffers besides the ABI: the TP collectives move rows between
    /// workspaces, so the reference's exchange windows are not planned).
    pub kernels: KernelPlan,
}

impl Plan {
    /// An ABI tensor or a workspace by name.
    pub fn tensor(&self, name: &str) -> Option<&TensorPlan> {
        self.tensors
            .iter()
            .chain(&self.kernels.workspaces)
            .find(|t| t.name == name)
    }

    pub fn stage(&self, kind: StageKind) -> Option<&StagePlan> {
        self.stages.iter().find(|s| s.kind == kind)
    }
}

/// Model dimensions and the constants derived from them (swa.md §1.1).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelDims {
    pub hidden: usize,
    pub heads: usize,
    pub head_dim: usize,
    pub rope_dim: usize,
    pub nope_dim: usize,
    pub half_rope: usize,
    pub q_lora_rank: usize,
    pub o_lora_rank: usize,
    pub o_groups: usize,
    pub heads_per_group: usize,
    /// Input width of one output group: heads_per_group · head_dim.
    pub o_group_in: usize,
    pub hc_mult: usize,
    pub hc_dim: usize,
    /// (2 + hc_mult) · hc_mult mixing logits.
    pub mix_hc: usize,
    pub hc_sinkhorn_iters: usize,
    pub hc_eps: f32,
    pub rms_eps: f32,
    /// head_dim^-0.5, computed in f64 and rounded once.
    pub softmax_scale: f32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RopePlan {
    pub theta: f64,
    pub table: RopeTable,
    pub yarn: Option<YarnPlan>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct YarnPlan {
    pub factor: f64,
    pub beta_fast: f64,
    pub beta_slow: f64,
    pub original_max_positions: usize,
    /// Frequencies below `low` keep the base frequency, above `high` are divided by
    /// `factor`, linear blend between (hca_csa.md §1.4).
    pub low: f64,
    pub high: f64,
}

/// Per-rank capacities and exchange-window shapes at one TP degree (swa.md §1.2).
#[derive(Debug, Clone, PartialEq)]
pub struct TpShape {
    pub tp: usize,
    pub decode_batch: usize,
    pub decode_seq: usize,
    pub decode_tokens: usize,
    /// Requests per rank.
    pub b: usize,
    /// Token capacity per rank (LOCAL_T = T).
    pub local_t: usize,
    /// LOCAL_T rounded up to 16.
    pub t_pad: usize,
    pub group_t: usize,
    pub group_t_pad: usize,
    pub local_o_groups: usize,
    pub local_o_width: usize,
    pub attention_window_rows: usize,
    pub o_window_rows: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pools {
    pub block_size: usize,
    pub kv_pool_blocks: usize,
    pub kv_pool_rows: usize,
    pub max_positions: usize,
}

/// A compressor and its state (hca_csa.md §1.2); also describes the indexer's inner one.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressorPlan {
    pub ratio: usize,
    pub overlap: bool,
    /// Projection streams: 2 with overlap, else 1.
    pub coff: usize,
    /// Width of a pooled row.
    pub head_dim: usize,
    /// Projected width coff · head_dim.
    pub out_width: usize,
    /// kv and score halves: 2 · out_width.
    pub state_row_width: usize,
    /// State rows pooled per emitted row: coff · ratio.
    pub pool_entries: usize,
    pub state_block_size: usize,
    pub state_pool_blocks: usize,
    pub state_pool_rows: usize,
    /// Logical state pages per request: ceil(max_positions / state_block_size).
    pub state_table_width: usize,
    /// Physical pages of the compressed-row cache (`cmp_kv` or the index-key cache).
    pub cache_pool_blocks: usize,
    pub cache_pool_rows: usize,
    /// Compressed rows one request can see: min(max_positions / ratio, cache rows).
    pub max_rows: usize,
    /// Logical cache pages per request: ceil(max_rows / block_size).
    pub cache_table_width: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct IndexerPlan {
    pub heads: usize,
    pub head_dim: usize,
    pub rope_dim: usize,
    pub nope_dim: usize,
    /// Index-query width heads · head_dim.
    pub q_width: usize,
    pub topk: usize,
    /// head_dim^-0.5 · heads^-0.5, computed in f64 and rounded once.
    pub weights_scale: f32,
    /// Compressed rows a token can select from: rows both caches can hold per request.
    pub candidates: usize,
    /// The index-key compressor: same ratio and overlap as the main one, head_dim wide.
    pub inner: CompressorPlan,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AttentionPlan {
    pub window: usize,
    pub sources: Vec<KvSource>,
    pub kv_rows: usize,
    pub window_tiles: usize,
    /// Indexer-selected rows, when the `indexed` source is used.
    pub topk: usize,
    pub topk_tiles: usize,
    /// Candidate rows of the static tiles: window + top-k, each padded to kv_rows.
    pub padded_topk: usize,
    /// Compressed rows read densely (the `compressed` source), at most.
    pub max_compressed_rows: usize,
    pub compressed_tiles: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StageKind {
    HcPre,
    RmsNorm,
    QkvProjRope,
    CacheInsert,
    Compressor,
    Indexer,
    SparseAttention,
    OGroupAllToAll,
    OProj,
    OReduceScatter,
    HcPost,
}

impl StageKind {
    pub fn name(self) -> &'static str {
        match self {
            StageKind::HcPre => "hc_pre",
            StageKind::RmsNorm => "rms_norm",
            StageKind::QkvProjRope => "qkv_proj_rope",
            StageKind::CacheInsert => "cache_insert",
            StageKind::Compressor => "compressor",
            StageKind::Indexer => "indexer",
            StageKind::SparseAttention => "sparse_attention",
            StageKind::OGroupAllToAll => "o_group_all_to_all",
            StageKind::OProj => "o_proj",
            StageKind::OReduceScatter => "o_reduce_scatter",
            StageKind::HcPost => "hc_post",
        }
    }

    pub fn is_collective(self) -> bool {
        matches!(self, StageKind::OGroupAllToAll | StageKind::OReduceScatter)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct StagePlan {
    pub kind: StageKind,
    /// Tile sizes as written in the spec, by name (`m`, `tokens`, ...).
    pub tiles: Vec<(&'static str, usize)>,
    /// Unaligned GM rows are moved with DataCopyPad.
    pub pad_unaligned: bool,
    /// The on-chip buffers, from [`budget`].
    pub buffers: Vec<Buffer>,
}

impl StagePlan {
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// Bytes the stage allocates in `mem`, each buffer rounded up to its alignment.
    pub fn bytes_in(&self, mem: Mem, chip: &Chip) -> usize {
        budget::bytes_in(&self.buffers, mem, chip)
    }

    /// `(memory, bytes)` for every memory the stage uses.
    pub fn usage(&self, chip: &Chip) -> Vec<(Mem, usize)> {
        Mem::ALL
            .into_iter()
            .map(|m| (m, self.bytes_in(m, chip)))
            .filter(|&(_, b)| b > 0)
            .collect()
    }
}
