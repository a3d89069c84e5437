{{ header }}
//! `{{ p.variant }}`: the {{ p.layer.name() }} decode layer at TP {{ p.shape.tp }} on {{ p.chip.name }} (spec `{{ p.spec_name }}`).
//! Its host ABI and the plan constants a runtime needs.

use harness::abi::{AxisBound, TensorDecl, VariantAbi};
use harness::abi::{DType::*, Dim::*, Dir::*, Placement::*};

pub const NAME: &str = "{{ p.variant }}";
pub const LAYER: &str = "{{ p.layer.name() }}";

// Model
pub const HIDDEN: usize = {{ p.model.hidden }};
pub const HEADS: usize = {{ p.model.heads }};
pub const HEAD_DIM: usize = {{ p.model.head_dim }};
pub const ROPE_DIM: usize = {{ p.model.rope_dim }};
pub const NOPE_DIM: usize = {{ p.model.nope_dim }};
pub const Q_LORA_RANK: usize = {{ p.model.q_lora_rank }};
pub const O_LORA_RANK: usize = {{ p.model.o_lora_rank }};
pub const O_GROUPS: usize = {{ p.model.o_groups }};
pub const HEADS_PER_GROUP: usize = {{ p.model.heads_per_group }};
pub const O_GROUP_IN: usize = {{ p.model.o_group_in }};
pub const HC_MULT: usize = {{ p.model.hc_mult }};
pub const MIX_HC: usize = {{ p.model.mix_hc }};
pub const HC_SINKHORN_ITERS: usize = {{ p.model.hc_sinkhorn_iters }};
pub const HC_EPS: f32 = {{ p.model.hc_eps|fmt("{:?}") }};
pub const RMS_EPS: f32 = {{ p.model.rms_eps|fmt("{:?}") }};
pub const SOFTMAX_SCALE: f32 = {{ p.model.softmax_scale|fmt("{:?}") }};
pub const ROPE_THETA: f64 = {{ p.rope.theta|fmt("{:?}") }};
{%- if let Some(y) = p.rope.yarn %}
pub const YARN_FACTOR: f64 = {{ y.factor|fmt("{:?}") }};
pub const YARN_BETA_FAST: f64 = {{ y.beta_fast|fmt("{:?}") }};
pub const YARN_BETA_SLOW: f64 = {{ y.beta_slow|fmt("{:?}") }};
pub const YARN_ORIGINAL_MAX_POSITIONS: usize = {{ y.original_max_positions }};
{%- endif %}

// Deployment and per-rank capacities
pub const TP: usize = {{ p.shape.tp }};
pub const DECODE_BATCH: usize = {{ p.shape.decode_batch }};
pub const DECODE_SEQ: usize = {{ p.shape.decode_seq }};
pub const B: usize = {{ p.shape.b }};
pub const LOCAL_T: usize = {{ p.shape.local_t }};
pub const T_PAD: usize = {{ p.shape.t_pad }};
pub const GROUP_T_PAD: usize = {{ p.shape.group_t_pad }};
pub const LOCAL_O_GROUPS: usize = {{ p.shape.local_o_groups }};
pub const LOCAL_O_WIDTH: usize = {{ p.shape.local_o_width }};
pub const ATTENTION_WINDOW_ROWS: usize = {{ p.shape.attention_window_rows }};
pub const O_WINDOW_ROWS: usize = {{ p.shape.o_window_rows }};
pub const BLOCK_SIZE: usize = {{ p.pools.block_size }};
pub const KV_POOL_BLOCKS: usize = {{ p.pools.kv_pool_blocks }};
pub const MAX_POSITIONS: usize = {{ p.pools.max_positions }};
pub const WINDOW: usize = {{ p.attention.window }};
pub const PADDED_TOPK: usize = {{ p.attention.padded_topk }};
{%- if let Some(c) = p.compressor %}
pub const COMPRESS_RATIO: usize = {{ c.ratio }};
pub const COMPRESS_OVERLAP: bool = {{ c.overlap }};
pub const STATE_BLOCK_SIZE: usize = {{ c.state_block_size }};
pub const STATE_POOL_BLOCKS: usize = {{ c.state_pool_blocks }};
pub const CMP_POOL_BLOCKS: usize = {{ c.cache_pool_blocks }};
{%- endif %}
{%- if let Some(i) = p.indexer %}
pub const INDEX_HEADS: usize = {{ i.heads }};
pub const INDEX_HEAD_DIM: usize = {{ i.head_dim }};
pub const INDEX_TOPK: usize = {{ i.topk }};
pub const INNER_STATE_BLOCK_SIZE: usize = {{ i.inner.state_block_size }};
pub const INNER_STATE_POOL_BLOCKS: usize = {{ i.inner.state_pool_blocks }};
pub const KEY_POOL_BLOCKS: usize = {{ i.inner.cache_pool_blocks }};
{%- endif %}

/// Runtime axes of the shapes below, with their capacities.
#[rustfmt::skip]
pub const AXES: &[AxisBound] = &[
{%- for a in p.axes %}
    AxisBound { name: "{{ a.name }}", max: {{ a.max }} },
{%- endfor %}
];

/// The host ABI in the reference's parameter order; shapes are per rank.
#[rustfmt::skip]
pub const TENSORS: &[TensorDecl] = &[
{%- for t in p.tensors %}
    TensorDecl { name: "{{ t.name }}", shape: &[{{ t.shape_rust() }}], dtype: {{ t.dtype.rust() }}, dir: {{ t.dir.rust() }}, placement: {{ t.placement.rust() }} },
{%- endfor %}
];

/// Buffers the host allocates for the layer's TP exchanges (none at TP 1).
#[rustfmt::skip]
pub const WORKSPACES: &[TensorDecl] = &[
{%- for t in p.workspaces %}
    TensorDecl { name: "{{ t.name }}", shape: &[{{ t.shape_rust() }}], dtype: {{ t.dtype.rust() }}, dir: {{ t.dir.rust() }}, placement: {{ t.placement.rust() }} },
{%- endfor %}
];

pub const ABI: VariantAbi = VariantAbi {
    name: NAME,
    layer: LAYER,
    tp: TP,
    tensors: TENSORS,
    workspaces: WORKSPACES,
    axes: AXES,
};
