//! The SWA layer (swa.md §3): window-only attention over the raw KV pool.

use super::{Rank, RankAttention, check_rows, front, output_path, put_stacked, token_rope};
use crate::GoldenError;
use crate::attention::{KvSources, sparse_attention};
use crate::cache_insert::insert_rows;
use crate::candidates;
use crate::dims::Dims;
use crate::mask::sparse_bias;
use crate::tensor::TensorMap;
use half::bf16;

/// The layer's outputs for checked inputs of `t` tokens per rank.
pub fn run(d: &Dims, inputs: &TensorMap, t: usize) -> Result<TensorMap, GoldenError> {
    let hd = d.head_dim;
    let mut attention = Vec::with_capacity(d.tp);
    let mut pools = Vec::with_capacity(d.tp);
    for rank in 0..d.tp {
        let r = Rank::new(inputs, rank, d.tp);
        let rope = token_rope(d, &r)?;
        let f = front(d, &r, &rope)?;
        // All cache writes land before the gather: the window lists the
        // current and earlier draft tokens through the pool itself.
        let mut kv_cache = r.get::<bf16>("kv_cache")?.to_vec();
        insert_rows(
            &mut kv_cache,
            hd,
            &f.qkv.kv,
            r.get("swa_slot_mapping")?,
            "swa_slot_mapping",
        )?;
        let indices = r.get::<i32>("swa_indices")?;
        check_rows(indices, kv_cache.len() / hd, "swa_indices")?;
        let bias = sparse_bias(r.get("swa_lens")?, d.window);
        let tiles = candidates::swa(indices, &bias, d.window);
        let kv = KvSources {
            raw: &kv_cache,
            compressed: &[],
            width: hd,
        };
        let o = sparse_attention(d, &f.qkv.q, &tiles, kv, r.get("attn_sink")?, &rope);
        attention.push(RankAttention {
            o,
            post: f.hc.post,
            comb: f.hc.comb,
        });
        pools.push(kv_cache);
    }
    let x_out = output_path(d, inputs, &attention, t)?;
    let mut out = TensorMap::new();
    put_stacked(&mut out, "x_out", d.tp, &[t, d.hc_mult, d.hidden], x_out);
    put_stacked(
        &mut out,
        "kv_cache",
        d.tp,
        Rank::new(inputs, 0, d.tp).shape("kv_cache")?,
        pools,
    );
    Ok(out)
}
