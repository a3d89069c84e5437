//! hc_pre (swa.md §3.1): collapse the hyper-connection streams into the
//! sublayer input and derive the post weights and the Sinkhorn comb matrix.

use super::arith::{rsqrt, sigmoid, sum, to_bf16};
use super::dims::Dims;
use half::bf16;
use rayon::prelude::*;

/// Chunk width of the golden's sum of squares (RMS_K_CHUNK).
const SQUARE_SUM_CHUNK: usize = 512;
/// K slabs of the cube split (LINEAR_OK) and products per MAD group.
const PROJECTION_SLABS: usize = 4;
const CUBE_GROUP: usize = 4;

/// hc_attn_fn / hc_attn_scale / hc_attn_base.
#[derive(Debug, Clone, Copy)]
pub struct HcWeights<'a> {
    /// `[mix_hc, hc_mult · hidden]`.
    pub proj: &'a [f32],
    /// `[3]`: scales for the pre, post and comb logits.
    pub scale: &'a [f32],
    /// `[mix_hc]`.
    pub base: &'a [f32],
}

/// hc_pre outputs for `t` tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct HcPre {
    /// `[t, hidden]`.
    pub x_mixed: Vec<bf16>,
    /// `[t, hc_mult]`.
    pub post: Vec<f32>,
    /// `[t, hc_mult · hc_mult]`, entry `4i + o` mixes input stream i into output stream o.
    pub comb: Vec<f32>,
}

/// Runs hc_pre on `x_hc` `[t, hc_mult, hidden]`.
pub fn hc_pre(d: &Dims, x_hc: &[f32], w: HcWeights) -> HcPre {
    let (hc, hidden, k) = (d.hc_mult, d.hidden, d.hc_dim());
    let t = x_hc.len() / k;
    let mut out = HcPre {
        x_mixed: vec![bf16::ZERO; t * hidden],
        post: vec![0.0; t * hc],
        comb: vec![0.0; t * hc * hc],
    };
    out.x_mixed
        .par_chunks_mut(hidden)
        .zip(out.post.par_chunks_mut(hc))
        .zip(out.comb.par_chunks_mut(hc * hc))
        .zip(x_hc.par_chunks(k))
        .for_each(|(((x_mixed, post), comb), x)| token(d, x, w, x_mixed, post, comb));
    out
}

fn token(
    d: &Dims,
    x: &[f32],
    w: HcWeights,
    x_mixed: &mut [bf16],
    post: &mut [f32],
    comb: &mut [f32],
) {
    let hc = d.hc_mult;
    let k = d.hc_dim();
    // 1. Sum of squares: chunk sums added in ascending chunk order.
    let ss = x
        .chunks(SQUARE_SUM_CHUNK)
        .map(|c| sum(c.iter().map(|&v| v * v)))
        .fold(0.0f32, |acc, s| acc + s);
    let inv = rsqrt(ss * (1.0 / k as f32) + d.rms_eps);
    // 2.–3. Projection in the pinned cube order, then the gates.
    let m: Vec<f32> = w
        .proj
        .chunks_exact(k)
        .map(|row| cube_dot(x, row) * inv)
        .collect();
    let (s0, s1, s2) = (w.scale[0], w.scale[1], w.scale[2]);
    let pre: Vec<f32> = (0..hc)
        .map(|h| sigmoid(m[h] * s0 + w.base[h]) + d.hc_eps)
        .collect();
    for (h, p) in post.iter_mut().enumerate() {
        *p = 2.0 * sigmoid(m[hc + h] * s1 + w.base[hc + h]);
    }
    for (j, c) in comb.iter_mut().enumerate() {
        *c = m[2 * hc + j] * s2 + w.base[2 * hc + j];
    }
    sinkhorn(comb, hc, d.hc_sinkhorn_iters, d.hc_eps);
    // 5. Collapse the streams: (x0·p0 + x1·p1) + (x2·p2 + x3·p3), one rounding.
    let hidden = d.hidden;
    for (dd, out) in x_mixed.iter_mut().enumerate() {
        let y = |h: usize| x[h * hidden + dd] * pre[h];
        *out = to_bf16((y(0) + y(1)) + (y(2) + y(3)));
    }
}

/// The A2/A3 cube reduction the golden emulates: K in 4 slabs; per slab, groups
/// of 4 exact f64 products summed in f64, each group added to an f32 accumulator
/// with one rounding; slabs added in ascending order.
pub fn cube_dot(x: &[f32], w: &[f32]) -> f32 {
    let slab = x.len() / PROJECTION_SLABS;
    (0..PROJECTION_SLABS)
        .map(|s| {
            let (xs, ws) = (&x[s * slab..(s + 1) * slab], &w[s * slab..(s + 1) * slab]);
            xs.chunks_exact(CUBE_GROUP)
                .zip(ws.chunks_exact(CUBE_GROUP))
                .fold(0.0f32, |acc, (xg, wg)| {
                    let g = xg
                        .iter()
                        .zip(wg)
                        .fold(0.0f64, |g, (&a, &b)| g + f64::from(a) * f64::from(b));
                    (f64::from(acc) + g) as f32
                })
        })
        .fold(0.0f32, |acc, s| acc + s)
}

/// Sinkhorn on the `[n, n]` comb logits (row i = input stream): softmax over
/// each row plus eps, a column normalisation, then `iters − 1` rounds of row and
/// column normalisation — 1 softmax, iters−1 row and iters column steps.
/// Four-entry sums run in index order.
pub fn sinkhorn(c: &mut [f32], n: usize, iters: usize, eps: f32) {
    for row in c.chunks_exact_mut(n) {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        row.iter_mut().for_each(|v| *v = (*v - max).exp());
        let total = row.iter().fold(0.0f32, |a, &v| a + v);
        row.iter_mut().for_each(|v| *v = *v / total + eps);
    }
    normalize_columns(c, n, eps);
    for _ in 1..iters {
        for row in c.chunks_exact_mut(n) {
            let total = row.iter().fold(0.0f32, |a, &v| a + v) + eps;
            row.iter_mut().for_each(|v| *v /= total);
        }
        normalize_columns(c, n, eps);
    }
}

fn normalize_columns(c: &mut [f32], n: usize, eps: f32) {
    for o in 0..n {
        let total = (0..n).fold(0.0f32, |a, i| a + c[i * n + o]) + eps;
        (0..n).for_each(|i| c[i * n + o] /= total);
    }
}
