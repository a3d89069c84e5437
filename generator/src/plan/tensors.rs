//! The host ABI of a variant: every tensor the layer exchanges with the host, in
//! the reference's parameter order (swa.md §2, hca_csa.md §2), with per-rank
//! shapes, in the `abi` crate's vocabulary (rendered as its `&'static` tables).

use abi::{DType, Dim, Dir, Placement};

use super::dims::{CompressorPlan, IndexerPlan, ModelDims, Pools, RopePlan, TpShape};
use crate::spec::{RopeTable, StateLayout};

#[derive(Debug, Clone, PartialEq)]
pub struct TensorPlan {
    pub name: &'static str,
    pub shape: Vec<Dim>,
    pub dtype: DType,
    pub dir: Dir,
    pub placement: Placement,
}

impl TensorPlan {
    /// The shape as `abi::Dim` expressions (the host modules import the variants; their
    /// `Debug` form is the expression), comma separated.
    pub fn shape_rust(&self) -> String {
        self.shape
            .iter()
            .map(|d| format!("{d:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Bytes at capacity (runtime axes at their bound).
    pub fn bytes(&self, axes: &[Axis]) -> usize {
        let extent = |d: &Dim| match d {
            Dim::Const(n) => *n,
            Dim::Var(v) => axes.iter().find(|a| a.name == *v).map_or(0, |a| a.max),
        };
        self.shape.iter().map(extent).product::<usize>() * self.dtype.size()
    }
}

/// A runtime axis of the ABI shapes and its capacity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    pub name: &'static str,
    pub max: usize,
    pub doc: &'static str,
}

pub struct AbiInput<'a> {
    pub model: &'a ModelDims,
    pub rope: &'a RopePlan,
    pub shape: &'a TpShape,
    pub pools: &'a Pools,
    pub window: usize,
    pub compressor: Option<&'a CompressorPlan>,
    pub indexer: Option<&'a IndexerPlan>,
}

use Dim::{Const as C, Var as V};
use Placement::{PerRank, Replicated};

fn t(
    name: &'static str,
    shape: Vec<Dim>,
    dtype: DType,
    dir: Dir,
    placement: Placement,
) -> TensorPlan {
    TensorPlan {
        name,
        shape,
        dtype,
        dir,
        placement,
    }
}

fn weight(name: &'static str, shape: Vec<Dim>, dtype: DType) -> TensorPlan {
    t(name, shape, dtype, Dir::In, Replicated)
}

fn per_rank(name: &'static str, shape: Vec<Dim>, dtype: DType) -> TensorPlan {
    t(name, shape, dtype, Dir::In, PerRank)
}

fn pool(name: &'static str, shape: Vec<Dim>, dtype: DType) -> TensorPlan {
    t(name, shape, dtype, Dir::InOut, PerRank)
}

/// The runtime axes the shapes below use, with their capacities.
pub fn axes(a: &AbiInput) -> Vec<Axis> {
    let mut axes = vec![
        Axis {
            name: "t",
            max: a.shape.local_t,
            doc: "tokens on this rank (a multiple of 8)",
        },
        Axis {
            name: "b",
            max: a.shape.b,
            doc: "requests on this rank (t / decode_seq)",
        },
        Axis {
            name: "nb",
            max: a.pools.kv_pool_blocks,
            doc: "raw KV pool blocks",
        },
    ];
    if let Some(c) = a.compressor {
        axes.extend([
            Axis {
                name: "state_nb",
                max: c.state_pool_blocks,
                doc: "compressor state pool blocks",
            },
            Axis {
                name: "cmp_nb",
                max: c.cache_pool_blocks,
                doc: "compressed KV pool blocks",
            },
            Axis {
                name: "cmp_tw",
                max: c.cache_table_width,
                doc: "compressed KV block-table width",
            },
        ]);
    }
    if let Some(i) = a.indexer {
        axes.extend([
            Axis {
                name: "inner_state_nb",
                max: i.inner.state_pool_blocks,
                doc: "index-key compressor state pool blocks",
            },
            Axis {
                name: "idx_nb",
                max: i.inner.cache_pool_blocks,
                doc: "index-key cache pool blocks",
            },
            // The indexer reads the columns of a request's visible rows only: the
            // reference's table is twice as wide as they need (hca_csa.md §1.3).
            Axis {
                name: "idx_tw",
                max: 2 * i.inner.cache_table_width,
                doc: "index-key cache block-table width",
            },
        ]);
    }
    axes
}

/// The ABI tensors in the reference's parameter order.
pub fn tensors(a: &AbiInput) -> Vec<TensorPlan> {
    use DType::*;
    let m = a.model;
    let s = a.shape;
    let bs = a.pools.block_size;
    let compressed = a.compressor.is_some();
    let mut v = vec![
        per_rank("x_hc", vec![V("t"), C(m.hc_mult), C(m.hidden)], F32),
        weight("hc_attn_fn", vec![C(m.mix_hc), C(m.hc_dim)], F32),
        weight("hc_attn_scale", vec![C(3)], F32),
        weight("hc_attn_base", vec![C(m.mix_hc)], F32),
        weight("attn_norm_w", vec![C(m.hidden)], Bf16),
        weight("wq_a", vec![C(m.hidden), C(m.q_lora_rank)], Bf16),
        weight("wq_b", vec![C(m.q_lora_rank), C(m.heads * m.head_dim)], I8),
        weight("wq_b_scale", vec![C(m.heads * m.head_dim)], F32),
        weight("wkv", vec![C(m.hidden), C(m.head_dim)], Bf16),
        weight("gamma_cq", vec![C(m.q_lora_rank)], Bf16),
        weight("gamma_ckv", vec![C(m.head_dim)], Bf16),
    ];
    match a.rope.table {
        RopeTable::PerToken => {
            v.push(per_rank("freqs_cos", vec![V("t"), C(m.rope_dim)], Bf16));
            v.push(per_rank("freqs_sin", vec![V("t"), C(m.rope_dim)], Bf16));
            match a.compressor.map(|c| c.state) {
                // HCA's compressed rows rotate at their window start, one f32 half row per
                // request.
                Some(StateLayout::Paged) => {
                    v.push(per_rank("cmp_freqs_cos", vec![C(s.b), C(m.half_rope)], F32));
                    v.push(per_rank("cmp_freqs_sin", vec![C(s.b), C(m.half_rope)], F32));
                }
                // The ring CSA's boundary tokens carry the row at p − 3 (csa_1m.md §1.4);
                // index queries take the token rows.
                Some(StateLayout::Ring) => {
                    v.push(per_rank("cmp_freqs_cos", vec![V("t"), C(m.rope_dim)], Bf16));
                    v.push(per_rank("cmp_freqs_sin", vec![V("t"), C(m.rope_dim)], Bf16));
                }
                None => {}
            }
        }
        RopeTable::Positions => {
            let rows = a.pools.max_positions;
            v.push(weight("freqs_cos", vec![C(rows), C(m.rope_dim)], Bf16));
            v.push(weight("freqs_sin", vec![C(rows), C(m.rope_dim)], Bf16));
        }
    }
    if let Some(c) = a.compressor {
        v.extend([
            weight("cmp_wkv", vec![C(c.out_width), C(m.hidden)], Bf16),
            weight("cmp_wgate", vec![C(c.out_width), C(m.hidden)], Bf16),
            weight("cmp_ape", vec![C(c.ratio), C(c.out_width)], F32),
            weight("cmp_norm_w", vec![C(c.head_dim)], Bf16),
            pool(
                "compress_state",
                vec![V("state_nb"), C(c.state_block_size), C(c.state_row_width)],
                F32,
            ),
            per_rank(
                "compress_state_block_table",
                vec![V("b"), C(c.state_table_width)],
                I32,
            ),
        ]);
    }
    if let Some(i) = a.indexer {
        let c = &i.inner;
        v.extend([
            weight("idx_wq_b", vec![C(m.q_lora_rank), C(i.q_width)], I8),
            weight("idx_wq_b_scale", vec![C(i.q_width)], F32),
            weight("weights_proj", vec![C(m.hidden), C(i.heads)], Bf16),
            weight("hadamard_idx", vec![C(i.head_dim), C(i.head_dim)], Bf16),
            weight("inner_wkv", vec![C(c.out_width), C(m.hidden)], Bf16),
            weight("inner_wgate", vec![C(c.out_width), C(m.hidden)], Bf16),
            weight("inner_ape", vec![C(c.ratio), C(c.out_width)], F32),
            weight("inner_norm_w", vec![C(i.head_dim)], Bf16),
            pool(
                "inner_compress_state",
                vec![
                    V("inner_state_nb"),
                    C(c.state_block_size),
                    C(c.state_row_width),
                ],
                F32,
            ),
            per_rank(
                "inner_compress_state_block_table",
                vec![V("b"), C(c.state_table_width)],
                I32,
            ),
        ]);
    }
    v.push(pool(
        "kv_cache",
        vec![V("nb"), C(bs), C(1), C(m.head_dim)],
        Bf16,
    ));
    if compressed {
        v.push(pool(
            "cmp_kv",
            vec![V("cmp_nb"), C(bs), C(1), C(m.head_dim)],
            Bf16,
        ));
        v.push(per_rank("cmp_block_table", vec![V("b"), V("cmp_tw")], I32));
    }
    if let Some(i) = a.indexer {
        v.push(pool(
            "idx_kv_cache",
            vec![V("idx_nb"), C(bs), C(1), C(i.head_dim)],
            I8,
        ));
        v.push(pool(
            "idx_kv_scale",
            vec![V("idx_nb"), C(bs), C(1), C(1)],
            F32,
        ));
        v.push(per_rank("idx_block_table", vec![V("b"), V("idx_tw")], I32));
    }
    // Token metadata: SWA layers use the swa_* names, compressed layers ori_/window_*.
    let (slots, indices, lens) = if compressed {
        ("ori_slot_mapping", "window_swa_indices", "window_swa_lens")
    } else {
        ("swa_slot_mapping", "swa_indices", "swa_lens")
    };
    v.push(per_rank(slots, vec![V("t")], I64));
    v.push(per_rank(indices, vec![V("t"), C(a.window)], I32));
    v.push(per_rank(lens, vec![V("t")], I32));
    if compressed {
        v.push(per_rank("cmp_slot_mapping", vec![V("t")], I64));
        if a.indexer.is_some() {
            v.push(per_rank("idx_slot_mapping", vec![V("t")], I64));
        }
        v.push(per_rank("state_slot_mapping", vec![V("t")], I64));
        if a.indexer.is_some() {
            v.push(per_rank("inner_state_slot_mapping", vec![V("t")], I64));
        }
    }
    v.push(per_rank("position_ids", vec![V("t")], I32));
    if compressed {
        v.push(per_rank("kv_seq_lens", vec![V("b")], I32));
    }
    v.extend([
        weight("attn_sink", vec![C(m.heads)], F32),
        t(
            "wo_a",
            vec![C(s.local_o_groups), C(m.o_lora_rank), C(m.o_group_in)],
            Bf16,
            Dir::In,
            Placement::Sharded { axis: 0 },
        ),
        t(
            "wo_b",
            vec![C(m.hidden), C(s.local_o_width)],
            I8,
            Dir::In,
            Placement::Sharded { axis: 1 },
        ),
        weight("wo_b_scale", vec![C(m.hidden)], F32),
        t(
            "x_out",
            vec![V("t"), C(m.hc_mult), C(m.hidden)],
            F32,
            Dir::Out,
            PerRank,
        ),
    ]);
    v
}
