//! Stage indexer (CSA's lightning indexer, hca_csa.md §5): index queries from the q
//! latent, its own ratio-4 index-key compressor into the int8 `idx_kv_cache`, and the
//! top-k compressed rows per token. Its parameters, tiles and buffers are read and
//! checked; it has no kernels yet, so a spec with it is a `draft`.

use serde::Deserialize;

use super::compressor::cache_compressor;
use super::kind::{Data, Kind, LayerParts, Tile, TileCheck, tiling};
use crate::diag::{Diagnostics, Loc};
use crate::kernels::Builder;
use crate::plan::IndexerPlan;
use crate::spec::range::{positive, positive_large};
use crate::spec::{Int, PadPolicy, Sp};

pub struct Indexer;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub heads: Int,
    pub head_dim: Int,
    pub topk: Int,
    /// State pages of the inner (index-key) compressor, which mirrors the main one.
    pub state_block_size: Int,
    pub state_pool_blocks: Int,
    /// Physical pages of the int8 index-key cache.
    pub key_pool_blocks: Int,
    pub tiling: Sp<Tiling>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
}

tiling! {
    /// Projection tile `m`×`n`×`k`, `tokens` per vector pass, `key_rows` index keys per
    /// scoring pass.
    m, n, k, tokens, key_rows
}

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub heads: usize,
    pub head_dim: usize,
    pub head_dim_loc: Loc,
    pub topk: usize,
    pub topk_loc: Loc,
    pub state_block_size: usize,
    pub state_pool_blocks: usize,
    pub key_pool_blocks: usize,
    pub tiling: Tiling<Tile>,
}

impl Kind for Indexer {
    const NAME: &'static str = "indexer";
    const NEEDS: &'static [Data] = &[Data::XNormed, Data::Q, Data::Compressed];
    const PRODUCES: &'static [Data] = &[Data::TopK];
    type Spec = Spec;
    type Params = Params;

    fn read(spec: &Spec, d: &mut Diagnostics) -> Params {
        Params {
            tiling: spec.tiling.value.read(d),
            head_dim: positive(d, &spec.head_dim, "indexer head_dim"),
            head_dim_loc: Loc::of(&spec.head_dim),
            topk: positive(d, &spec.topk, "indexer topk"),
            topk_loc: Loc::of(&spec.topk),
            heads: positive(d, &spec.heads, "indexer heads"),
            state_block_size: positive(d, &spec.state_block_size, "state_block_size"),
            state_pool_blocks: positive_large(d, &spec.state_pool_blocks, "state_pool_blocks"),
            key_pool_blocks: positive_large(d, &spec.key_pool_blocks, "key_pool_blocks"),
        }
    }

    /// The index-key compressor mirrors the main one (ratio, overlap), `head_dim` wide.
    fn layer(raw: &Params, parts: &mut LayerParts, d: &mut Diagnostics) {
        let Some(main) = parts.compressor.clone() else {
            return; // the graph check reports an indexer without a compressor
        };
        let (head_dim, topk) = (raw.head_dim, raw.topk);
        if !head_dim.is_power_of_two() {
            d.error(
                raw.head_dim_loc,
                format!("indexer head_dim {head_dim} is not a power of two"),
                "the indexer's Hadamard transform needs a power-of-two head_dim",
            );
        }
        if head_dim < parts.model.rope_dim {
            d.error(
                raw.head_dim_loc,
                format!(
                    "indexer head_dim {head_dim} is smaller than rope_dim {}",
                    parts.model.rope_dim
                ),
                "index heads end with the model's rope_dim rotary dims",
            );
        }
        let inner = cache_compressor(
            main.ratio,
            main.overlap,
            head_dim,
            (raw.state_block_size, raw.state_pool_blocks),
            raw.key_pool_blocks,
            parts.pools,
        );
        let candidates = main.max_rows.min(inner.max_rows);
        if topk > candidates {
            d.error(
                raw.topk_loc,
                format!(
                    "indexer topk {topk} is larger than the {candidates} compressed rows a request can have"
                ),
                "topk <= min(max_positions / ratio, rows of the cmp_kv and index-key pools)",
            );
        }
        parts.indexer = Some(IndexerPlan {
            heads: raw.heads,
            head_dim,
            rope_dim: parts.model.rope_dim,
            nope_dim: head_dim.saturating_sub(parts.model.rope_dim),
            q_width: raw.heads * head_dim,
            topk,
            weights_scale: ((head_dim as f64).powf(-0.5) * (raw.heads as f64).powf(-0.5)) as f32,
            candidates,
            inner,
        });
    }

    fn check(s: &Params, c: &mut TileCheck) {
        let t = &s.tiling;
        c.matmul(t.m, t.n, t.k, t.tokens);
        if let Some(i) = &c.plan.indexer {
            let (q_width, heads, keys) = (i.q_width, i.heads, i.inner.out_width);
            let (head_dim, candidates) = (i.head_dim, i.candidates);
            let q_lora = c.plan.model.q_lora_rank;
            c.fits(t.n, "n", q_width, "indexer heads x head_dim");
            c.fits(t.n, "n", heads, "indexer heads");
            c.fits(t.n, "n", keys, "the index-key projected width");
            c.fits(t.k, "k", q_lora, "q_lora_rank");
            c.fits(t.k, "k", head_dim, "indexer head_dim");
            c.divides(t.key_rows, "key_rows", candidates, "the candidate count");
        }
        c.fits(t.k, "k", c.plan.model.hidden, "hidden");
    }

    fn plan(_: &Params, b: &mut Builder) {
        b.missing("the lightning indexer has no kernels yet");
    }
}
