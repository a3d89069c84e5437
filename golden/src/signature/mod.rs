//! The tensors a layer case exchanges, by reference ABI name, in ABI order
//! (swa.md §2.1, hca_csa.md §2.1/§2.3), with their per-rank shapes. At TP > 1
//! every tensor gains a leading `[tp]` axis (the reference's L3 convention);
//! wo_a and wo_b then hold each rank's shard.

pub(crate) mod entry;

pub use entry::{Ext, Role, Sig};

use crate::dims::{Dims, LayerSpec};
use crate::tensor::{TensorError, TensorMap};
use abi::DType;
use entry::sig;

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
    let d = &spec.dims;
    let mut sigs = front(d, t);
    sigs.extend(spec.kind.family().tensors(d, t));
    sigs.extend(back(d, t));
    sigs
}

/// The slot mapping that names a pool's written rows, and its page size.
pub fn pool_mapping(spec: &LayerSpec, pool: &str) -> Option<(&'static str, usize)> {
    spec.kind.family().pool_mapping(&spec.dims, pool)
}

/// Token extent of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Tokens per rank.
    pub tokens: usize,
    /// Requests per rank (`tokens / seq`).
    pub requests: usize,
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
