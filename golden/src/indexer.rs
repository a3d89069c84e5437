//! The lightning indexer of CSA (hca_csa.md §5): int8 index queries, head
//! weights, the index keys' write (the inner compressor's tail), ReLU-weighted
//! int8 scores against the int8 index-key cache, top-k.

use super::GoldenError;
use super::arith::{bf16_round, sum, widen};
use super::cache_insert::insert_rows;
use super::compressor::{self, Pooled};
use super::dims::{CsaDims, Dims};
use super::gemm::{Mat, Threads, matmul, matmul_i8, matmul_int, widen_i8};
use super::quant::quantize_row;
use super::rope::{RopeRows, rotate};
use super::topk::top_k;
use half::bf16;
use rayon::prelude::*;

/// Index queries quantised per (token, head).
#[derive(Debug, Clone, PartialEq)]
pub struct IndexQuery {
    /// `[t, index_heads, index_head_dim]`.
    pub q: Vec<i8>,
    /// `[t, index_heads]`.
    pub scale: Vec<f32>,
}

/// Index queries (§5.1): `(qr · idx_wq_b)` exact, dequantised, RoPE on the
/// last rope dims with the request's step row, bf16, times the Hadamard
/// matrix, int8 per (token, head). `step` has one row per request.
#[allow(clippy::too_many_arguments)]
pub fn index_query(
    d: &Dims,
    c: &CsaDims,
    qr: &[i8],
    qr_scale: &[f32],
    idx_wq_b: &[i8],
    idx_wq_b_scale: &[f32],
    hadamard: &[bf16],
    step: &RopeRows,
) -> IndexQuery {
    let t = qr_scale.len();
    let (ih, id) = (c.index_heads, c.index_head_dim);
    let width = ih * id;
    let mut q = matmul_i8(
        Mat::rows(qr, t, d.q_lora),
        Mat::rows(idx_wq_b, d.q_lora, width),
        Threads::All,
    );
    q.par_chunks_mut(width).enumerate().for_each(|(tok, row)| {
        let b = tok / d.seq;
        for (v, &s) in row.iter_mut().zip(idx_wq_b_scale) {
            *v = (*v * qr_scale[tok]) * s;
        }
        for head in row.chunks_exact_mut(id) {
            let n = head.len();
            rotate(&mut head[n - d.rope_dim..], step.cos(b), step.sin(b));
            head.iter_mut().for_each(|v| *v = bf16_round(*v));
        }
    });
    let h = widen(hadamard);
    let qh = matmul(
        Mat::rows(&q, t * ih, id),
        Mat::rows(&h, id, id),
        Threads::All,
    );
    let mut q8 = vec![0i8; t * width];
    let mut scale = vec![0.0f32; t * ih];
    q8.par_chunks_mut(id)
        .zip(qh.par_chunks(id))
        .zip(scale.par_iter_mut())
        .for_each(|((q8, row), s)| *s = quantize_row(row, q8));
    IndexQuery { q: q8, scale }
}

/// Head weights (§5.2): `(x · weights_proj) · weights_scale`, `[t, index_heads]`.
pub fn head_weights(x: &[f32], hidden: usize, weights_proj: &[bf16], scale: f32) -> Vec<f32> {
    let heads = weights_proj.len() / hidden;
    let t = x.len() / hidden;
    let mut w = matmul(
        Mat::rows(x, t, hidden),
        Mat::rows(&widen(weights_proj), hidden, heads),
        Threads::All,
    );
    w.iter_mut().for_each(|v| *v *= scale);
    w
}

/// The int8 index-key cache with its block table.
#[derive(Debug, Clone, Copy)]
pub struct IndexCache<'a> {
    /// `[pages · block_size, index_head_dim]`.
    pub keys: &'a [i8],
    /// `[pages · block_size]`.
    pub scales: &'a [f32],
    /// `[requests, width]`.
    pub table: &'a [i32],
    pub width: usize,
}

/// Scores (§5.4) and top-k (§5.5) of every token: for each visible compressed
/// row j, `k_s[j] · Σ_h w[t,h] · ReLU(q_s[t,h] · (q_i8 · k_i8))`; the top
/// `index_topk` rows, best first, padded with −1. Returns `[t, index_topk]`.
#[allow(clippy::too_many_arguments)]
pub fn select(
    d: &Dims,
    c: &CsaDims,
    query: &IndexQuery,
    weights: &[f32],
    positions: &[i32],
    kv_seq_lens: &[i32],
    cache: IndexCache,
) -> Result<Vec<i32>, GoldenError> {
    let rows = scores(d, c, query, weights, positions, kv_seq_lens, cache)?;
    Ok(top_k_rows(c, &rows))
}

/// Each token's `index_topk` best rows of `rows` (one score row per token), best first,
/// padded with −1. Returns `[t, index_topk]`.
pub fn top_k_rows(c: &CsaDims, rows: &[Vec<f32>]) -> Vec<i32> {
    let mut out = vec![-1i32; rows.len() * c.index_topk];
    for (row, scores) in out.chunks_exact_mut(c.index_topk).zip(rows) {
        for (o, j) in row.iter_mut().zip(top_k(scores, c.index_topk)) {
            *o = j as i32;
        }
    }
    out
}

/// The scores (§5.4) of every token's visible compressed rows j < V_t, one row per token.
#[allow(clippy::too_many_arguments)]
pub fn scores(
    d: &Dims,
    c: &CsaDims,
    query: &IndexQuery,
    weights: &[f32],
    positions: &[i32],
    kv_seq_lens: &[i32],
    cache: IndexCache,
) -> Result<Vec<Vec<f32>>, GoldenError> {
    let (ih, id, bs, seq) = (c.index_heads, c.index_head_dim, d.block_size, d.seq);
    let rows = cache.scales.len();
    let score_len = c.score_len(d);
    let per_request: Vec<Vec<Vec<f32>>> = kv_seq_lens
        .par_iter()
        .enumerate()
        .map(|(b, &len)| -> Result<Vec<Vec<f32>>, GoldenError> {
            let cache_len = usize::try_from(len).unwrap_or(0) / c.ratio;
            if cache_len == 0 {
                return Ok(vec![Vec::new(); seq]);
            }
            // Gather the request's keys through idx_block_table.
            let mut keys = Vec::with_capacity(cache_len * id);
            let mut key_scale = Vec::with_capacity(cache_len);
            for j in 0..cache_len {
                let entry = if j / bs < cache.width { cache.table[b * cache.width + j / bs] } else { -1 };
                let r = usize::try_from(entry)
                    .ok()
                    .map(|p| p * bs + j % bs)
                    .filter(|&r| r < rows)
                    .ok_or_else(|| {
                        GoldenError::Contract(format!(
                            "idx_block_table[{b}, {}]={entry} does not map index-cache row {j} into the {rows}-row pool",
                            j / bs
                        ))
                    })?;
                keys.extend(cache.keys[r * id..(r + 1) * id].iter().map(|&v| f32::from(v)));
                key_scale.push(cache.scales[r]);
            }
            let q = widen_i8(&query.q[b * seq * ih * id..(b + 1) * seq * ih * id]);
            let raw = matmul_int(
                Mat::rows(&q, seq * ih, id),
                Mat::transposed(&keys, id, cache_len),
                Threads::One,
            );
            Ok((0..seq)
                .map(|s| {
                    let tok = b * seq + s;
                    let visible = cache_len
                        .min((i64::from(positions[tok]) + 1).max(0) as usize / c.ratio)
                        .min(score_len);
                    (0..visible)
                        .map(|j| {
                            let head_sum = sum((0..ih).map(|h| {
                                let v = raw[(s * ih + h) * cache_len + j] * query.scale[tok * ih + h];
                                v.max(0.0) * weights[tok * ih + h]
                            }));
                            head_sum * key_scale[j]
                        })
                        .collect()
                })
                .collect())
        })
        .collect::<Result<_, _>>()?;
    Ok(per_request.concat())
}

/// The inner compressor's tail (hca_csa.md §4.5, §5.3): norm + RoPE with the
/// step row, bf16, times the Hadamard matrix, then quant-on-write of the
/// bf16-rounded row into the int8 index cache and its scale.
#[allow(clippy::too_many_arguments)]
pub fn write_index_keys(
    d: &Dims,
    c: &CsaDims,
    pooled: Vec<Pooled>,
    norm_w: &[bf16],
    hadamard: &[bf16],
    step: &RopeRows,
    idx_slots: &[i64],
    keys: &mut [i8],
    scales: &mut [f32],
) -> Result<(), GoldenError> {
    let id = c.index_head_dim;
    let h = widen(hadamard);
    for mut p in pooled {
        compressor::normalize_rotate(
            &mut p.values,
            norm_w,
            d.rms_eps,
            step.cos(p.request),
            step.sin(p.request),
        );
        let rounded: Vec<f32> = p.values.iter().map(|&v| bf16_round(v)).collect();
        let kf = matmul(
            Mat::rows(&rounded, 1, id),
            Mat::rows(&h, id, id),
            Threads::One,
        );
        let row: Vec<f32> = kf.iter().map(|&v| bf16_round(v)).collect();
        let mut q8 = vec![0i8; id];
        let scale = quantize_row(&row, &mut q8);
        let tok = p.request * d.seq + p.boundary;
        insert_rows(keys, id, &q8, &idx_slots[tok..=tok], "idx_slot_mapping")?;
        insert_rows(
            scales,
            1,
            &[scale],
            &idx_slots[tok..=tok],
            "idx_slot_mapping",
        )?;
    }
    Ok(())
}
