//! The lightning indexer of CSA (hca_csa.md §5): int8 index queries, head
//! weights, the index keys' write (the inner compressor's tail), ReLU-weighted
//! int8 scores against the int8 index-key cache, top-k.

use super::GoldenError;
use super::arith::{bf16_round, sum, widen};
use super::cache_insert::insert_rows;
use super::compressor::{self, Pooled, RopeRowOf};
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
/// last rope dims with the token's row of `rows` (the snapshot repeats its request's step
/// row at p0; the ring layer's is the token's own, csa_1m.md §5.1), bf16, times the
/// Hadamard matrix, int8 per (token, head).
#[allow(clippy::too_many_arguments)]
pub fn index_query(
    d: &Dims,
    c: &CsaDims,
    qr: &[i8],
    qr_scale: &[f32],
    idx_wq_b: &[i8],
    idx_wq_b_scale: &[f32],
    hadamard: &[bf16],
    rows: &RopeRows,
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
        for (v, &s) in row.iter_mut().zip(idx_wq_b_scale) {
            *v = (*v * qr_scale[tok]) * s;
        }
        for head in row.chunks_exact_mut(id) {
            let n = head.len();
            rotate(&mut head[n - d.rope_dim..], rows.cos(tok), rows.sin(tok));
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

/// Index-cache rows scored per matmul: bounds the golden's int32 scratch at 1M
/// (262,144 rows per request).
const SCORE_CHUNK: usize = 4096;

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
            let visible: Vec<usize> = (0..seq)
                .map(|s| {
                    cache_len
                        .min((i64::from(positions[b * seq + s]) + 1).max(0) as usize / c.ratio)
                        .min(score_len)
                })
                .collect();
            let q = widen_i8(&query.q[b * seq * ih * id..(b + 1) * seq * ih * id]);
            let mut rows_out: Vec<Vec<f32>> = visible.iter().map(|&v| Vec::with_capacity(v)).collect();
            // Keys in chunks (a 1M request has 262,144), gathered through idx_block_table.
            let needed = visible.iter().copied().max().unwrap_or(0);
            for j0 in (0..needed).step_by(SCORE_CHUNK) {
                let n = SCORE_CHUNK.min(needed - j0);
                let mut keys = Vec::with_capacity(n * id);
                let mut key_scale = Vec::with_capacity(n);
                for j in j0..j0 + n {
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
                let raw = matmul_int(
                    Mat::rows(&q, seq * ih, id),
                    Mat::transposed(&keys, id, n),
                    Threads::One,
                );
                for (s, out) in rows_out.iter_mut().enumerate() {
                    let tok = b * seq + s;
                    for j in j0..visible[s].min(j0 + n) {
                        let head_sum = sum((0..ih).map(|h| {
                            let v = raw[(s * ih + h) * n + j - j0] * query.scale[tok * ih + h];
                            v.max(0.0) * weights[tok * ih + h]
                        }));
                        out.push(head_sum * key_scale[j - j0]);
                    }
                }
            }
            Ok(rows_out)
        })
        .collect::<Result<_, _>>()?;
    Ok(per_request.concat())
}

/// The inner compressor's tail (hca_csa.md §4.5, §5.3): norm + RoPE with the
/// row `of` the pooled row (the snapshot's step row at p0, the ring layer's at e − 3), bf16, times the Hadamard matrix, then quant-on-write of the
/// bf16-rounded row into the int8 index cache and its scale.
#[allow(clippy::too_many_arguments)]
pub fn write_index_keys(
    d: &Dims,
    c: &CsaDims,
    pooled: Vec<Pooled>,
    norm_w: &[bf16],
    hadamard: &[bf16],
    rope: &RopeRows,
    of: RopeRowOf,
    idx_slots: &[i64],
    keys: &mut [i8],
    scales: &mut [f32],
) -> Result<(), GoldenError> {
    let id = c.index_head_dim;
    let h = widen(hadamard);
    for mut p in pooled {
        let r = of.row(&p, d.seq);
        compressor::normalize_rotate(&mut p.values, norm_w, d.rms_eps, rope.cos(r), rope.sin(r));
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
