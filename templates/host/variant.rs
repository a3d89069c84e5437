{{ header }}
//! `{{ p.variant }}`: the {{ p.layer.name() }} decode layer at TP {{ p.shape.tp }} on {{ p.chip.name }} (spec `{{ p.spec_name }}`).
//! Its host ABI, the plan constants a runtime needs, and the launch plan the harness
//! runtime executes (`PLAN`).

use abi::plan::{self, ChipProfile, Deployment, Kernel, Model, SpecSource, Step, VariantPlan};
use abi::{AxisBound, TensorDecl, VariantAbi};
use abi::{DType::*, Dim::*, Dir::*, Placement::*};

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
pub const STATE_RING: bool = {{ c.state.is_ring() }};
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
    TensorDecl { name: "{{ t.name }}", shape: &[{{ t.shape_rust() }}], dtype: {{ t.dtype|fmt("{:?}") }}, dir: {{ t.dir|fmt("{:?}") }}, placement: {{ t.placement|fmt("{:?}") }} },
{%- endfor %}
];

pub const ABI: VariantAbi = VariantAbi {
    name: NAME,
    layer: LAYER,
    tp: TP,
    tensors: TENSORS,
    axes: AXES,
};

/// The kernels the steps launch, in first-use order (`generated/ascendc/kernels/<name>.cpp`).
#[rustfmt::skip]
pub const KERNELS: &[Kernel] = &[
{%- for k in v.kernels.kernels %}
    Kernel { name: "{{ k.name }}", cores: plan::Cores::{{ k.cores|fmt("{:?}") }}, args: &[{% for a in k.args %}"{{ a }}"{% if !loop.last %}, {% endif %}{% endfor %}] },
{%- endfor %}
];

/// What the layer executes, in order: kernel launches and the TP collectives.
#[rustfmt::skip]
pub const STEPS: &[Step] = &[
{%- for s in v.kernels.steps %}
{%- match s %}
{%- when Step::Launch with (l) %}
    Step::Launch(plan::Launch { stage: "{{ l.stage }}", kernel: "{{ l.kernel }}", cores: plan::Cores::{{ l.cores|fmt("{:?}") }}, block_dim: {{ l.block_dim }}, args: &[{% for a in l.args %}"{{ a }}"{% if !loop.last %}, {% endif %}{% endfor %}], also: &[{% for a in l.also %}"{{ a }}"{% if !loop.last %}, {% endif %}{% endfor %}] }),
{%- when Step::GroupAllToAll with { src, dst, local_groups, src_slab_rows, dst_slab_rows } %}
    Step::GroupAllToAll { src: "{{ src }}", dst: "{{ dst }}", local_groups: {{ local_groups }}, src_slab_rows: {{ src_slab_rows }}, dst_slab_rows: {{ dst_slab_rows }} },
{%- when Step::TokenScatter with { src, dst } %}
    Step::TokenScatter { src: "{{ src }}", dst: "{{ dst }}" },
{%- endmatch %}
{%- endfor %}
];

/// Per-rank buffers between the steps, allocated at capacity and poisoned before a run.
#[rustfmt::skip]
pub const WORKSPACES: &[TensorDecl] = &[
{%- for t in v.kernels.workspaces %}
    TensorDecl { name: "{{ t.name }}", shape: &[{{ t.shape_rust() }}], dtype: {{ t.dtype|fmt("{:?}") }}, dir: {{ t.dir|fmt("{:?}") }}, placement: {{ t.placement|fmt("{:?}") }} },
{%- endfor %}
];

/// Stages of the spec without kernels yet: the variant renders but cannot run.
pub const MISSING: &[&str] = &[{% for s in v.kernels.missing %}"{{ s.stage }}"{% if !loop.last %}, {% endif %}{% endfor %}];

pub const PLAN: VariantPlan = VariantPlan {
    abi: ABI,
    spec: SpecSource {
        path: "{{ p.spec_path }}",
        name: "{{ p.spec_name }}",
        hash: "{{ p.spec_hash }}",
    },
    model: Model {
        hidden: HIDDEN,
        heads: HEADS,
        head_dim: HEAD_DIM,
        rope_dim: ROPE_DIM,
        q_lora_rank: Q_LORA_RANK,
        o_lora_rank: O_LORA_RANK,
        o_groups: O_GROUPS,
        hc_mult: HC_MULT,
        hc_sinkhorn_iters: HC_SINKHORN_ITERS,
        hc_eps: HC_EPS,
        rms_eps: RMS_EPS,
        softmax_scale: SOFTMAX_SCALE,
        window: WINDOW,
        rope_theta: ROPE_THETA,
{%- if p.rope.yarn.is_some() %}
        yarn: Some(plan::Yarn {
            factor: YARN_FACTOR,
            beta_fast: YARN_BETA_FAST,
            beta_slow: YARN_BETA_SLOW,
            original_max_positions: YARN_ORIGINAL_MAX_POSITIONS,
        }),
{%- else %}
        yarn: None,
{%- endif %}
    },
    deployment: Deployment {
        tp: TP,
        decode_batch: DECODE_BATCH,
        decode_seq: DECODE_SEQ,
        b: B,
        local_t: LOCAL_T,
        t_pad: T_PAD,
        group_t_pad: GROUP_T_PAD,
        local_o_groups: LOCAL_O_GROUPS,
        block_size: BLOCK_SIZE,
        kv_pool_blocks: KV_POOL_BLOCKS,
        max_positions: MAX_POSITIONS,
    },
{%- if p.compressor.is_some() %}
    compressor: Some(plan::Compressor {
        ratio: COMPRESS_RATIO,
        overlap: COMPRESS_OVERLAP,
        state_block_size: STATE_BLOCK_SIZE,
        state_ring: STATE_RING,
        state_pool_blocks: STATE_POOL_BLOCKS,
        cmp_pool_blocks: CMP_POOL_BLOCKS,
    }),
{%- else %}
    compressor: None,
{%- endif %}
{%- if p.indexer.is_some() %}
    indexer: Some(plan::Indexer {
        heads: INDEX_HEADS,
        head_dim: INDEX_HEAD_DIM,
        topk: INDEX_TOPK,
        inner_state_pool_blocks: INNER_STATE_POOL_BLOCKS,
        key_pool_blocks: KEY_POOL_BLOCKS,
    }),
{%- else %}
    indexer: None,
{%- endif %}
    chip: ChipProfile {
        name: "{{ p.chip.name }}",
        aic_cores: {{ p.chip.aic_cores }},
        aiv_cores: {{ p.chip.aiv_cores }},
        cube_bf16_flops: {{ p.chip.cube_bf16_flops()|fmt("{:e}") }},
        cube_int8_ops: {{ p.chip.cube_int8_ops()|fmt("{:e}") }},
        cube_f32_flops: {{ p.chip.cube_f32_flops()|fmt("{:e}") }},
        vector_elem_ops: {{ p.chip.vector_elem_ops()|fmt("{:e}") }},
        hbm_bytes_per_s: {{ p.chip.hbm_bytes_per_s()|fmt("{:e}") }},
    },
    kernels: KERNELS,
    steps: STEPS,
    workspaces: WORKSPACES,
    missing: MISSING,
};
