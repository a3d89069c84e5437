//! The CSA layer (hca_csa.md §3, §8.0): the overlapping ratio-4 main
//! compressor feeds cmp_kv; the lightning indexer (its own inner compressor
//! writing the int8 index cache) selects the top-k compressed rows that
//! attention reads after the window.

use super::{
    Rank, RankAttention, check_rows, front, output_path, positions, put_stacked, table_rows,
    token_rope,
};
use crate::GoldenError;
use crate::arith::widen;
use crate::attention::{KvSources, sparse_attention};
use crate::cache_insert::insert_rows;
use crate::candidates;
use crate::compressor::{self, Geometry, RopeRowOf, StateTable, Weights};
use crate::dims::{CsaDims, CsaState, Dims};
use crate::indexer::{self, IndexCache, IndexQuery};
use crate::rope::RopeRows;
use crate::tensor::TensorMap;
use half::bf16;

/// The layer's outputs for checked inputs of `t` tokens per rank, and its trace: the golden's index queries `idx_q` `[t, heads ·
/// head_dim]` i8, `idx_q_scale` and head weights `idx_weights` `[t, heads]`, and its own
/// top-k lists `topk_idx` `[t, index_topk]`, stacked like the outputs. With `given`
/// (`topk_idx` stacked like the inputs) attention reads those rows instead of the
/// golden's own choice.
pub fn run(
    d: &Dims,
    c: &CsaDims,
    inputs: &TensorMap,
    t: usize,
    given: Option<&[i32]>,
) -> Result<(TensorMap, TensorMap), GoldenError> {
    if let Some(g) = given
        && g.len() != d.tp * t * c.index_topk
    {
        return Err(GoldenError::Contract(format!(
            "the given topk_idx holds {} indices, not tp x t x index_topk = {}",
            g.len(),
            d.tp * t * c.index_topk
        )));
    }
    let mut attention = Vec::with_capacity(d.tp);
    let mut out_pools = RankPools::default();
    let (mut q, mut q_scale, mut weights, mut own) = (vec![], vec![], vec![], vec![]);
    for rank in 0..d.tp {
        let r = Rank::new(inputs, rank, d.tp);
        let rank_given = given.map(|g| &g[rank * t * c.index_topk..(rank + 1) * t * c.index_topk]);
        let (a, p, ch) = rank_front(d, c, &r, rank_given)?;
        attention.push(a);
        out_pools.push(p);
        q.push(ch.query.q);
        q_scale.push(ch.query.scale);
        weights.push(ch.weights);
        own.push(ch.own);
    }
    let (ih, width) = (c.index_heads, c.index_heads * c.index_head_dim);
    let mut trace = TensorMap::new();
    put_stacked(&mut trace, "idx_q", d.tp, &[t, width], q);
    put_stacked(&mut trace, "idx_q_scale", d.tp, &[t, ih], q_scale);
    put_stacked(&mut trace, "idx_weights", d.tp, &[t, ih], weights);
    put_stacked(&mut trace, "topk_idx", d.tp, &[t, c.index_topk], own);
    let x_out = output_path(d, inputs, &attention, t)?;
    let shape = |name| Rank::new(inputs, 0, d.tp).shape(name);
    let mut out = TensorMap::new();
    put_stacked(&mut out, "x_out", d.tp, &[t, d.hc_mult, d.hidden], x_out);
    put_stacked(
        &mut out,
        "compress_state",
        d.tp,
        shape("compress_state")?,
        out_pools.state,
    );
    put_stacked(
        &mut out,
        "inner_compress_state",
        d.tp,
        shape("inner_compress_state")?,
        out_pools.inner_state,
    );
    put_stacked(
        &mut out,
        "kv_cache",
        d.tp,
        shape("kv_cache")?,
        out_pools.kv_cache,
    );
    put_stacked(&mut out, "cmp_kv", d.tp, shape("cmp_kv")?, out_pools.cmp_kv);
    put_stacked(
        &mut out,
        "idx_kv_cache",
        d.tp,
        shape("idx_kv_cache")?,
        out_pools.idx_kv_cache,
    );
    put_stacked(
        &mut out,
        "idx_kv_scale",
        d.tp,
        shape("idx_kv_scale")?,
        out_pools.idx_kv_scale,
    );
    Ok((out, trace))
}

/// One rank's indexer: its queries and head weights, and its own top-k lists.
struct Choice {
    query: IndexQuery,
    weights: Vec<f32>,
    own: Vec<i32>,
}

/// The index scores `[t, visible rows]` per token (all ranks in order) of the device's
/// index queries `idx_q`, `idx_q_scale` and head weights `idx_weights` (in `queries`)
/// against its index cache `idx_kv_cache`, `idx_kv_scale` (in `pools`), each stacked
/// like the outputs: what the device's top-k must select from exactly.
pub fn device_scores(
    d: &Dims,
    c: &CsaDims,
    inputs: &TensorMap,
    queries: &TensorMap,
    pools: &TensorMap,
) -> Result<Vec<Vec<f32>>, GoldenError> {
    let mut rows = Vec::new();
    for rank in 0..d.tp {
        let (r, q, p) = (
            Rank::new(inputs, rank, d.tp),
            Rank::new(queries, rank, d.tp),
            Rank::new(pools, rank, d.tp),
        );
        let query = IndexQuery {
            q: q.get::<i8>("idx_q")?.to_vec(),
            scale: q.get::<f32>("idx_q_scale")?.to_vec(),
        };
        rows.extend(indexer::scores(
            d,
            c,
            &query,
            q.get("idx_weights")?,
            r.get("position_ids")?,
            r.get("kv_seq_lens")?,
            IndexCache {
                keys: p.get("idx_kv_cache")?,
                scales: p.get("idx_kv_scale")?,
                table: r.get("idx_block_table")?,
                width: r.shape("idx_block_table")?[1],
            },
        )?);
    }
    Ok(rows)
}

/// One rank's updated pools.
struct Pools {
    state: Vec<f32>,
    inner_state: Vec<f32>,
    kv_cache: Vec<bf16>,
    cmp_kv: Vec<bf16>,
    idx_kv_cache: Vec<i8>,
    idx_kv_scale: Vec<f32>,
}

/// Every rank's pools, per pool.
#[derive(Default)]
struct RankPools {
    state: Vec<Vec<f32>>,
    inner_state: Vec<Vec<f32>>,
    kv_cache: Vec<Vec<bf16>>,
    cmp_kv: Vec<Vec<bf16>>,
    idx_kv_cache: Vec<Vec<i8>>,
    idx_kv_scale: Vec<Vec<f32>>,
}

impl RankPools {
    fn push(&mut self, p: Pools) {
        self.state.push(p.state);
        self.inner_state.push(p.inner_state);
        self.kv_cache.push(p.kv_cache);
        self.cmp_kv.push(p.cmp_kv);
        self.idx_kv_cache.push(p.idx_kv_cache);
        self.idx_kv_scale.push(p.idx_kv_scale);
    }
}

fn rank_front(
    d: &Dims,
    c: &CsaDims,
    r: &Rank,
    given: Option<&[i32]>,
) -> Result<(RankAttention, Pools, Choice), GoldenError> {
    let hd = d.head_dim;
    let position_ids = r.get::<i32>("position_ids")?;
    let rows = rope_rows(d, c, r)?;
    let rope = rows.token;
    let compress = match c.state {
        CsaState::Paged => compressor::update_and_pool,
        CsaState::Ring => compressor::pool_every_boundary,
    };

    let f = front(d, r, &rope)?;
    let x = widen(&f.x_normed);
    let state_width = |name| -> Result<usize, GoldenError> { Ok(r.shape(name)?[1]) };

    // Main compressor → cmp_kv.
    let mut state = r.get::<f32>("compress_state")?.to_vec();
    let pooled = compress(
        Geometry {
            ratio: c.ratio,
            head_dim: hd,
            overlap: true,
            state_block: c.state_block,
        },
        &x,
        d.hidden,
        d.seq,
        Weights {
            wkv: r.get("cmp_wkv")?,
            wgate: r.get("cmp_wgate")?,
            ape: r.get("cmp_ape")?,
            norm_w: r.get("cmp_norm_w")?,
        },
        position_ids,
        r.get("state_slot_mapping")?,
        StateTable {
            entries: r.get("compress_state_block_table")?,
            width: state_width("compress_state_block_table")?,
        },
        &mut state,
        ("state_slot_mapping", "compress_state_block_table"),
    )?;
    let mut cmp_kv = r.get::<bf16>("cmp_kv")?.to_vec();
    let cmp_slots = r.get::<i64>("cmp_slot_mapping")?;
    compressor::insert_pooled(
        pooled,
        r.get("cmp_norm_w")?,
        d.rms_eps,
        &rows.compressed,
        rows.of,
        d.seq,
        &mut cmp_kv,
        cmp_slots,
    )?;

    // Indexer: queries, the inner compressor writing the index cache, scores, top-k.
    let hadamard = r.get::<bf16>("hadamard_idx")?;
    let query = indexer::index_query(
        d,
        c,
        &f.qkv.qr,
        &f.qkv.qr_scale,
        r.get("idx_wq_b")?,
        r.get("idx_wq_b_scale")?,
        hadamard,
        &rows.query,
    );
    let mut inner_state = r.get::<f32>("inner_compress_state")?.to_vec();
    let inner_pooled = compress(
        Geometry {
            ratio: c.ratio,
            head_dim: c.index_head_dim,
            overlap: true,
            state_block: c.state_block,
        },
        &x,
        d.hidden,
        d.seq,
        Weights {
            wkv: r.get("inner_wkv")?,
            wgate: r.get("inner_wgate")?,
            ape: r.get("inner_ape")?,
            norm_w: r.get("inner_norm_w")?,
        },
        position_ids,
        r.get("inner_state_slot_mapping")?,
        StateTable {
            entries: r.get("inner_compress_state_block_table")?,
            width: state_width("inner_compress_state_block_table")?,
        },
        &mut inner_state,
        (
            "inner_state_slot_mapping",
            "inner_compress_state_block_table",
        ),
    )?;
    let mut idx_kv_cache = r.get::<i8>("idx_kv_cache")?.to_vec();
    let mut idx_kv_scale = r.get::<f32>("idx_kv_scale")?.to_vec();
    indexer::write_index_keys(
        d,
        c,
        inner_pooled,
        r.get("inner_norm_w")?,
        hadamard,
        &rows.index_key,
        rows.of,
        r.get("idx_slot_mapping")?,
        &mut idx_kv_cache,
        &mut idx_kv_scale,
    )?;
    let weights = indexer::head_weights(&x, d.hidden, r.get("weights_proj")?, c.weights_scale());
    let score_rows = indexer::scores(
        d,
        c,
        &query,
        &weights,
        position_ids,
        r.get("kv_seq_lens")?,
        IndexCache {
            keys: &idx_kv_cache,
            scales: &idx_kv_scale,
            table: r.get("idx_block_table")?,
            width: r.shape("idx_block_table")?[1],
        },
    )?;
    let own = indexer::top_k_rows(c, &score_rows);
    let topk = given.unwrap_or(&own);

    // Raw write-back, then attention over the window and the selected rows.
    let mut kv_cache = r.get::<bf16>("kv_cache")?.to_vec();
    insert_rows(
        &mut kv_cache,
        hd,
        &f.qkv.kv,
        r.get("ori_slot_mapping")?,
        "ori_slot_mapping",
    )?;
    let indices = r.get::<i32>("window_swa_indices")?;
    check_rows(indices, kv_cache.len() / hd, "window_swa_indices")?;
    let tiles = candidates::csa(
        d,
        c,
        indices,
        position_ids,
        topk,
        r.get("cmp_block_table")?,
        r.shape("cmp_block_table")?[1],
        cmp_kv.len() / (hd * d.block_size),
    )?;
    let kv = KvSources {
        raw: &kv_cache,
        compressed: &cmp_kv,
        width: hd,
    };
    let o = sparse_attention(d, &f.qkv.q, &tiles, kv, r.get("attn_sink")?, &rope);
    Ok((
        RankAttention {
            o,
            post: f.hc.post,
            comb: f.hc.comb,
        },
        Pools {
            state,
            inner_state,
            kv_cache,
            cmp_kv,
            idx_kv_cache,
            idx_kv_scale,
        },
        Choice {
            query,
            weights,
            own,
        },
    ))
}

/// A rank's RoPE rows by consumer (csa_1m.md §1.4).
struct CsaRope {
    /// Row t at p_t: q, kv and the attention output.
    token: RopeRows,
    /// The index queries' rows, one per token.
    query: RopeRows,
    /// The main compressor's rows, `of` a pooled row.
    compressed: RopeRows,
    /// The index-key compressor's rows, `of` a pooled row.
    index_key: RopeRows,
    of: RopeRowOf,
}

/// The snapshot gathers from the whole table: the step row at p0 for the index queries and
/// keys, the window start p0 − p0 mod ratio for the main compressor (hca_csa.md §1.4). The
/// ring layer passes token rows at p_t (the index queries too) and `cmp_freqs_*` rows at
/// p_t − 3 for both compressors.
fn rope_rows(d: &Dims, c: &CsaDims, r: &Rank) -> Result<CsaRope, GoldenError> {
    Ok(match c.state {
        CsaState::Paged => {
            let positions = positions(d, r)?;
            let firsts: Vec<usize> = positions.iter().step_by(d.seq).copied().collect();
            let token_firsts: Vec<usize> = positions
                .iter()
                .enumerate()
                .map(|(t, _)| firsts[t / d.seq])
                .collect();
            let window_starts: Vec<usize> = firsts.iter().map(|&p| p - p % c.ratio).collect();
            CsaRope {
                token: table_rows(d, r, &positions)?,
                query: table_rows(d, r, &token_firsts)?,
                compressed: table_rows(d, r, &window_starts)?,
                index_key: table_rows(d, r, &firsts)?,
                of: RopeRowOf::Request,
            }
        }
        CsaState::Ring => {
            let token = token_rope(d, r)?;
            let compressed = RopeRows::from_tables(
                r.get("cmp_freqs_cos")?,
                r.get("cmp_freqs_sin")?,
                d.rope_dim,
                d.half_rope(),
            );
            CsaRope {
                query: token.clone(),
                index_key: compressed.clone(),
                token,
                compressed,
                of: RopeRowOf::Token,
            }
        }
    })
}
