//! Stage sparse_attention over the SWA window (swa.md §3.5–3.6), building
//! blocks `dsv4/attention_*.h`. Attention is MQA over the latent (K = V = the cache row),
//! and a request's `decode_seq` tokens have windows that overlap almost entirely, so each
//! request's *union* of window rows is gathered once and all `decode_seq · heads` query
//! rows of the request run against it; each token then masks its own lanes.
//!
//! Four steps hand off through GM workspaces (the cube cannot reach UB on dav-c220):
//! 1. `attn_window_scores` (cube): `attn_scores` = q · unionᵀ per request.
//! 2. `attn_window_softmax` (vector): checks the metadata contract the union relies on,
//!    masks, softmax with bf16 probabilities `attn_probs` and the sink denominators
//!    `attn_denom`.
//! 3. `attn_window_values` (cube): `attn_o` = probs · union per request. The softmax
//!    scales the probabilities by 2^-`O_SHIFT` (exact) and each `attn_o` row leaves the cube
//!    with its columns before the rope dims in half ([`window::o_shift`], `OutRows` in
//!    `dsv4/head_tile_mmad.h`); a further source keeps `attn_o` so (its parts share the
//!    scale).
//! 4. `attn_finish` (vector): divides by the denominator, inverse RoPE on the rope dims,
//!    bf16, packs heads by output group into `o_packed_heads`.
//!
//! With `fuse` (the default) and head tiles of whole 16-head pairs, steps 1–3 are one mixed
//! launch `attn_window_…` (`dsv4/attention_window_fused.h`, [`window::fused`]): the same
//! items and tensors, the cube and the vector cores of a group on consecutive query tiles
//! at once (each vector core half of a tile's heads) instead of three launches in turn.
//! Where the window is the only source (SWA) the launch takes step 4 too
//! (`attn_window_finish_…`): each vector core finishes its heads of a tile while the cube
//! works on the next. With a further source, step 4 runs in that source's last launch where
//! fused: its combine (`attn_combine_finish_…`) or, where HCA's requests never split, the
//! compressed launch (`attn_compressed_finish_…`).
//!
//! HCA's compressed source adds a fifth, mixed launch between 3 and 4:
//! `attn_compressed` (dsv4/attention_compressed.h) continues each query row's online
//! softmax over the request's compressed rows in chunks of as many rows as L1 holds
//! ([`compressed_chunk_rows`]: each chunk round-trips the request's o and part
//! through GM) and updates `attn_o` and `attn_denom` in place; the window softmax then also
//! writes each head's max `attn_max`. Where a request's rows can span more than one chunk,
//! the launch takes every core group and, with fewer requests than groups, splits each
//! request's chunks over several (flash-decoding: a 1M request on a group per chunk); a
//! vector launch `attn_combine_cmp` (dsv4/attention_combine.h) then merges the splits' partials into `attn_o`
//! and `attn_denom` in a fixed order.
//! CSA's indexed source adds instead `attn_indexed` (dsv4/attention_indexed.h), mixed as
//! well: each token's own top-k compressed rows (the indexer's `topk_idx`) are gathered per
//! token, a tile of `kv_rows` slots at a time, and merged the same way; with
//! `rope.table: positions` the finish reads the token's RoPE row by position
//! (`attn_finish_…_positions`).
//!
//! By source: `window.rs` (the four window kernels and what the further sources build on),
//! `compressed.rs`, `indexed.rs`; this module reads the spec and orders the launches.

use abi::{DType, Dim};
use serde::Deserialize;

mod combine;
mod compressed;
mod indexed;
mod window;

pub use compressed::{MAX_CHUNK, compressed_chunk_rows};
pub use window::union_rows;

use super::kind::{Data, Kind, LayerParts, Tile, TileCheck, tiling};
use crate::diag::{Diagnostics, Loc};
use crate::kernel_plan::Builder;
use crate::plan::{AttentionPlan, CompressorPlan};
use crate::spec::range::positive;
use crate::spec::{Int, KvSource, PadPolicy, Sp};

pub struct SparseAttention;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Sliding window in raw tokens, counting the current one.
    pub window: Int,
    pub sources: Sp<Vec<Sp<KvSource>>>,
    pub tiling: Sp<Tiling>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
}

tiling! {
    /// `heads` query rows (heads of one token) × `kv_rows` KV rows per tile, `d` head-dim
    /// chunk.
    heads, kv_rows, d
}

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub window: usize,
    pub window_loc: Loc,
    pub sources: Vec<(KvSource, Loc)>,
    pub tiling: Tiling<Tile>,
}

impl Kind for SparseAttention {
    const NAME: &'static str = "sparse_attention";
    /// And what its sources need (`Kind::sources`).
    const NEEDS: &'static [Data] = &[Data::Q];
    const PRODUCES: &'static [Data] = &[Data::Attention];
    type Spec = Spec;
    type Params = Params;

    fn read(spec: &Spec, d: &mut Diagnostics) -> Params {
        let tiling = spec.tiling.value.read(d);
        let window = positive(d, &spec.window, "window");
        let sources: Vec<(KvSource, Loc)> = spec
            .sources
            .value
            .iter()
            .map(|s| (s.value, Loc::of(s)))
            .collect();
        if sources.is_empty() {
            d.error(
                Loc::of(&spec.sources),
                "sparse_attention has no KV sources",
                "sparse_attention lists at least one of window, compressed, indexed",
            );
        }
        Params {
            window,
            window_loc: Loc::of(&spec.window),
            sources,
            tiling,
        }
    }

    fn sources(a: &Params) -> Vec<(KvSource, Loc)> {
        a.sources.clone()
    }

    fn layer(a: &Params, parts: &mut LayerParts, d: &mut Diagnostics) {
        let (window, kv_rows) = (a.window, a.tiling.kv_rows.value);
        let pools = parts.pools;
        if window > pools.kv_pool_rows {
            d.error(
                    a.window_loc,
                    format!(
                        "window {window} is larger than the physical KV pool of {} rows ({} blocks x {})",
                        pools.kv_pool_rows, pools.kv_pool_blocks, pools.block_size
                    ),
                    "the window must fit in the physical KV pool of one rank",
                );
        }
        if !window.is_multiple_of(kv_rows) {
            d.error(
                a.tiling.kv_rows.loc,
                format!("sparse_attention tile kv_rows {kv_rows} does not divide window {window}"),
                "a tile must divide the dimension it tiles",
            );
        }
        let mut sources: Vec<KvSource> = a.sources.iter().map(|s| s.0).collect();
        sources.sort();
        let topk = match (sources.contains(&KvSource::Indexed), &parts.indexer) {
            (true, Some(i)) => i.topk,
            _ => 0,
        };
        let max_compressed_rows = match (sources.contains(&KvSource::Compressed), &parts.compressor)
        {
            (true, Some(c)) => c.max_rows,
            _ => 0,
        };
        let window_tiles = window / kv_rows;
        let topk_tiles = topk.div_ceil(kv_rows);
        parts.attention = Some(AttentionPlan {
            window,
            sources,
            kv_rows,
            window_tiles,
            topk,
            topk_tiles,
            padded_topk: (window_tiles + topk_tiles) * kv_rows,
            max_compressed_rows,
            compressed_tiles: max_compressed_rows.div_ceil(kv_rows),
        });
    }

    fn check(s: &Params, c: &mut TileCheck) {
        let (t, m) = (&s.tiling, &c.plan.model);
        let (heads, head_dim) = (m.heads, m.head_dim);
        // kv_rows against the window is checked with the window itself.
        c.divides(t.heads, "heads", heads, "heads");
        c.divides(t.d, "d", head_dim, "head_dim");
        c.cube(t.kv_rows, "kv_rows");
        c.cube(t.d, "d");
        // Per-head f32 values (row maxima, sums, denominators) in whole 32-byte blocks.
        c.multiple(
            t.heads,
            "heads",
            8,
            "attention head tiles are whole 32-byte blocks of f32",
        );
    }

    fn plan(s: &Params, b: &mut Builder) {
        let p = b.plan;
        let m = &p.model;
        let further = match (&p.attention.sources[..], &p.compressor) {
            ([KvSource::Window], _) => Further::None,
            ([KvSource::Window, KvSource::Compressed], Some(c)) => Further::Compressed(c),
            ([KvSource::Window, KvSource::Indexed], Some(c)) => Further::Indexed(c),
            _ => {
                b.missing("only the window source, alone or with one of compressed and indexed, has kernels");
                return;
            }
        };
        let t = &s.tiling;
        let tiles = [t.heads.value, t.kv_rows.value, t.d.value];
        let unmet = window::finish_unmet(m).or_else(|| match further {
            Further::None => None,
            Further::Compressed(c) => compressed::unmet(p, tiles, c),
            Further::Indexed(_) => indexed::unmet(p, tiles),
        });
        if let Some(why) = unmet {
            b.missing(why);
            return;
        }
        let with_further = !matches!(further, Further::None);
        let [head_tile, kv_tile, d_tile] = tiles;
        let (heads, hd, window) = (m.heads, m.head_dim, p.attention.window);
        let (seq, t_pad) = (p.shape.decode_seq, p.shape.t_pad);
        let union = window::union_rows(window, seq);
        b.workspace("q", window::per_token(&[heads, hd]), DType::Bf16);
        b.workspace(
            "attn_scores",
            window::per_token(&[heads, union]),
            DType::F32,
        );
        b.workspace(
            "attn_probs",
            window::per_token(&[heads, union]),
            DType::Bf16,
        );
        b.workspace("attn_denom", window::per_token(&[heads]), DType::F32);
        // o's scale: the window's and the further source's products share it
        let further_lanes = match further {
            Further::None => 0,
            Further::Compressed(_) => compressed::chunk(p, head_tile),
            Further::Indexed(_) => kv_tile,
        };
        let shift = window::o_shift(window, further_lanes);
        let half_cols = window::o_half_cols(m, shift);
        let (o_row, o) = window::o_row(m, half_cols);
        b.workspace("attn_o", window::per_token(&[heads, o_row]), o);
        b.workspace(
            "o_packed_heads",
            vec![Dim::Const(m.o_groups * t_pad), Dim::Const(m.o_group_in)],
            DType::Bf16,
        );

        let [scores, softmax, values, finish] = window::kernels(p, tiles, with_further, shift);

        // The window kernels and the finish split a request's (a token's) head tiles over the
        // blocks when requests (tokens) are fewer than cores (`UnitParts`).
        let tiles = p.shape.b * seq * heads / head_tile;
        let (aic, aiv) = (p.chip.aic_cores.min(tiles), p.chip.aiv_cores.min(tiles));
        // HCA/CSA name the window metadata window_swa_*; their lens agree with the -1 lanes
        // (hca_csa.md §7.1), which the softmax's union check relies on.
        let (indices, lens) = if p.tensor("swa_indices").is_some() {
            ("swa_indices", "swa_lens")
        } else {
            ("window_swa_indices", "window_swa_lens")
        };
        let metadata = ["kv_cache", indices, lens];
        let max: &[&str] = if with_further { &["attn_max"] } else { &[] };
        let finish_bind = window::finish_binds(p);
        let mut finished = false;
        match window::fused(p, head_tile, &scores, with_further, shift).filter(|_| p.fuse) {
            Some(fused) => {
                // Without a further source the launch may finish the heads too.
                finished = window::finishes(&fused);
                let then: &[&str] = if finished { &finish_bind } else { &[] };
                let bind = [
                    &["q"][..],
                    &metadata,
                    &["attn_scores", "attn_sink", "attn_probs", "attn_denom"],
                    max,
                    &["attn_o"],
                    then,
                ]
                .concat();
                b.launch(fused, aic as u32, &bind);
            }
            None => {
                b.launch(
                    scores,
                    aic as u32,
                    &[&["q"][..], &metadata, &["attn_scores"]].concat(),
                );
                let softmax_bind = [
                    &[
                        "attn_scores",
                        indices,
                        lens,
                        "attn_sink",
                        "attn_probs",
                        "attn_denom",
                    ][..],
                    max,
                ]
                .concat();
                b.launch(softmax, aiv as u32, &softmax_bind);
                b.launch(
                    values,
                    aic as u32,
                    &[&["attn_probs"][..], &metadata, &["attn_o"]].concat(),
                );
            }
        }
        // A further source's combine finishes the heads where there is one (fused).
        finished |= match further {
            Further::None => false,
            Further::Compressed(c) => {
                compressed::launch(b, c.ratio, [head_tile, kv_tile, d_tile], shift)
            }
            Further::Indexed(c) => indexed::launch(b, c.ratio, [head_tile, kv_tile, d_tile], shift),
        };
        if finished {
            return;
        }
        b.launch(
            finish,
            p.chip.aiv_cores.min(p.shape.local_t * heads / head_tile) as u32,
            &[&["attn_o", "attn_denom"][..], &finish_bind].concat(),
        );
    }
}

/// The source after the window, and the compressor whose rows it reads.
#[derive(Clone, Copy)]
enum Further<'p> {
    None,
    Compressed(&'p CompressorPlan),
    Indexed(&'p CompressorPlan),
}
