//! The attention RMSNorm (swa.md §3.2): bf16 in, bf16 out.

use super::arith::{mean_square, rsqrt, to_bf16};
use half::bf16;
use rayon::prelude::*;

/// `bf16((x · rsqrt(mean(x²) + eps)) · w)` per row of `width` values.
pub fn rms_norm(x: &[bf16], weight: &[bf16], eps: f32) -> Vec<bf16> {
    let width = weight.len();
    let w: Vec<f32> = weight.iter().map(|v| v.to_f32()).collect();
    let mut out = vec![bf16::ZERO; x.len()];
    out.par_chunks_mut(width)
        .zip(x.par_chunks(width))
        .for_each(|(o, row)| {
            let xf: Vec<f32> = row.iter().map(|v| v.to_f32()).collect();
            let inv = rsqrt(mean_square(&xf) + eps);
            for ((o, &v), &g) in o.iter_mut().zip(&xf).zip(&w) {
                *o = to_bf16((v * inv) * g);
            }
        });
    out
}
