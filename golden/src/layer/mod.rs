//! Whole-layer goldens. Each rank runs the front (hc_pre … attention) on its
//! own tokens against its own pools; the output path then moves group slabs
//! between ranks exactly as the TP collectives do (swa.md §3.8), so TP > 1 is
//! modelled with real data movement rather than by re-running TP 1.

pub mod csa;
pub mod hca;
pub mod swa;

use super::GoldenError;
use super::attention::pack_heads;
use super::collectives::{all_to_all_groups, reduce_scatter};
use super::dims::{Dims, RopeTable};
use super::hc_post::hc_post;
use super::hc_pre::{HcPre, HcWeights, hc_pre};
use super::o_proj::{OProjWeights, o_proj, o_proj_partial};
use super::qkv::{Qkv, QkvWeights, qkv_proj_rope};
use super::rms_norm::rms_norm;
use super::rope::RopeRows;
use crate::tensor::{Element, Tensor, TensorError, TensorMap};
use half::bf16;

/// The rank's positions, each a row of the `max_seq_len`-row RoPE table.
pub(super) fn positions(d: &Dims, r: &Rank) -> Result<Vec<usize>, GoldenError> {
    r.get::<i32>("position_ids")?
        .iter()
        .enumerate()
        .map(|(t, &p)| {
            usize::try_from(p)
                .ok()
                .filter(|&p| p < d.max_seq_len)
                .ok_or_else(|| {
                    GoldenError::Contract(format!(
                        "position_ids[{t}]={p} is outside the {}-row RoPE table",
                        d.max_seq_len
                    ))
                })
        })
        .collect()
}

/// Rows of the whole RoPE table at the given positions.
pub(super) fn table_rows(d: &Dims, r: &Rank, positions: &[usize]) -> Result<RopeRows, GoldenError> {
    Ok(RopeRows::gather(
        r.get("freqs_cos")?,
        r.get("freqs_sin")?,
        d.rope_dim,
        d.half_rope(),
        positions,
    ))
}

/// The tokens' RoPE rows (row t at p_t): given per token, or gathered from the table.
pub(super) fn token_rope(d: &Dims, r: &Rank) -> Result<RopeRows, GoldenError> {
    match d.rope_table {
        RopeTable::PerToken => Ok(RopeRows::from_tables(
            r.get("freqs_cos")?,
            r.get("freqs_sin")?,
            d.rope_dim,
            d.half_rope(),
        )),
        RopeTable::Positions => table_rows(d, r, &positions(d, r)?),
    }
}

/// One rank's part of a case: the whole tensor at TP 1, slice `rank` of the
/// leading `[tp]` axis otherwise.
#[derive(Clone, Copy)]
pub(super) struct Rank<'a> {
    inputs: &'a TensorMap,
    rank: usize,
    tp: usize,
}

impl<'a> Rank<'a> {
    pub fn new(inputs: &'a TensorMap, rank: usize, tp: usize) -> Self {
        Rank { inputs, rank, tp }
    }

    pub fn get<T: Element>(&self, name: &str) -> Result<&'a [T], TensorError> {
        let all = self.inputs.values::<T>(name)?;
        let n = all.len() / self.tp;
        Ok(&all[self.rank * n..(self.rank + 1) * n])
    }

    /// The per-rank shape of `name`.
    pub fn shape(&self, name: &str) -> Result<&'a [usize], TensorError> {
        let shape = self.inputs.get(name)?.shape();
        Ok(if self.tp > 1 { &shape[1..] } else { shape })
    }
}

/// The shared front of every layer up to the q / kv rows.
pub(super) struct Front {
    pub hc: HcPre,
    pub x_normed: Vec<bf16>,
    pub qkv: Qkv,
}

pub(super) fn front(d: &Dims, r: &Rank, rope: &RopeRows) -> Result<Front, GoldenError> {
    let hc = hc_pre(
        d,
        r.get("x_hc")?,
        HcWeights {
            proj: r.get("hc_attn_fn")?,
            scale: r.get("hc_attn_scale")?,
            base: r.get("hc_attn_base")?,
        },
    );
    let x_normed = rms_norm(&hc.x_mixed, r.get("attn_norm_w")?, d.rms_eps);
    let qkv = qkv_proj_rope(
        d,
        &x_normed,
        QkvWeights {
            wq_a: r.get("wq_a")?,
            wq_b: r.get("wq_b")?,
            wq_b_scale: r.get("wq_b_scale")?,
            wkv: r.get("wkv")?,
            gamma_cq: r.get("gamma_cq")?,
            gamma_ckv: r.get("gamma_ckv")?,
        },
        rope,
    );
    Ok(Front { hc, x_normed, qkv })
}

/// What a rank hands to the output path.
pub(super) struct RankAttention {
    /// Attention output `[tokens, heads, head_dim]`.
    pub o: Vec<bf16>,
    pub post: Vec<f32>,
    pub comb: Vec<f32>,
}

/// Output projection and hc_post for every rank; returns x_out per rank.
/// TP 1: the grouped o_proj. TP > 1: all-to-all of group slabs, each rank's
/// sharded partial, reduce-scatter (ascending source ranks, then bf16).
pub(super) fn output_path(
    d: &Dims,
    inputs: &TensorMap,
    ranks: &[RankAttention],
    t: usize,
) -> Result<Vec<Vec<f32>>, GoldenError> {
    let t_pad = d.local_t_pad();
    let packed: Vec<Vec<bf16>> = ranks.iter().map(|r| pack_heads(d, &r.o, t_pad)).collect();
    let views: Vec<Rank> = (0..d.tp)
        .map(|rank| Rank::new(inputs, rank, d.tp))
        .collect();
    let attn_out: Vec<Vec<bf16>> = if d.tp == 1 {
        vec![o_proj(d, &packed[0], t_pad, t, o_weights(&views[0])?)]
    } else {
        let windows = all_to_all_groups(d, &packed, t_pad, t);
        let group_t = d.tp * t;
        let partials = windows
            .iter()
            .zip(&views)
            .map(|(w, r)| Ok(o_proj_partial(d, w, group_t, group_t, o_weights(r)?)))
            .collect::<Result<Vec<_>, GoldenError>>()?;
        reduce_scatter(&partials, t, d.hidden)
    };
    ranks
        .iter()
        .zip(&views)
        .zip(&attn_out)
        .map(|((a, r), out)| Ok(hc_post(d, out, r.get("x_hc")?, &a.post, &a.comb)))
        .collect()
}

fn o_weights<'a>(r: &Rank<'a>) -> Result<OProjWeights<'a>, GoldenError> {
    Ok(OProjWeights {
        wo_a: r.get("wo_a")?,
        wo_b: r.get("wo_b")?,
        wo_b_scale: r.get("wo_b_scale")?,
    })
}

/// Inserts an output from per-rank values: `[tp, shape…]` at TP > 1, `shape` at TP 1.
pub(super) fn put_stacked<T: Element>(
    out: &mut TensorMap,
    name: &str,
    tp: usize,
    shape: &[usize],
    per_rank: Vec<Vec<T>>,
) {
    let mut full = Vec::with_capacity(shape.len() + 1);
    if tp > 1 {
        full.push(tp);
    }
    full.extend_from_slice(shape);
    let t = Tensor::from_vec(full, per_rank.concat()).expect("per-rank outputs match their shapes");
    out.insert(name, t);
}

/// Checks raw-pool row indices: −1 or a row of the pool.
pub(super) fn check_rows(indices: &[i32], pool_rows: usize, name: &str) -> Result<(), GoldenError> {
    match indices
        .iter()
        .position(|&i| i < -1 || (i >= 0 && i as usize >= pool_rows))
    {
        None => Ok(()),
        Some(k) => Err(GoldenError::Contract(format!(
            "{name}: flat element {k} = {} is neither -1 nor a row in [0, {pool_rows})",
            indices[k]
        ))),
    }
}
