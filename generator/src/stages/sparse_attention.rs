//! Stage sparse_attention over the SWA window (swa.md §3.5–3.6), building
//! blocks `dsv4/attention_*.h`. Attention is MQA over the latent (K = V = the cache row),
//! and a request's `decode_seq` tokens have windows that overlap almost entirely, so each
//! request's *union* of window rows is gathered once and all `decode_seq · heads` query
//! rows of the request run against it; each token then masks its own lanes.
//!
//! Four launches hand off through GM workspaces (the cube cannot reach UB on dav-c220, so
//! a fused kernel would round-trip the same data through GM and count it against itself):
//! 1. `attn_window_scores` (cube): `attn_scores` = q · unionᵀ per request.
//! 2. `attn_window_softmax` (vector): checks the metadata contract the union relies on,
//!    masks, softmax with bf16 probabilities `attn_probs` and the sink denominators
//!    `attn_denom`.
//! 3. `attn_window_values` (cube): `attn_o` = probs · union per request.
//! 4. `attn_finish` (vector): divides by the denominator, inverse RoPE on the rope dims,
//!    bf16, packs heads by output group into `o_packed_heads`.
//!
//! HCA's compressed source adds a fifth, mixed launch between 3 and 4:
//! `attn_compressed` (dsv4/attention_compressed.h) continues each query row's online
//! softmax over the request's compressed rows in chunks of as many rows as L1 holds
//! ([`compressed_chunk_rows`]: each chunk round-trips the request's o and part
//! through GM) and updates `attn_o` and `attn_denom` in place; the window softmax then also
//! writes each head's max `attn_max`.
//! CSA's indexed source adds instead `attn_indexed` (dsv4/attention_indexed.h), mixed as
//! well: each token's own top-k compressed rows (the indexer's `topk_idx`) are gathered per
//! token, a tile of `kv_rows` slots at a time, and merged the same way; with
//! `rope.table: positions` the finish reads the token's RoPE row by position
//! (`attn_finish_…_positions`).

use abi::{DType, Dim};
use serde::Deserialize;

use super::kind::{Data, Kind, LayerParts, Tile, TileCheck, tiling};
use crate::budget::{Buffer, row};
use crate::chip::{Chip, Mem};
use crate::diag::{Diagnostics, Loc};
use crate::kernel_plan::{Builder, Cores, Kernel, Value, unmet};
use crate::plan::{AttentionPlan, CompressorPlan, ModelDims, Plan};
use crate::spec::range::positive;
use crate::spec::{Int, KvSource, PadPolicy, RopeTable, Sp};

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
        let unmet = finish_unmet(m).or_else(|| match further {
            Further::None => None,
            Further::Compressed(c) => compressed_unmet(p, &s.tiling, c),
            Further::Indexed(_) => indexed_unmet(p, &s.tiling),
        });
        if let Some(why) = unmet {
            b.missing(why);
            return;
        }
        let with_further = !matches!(further, Further::None);
        let t = &s.tiling;
        let (head_tile, kv_tile, d_tile) = (t.heads.value, t.kv_rows.value, t.d.value);
        let (heads, hd, window) = (m.heads, m.head_dim, p.attention.window);
        let (seq, t_pad) = (p.shape.decode_seq, p.shape.t_pad);
        let union = union_rows(window, seq);
        b.workspace("q", per_token(&[heads, hd]), DType::Bf16);
        b.workspace("attn_scores", per_token(&[heads, union]), DType::F32);
        b.workspace("attn_probs", per_token(&[heads, union]), DType::Bf16);
        b.workspace("attn_denom", per_token(&[heads]), DType::F32);
        b.workspace("attn_o", per_token(&[heads, hd]), DType::F32);
        b.workspace(
            "o_packed_heads",
            vec![Dim::Const(m.o_groups * t_pad), Dim::Const(m.o_group_in)],
            DType::Bf16,
        );

        let u32 = |v: usize| Value::U32(v as u32);
        let cube_tag = format!(
            "h{heads}_d{hd}_w{window}_s{seq}_bs{}_ht{head_tile}_kv{kv_tile}_dk{d_tile}",
            p.pools.block_size
        );
        let cube_params = vec![
            ("HEADS", u32(heads)),
            ("HEAD_DIM", u32(hd)),
            ("WINDOW", u32(window)),
            ("SEQ", u32(seq)),
            ("BLOCK_SIZE", u32(p.pools.block_size)),
            ("UNION_ROWS", u32(union)),
            ("HEAD_TILE", u32(head_tile)),
            ("KV_TILE", u32(kv_tile)),
            ("D_TILE", u32(d_tile)),
        ];
        let cube_args = vec!["kv_cache", "swa_indices", "swa_lens"];
        let cube_buffers = cube_buffers(("union", union), hd, head_tile, kv_tile, d_tile);
        let scores = Kernel {
            name: format!("attn_window_scores_{cube_tag}"),
            doc: "window attention scores q · unionᵀ per request (f32, unscaled)".into(),
            block: "attention_cube.h",
            class: "AttentionScores",
            cores: Cores::Aic,
            params: cube_params.clone(),
            args: [&["q"][..], &cube_args, &["scores"]].concat(),
            buffers: cube_buffers.clone(),
        };
        // With a further source the softmax also hands each head's max to it.
        let max_tag = if with_further { "_max" } else { "" };
        let mut softmax_args = vec![
            "scores",
            "swa_indices",
            "swa_lens",
            "attn_sink",
            "probs",
            "denom",
        ];
        if with_further {
            softmax_args.push("row_max");
        }
        let softmax = Kernel {
            name: format!(
                "attn_window_softmax{max_tag}_h{heads}_d{hd}_w{window}_s{seq}_ht{head_tile}"
            ),
            doc: "window attention softmax: lane mask, bf16 probabilities, sink denominators"
                .into(),
            block: "attention_softmax.h",
            class: "AttentionSoftmax",
            cores: Cores::Aiv,
            params: vec![
                ("HEADS", u32(heads)),
                ("WINDOW", u32(window)),
                ("SEQ", u32(seq)),
                ("UNION_ROWS", u32(union)),
                ("HEAD_TILE", u32(head_tile)),
                ("SCALE", Value::F32(m.softmax_scale)),
            ],
            args: softmax_args,
            buffers: softmax_buffers(heads, window, union, head_tile),
        };
        let values = Kernel {
            name: format!("attn_window_values_{cube_tag}"),
            doc: "window attention values probs · union per request (f32)".into(),
            block: "attention_cube.h",
            class: "AttentionValues",
            cores: Cores::Aic,
            params: cube_params,
            args: [&["probs"][..], &cube_args, &["o"]].concat(),
            buffers: cube_buffers,
        };
        let mut finish = Kernel {
            name: format!(
                "attn_finish_h{heads}_d{hd}_r{}_hpg{}_tpad{t_pad}_ht{head_tile}",
                m.rope_dim, m.heads_per_group
            ),
            doc: "attention output: o / denom, inverse RoPE on the rope dims, bf16, heads packed by group"
                .into(),
            block: "attention_finish.h",
            class: "AttentionFinish",
            cores: Cores::Aiv,
            params: vec![
                ("HEADS", u32(heads)),
                ("HEAD_DIM", u32(hd)),
                ("ROPE_DIM", u32(m.rope_dim)),
                ("HEADS_PER_GROUP", u32(m.heads_per_group)),
                ("T_PAD", u32(t_pad)),
                ("HEAD_TILE", u32(head_tile)),
            ],
            args: vec!["o", "denom", "freqs_cos", "freqs_sin", "packed"],
            buffers: finish_buffers(heads, hd, m.rope_dim, head_tile),
        };

        let requests = p.shape.b;
        let (aic, aiv) = (
            p.chip.aic_cores.min(requests),
            p.chip.aiv_cores.min(requests),
        );
        // HCA/CSA name the window metadata window_swa_*; their lens agree with the -1 lanes
        // (hca_csa.md §7.1), which the softmax's union check relies on.
        let (indices, lens) = if p.tensor("swa_indices").is_some() {
            ("swa_indices", "swa_lens")
        } else {
            ("window_swa_indices", "window_swa_lens")
        };
        let metadata = ["kv_cache", indices, lens];
        b.launch(
            scores,
            aic as u32,
            &[&["q"][..], &metadata, &["attn_scores"]].concat(),
        );
        let mut softmax_bind = vec![
            "attn_scores",
            indices,
            lens,
            "attn_sink",
            "attn_probs",
            "attn_denom",
        ];
        if with_further {
            softmax_bind.push("attn_max");
        }
        b.launch(softmax, aiv as u32, &softmax_bind);
        b.launch(
            values,
            aic as u32,
            &[&["attn_probs"][..], &metadata, &["attn_o"]].concat(),
        );
        match further {
            Further::None => {}
            Further::Compressed(c) => compressed_launch(b, c.ratio, head_tile, kv_tile, d_tile),
            Further::Indexed(c) => indexed_launch(b, c.ratio, head_tile, kv_tile, d_tile),
        }
        let mut finish_bind = vec!["attn_o", "attn_denom", "freqs_cos", "freqs_sin"];
        if p.rope.table == RopeTable::Positions {
            finish_at_positions(&mut finish);
            finish_bind.push("position_ids");
        }
        finish_bind.push("o_packed_heads");
        b.launch(
            finish,
            p.chip.aiv_cores.min(p.shape.local_t) as u32,
            &finish_bind,
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

/// The finish kernel's twin for `rope.table: positions` (CSA): token t de-rotates with row
/// `position_ids[t]` of the full `[max_positions, rope_dim]` tables (`dsv4/rope.h` RopeRow),
/// taken after the tables. Its on-chip buffers are the same (the position is a scalar GM read).
fn finish_at_positions(k: &mut Kernel) {
    k.name.push_str("_positions");
    k.doc
        .push_str(", RoPE rows gathered from the position table by position_ids");
    k.params.push(("POSITIONS", Value::Bool(true)));
    k.args.insert(4, "positions");
}

/// The indexed source (hca_csa.md §6.3): one mixed launch continuing every head's online
/// softmax over the compressed rows its token's top-k list selects, a tile of `kv_tile`
/// slots at a time (`dsv4/attention_indexed.h`), between the window values and the finish.
fn indexed_launch(b: &mut Builder, ratio: usize, head_tile: usize, kv_tile: usize, d_tile: usize) {
    let p = b.plan;
    let m = &p.model;
    let (heads, hd, seq, topk) = (m.heads, m.head_dim, p.shape.decode_seq, p.attention.topk);
    b.workspace("topk_idx", per_token(&[topk]), DType::I32);
    b.workspace("attn_max", per_token(&[heads]), DType::F32);
    b.workspace("attn_idx_scores", per_token(&[heads, kv_tile]), DType::F32);
    b.workspace("attn_idx_probs", per_token(&[heads, kv_tile]), DType::Bf16);
    b.workspace("attn_idx_part", per_token(&[heads, hd]), DType::F32);
    let kernel = Kernel {
        name: format!(
            "attn_indexed_h{heads}_d{hd}_s{seq}_bs{}_r{ratio}_k{topk}_ht{head_tile}_kv{kv_tile}_dk{d_tile}",
            p.pools.block_size
        ),
        doc: "indexed-row attention: online-softmax merge of each token's top-k compressed rows \
              into the window's o and denominators"
            .into(),
        block: "attention_indexed.h",
        class: "AttentionIndexed",
        cores: Cores::Mix,
        params: further_params(p, ratio, ("TOPK", topk), [head_tile, kv_tile, d_tile], &[]),
        args: vec![
            "q",
            "cmp_kv",
            "cmp_table",
            "positions",
            "topk_idx",
            "scores",
            "probs",
            "part",
            "o",
            "denom",
            "row_max",
        ],
        buffers: [
            indexed_cube_buffers(heads, hd, head_tile, kv_tile, d_tile),
            indexed_vector_buffers(heads, hd, topk, kv_tile),
        ]
        .concat(),
    };
    let blocks = p.chip.aic_cores.min(p.shape.local_t) as u32;
    b.launch(
        kernel,
        blocks,
        &[
            "q",
            "cmp_kv",
            "cmp_block_table",
            "position_ids",
            "topk_idx",
            "attn_idx_scores",
            "attn_idx_probs",
            "attn_idx_part",
            "attn_o",
            "attn_denom",
            "attn_max",
        ],
    );
}

/// Why `dsv4/attention_indexed.h` cannot run this plan, if it cannot: heads in groups of 8
/// (whole blocks of per-head f32), slots in whole fractals, the ABI's compressed-row inputs.
fn indexed_unmet(p: &Plan, t: &Tiling<Tile>) -> Option<String> {
    let (topk, d_tile) = (p.attention.topk, t.d.value);
    unmet([
        (
            p.model.heads.is_multiple_of(8),
            format!("heads {} is not a multiple of 8", p.model.heads),
        ),
        (
            topk > 0 && topk.is_multiple_of(16),
            format!("top-k {topk} is not a positive multiple of 16"),
        ),
        (
            p.model.head_dim.is_multiple_of(d_tile),
            format!(
                "tile d {d_tile} does not divide head_dim {}",
                p.model.head_dim
            ),
        ),
        (
            ["cmp_kv", "cmp_block_table", "position_ids"]
                .iter()
                .all(|n| p.tensor(n).is_some()),
            "the ABI lacks cmp_kv, cmp_block_table or position_ids".into(),
        ),
    ])
}

/// `attention_indexed.h`'s L1 and L0: a token's q in head tiles (rows padded to a fractal),
/// one tile of selected rows, probability-row tiles over a tile's lanes, and the L0 tiles of
/// `HeadTileMmad` (k chunks of `d` or `kv_rows`).
fn indexed_cube_buffers(
    heads: usize,
    head_dim: usize,
    head_tile: usize,
    kv_tile: usize,
    d_tile: usize,
) -> Vec<Buffer> {
    use DType::*;
    use Mem::*;
    let m_pad = head_tile.next_multiple_of(16);
    [
        vec![
            row("q", L1, Bf16, heads / head_tile * m_pad * head_dim, 1, None),
            row("rows", L1, Bf16, kv_tile * head_dim, 1, None),
            row("a_tile", L1, Bf16, m_pad * kv_tile, 2, None),
        ],
        head_tile_l0(head_tile, kv_tile, d_tile),
    ]
    .concat()
}

/// `attention_indexed.h`'s AIV UB: a token's top-k slots (as read, and their f32 validity
/// and bias), 8 heads of scores in and probabilities out over a tile's lanes, the running
/// statistics and o of the AIV's heads (the busier AIV's: half the 8-head groups, rounded
/// up), and a group's rows of a tile's part.
fn indexed_vector_buffers(
    heads: usize,
    head_dim: usize,
    topk: usize,
    kv_tile: usize,
) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    let (hd, tile) = (head_dim, 8 * kv_tile);
    let stats = (heads / 8).div_ceil(2) * 8;
    let slots = 8.max(topk.div_ceil(kv_tile));
    [
        vec![
            row("index_row", Ub, I32, topk, 1, Some(topk)),
            row("valid", Ub, F32, topk, 1, None),
            row("bias", Ub, F32, topk, 1, None),
            row("scores", Ub, F32, tile, 1, Some(tile)),
            row("probs", Ub, Bf16, tile, 1, Some(tile)),
            row("reduce_tmp", Ub, F32, kv_tile, 1, None),
            row("row_stats", Ub, F32, slots * 8, 1, None),
        ],
        running_stats(stats, 8),
        vec![
            row("o", Ub, F32, stats * hd, 1, Some(8 * hd)),
            row("part", Ub, F32, 8 * hd, 1, Some(8 * hd)),
        ],
    ]
    .concat()
}

/// The compressed source (hca_csa.md §6.2): one mixed launch continuing every query row's
/// online softmax over its request's compressed rows in chunks
/// (`dsv4/attention_compressed.h`), between the window values and the finish.
fn compressed_launch(
    b: &mut Builder,
    ratio: usize,
    head_tile: usize,
    kv_tile: usize,
    d_tile: usize,
) {
    let p = b.plan;
    let m = &p.model;
    let (heads, hd, seq) = (m.heads, m.head_dim, p.shape.decode_seq);
    let max_rows = p.pools.max_positions / ratio;
    let union = union_rows(p.attention.window, seq);
    let chunk = compressed_chunk_rows(
        hd,
        head_tile,
        union,
        p.pools.block_size,
        p.attention.max_compressed_rows,
        p.chip,
    );
    b.workspace("attn_max", per_token(&[heads]), DType::F32);
    b.workspace("attn_cmp_scores", per_token(&[heads, chunk]), DType::F32);
    b.workspace("attn_cmp_probs", per_token(&[heads, chunk]), DType::Bf16);
    b.workspace("attn_cmp_o", per_token(&[heads, hd]), DType::F32);
    let kernel = Kernel {
        name: format!(
            "attn_compressed_h{heads}_d{hd}_s{seq}_bs{}_r{ratio}_max{max_rows}_ht{head_tile}_kv{kv_tile}_dk{d_tile}_ch{chunk}",
            p.pools.block_size
        ),
        doc: "compressed-row attention: online-softmax merge of every visible compressed row \
              into the window's o and denominators"
            .into(),
        block: "attention_compressed.h",
        class: "AttentionCompressed",
        cores: Cores::Mix,
        params: further_params(
            p,
            ratio,
            ("MAX_ROWS", max_rows),
            [head_tile, kv_tile, d_tile],
            &[("CHUNK", chunk)],
        ),
        args: vec![
            "q",
            "cmp_kv",
            "cmp_table",
            "positions",
            "kv_seq_lens",
            "row_max",
            "scores",
            "probs",
            "part",
            "o",
            "denom",
        ],
        buffers: [
            cube_buffers(("chunk", chunk), hd, head_tile, kv_tile, d_tile),
            compressed_vector_buffers(heads, hd, seq, chunk),
        ]
        .concat(),
    };
    let blocks = p.chip.aic_cores.min(p.shape.b) as u32;
    b.launch(
        kernel,
        blocks,
        &[
            "q",
            "cmp_kv",
            "cmp_block_table",
            "position_ids",
            "kv_seq_lens",
            "attn_max",
            "attn_cmp_scores",
            "attn_cmp_probs",
            "attn_cmp_o",
            "attn_o",
            "attn_denom",
        ],
    );
}

/// Why `dsv4/attention_compressed.h` cannot run this plan, if it cannot: the two AIVs of a
/// block split a request's tokens evenly, a tile is whole pages and whole fractals, the
/// cube's head tile is the window kernels'.
fn compressed_unmet(p: &Plan, t: &Tiling<Tile>, c: &CompressorPlan) -> Option<String> {
    let (kv_tile, d_tile) = (t.kv_rows.value, t.d.value);
    let union = union_rows(p.attention.window, p.shape.decode_seq);
    unmet([
        (
            !c.overlap,
            "compressed rows of the overlapping compressor have no kernels yet".into(),
        ),
        (
            p.shape.decode_seq.is_multiple_of(2),
            format!(
                "decode_seq {} is odd (two vector cores split a request's tokens)",
                p.shape.decode_seq
            ),
        ),
        (
            p.model.heads.is_multiple_of(8),
            format!("heads {} is not a multiple of 8", p.model.heads),
        ),
        (
            kv_tile <= union
                && kv_tile.is_multiple_of(p.pools.block_size)
                && kv_tile.is_multiple_of(16),
            format!(
                "tile kv_rows {kv_tile} is not whole pages of {} and fractals within the {union} window rows",
                p.pools.block_size
            ),
        ),
        (
            p.model.head_dim.is_multiple_of(d_tile),
            format!(
                "tile d {d_tile} does not divide head_dim {}",
                p.model.head_dim
            ),
        ),
        (
            ["cmp_block_table", "kv_seq_lens", "position_ids"]
                .iter()
                .all(|n| p.tensor(n).is_some()),
            "the ABI lacks cmp_block_table, kv_seq_lens or position_ids".into(),
        ),
    ])
}

/// Why the finish kernel cannot run these dims, if it cannot: it moves the nope and rope
/// parts of a head as whole 32-byte blocks of bf16 (and of f32 at their starts).
fn finish_unmet(m: &ModelDims) -> Option<String> {
    unmet([
        (
            m.nope_dim.is_multiple_of(16),
            format!(
                "head_dim − rope_dim = {} is not a multiple of 16",
                m.nope_dim
            ),
        ),
        (
            m.rope_dim.is_multiple_of(16),
            format!("rope_dim {} is not a multiple of 16", m.rope_dim),
        ),
    ])
}

/// `attention_cube.h`'s L1 and L0, both window kernels' (and `attention_compressed.h`'s AIC
/// with its chunk as `operand`): the cube's B operand whole in L1 (`operand` = the name and
/// rows of the request's union, K = V, or of a chunk of compressed rows), `head_tile`-row
/// query-side tiles (q rows or probability rows, whichever is wider; rows padded to a
/// fractal), and the L0 tiles of `HeadTileMmad` (k chunks of `d` or `kv_rows`).
fn cube_buffers(
    operand: (&'static str, usize),
    head_dim: usize,
    head_tile: usize,
    kv_tile: usize,
    d_tile: usize,
) -> Vec<Buffer> {
    use DType::*;
    use Mem::*;
    let (name, rows) = operand;
    let m_pad = head_tile.next_multiple_of(16);
    [
        vec![
            row(name, L1, Bf16, rows * head_dim, 1, None),
            row("a_tile", L1, Bf16, m_pad * head_dim.max(rows), 2, None),
        ],
        head_tile_l0(head_tile, kv_tile, d_tile),
    ]
    .concat()
}

/// `attention_softmax.h`'s UB: a tile of head rows over the union lanes in and out, one
/// token's index row (DataCopyPad) and the union for the contract check with its gather
/// tables, per-lane constants, per-head statistics (one 32-byte slot per row result) and
/// a token's per-head values (sink in, denominators out).
fn softmax_buffers(heads: usize, window: usize, union: usize, head_tile: usize) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    let (h, tile, lanes) = (heads, head_tile * union, window.next_multiple_of(8));
    vec![
        row("scores", Ub, F32, tile, 2, Some(tile)),
        row("probs", Ub, Bf16, tile, 2, Some(tile)),
        row("index_row", Ub, I32, lanes, 1, None),
        row("union", Ub, I32, union, 1, None),
        row("lane_offsets", Ub, I32, lanes, 1, None),
        row("gather_offsets", Ub, I32, lanes, 1, None),
        row("expected", Ub, I32, lanes, 1, None),
        row("mismatch", Ub, F32, lanes, 1, None),
        row("lane", Ub, F32, union, 1, None),
        row("bias", Ub, F32, union, 1, None),
        row("clamp", Ub, F32, union, 1, None),
        row("reduce_tmp", Ub, F32, union, 1, None),
        row("row_stats", Ub, F32, head_tile * 8, 1, None),
        row("sink", Ub, F32, h, 1, Some(h)),
        row("row_max", Ub, F32, h, 1, None),
        row("row_sum", Ub, F32, h, 1, None),
        row("denom", Ub, F32, h, 1, Some(h)),
    ]
}

/// `attention_finish.h`'s UB: a tile of head rows in and out (out leaves in runs of whole
/// heads), the token's denominators and freqs half-rows (DataCopyPad), the rope gather
/// tables.
fn finish_buffers(heads: usize, head_dim: usize, rope_dim: usize, head_tile: usize) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    let (h, hd, half) = (heads, head_dim, rope_dim / 2);
    let (tile, rope_tile) = (head_tile * hd, head_tile * rope_dim);
    vec![
        row("o", Ub, F32, tile, 2, Some(tile)),
        row("out", Ub, Bf16, tile, 2, Some(hd)),
        row("denom", Ub, F32, h, 1, Some(h)),
        row("divisor", Ub, F32, hd, 1, None),
        row("cos_row", Ub, Bf16, half, 1, None),
        row("sin_row", Ub, Bf16, half, 1, None),
        row("trig", Ub, F32, 3 * half, 1, None),
        row("cos_table", Ub, F32, rope_tile, 1, None),
        row("sin_table", Ub, F32, rope_tile, 1, None),
        row("rope", Ub, F32, rope_tile, 1, None),
        row("partner", Ub, F32, rope_tile, 1, None),
        row("rope_offsets", Ub, I32, rope_tile, 1, None),
        row("partner_offsets", Ub, I32, rope_tile, 1, None),
        row("cos_offsets", Ub, I32, rope_tile, 1, None),
        row("sin_offsets", Ub, I32, rope_tile, 1, None),
    ]
}

/// `attention_compressed.h`'s AIV UB (its AIC has [`cube_buffers`] with the chunk): 8
/// heads of one token's scores in and probabilities out over a chunk's lanes, per-lane
/// constants, the running statistics of its half of a request's tokens, and one head row
/// of o and of the chunk's part.
fn compressed_vector_buffers(
    heads: usize,
    head_dim: usize,
    seq: usize,
    chunk: usize,
) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    let (hd, tile, stats) = (head_dim, 8 * chunk, seq / 2 * heads);
    [
        vec![
            row("scores", Ub, F32, tile, 1, Some(tile)),
            row("probs", Ub, Bf16, tile, 1, Some(tile)),
            row("lane", Ub, F32, chunk, 1, None),
            row("bias", Ub, F32, chunk, 1, None),
            row("reduce_tmp", Ub, F32, chunk, 1, None),
            row("row_stats", Ub, F32, 8 * 8, 1, None),
        ],
        running_stats(stats, stats),
        vec![
            row("o_row", Ub, F32, hd, 1, Some(hd)),
            row("part_row", Ub, F32, hd, 1, Some(hd)),
        ],
    ]
    .concat()
}

/// Per-token workspace dims: `[t, dims...]`.
fn per_token(dims: &[usize]) -> Vec<Dim> {
    let mut v = vec![Dim::Var("t")];
    v.extend(dims.iter().map(|&n| Dim::Const(n)));
    v
}

/// The parameters of a further source's mixed kernel (`attention_compressed.h`,
/// `attention_indexed.h`): the dims, its bound on the rows it reads (`rows`), the tiles
/// `[heads, kv_rows, d]`, its own `extra` and the softmax scale.
fn further_params(
    p: &Plan,
    ratio: usize,
    rows: (&'static str, usize),
    tiles: [usize; 3],
    extra: &[(&'static str, usize)],
) -> Vec<(&'static str, Value)> {
    let u32 = |v: usize| Value::U32(v as u32);
    let m = &p.model;
    let [head_tile, kv_tile, d_tile] = tiles;
    let mut params = vec![
        ("HEADS", u32(m.heads)),
        ("HEAD_DIM", u32(m.head_dim)),
        ("SEQ", u32(p.shape.decode_seq)),
        ("BLOCK_SIZE", u32(p.pools.block_size)),
        ("RATIO", u32(ratio)),
        (rows.0, u32(rows.1)),
        ("HEAD_TILE", u32(head_tile)),
        ("KV_TILE", u32(kv_tile)),
        ("D_TILE", u32(d_tile)),
    ];
    params.extend(extra.iter().map(|&(name, v)| (name, u32(v))));
    params.push(("SCALE", Value::F32(m.softmax_scale)));
    params
}

/// The L0 tiles of `HeadTileMmad` (`dsv4/head_tile_mmad.h`): k chunks of `d` or `kv_rows`
/// over a head tile padded to a fractal.
fn head_tile_l0(head_tile: usize, kv_tile: usize, d_tile: usize) -> Vec<Buffer> {
    use DType::*;
    use Mem::*;
    let (m_pad, l0_k) = (head_tile.next_multiple_of(16), d_tile.max(kv_tile));
    vec![
        row("a_l0", L0a, Bf16, m_pad * l0_k, 2, None),
        row("b_l0", L0b, Bf16, d_tile * kv_tile, 2, None),
        row("c_l0", L0c, F32, m_pad * l0_k, 2, None),
    ]
}

/// The running statistics a further source merges with `OnlineRescale`
/// (`dsv4/online_softmax.h`), a value per head of the AIV (`stats` of them): max and
/// denominator (copied in and out `copy` values at a time), the tile's max and sum, alpha
/// and beta.
fn running_stats(stats: usize, copy: usize) -> Vec<Buffer> {
    use DType::F32;
    use Mem::Ub;
    vec![
        row("run_max", Ub, F32, stats, 1, Some(copy)),
        row("run_denom", Ub, F32, stats, 1, Some(copy)),
        row("tile_max", Ub, F32, stats, 1, None),
        row("tile_sum", Ub, F32, stats, 1, None),
        row("alpha", Ub, F32, stats, 1, None),
        row("beta", Ub, F32, stats, 1, None),
    ]
}

/// Compressed rows per chunk of `attention_compressed.h` (0 without compressed rows): as
/// many whole pages (and fractals) as L1 holds beside the two head-tile rows, at most
/// [`MAX_CHUNK`] (its UB rows grow with it) and no more than `max_rows` need. Every chunk
/// moves a request's o and part through GM once, so fewer, larger chunks move less.
pub fn compressed_chunk_rows(
    head_dim: usize,
    head_tile: usize,
    union: usize,
    block_size: usize,
    max_rows: usize,
    chip: &Chip,
) -> usize {
    if max_rows == 0 {
        return 0;
    }
    // whole pages and whole fractals
    let unit = (1..=16)
        .map(|k| k * block_size)
        .find(|r| r % 16 == 0)
        .expect("16 pages are 16k rows");
    let m_pad = head_tile.next_multiple_of(16);
    // The L1 of `cube_buffers` over `rows` rows or the union, whichever is more: the
    // compressed kernel's own and never less than the window kernels'.
    let l1 = |rows: usize| {
        let bf16 = DType::Bf16.size();
        rows.max(union) * head_dim * bf16 + 2 * m_pad * head_dim.max(union).max(rows) * bf16
    };
    let mut chunk = unit;
    while chunk + unit <= MAX_CHUNK.min(max_rows.next_multiple_of(unit))
        && l1(chunk + unit) <= chip.l1_bytes
    {
        chunk += unit;
    }
    chunk
}

/// The largest compressed-row chunk (f32 scores of 8 heads: 16 KiB of UB).
pub const MAX_CHUNK: usize = 512;

/// Rows of the window attention's per-request union (a token's window plus one new row
/// per later token of its request), rounded up to whole 16-row fractals.
pub fn union_rows(window: usize, decode_seq: usize) -> usize {
    (window + decode_seq - 1).next_multiple_of(16)
}
