//! The HCA layer (hca_csa.md §3, §8.0): the ratio-128 compressor feeds
//! cmp_kv; attention reads the window plus every visible compressed row.

use super::{
    Rank, RankAttention, check_rows, front, output_path, put_stacked, table_rows, token_rope,
};
use crate::GoldenError;
use crate::arith::widen;
use crate::attention::{KvSources, sparse_attention};
use crate::cache_insert::insert_rows;
use crate::candidates;
use crate::compressor::{self, Geometry, StateTable, Weights};
use crate::dims::{Dims, HcaDims, RopeTable};
use crate::rope::RopeRows;
use crate::tensor::TensorMap;
use half::bf16;

/// The layer's outputs for checked inputs of `t` tokens per rank.
pub fn run(d: &Dims, h: &HcaDims, inputs: &TensorMap, t: usize) -> Result<TensorMap, GoldenError> {
    let hd = d.head_dim;
    let geometry = Geometry {
        ratio: h.ratio,
        head_dim: hd,
        overlap: false,
        state_block: h.state_block,
    };
    let mut attention = Vec::with_capacity(d.tp);
    let (mut states, mut kv_caches, mut cmp_kvs) = (Vec::new(), Vec::new(), Vec::new());
    for rank in 0..d.tp {
        let r = Rank::new(inputs, rank, d.tp);
        let rope = token_rope(d, &r)?;
        let f = front(d, &r, &rope)?;
        let positions = r.get::<i32>("position_ids")?;

        // Compressor: state writes and pooling, then norm + RoPE at the
        // window start (cmp_freqs row of the request), bf16 into cmp_kv.
        let mut state = r.get::<f32>("compress_state")?.to_vec();
        let table_shape = r.shape("compress_state_block_table")?;
        let pooled = compressor::update_and_pool(
            geometry,
            &widen(&f.x_normed),
            d.hidden,
            d.seq,
            Weights {
                wkv: r.get("cmp_wkv")?,
                wgate: r.get("cmp_wgate")?,
                ape: r.get("cmp_ape")?,
                norm_w: r.get("cmp_norm_w")?,
            },
            positions,
            r.get("state_slot_mapping")?,
            StateTable {
                entries: r.get("compress_state_block_table")?,
                width: table_shape[1],
            },
            &mut state,
            ("state_slot_mapping", "compress_state_block_table"),
        )?;
        // The compressed row rotates at its window start p0 − p0 mod ratio.
        let cmp_rope = match d.rope_table {
            RopeTable::PerToken => RopeRows {
                half: d.half_rope(),
                cos: r.get::<f32>("cmp_freqs_cos")?.to_vec(),
                sin: r.get::<f32>("cmp_freqs_sin")?.to_vec(),
            },
            RopeTable::Positions => {
                let starts: Vec<usize> = super::positions(d, &r)?
                    .iter()
                    .step_by(d.seq)
                    .map(|&p| p - p % h.ratio)
                    .collect();
                table_rows(d, &r, &starts)?
            }
        };
        let mut cmp_kv = r.get::<bf16>("cmp_kv")?.to_vec();
        let cmp_slots = r.get::<i64>("cmp_slot_mapping")?;
        compressor::insert_pooled(
            pooled,
            r.get("cmp_norm_w")?,
            d.rms_eps,
            &cmp_rope,
            compressor::RopeRowOf::Request,
            d.seq,
            &mut cmp_kv,
            cmp_slots,
        )?;

        // Raw write-back, then attention over window + compressed rows.
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
        let cmp_table_shape = r.shape("cmp_block_table")?;
        let tiles = candidates::hca(
            d,
            h,
            indices,
            positions,
            r.get("kv_seq_lens")?,
            r.get("cmp_block_table")?,
            cmp_table_shape[1],
            cmp_kv.len() / (hd * d.block_size),
        );
        let kv = KvSources {
            raw: &kv_cache,
            compressed: &cmp_kv,
            width: hd,
        };
        let o = sparse_attention(d, &f.qkv.q, &tiles, kv, r.get("attn_sink")?, &rope);
        attention.push(RankAttention {
            o,
            post: f.hc.post,
            comb: f.hc.comb,
        });
        states.push(state);
        kv_caches.push(kv_cache);
        cmp_kvs.push(cmp_kv);
    }
    let x_out = output_path(d, inputs, &attention, t)?;
    let shape = |name| Rank::new(inputs, 0, d.tp).shape(name);
    let mut out = TensorMap::new();
    put_stacked(&mut out, "x_out", d.tp, &[t, d.hc_mult, d.hidden], x_out);
    put_stacked(
        &mut out,
        "compress_state",
        d.tp,
        shape("compress_state")?,
        states,
    );
    put_stacked(&mut out, "kv_cache", d.tp, shape("kv_cache")?, kv_caches);
    put_stacked(&mut out, "cmp_kv", d.tp, shape("cmp_kv")?, cmp_kvs);
    Ok(out)
}
