//! The grouped output projection (swa.md §3.7–3.8): wo_a per group (bf16
//! product, f32 result), per-(token, group) int8 quantisation, the exact int8
//! wo_b product per group, groups summed in ascending order with their
//! dequant scales, then the per-row wo_b scale.

use super::arith::{to_bf16, widen};
use super::dims::Dims;
use super::gemm::{Mat, Threads, matmul, matmul_int, widen_i8};
use super::quant::quantize_row;
use half::bf16;
use rayon::prelude::*;

/// The projection weights of the groups one rank owns.
#[derive(Debug, Clone, Copy)]
pub struct OProjWeights<'a> {
    /// `[groups, o_lora, o_group_in]`.
    pub wo_a: &'a [bf16],
    /// `[hidden, groups · o_lora]`, int8 per row.
    pub wo_b: &'a [i8],
    /// `[hidden]`.
    pub wo_b_scale: &'a [f32],
}

/// One rank's f32 partial `[rows, hidden]` over its groups:
/// `(Σ_g f32(p_g) · s_g) · wo_b_scale`, no bf16 rounding. `slabs` holds the
/// groups' input rows `[groups, slab_rows, o_group_in]`; the first `rows` of
/// each slab are projected.
pub fn o_proj_partial(
    d: &Dims,
    slabs: &[bf16],
    slab_rows: usize,
    rows: usize,
    w: OProjWeights,
) -> Vec<f32> {
    let (group_in, lora, hidden) = (d.o_group_in(), d.o_lora, d.hidden);
    let groups = w.wo_a.len() / (lora * group_in);
    let width = groups * lora;
    let wo_b = widen_i8(w.wo_b);
    let mut acc = vec![0.0f32; rows * hidden];
    for g in 0..groups {
        let x = widen(&slabs[g * slab_rows * group_in..(g * slab_rows + rows) * group_in]);
        let wo_a = widen(&w.wo_a[g * lora * group_in..(g + 1) * lora * group_in]);
        let mut a = matmul(
            Mat::rows(&x, rows, group_in),
            Mat::transposed(&wo_a, group_in, lora),
            Threads::All,
        );
        let mut a8 = vec![0i8; rows * lora];
        let mut scale = vec![0.0f32; rows];
        a.par_chunks_mut(lora)
            .zip(a8.par_chunks_mut(lora))
            .zip(scale.par_iter_mut())
            .for_each(|((row, q), s)| *s = quantize_row(row, q));
        // wo_b columns of group g, as a [lora, hidden] view of the [hidden, width] matrix.
        let wo_b_g = Mat {
            data: &wo_b[g * lora..],
            rows: lora,
            cols: hidden,
            rs: 1,
            cs: width,
        };
        let p = matmul_int(Mat::rows(&widen_i8(&a8), rows, lora), wo_b_g, Threads::All);
        acc.par_chunks_mut(hidden)
            .zip(p.par_chunks(hidden))
            .zip(scale.par_iter())
            .for_each(|((acc, p), &s)| acc.iter_mut().zip(p).for_each(|(a, &v)| *a += v * s));
    }
    acc.par_chunks_mut(hidden)
        .for_each(|row| row.iter_mut().zip(w.wo_b_scale).for_each(|(v, &s)| *v *= s));
    acc
}

/// TP1 o_proj: all groups on one rank, then bf16 — `attn_out` `[t, hidden]`
/// from the packed heads `[o_groups, t_pad, o_group_in]`.
pub fn o_proj(
    d: &Dims,
    packed: &[bf16],
    t_pad: usize,
    tokens: usize,
    w: OProjWeights,
) -> Vec<bf16> {
    o_proj_partial(d, packed, t_pad, tokens, w)
        .iter()
        .map(|&v| to_bf16(v))
        .collect()
}
