//! qkv_proj_rope (swa.md §3.3): LoRA query with per-token int8 quantisation,
//! the latent KV row, per-head / per-row RMSNorm and RoPE on the last dims.

use super::arith::{mean_square, rms_normalize, rsqrt, to_bf16, widen};
use super::dims::Dims;
use super::gemm::{Mat, Threads, matmul, matmul_i8};
use super::quant::quantize_row;
use super::rope::{RopeRows, rotate};
use half::bf16;
use rayon::prelude::*;

/// The qkv weights.
#[derive(Debug, Clone, Copy)]
pub struct QkvWeights<'a> {
    /// `[hidden, q_lora]`.
    pub wq_a: &'a [bf16],
    /// `[q_lora, heads · head_dim]`, per-output-column int8.
    pub wq_b: &'a [i8],
    /// `[heads · head_dim]`.
    pub wq_b_scale: &'a [f32],
    /// `[hidden, head_dim]`.
    pub wkv: &'a [bf16],
    /// `[q_lora]`.
    pub gamma_cq: &'a [bf16],
    /// `[head_dim]`.
    pub gamma_ckv: &'a [bf16],
}

/// qkv outputs for `t` tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct Qkv {
    /// `[t, heads, head_dim]`.
    pub q: Vec<bf16>,
    /// `[t, head_dim]`.
    pub kv: Vec<bf16>,
    /// `[t, q_lora]`: the quantised q latent (used by the CSA indexer).
    pub qr: Vec<i8>,
    /// `[t]`: its dequant scale.
    pub qr_scale: Vec<f32>,
}

/// Runs qkv_proj_rope on `x_normed` `[t, hidden]` with the token RoPE rows.
pub fn qkv_proj_rope(d: &Dims, x_normed: &[bf16], w: QkvWeights, rope: &RopeRows) -> Qkv {
    let t = x_normed.len() / d.hidden;
    let x = widen(x_normed);
    let xm = Mat::rows(&x, t, d.hidden);

    // Q path: c = x·wq_a; RMSNorm with gamma (kept f32); per-token int8.
    let wq_a = widen(w.wq_a);
    let mut c = matmul(xm, Mat::rows(&wq_a, d.hidden, d.q_lora), Threads::All);
    let gamma_cq = widen(w.gamma_cq);
    let mut qr = vec![0i8; t * d.q_lora];
    let mut qr_scale = vec![0.0f32; t];
    c.par_chunks_mut(d.q_lora)
        .zip(qr.par_chunks_mut(d.q_lora))
        .zip(qr_scale.par_iter_mut())
        .for_each(|((row, q8), scale)| {
            let inv = rsqrt(mean_square(row) + d.rms_eps);
            for (v, &g) in row.iter_mut().zip(&gamma_cq) {
                *v = (*v * inv) * g;
            }
            *scale = quantize_row(row, q8);
        });

    // Exact int8 product, dequant (acc·qr_scale)·wq_b_scale, per-head RMSNorm, RoPE.
    let width = d.heads * d.head_dim;
    let mut qd = matmul_i8(
        Mat::rows(&qr, t, d.q_lora),
        Mat::rows(w.wq_b, d.q_lora, width),
        Threads::All,
    );
    let mut q = vec![bf16::ZERO; t * width];
    q.par_chunks_mut(width)
        .zip(qd.par_chunks_mut(width))
        .enumerate()
        .for_each(|(tok, (q_out, row))| {
            for (v, &s) in row.iter_mut().zip(w.wq_b_scale) {
                *v = (*v * qr_scale[tok]) * s;
            }
            for (head, out) in row
                .chunks_exact_mut(d.head_dim)
                .zip(q_out.chunks_exact_mut(d.head_dim))
            {
                rms_normalize(head, d.rms_eps);
                finish_head(d, head, out, rope, tok);
            }
        });

    // KV path: gamma before RoPE.
    let wkv = widen(w.wkv);
    let mut kvf = matmul(xm, Mat::rows(&wkv, d.hidden, d.head_dim), Threads::All);
    let gamma_ckv = widen(w.gamma_ckv);
    let mut kv = vec![bf16::ZERO; t * d.head_dim];
    kv.par_chunks_mut(d.head_dim)
        .zip(kvf.par_chunks_mut(d.head_dim))
        .enumerate()
        .for_each(|(tok, (out, row))| {
            let inv = rsqrt(mean_square(row) + d.rms_eps);
            for (v, &g) in row.iter_mut().zip(&gamma_ckv) {
                *v = (*v * inv) * g;
            }
            finish_head(d, row, out, rope, tok);
        });

    Qkv {
        q,
        kv,
        qr,
        qr_scale,
    }
}

/// Rounds the nope dims once and the rotated rope dims once.
fn finish_head(d: &Dims, head: &mut [f32], out: &mut [bf16], rope: &RopeRows, tok: usize) {
    let nope = d.nope_dim();
    rotate(&mut head[nope..], rope.cos(tok), rope.sin(tok));
    for (o, &v) in out.iter_mut().zip(head.iter()) {
        *o = to_bf16(v);
    }
}
