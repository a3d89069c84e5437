//! The numbers of a variant: model dims, RoPE, per-rank shapes, pools, and the
//! layer-level parameters of its compressor, indexer and attention.

use crate::spec::{KvSource, RopeTable, StateLayout};

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
    pub state: StateLayout,
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
    /// Logical state pages per request: ceil(max_positions / state_block_size), or the
    /// ring's 2·ratio rows in pages.
    pub state_table_width: usize,
    /// Physical pages of the compressed-row cache (`cmp_kv` or the index-key cache).
    pub cache_pool_blocks: usize,
    pub cache_pool_rows: usize,
    /// Compressed rows one request can see: max_positions / ratio (the pool's pages may
    /// alias: a per-request ceiling, not the pool's capacity; hca_csa.md §1.3, §7.4).
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
    /// Compressed rows a token can select from: max_positions / ratio (the score row).
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
