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
pub struct SpecFile {
    /// Base of the variant names (`<name>_tp<N>`).
    pub name: Sp<String>,
    pub layer: Sp<LayerKind>,
    /// Chip name from the built-in table (`chip.rs`).
    pub target: Sp<String>,
    pub tp: Sp<Vec<Int>>,
    pub model: Sp<Model>,
    pub deployment: Sp<Deployment>,
    pub stages: Sp<Vec<Sp<Stage>>>,
    /// A knowingly incomplete spec: stages without kernels are listed, not refused.
    #[serde(default)]
    pub draft: Option<Sp<bool>>,
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

/// One entry of the ordered stage list: `- <kind>: { ...parameters }`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    HcPre(HcPreStage),
    RmsNorm(VectorStage),
    QkvProjRope(MatmulStage),
    CacheInsert(CacheInsertStage),
    Compressor(CompressorStage),
    Indexer(IndexerStage),
    SparseAttention(AttentionStage),
    OGroupAllToAll(CollectiveStage),
    OProj(MatmulStage),
    OReduceScatter(CollectiveStage),
    HcPost(VectorStage),
}

/// Data-movement policy for GM rows that are not a whole number of 32-byte blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PadPolicy {
    DataCopyPad,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HcPreStage {
    pub tiling: Sp<HcPreTiling>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
}

/// Cube rows `m` × K chunk `k` for the mixing projection; `tokens` × `cols` for
/// the vector passes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HcPreTiling {
    pub m: Int,
    pub k: Int,
    pub tokens: Int,
    pub cols: Int,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorStage {
    pub tiling: Sp<VectorTiling>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorTiling {
    pub tokens: Int,
    pub cols: Int,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatmulStage {
    pub tiling: Sp<MatmulTiling>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
}

/// Cube tile `m`×`n`×`k`; `tokens` rows per vector epilogue pass.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatmulTiling {
    pub m: Int,
    pub n: Int,
    pub k: Int,
    pub tokens: Int,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheInsertStage {
    pub tiling: Sp<TokenTiling>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenTiling {
    pub tokens: Int,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompressorStage {
    /// Positions per compressed row (4 CSA, 128 HCA).
    pub ratio: Int,
    /// Overlapping windows: two projection streams pooled over 2·ratio entries.
    pub overlap: Sp<bool>,
    pub state_block_size: Int,
    pub state_pool_blocks: Int,
    /// Physical pages of the compressed-KV pool (`cmp_kv`), `block_size` rows each.
    pub cmp_pool_blocks: Int,
    pub tiling: Sp<CompressorTiling>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
}

/// Projection tile `m`×`n`×`k`, `tokens` per state-write pass, `channels` per pooling pass.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompressorTiling {
    pub m: Int,
    pub n: Int,
    pub k: Int,
    pub tokens: Int,
    pub channels: Int,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexerStage {
    pub heads: Int,
    pub head_dim: Int,
    pub topk: Int,
    /// State pages of the inner (index-key) compressor, which mirrors the main one.
    pub state_block_size: Int,
    pub state_pool_blocks: Int,
    /// Physical pages of the int8 index-key cache.
    pub key_pool_blocks: Int,
    pub tiling: Sp<IndexerTiling>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
}

/// Projection tile `m`×`n`×`k`, `tokens` per vector pass, `key_rows` index keys per scoring pass.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexerTiling {
    pub m: Int,
    pub n: Int,
    pub k: Int,
    pub tokens: Int,
    pub key_rows: Int,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttentionStage {
    /// Sliding window in raw tokens, counting the current one.
    pub window: Int,
    pub sources: Sp<Vec<Sp<KvSource>>>,
    pub tiling: Sp<AttentionTiling>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
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

/// `heads` query rows (heads of one token) × `kv_rows` KV rows per tile, `d` head-dim chunk.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttentionTiling {
    pub heads: Int,
    pub kv_rows: Int,
    pub d: Int,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveStage {
    pub tiling: Sp<CollectiveTiling>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
}

/// `rows` token rows × `cols` columns per transfer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveTiling {
    pub rows: Int,
    pub cols: Int,
}
