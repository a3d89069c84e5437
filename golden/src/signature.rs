//! The tensors a layer case exchanges, by reference ABI name, in ABI order
//! (swa.md §2.1, hca_csa.md §2.1/§2.3), with their per-rank shapes. At TP > 1
//! every tensor gains a leading `[tp]` axis (the reference's L3 convention);
//! wo_a and wo_b then hold each rank's shard.

use super::dims::{Dims, LayerKind, LayerSpec, RopeTable};
use crate::tensor::{TensorError, TensorMap};
use abi::DType;

/// One axis of a signature shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ext {
    Is(usize),
    /// A runtime extent the golden reads from the tensor (pool pages, the HCA
    /// cmp table width).
    Any,
}

/// Direction as the golden sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    In,
    /// A pool: an input whose updated value is an output.
    InOut,
    Out,
}

/// One tensor of a layer case.
#[derive(Debug, Clone, PartialEq)]
pub struct Sig {
    pub name: &'static str,
    pub dtype: DType,
    /// Per-rank shape (without the `[tp]` axis).
    pub shape: Vec<Ext>,
    pub role: Role,
}

/// Token extent of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Tokens per rank.
    pub tokens: usize,
    /// Requests per rank (`tokens / seq`).
    pub requests: usize,
}

fn sig(name: &'static str, dtype: DType, shape: &[usize], role: Role) -> Sig {
    Sig {
        name,
        dtype,
        shape: shape.iter().map(|&n| Ext::Is(n)).collect(),
        role,
    }
}

fn pool(name: &'static str, dtype: DType, block: usize, rest: &[usize]) -> Sig {
    let mut shape = vec![Ext::Any, Ext::Is(block)];
    shape.extend(rest.iter().map(|&n| Ext::Is(n)));
    Sig {
        name,
        dtype,
        shape,
        role: Role::InOut,
    }
}

/// The leading tensors every layer shares (swa.md §2.1 items 1–11).
fn front(d: &Dims, t: usize) -> Vec<Sig> {
    use DType::*;
    use Role::In;
    vec![
        sig("x_hc", F32, &[t, d.hc_mult, d.hidden], In),
        sig("hc_attn_fn", F32, &[d.mix_hc(), d.hc_dim()], In),
        sig("hc_attn_scale", F32, &[3], In),
        sig("hc_attn_base", F32, &[d.mix_hc()], In),
        sig("attn_norm_w", Bf16, &[d.hidden], In),
        sig("wq_a", Bf16, &[d.hidden, d.q_lora], In),
        sig("wq_b", I8, &[d.q_lora, d.heads * d.head_dim], In),
        sig("wq_b_scale", F32, &[d.heads * d.head_dim], In),
        sig("wkv", Bf16, &[d.hidden, d.head_dim], In),
        sig("gamma_cq", Bf16, &[d.q_lora], In),
        sig("gamma_ckv", Bf16, &[d.head_dim], In),
    ]
}

/// attn_sink, the (per-rank shard of the) output weights, and x_out.
fn back(d: &Dims, t: usize) -> Vec<Sig> {
    use DType::*;
    use Role::In;
    vec![
        sig("attn_sink", F32, &[d.heads], In),
        sig(
            "wo_a",
            Bf16,
            &[d.local_o_groups(), d.o_lora, d.o_group_in()],
            In,
        ),
        sig("wo_b", I8, &[d.hidden, d.local_o_width()], In),
        sig("wo_b_scale", F32, &[d.hidden], In),
        sig("x_out", F32, &[t, d.hc_mult, d.hidden], Role::Out),
    ]
}

/// Every tensor of the layer for `t` tokens per rank, in ABI order.
pub fn signature(spec: &LayerSpec, t: usize) -> Vec<Sig> {
    use DType::*;
    use Role::In;
    let d = &spec.dims;
    let b = t / d.seq;
    let (bs, hd, win, rope) = (d.block_size, d.head_dim, d.window, d.rope_dim);
    let rope_rows = match d.rope_table {
        RopeTable::PerToken => t,
        RopeTable::Positions => d.max_seq_len,
    };
    let mut sigs = front(d, t);
    match &spec.kind {
        LayerKind::Swa => sigs.extend([
            sig("freqs_cos", Bf16, &[rope_rows, rope], In),
            sig("freqs_sin", Bf16, &[rope_rows, rope], In),
            pool("kv_cache", Bf16, bs, &[1, hd]),
            sig("swa_slot_mapping", I64, &[t], In),
            sig("swa_indices", I32, &[t, win], In),
            sig("swa_lens", I32, &[t], In),
            sig("position_ids", I32, &[t], In),
        ]),
        LayerKind::Hca(h) => {
            sigs.extend([
                sig("freqs_cos", Bf16, &[rope_rows, rope], In),
                sig("freqs_sin", Bf16, &[rope_rows, rope], In),
            ]);
            // Token-local rows come with the compressed rows' per request.
            if d.rope_table == RopeTable::PerToken {
                sigs.extend([
                    sig("cmp_freqs_cos", F32, &[d.local_batch(), rope / 2], In),
                    sig("cmp_freqs_sin", F32, &[d.local_batch(), rope / 2], In),
                ]);
            }
            sigs.extend([
                sig("cmp_wkv", Bf16, &[hd, d.hidden], In),
                sig("cmp_wgate", Bf16, &[hd, d.hidden], In),
                sig("cmp_ape", F32, &[h.ratio, hd], In),
                sig("cmp_norm_w", Bf16, &[hd], In),
                pool("compress_state", F32, h.state_block, &[2 * hd]),
                sig(
                    "compress_state_block_table",
                    I32,
                    &[b, h.state_table_blocks(d)],
                    In,
                ),
                pool("kv_cache", Bf16, bs, &[1, hd]),
                pool("cmp_kv", Bf16, bs, &[1, hd]),
                Sig {
                    name: "cmp_block_table",
                    dtype: I32,
                    shape: vec![Ext::Is(b), Ext::Any],
                    role: In,
                },
                sig("ori_slot_mapping", I64, &[t], In),
                sig("window_swa_indices", I32, &[t, win], In),
                sig("window_swa_lens", I32, &[t], In),
                sig("cmp_slot_mapping", I64, &[t], In),
                sig("state_slot_mapping", I64, &[t], In),
                sig("position_ids", I32, &[t], In),
                sig("kv_seq_lens", I32, &[b], In),
            ]);
        }
        LayerKind::Csa(c) => {
            let (ih, id) = (c.index_heads, c.index_head_dim);
            sigs.extend([
                sig("freqs_cos", Bf16, &[d.max_seq_len, rope], In),
                sig("freqs_sin", Bf16, &[d.max_seq_len, rope], In),
                sig("cmp_wkv", Bf16, &[2 * hd, d.hidden], In),
                sig("cmp_wgate", Bf16, &[2 * hd, d.hidden], In),
                sig("cmp_ape", F32, &[c.ratio, 2 * hd], In),
                sig("cmp_norm_w", Bf16, &[hd], In),
                pool("compress_state", F32, c.state_block, &[4 * hd]),
                sig(
                    "compress_state_block_table",
                    I32,
                    &[b, c.state_table_blocks(d)],
                    In,
                ),
                sig("idx_wq_b", I8, &[d.q_lora, ih * id], In),
                sig("idx_wq_b_scale", F32, &[ih * id], In),
                sig("weights_proj", Bf16, &[d.hidden, ih], In),
                sig("hadamard_idx", Bf16, &[id, id], In),
                sig("inner_wkv", Bf16, &[2 * id, d.hidden], In),
                sig("inner_wgate", Bf16, &[2 * id, d.hidden], In),
                sig("inner_ape", F32, &[c.ratio, 2 * id], In),
                sig("inner_norm_w", Bf16, &[id], In),
                pool("inner_compress_state", F32, c.state_block, &[4 * id]),
                sig(
                    "inner_compress_state_block_table",
                    I32,
                    &[b, c.state_table_blocks(d)],
                    In,
                ),
                pool("kv_cache", Bf16, bs, &[1, hd]),
                pool("cmp_kv", Bf16, bs, &[1, hd]),
                sig("cmp_block_table", I32, &[b, c.cmp_table_blocks(d)], In),
                pool("idx_kv_cache", I8, bs, &[1, id]),
                pool("idx_kv_scale", F32, bs, &[1, 1]),
                sig("idx_block_table", I32, &[b, c.idx_table_blocks(d)], In),
                sig("ori_slot_mapping", I64, &[t], In),
                sig("window_swa_indices", I32, &[t, win], In),
                sig("window_swa_lens", I32, &[t], In),
                sig("cmp_slot_mapping", I64, &[t], In),
                sig("idx_slot_mapping", I64, &[t], In),
                sig("state_slot_mapping", I64, &[t], In),
                sig("inner_state_slot_mapping", I64, &[t], In),
                sig("position_ids", I32, &[t], In),
                sig("kv_seq_lens", I32, &[b], In),
            ]);
        }
    }
    sigs.extend(back(d, t));
    sigs
}

/// The slot mapping that names a pool's written rows, and its page size.
pub fn pool_mapping(spec: &LayerSpec, pool: &str) -> Option<(&'static str, usize)> {
    let bs = spec.dims.block_size;
    match (&spec.kind, pool) {
        (LayerKind::Swa, "kv_cache") => Some(("swa_slot_mapping", bs)),
        (_, "kv_cache") => Some(("ori_slot_mapping", bs)),
        (LayerKind::Hca(h), "compress_state") => Some(("state_slot_mapping", h.state_block)),
        (LayerKind::Csa(c), "compress_state") => Some(("state_slot_mapping", c.state_block)),
        (LayerKind::Csa(c), "inner_compress_state") => {
            Some(("inner_state_slot_mapping", c.state_block))
        }
        (LayerKind::Hca(_) | LayerKind::Csa(_), "cmp_kv") => Some(("cmp_slot_mapping", bs)),
        (LayerKind::Csa(_), "idx_kv_cache" | "idx_kv_scale") => Some(("idx_slot_mapping", bs)),
        _ => None,
    }
}

/// Reads the token extent from `x_hc` and checks every input against the
/// signature: presence, dtype and shape (with the `[tp]` axis at TP > 1).
pub fn check_inputs(spec: &LayerSpec, inputs: &TensorMap) -> Result<Extent, TensorError> {
    let d = &spec.dims;
    let x_hc = inputs.get("x_hc")?;
    let lead = usize::from(d.tp > 1);
    let tokens = x_hc.shape().get(lead).copied().unwrap_or(0);
    let extent = Extent {
        tokens,
        requests: tokens / d.seq.max(1),
    };
    let capacity = d.local_t();
    if tokens == 0 || tokens % d.seq != 0 || tokens % 8 != 0 || tokens > capacity {
        return Err(TensorError::Shape {
            name: "x_hc".into(),
            want: format!(
                "a token count that is a positive multiple of {} and of 8, at most the per-rank capacity {capacity}",
                d.seq
            ),
            got: x_hc.shape().to_vec(),
        });
    }
    for s in signature(spec, tokens)
        .iter()
        .filter(|s| s.role != Role::Out)
    {
        let t = inputs.get(s.name)?;
        if t.dtype() != s.dtype {
            return Err(TensorError::DType {
                name: s.name.into(),
                want: s.dtype.name(),
                got: t.dtype().name(),
            });
        }
        let mut want: Vec<Ext> = if d.tp > 1 {
            vec![Ext::Is(d.tp)]
        } else {
            Vec::new()
        };
        want.extend(&s.shape);
        let fits = t.shape().len() == want.len()
            && t.shape().iter().zip(&want).all(|(&n, e)| match e {
                Ext::Is(m) => n == *m,
                Ext::Any => n > 0,
            });
        if !fits {
            return Err(TensorError::Shape {
                name: s.name.into(),
                want: format_shape(&want),
                got: t.shape().to_vec(),
            });
        }
    }
    Ok(extent)
}

fn format_shape(shape: &[Ext]) -> String {
    let parts: Vec<String> = shape
        .iter()
        .map(|e| match e {
            Ext::Is(n) => n.to_string(),
            Ext::Any => "*".into(),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}
