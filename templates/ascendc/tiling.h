{{ header }}
// Tiling of `{{ p.variant }}`: the {{ p.layer.name() }} decode layer at TP {{ p.shape.tp }} on {{ p.chip.name }}
// ({{ p.chip.description }}). Compile-time shapes come from the plan; runtime extents
// arrive in TilingData.
#pragma once

#include <cstdint>

#include "dsv4/tiling_data.h"

namespace dsv4 {
namespace {{ p.variant }} {

// Runtime values of one launch: the layout every kernel shares.
using TilingData = ::dsv4::TilingData;

// Target chip
constexpr uint32_t AIC_CORES = {{ p.chip.aic_cores }};
constexpr uint32_t AIV_CORES = {{ p.chip.aiv_cores }};

// Model
constexpr uint32_t HIDDEN = {{ p.model.hidden }};
constexpr uint32_t HEADS = {{ p.model.heads }};
constexpr uint32_t HEAD_DIM = {{ p.model.head_dim }};
constexpr uint32_t ROPE_DIM = {{ p.model.rope_dim }};
constexpr uint32_t NOPE_DIM = {{ p.model.nope_dim }};
constexpr uint32_t HALF_ROPE = {{ p.model.half_rope }};
constexpr uint32_t Q_LORA_RANK = {{ p.model.q_lora_rank }};
constexpr uint32_t O_LORA_RANK = {{ p.model.o_lora_rank }};
constexpr uint32_t O_GROUPS = {{ p.model.o_groups }};
constexpr uint32_t HEADS_PER_GROUP = {{ p.model.heads_per_group }};
constexpr uint32_t O_GROUP_IN = {{ p.model.o_group_in }};
constexpr uint32_t HC_MULT = {{ p.model.hc_mult }};
constexpr uint32_t HC_DIM = {{ p.model.hc_dim }};
constexpr uint32_t MIX_HC = {{ p.model.mix_hc }};
constexpr uint32_t HC_SINKHORN_ITERS = {{ p.model.hc_sinkhorn_iters }};
constexpr float HC_EPS = {{ p.model.hc_eps|fmt("{:?}") }}f;
constexpr float RMS_EPS = {{ p.model.rms_eps|fmt("{:?}") }}f;
constexpr float SOFTMAX_SCALE = {{ p.model.softmax_scale|fmt("{:?}") }}f;
constexpr double ROPE_THETA = {{ p.rope.theta|fmt("{:?}") }};
{%- if let Some(y) = p.rope.yarn %}
constexpr double YARN_FACTOR = {{ y.factor|fmt("{:?}") }};
constexpr double YARN_BETA_FAST = {{ y.beta_fast|fmt("{:?}") }};
constexpr double YARN_BETA_SLOW = {{ y.beta_slow|fmt("{:?}") }};
constexpr uint32_t YARN_ORIGINAL_MAX_POSITIONS = {{ y.original_max_positions }};
constexpr double YARN_LOW = {{ y.low|fmt("{:?}") }};
constexpr double YARN_HIGH = {{ y.high|fmt("{:?}") }};
{%- endif %}

// Deployment and per-rank shapes at TP {{ p.shape.tp }}
constexpr uint32_t TP = {{ p.shape.tp }};
constexpr uint32_t DECODE_BATCH = {{ p.shape.decode_batch }};
constexpr uint32_t DECODE_SEQ = {{ p.shape.decode_seq }};
constexpr uint32_t B = {{ p.shape.b }};
constexpr uint32_t LOCAL_T = {{ p.shape.local_t }};
constexpr uint32_t T_PAD = {{ p.shape.t_pad }};
constexpr uint32_t GROUP_T = {{ p.shape.group_t }};
constexpr uint32_t GROUP_T_PAD = {{ p.shape.group_t_pad }};
constexpr uint32_t LOCAL_O_GROUPS = {{ p.shape.local_o_groups }};
constexpr uint32_t LOCAL_O_WIDTH = {{ p.shape.local_o_width }};
constexpr uint32_t ATTENTION_WINDOW_ROWS = {{ p.shape.attention_window_rows }};
constexpr uint32_t O_WINDOW_ROWS = {{ p.shape.o_window_rows }};
constexpr uint32_t BLOCK_SIZE = {{ p.pools.block_size }};
constexpr uint32_t KV_POOL_BLOCKS = {{ p.pools.kv_pool_blocks }};
constexpr uint32_t KV_POOL_ROWS = {{ p.pools.kv_pool_rows }};
constexpr uint32_t MAX_POSITIONS = {{ p.pools.max_positions }};

// Sparse attention candidates
constexpr uint32_t WINDOW = {{ p.attention.window }};
constexpr uint32_t KV_TILE_ROWS = {{ p.attention.kv_rows }};
constexpr uint32_t WINDOW_TILES = {{ p.attention.window_tiles }};
constexpr uint32_t TOPK = {{ p.attention.topk }};
constexpr uint32_t TOPK_TILES = {{ p.attention.topk_tiles }};
constexpr uint32_t PADDED_TOPK = {{ p.attention.padded_topk }};
constexpr uint32_t MAX_COMPRESSED_ROWS = {{ p.attention.max_compressed_rows }};
constexpr uint32_t COMPRESSED_TILES = {{ p.attention.compressed_tiles }};
{%- if let Some(c) = p.compressor %}

// Compressor
constexpr uint32_t COMPRESS_RATIO = {{ c.ratio }};
constexpr bool COMPRESS_OVERLAP = {{ c.overlap }};
constexpr uint32_t COMPRESS_COFF = {{ c.coff }};
constexpr uint32_t COMPRESS_OUT = {{ c.out_width }};
constexpr uint32_t STATE_ROW_WIDTH = {{ c.state_row_width }};
constexpr uint32_t POOL_ENTRIES = {{ c.pool_entries }};
constexpr uint32_t STATE_BLOCK_SIZE = {{ c.state_block_size }};
constexpr uint32_t STATE_POOL_BLOCKS = {{ c.state_pool_blocks }};
constexpr uint32_t STATE_POOL_ROWS = {{ c.state_pool_rows }};
constexpr uint32_t STATE_TABLE_WIDTH = {{ c.state_table_width }};
constexpr uint32_t CMP_POOL_BLOCKS = {{ c.cache_pool_blocks }};
constexpr uint32_t CMP_POOL_ROWS = {{ c.cache_pool_rows }};
constexpr uint32_t MAX_CMP_ROWS = {{ c.max_rows }};
constexpr uint32_t CMP_TABLE_WIDTH = {{ c.cache_table_width }};
{%- endif %}
{%- if let Some(i) = p.indexer %}

// Lightning indexer and its index-key compressor
constexpr uint32_t INDEX_HEADS = {{ i.heads }};
constexpr uint32_t INDEX_HEAD_DIM = {{ i.head_dim }};
constexpr uint32_t INDEX_ROPE_DIM = {{ i.rope_dim }};
constexpr uint32_t INDEX_NOPE_DIM = {{ i.nope_dim }};
constexpr uint32_t INDEX_Q_WIDTH = {{ i.q_width }};
constexpr uint32_t INDEX_TOPK = {{ i.topk }};
constexpr uint32_t INDEX_CANDIDATES = {{ i.candidates }};
constexpr float INDEX_WEIGHTS_SCALE = {{ i.weights_scale|fmt("{:?}") }}f;
constexpr uint32_t INNER_OUT = {{ i.inner.out_width }};
constexpr uint32_t INNER_STATE_ROW_WIDTH = {{ i.inner.state_row_width }};
constexpr uint32_t INNER_POOL_ENTRIES = {{ i.inner.pool_entries }};
constexpr uint32_t INNER_STATE_BLOCK_SIZE = {{ i.inner.state_block_size }};
constexpr uint32_t INNER_STATE_POOL_BLOCKS = {{ i.inner.state_pool_blocks }};
constexpr uint32_t INNER_STATE_POOL_ROWS = {{ i.inner.state_pool_rows }};
constexpr uint32_t INNER_STATE_TABLE_WIDTH = {{ i.inner.state_table_width }};
constexpr uint32_t KEY_POOL_BLOCKS = {{ i.inner.cache_pool_blocks }};
constexpr uint32_t KEY_POOL_ROWS = {{ i.inner.cache_pool_rows }};
constexpr uint32_t KEY_TABLE_WIDTH = {{ i.inner.cache_table_width }};
{%- endif %}

// Stages in execution order: tiles, and on-chip buffers as elements x copies
// (the table is generator/src/plan/budget.rs).
{%- for s in p.stages %}

namespace {{ s.name() }} {
{%- for (name, value) in s.tiles %}
constexpr uint32_t TILE_{{ name|upper }} = {{ value }};
{%- endfor %}
constexpr bool PAD_UNALIGNED_ROWS = {{ s.pad_unaligned }};
{%- for b in s.buffers %}
constexpr uint32_t {{ b.const_name() }}_ELEMS = {{ b.elems }};  // {{ b.mem }} {{ b.dtype.short() }}
constexpr uint32_t {{ b.const_name() }}_COPIES = {{ b.count }};
{%- endfor %}
{%- for (mem, bytes) in s.usage(p.chip) %}
constexpr uint32_t {{ mem }}_BYTES = {{ bytes }};
{%- endfor %}
}  // namespace {{ s.name() }}
{%- endfor %}

}  // namespace {{ p.variant }}
}  // namespace dsv4
