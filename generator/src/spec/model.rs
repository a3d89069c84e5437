//! The YAML spec as written, before validation: every value keeps its source
//! location so a semantic error can point at it. Integers are read as `i64` so a
//! negative dim gets the same "must be positive" message as a zero one.
//!
//! No `#[serde(flatten)]` and no internally tagged enums anywhere: both lose
//! `deny_unknown_fields` or the spans (codegen.md §4).

use serde::Deserialize;
use serde_saphyr::Spanned;

pub type Sp<T> = Spanned<T>;
pub type Int = Sp<i64>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecFile<S> {
    /// Base of the variant names (`<name>_tp<N>`).
    pub name: Sp<String>,
    pub layer: Sp<LayerKind>,
    /// Chip name from the built-in table (`chip.rs`).
    pub target: Sp<String>,
    pub tp: Sp<Vec<Int>>,
    pub model: Sp<Model>,
    pub deployment: Sp<Deployment>,
    /// The ordered stage list, entries of the stage registry (`crate::stages::Entry`).
    pub stages: Sp<Vec<Sp<S>>>,
    /// A knowingly incomplete spec: stages without kernels are listed, not refused.
    #[serde(default)]
    pub draft: Option<Sp<bool>>,
    /// Whether the planner merges launches that can share a kernel (default true;
    /// `false` keeps each stage's launches as planned, for debugging).
    #[serde(default)]
    pub fuse: Option<Sp<bool>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerKind {
    Swa,
    Hca,
    Csa,
}

impl LayerKind {
    pub fn name(self) -> &'static str {
        match self {
            LayerKind::Swa => "swa",
            LayerKind::Hca => "hca",
            LayerKind::Csa => "csa",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub hidden: Int,
    pub heads: Int,
    pub head_dim: Int,
    pub rope_dim: Int,
    pub q_lora_rank: Int,
    pub o_lora_rank: Int,
    pub o_groups: Int,
    pub hc_mult: Int,
    pub hc_sinkhorn_iters: Int,
    pub hc_eps: Sp<f64>,
    pub rms_eps: Sp<f64>,
    pub rope: Sp<Rope>,
}

/// The RoPE this layer applies (SWA: plain theta 10000; compressed layers:
/// compress theta 160000 with YaRN).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rope {
    pub theta: Sp<f64>,
    #[serde(default)]
    pub yarn: Option<Sp<Yarn>>,
    /// How cos/sin rows reach the kernels.
    pub table: Sp<RopeTable>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RopeTable {
    /// The host passes one row per token (and per request for compressed rows).
    PerToken,
    /// The host passes the whole `[max_positions, rope_dim]` table; kernels gather.
    Positions,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Yarn {
    pub factor: Sp<f64>,
    pub beta_fast: Sp<f64>,
    pub beta_slow: Sp<f64>,
    pub original_max_positions: Int,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    /// Requests per DP group, split over the TP ranks.
    pub decode_batch: Int,
    /// Tokens per request per step (1 + draft tokens).
    pub decode_seq: Int,
    /// Rows per page of every paged cache.
    pub block_size: Int,
    /// Physical raw-KV pages per rank.
    pub kv_pool_blocks: Int,
    pub max_positions: Int,
}

/// How a ratio-4 (overlapping) compressor keeps its state, and with it which reference CSA
/// the layer follows (README, "CSA").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StateLayout {
    /// The reference snapshot (hca_csa.md): state rows by position through a
    /// `[b, max_positions / state_block_size]` table; a step pools its first boundary.
    #[default]
    Paged,
    /// pypto-lib PR #1013 (csa_1m.md): a ring of 2·ratio rows per request, every boundary
    /// pooled against the old ring plus the step's own rows, then committed; token-local
    /// RoPE rows (`cmp_freqs_*` at p − 3), index queries at each token's position.
    Ring,
}

impl StateLayout {
    pub fn is_ring(self) -> bool {
        self == StateLayout::Ring
    }
}

/// Data-movement policy for GM rows that are not a whole number of 32-byte blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PadPolicy {
    DataCopyPad,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvSource {
    /// The last `window` raw KV rows (needs `cache_insert`).
    Window,
    /// Every visible compressed row (needs `compressor`).
    Compressed,
    /// The indexer's top-k compressed rows (needs `indexer`).
    Indexed,
}
