//! Sparse MQA attention over the latent KV (swa.md §3.6, hca_csa.md §6.1):
//! K = V = the candidate row, one shared row for every head. Per 128-lane
//! tile: scores, max, exp (the row sum uses f32 probabilities, P·V uses
//! bf16-rounded ones), tiles merged by online softmax, the attention sink in
//! the denominator, inverse RoPE on the rope dims, one bf16 rounding.

use super::arith::{bf16_round, sum, to_bf16, widen};
use super::candidates::{Candidate, Tiles};
use super::dims::Dims;
use super::gemm::{Mat, Threads, matmul};
use super::mask::MASK_VALUE;
use super::rope::{RopeRows, rotate_inverse};
use half::bf16;
use rayon::prelude::*;

/// The pools candidates point into, as flat rows of `width` values.
#[derive(Debug, Clone, Copy)]
pub struct KvSources<'a> {
    pub raw: &'a [bf16],
    pub compressed: &'a [bf16],
    pub width: usize,
}

impl KvSources<'_> {
    fn row(&self, c: Candidate) -> Option<&[bf16]> {
        let (pool, r) = match c {
            Candidate::Raw(r) => (self.raw, r),
            Candidate::Compressed(r) => (self.compressed, r),
            Candidate::Masked => return None,
        };
        pool.get(r * self.width..(r + 1) * self.width)
    }
}

/// Attention for `q` `[t, heads, head_dim]` over each token's tiles; returns
/// `[t, heads, head_dim]` bf16 (rope dims de-rotated with the token's row).
/// A token without a valid lane outputs zeros.
pub fn sparse_attention(
    d: &Dims,
    q: &[bf16],
    tiles: &[Tiles],
    kv: KvSources,
    sink: &[f32],
    rope: &RopeRows,
) -> Vec<bf16> {
    let per_token = d.heads * d.head_dim;
    let mut out = vec![bf16::ZERO; q.len()];
    out.par_chunks_mut(per_token)
        .zip(q.par_chunks(per_token))
        .zip(tiles.par_iter())
        .enumerate()
        .for_each(|(t, ((out, q), tiles))| {
            let valid = tiles.iter().flatten().any(|&c| kv.row(c).is_some());
            if valid {
                let o = token(d, &widen(q), tiles, kv, sink);
                finish(d, o, out, rope, t);
            }
        });
    out
}

/// Running online-softmax state per head.
struct Merge {
    m: Vec<f32>,
    l: Vec<f32>,
    o: Vec<f32>,
}

fn token(d: &Dims, q: &[f32], tiles: &Tiles, kv: KvSources, sink: &[f32]) -> Vec<f32> {
    let (h, hd) = (d.heads, d.head_dim);
    let scale = d.softmax_scale();
    let mut acc: Option<Merge> = None;
    for tile in tiles {
        let n = tile.len();
        let mut rows = vec![0.0f32; n * hd];
        let mut valid = vec![false; n];
        for (lane, &c) in tile.iter().enumerate() {
            if let Some(row) = kv.row(c) {
                valid[lane] = true;
                rows[lane * hd..(lane + 1) * hd]
                    .iter_mut()
                    .zip(row)
                    .for_each(|(o, v)| *o = v.to_f32());
            }
        }
        // A tile without a valid lane merges as (m = −1e20, l = 0, o = 0): a no-op.
        if !valid.contains(&true) {
            continue;
        }
        let mut s = matmul(
            Mat::rows(q, h, hd),
            Mat::transposed(&rows, hd, n),
            Threads::One,
        );
        let mut mi = vec![0.0f32; h];
        let mut li = vec![0.0f32; h];
        for (head, row) in s.chunks_exact_mut(n).enumerate() {
            for (v, &ok) in row.iter_mut().zip(&valid) {
                *v = if ok { *v * scale } else { MASK_VALUE };
            }
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            for (v, &ok) in row.iter_mut().zip(&valid) {
                *v = if ok { (*v - max).exp() } else { 0.0 };
            }
            mi[head] = max;
            li[head] = sum(row.iter().copied());
            row.iter_mut().for_each(|v| *v = bf16_round(*v));
        }
        let oi = matmul(Mat::rows(&s, h, n), Mat::rows(&rows, n, hd), Threads::One);
        acc = Some(match acc {
            None => Merge {
                m: mi,
                l: li,
                o: oi,
            },
            Some(mut st) => {
                for head in 0..h {
                    let m_new = st.m[head].max(mi[head]);
                    let alpha = (st.m[head] - m_new).exp();
                    let beta = (mi[head] - m_new).exp();
                    st.l[head] = alpha * st.l[head] + beta * li[head];
                    let (o, o_cur) = (
                        &mut st.o[head * hd..(head + 1) * hd],
                        &oi[head * hd..(head + 1) * hd],
                    );
                    o.iter_mut()
                        .zip(o_cur)
                        .for_each(|(o, &c)| *o = alpha * *o + beta * c);
                    st.m[head] = m_new;
                }
                st
            }
        });
    }
    let Merge { m, l, mut o } = acc.unwrap_or(Merge {
        m: vec![MASK_VALUE; h],
        l: vec![0.0; h],
        o: vec![0.0; h * hd],
    });
    for head in 0..h {
        let denom = l[head] + (sink[head] - m[head]).exp();
        o[head * hd..(head + 1) * hd]
            .iter_mut()
            .for_each(|v| *v /= denom);
    }
    o
}

/// nope dims rounded once; rope dims de-rotated in f32 then rounded once.
fn finish(d: &Dims, mut o: Vec<f32>, out: &mut [bf16], rope: &RopeRows, t: usize) {
    let nope = d.nope_dim();
    for (head, out) in o
        .chunks_exact_mut(d.head_dim)
        .zip(out.chunks_exact_mut(d.head_dim))
    {
        rotate_inverse(&mut head[nope..], rope.cos(t), rope.sin(t));
        out.iter_mut()
            .zip(head.iter())
            .for_each(|(o, &v)| *o = to_bf16(v));
    }
}

/// The packed layout `[o_groups, t_pad, heads_per_group · head_dim]`: element
/// `(g, t, hh, :)` is head `g · heads_per_group + hh` of token t. Rows
/// `t ≥ tokens` are capacity padding (zero here; never written by the kernel).
pub fn pack_heads(d: &Dims, o: &[bf16], t_pad: usize) -> Vec<bf16> {
    let group_in = d.o_group_in();
    let tokens = o.len() / (d.heads * d.head_dim);
    let mut packed = vec![bf16::ZERO; d.o_groups * t_pad * group_in];
    for t in 0..tokens {
        for g in 0..d.o_groups {
            let src = &o[(t * d.o_groups + g) * group_in..(t * d.o_groups + g + 1) * group_in];
            packed[(g * t_pad + t) * group_in..(g * t_pad + t + 1) * group_in].copy_from_slice(src);
        }
    }
    packed
}
