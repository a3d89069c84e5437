//! hc_post (swa.md §3.9): write the sublayer output back into the residual
//! streams. All f32 in a fixed order, so this stage is bit-exact with torch.

use super::dims::Dims;
use half::bf16;
use rayon::prelude::*;

/// `x_out[o] = (((a·post[o] + x0·comb[0][o]) + x1·comb[1][o]) + …)` for
/// `attn_out` `[t, hidden]` and `x_hc` `[t, hc, hidden]`.
pub fn hc_post(d: &Dims, attn_out: &[bf16], x_hc: &[f32], post: &[f32], comb: &[f32]) -> Vec<f32> {
    let (hc, hidden) = (d.hc_mult, d.hidden);
    let mut out = vec![0.0f32; x_hc.len()];
    out.par_chunks_mut(hc * hidden)
        .enumerate()
        .for_each(|(t, y)| {
            let a = &attn_out[t * hidden..(t + 1) * hidden];
            let res = &x_hc[t * hc * hidden..(t + 1) * hc * hidden];
            let (post, comb) = (
                &post[t * hc..(t + 1) * hc],
                &comb[t * hc * hc..(t + 1) * hc * hc],
            );
            for (o, y_row) in y.chunks_exact_mut(hidden).enumerate() {
                for (dd, v) in y_row.iter_mut().enumerate() {
                    let mut acc = a[dd].to_f32() * post[o];
                    for i in 0..hc {
                        acc += res[i * hidden + dd] * comb[i * hc + o];
                    }
                    *v = acc;
                }
            }
        });
    out
}
