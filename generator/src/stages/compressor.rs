//! Stage compressor (hca_csa.md §4.1–4.7): HCA's ratio 128 without overlap and CSA's
//! overlapping ratio 4 (front and back projection halves pooled over 2·ratio positions).
//! The two projections on the cube (`gemm`), then vector kernels (`dsv4/compressor.h`):
//! at each request's first boundary, pool the window as the requests before it left the
//! state (`dsv4/state_overlay.h`), a channel tile per work item so that one row spreads
//! over cores, into a workspace row; normalise, rotate and write each pooled row to
//! cmp_kv (the finish needs the whole row, so it is a later launch); once every request
//! has pooled, add the APE rows and write this step's state rows. Where a row is one tile
//! the finish takes the pooling as its prologue (one kernel, the row in UB).
//!
//! ```text
//! x_normed ·cmp_wkvᵀ  → compress_kv f32  ─┐
//! x_normed ·cmp_wgateᵀ→ compress_score f32┴─CompressorPool→ compress_pooled f32
//!     ─CompressorFinish→ cmp_kv;  then CompressorCommit→ compress_state
//! ```
//!
//! The RoPE angles are the host's per-request rows (`cmp_freqs_*`, `rope.table:
//! per_token`) or, with `rope.table: positions` (CSA), the full table's row at the window
//! start, gathered in the kernel (`…_positions`). With `state: ring` (the 1M CSA,
//! csa_1m.md §4) the state is a ring of 2·ratio rows per request, every boundary is pooled
//! against the ring and the request's own rows of the step, and rotates with its boundary
//! token's `cmp_freqs_*` row (`…_ring`). [`plan_instance`] plans one compressor
//! over named tensors, so that CSA's index-key compressor (`index_compressor`) reuses it,
//! its pooled rows going to a workspace row per request instead of a pool.

use abi::{DType, Dim};
use serde::Deserialize;

use super::kind::{Data, Kind, LayerParts, Tile, TileCheck, tiling};
use super::qkv_proj_rope::rope_buffers;
use crate::budget::{Buffer, row};
use crate::chip::Mem;
use crate::diag::{Diagnostics, Loc};
use crate::kernel_plan::gemm::{self, BLayout, Matmul, Operands, Rows};
use crate::kernel_plan::{Builder, Cores, Kernel, Prologue, Value, float_tag, unmet};
use crate::plan::{CompressorPlan, Pools};
use crate::spec::range::{positive, positive_large};
use crate::spec::{Int, LayerKind, PadPolicy, RopeTable, Sp, StateLayout};

pub struct Compressor;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Positions per compressed row (4 CSA, 128 HCA).
    pub ratio: Int,
    /// Overlapping windows: two projection streams pooled over 2·ratio entries.
    pub overlap: Sp<bool>,
    pub state_block_size: Int,
    /// Paged by position (the snapshot CSA, HCA; the default) or a ring per request (CSA
    /// at 1M, pypto-lib PR #1013).
    #[serde(default)]
    pub state: Option<Sp<StateLayout>>,
    pub state_pool_blocks: Int,
    /// Physical pages of the compressed-KV pool (`cmp_kv`), `block_size` rows each.
    pub cmp_pool_blocks: Int,
    pub tiling: Sp<Tiling>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
}

tiling! {
    /// Projection tile `m`×`n`×`k`, `tokens` per state-write pass, `channels` per pooling pass.
    m, n, k, tokens, channels
}

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub ratio: usize,
    pub ratio_loc: Loc,
    pub overlap: bool,
    pub state_block_size: usize,
    pub state: StateLayout,
    pub state_loc: Option<Loc>,
    pub state_pool_blocks: usize,
    pub state_pool_loc: Loc,
    pub cmp_pool_blocks: usize,
    pub tiling: Tiling<Tile>,
}

impl Kind for Compressor {
    const NAME: &'static str = "compressor";
    const NEEDS: &'static [Data] = &[Data::XNormed];
    const PRODUCES: &'static [Data] = &[Data::Compressed];
    type Spec = Spec;
    type Params = Params;

    fn read(spec: &Spec, d: &mut Diagnostics) -> Params {
        Params {
            tiling: spec.tiling.value.read(d),
            ratio: positive(d, &spec.ratio, "compressor ratio"),
            ratio_loc: Loc::of(&spec.ratio),
            overlap: spec.overlap.value,
            state_block_size: positive(d, &spec.state_block_size, "state_block_size"),
            state: spec.state.as_ref().map(|s| s.value).unwrap_or_default(),
            state_loc: spec.state.as_ref().map(Loc::of),
            state_pool_blocks: positive_large(d, &spec.state_pool_blocks, "state_pool_blocks"),
            state_pool_loc: Loc::of(&spec.state_pool_blocks),
            cmp_pool_blocks: positive_large(d, &spec.cmp_pool_blocks, "cmp_pool_blocks"),
        }
    }

    fn layer(s: &Params, parts: &mut LayerParts, d: &mut Diagnostics) {
        let max_positions = parts.pools.max_positions;
        if s.ratio > max_positions {
            d.error(
                s.ratio_loc,
                format!(
                    "compressor ratio {} exceeds max_positions {max_positions}",
                    s.ratio
                ),
                "a compressed row covers ratio positions, so ratio <= max_positions",
            );
        }
        let layout_ok = check_state(s, parts, d);
        let plan = cache_compressor(
            s.state,
            s.ratio,
            s.overlap,
            parts.model.head_dim,
            (s.state_block_size, s.state_pool_blocks),
            s.cmp_pool_blocks,
            parts.pools,
        );
        if layout_ok {
            check_ring_pool(
                &plan,
                (s.state_pool_blocks, s.state_pool_loc),
                parts.decode_batch,
                "with state: ring every request owns a ring: state_pool_blocks >= decode_batch x 2·ratio / state_block_size",
                d,
            );
        }
        parts.compressor = Some(plan);
    }

    fn check(s: &Params, c: &mut TileCheck) {
        let t = &s.tiling;
        c.matmul(t.m, t.n, t.k, t.tokens);
        if let Some(cp) = &c.plan.compressor {
            let (width, hd) = (cp.out_width, cp.head_dim);
            c.fits(t.n, "n", width, "the projected width");
            c.divides(t.channels, "channels", hd, "head_dim");
        }
        c.fits(t.k, "k", c.plan.model.hidden, "hidden");
    }

    fn plan(s: &Params, b: &mut Builder) {
        let Some(c) = &b.plan.compressor else {
            unreachable!("a compressor stage has a compressor plan")
        };
        let main = Instance {
            plan: c,
            projections: ["compress_kv", "compress_score"],
            weights: ["cmp_wkv", "cmp_wgate", "cmp_ape", "cmp_norm_w"],
            state: [
                "state_slot_mapping",
                "compress_state_block_table",
                "compress_state",
            ],
            rows: ["cmp_slot_mapping", "cmp_kv"],
            pooled: "compress_pooled",
            to_token: false,
            per_token_rope: ["cmp_freqs_cos", "cmp_freqs_sin"],
            rope_align: c.ratio,
        };
        plan_instance(b, &main, &s.tiling);
    }
}

/// One compressor of a layer and the tensors it binds: CSA runs two (the main one and the
/// index-key one), on the same building blocks.
pub struct Instance<'a> {
    pub plan: &'a CompressorPlan,
    /// Workspaces `[t, out_width]` f32 of the kv and score projections.
    pub projections: [&'static str; 2],
    /// wkv, wgate `[out_width, hidden]`, ape `[ratio, out_width]`, norm_w `[head_dim]`.
    pub weights: [&'static str; 4],
    /// The state: slot mapping (write contract), block table (read contract), pool.
    pub state: [&'static str; 3],
    /// Where a pooled row goes: the slot mapping of the boundary token (−1: no row), the
    /// bf16 pool (or, `to_token`, the workspace).
    pub rows: [&'static str; 2],
    /// The row goes to row b·SEQ (the request's first token) of a `[t, head_dim]` bf16
    /// workspace, declared here, rather than to the slot's row of a pool.
    pub to_token: bool,
    /// Workspace `[t, head_dim]` f32: each pooled row at its boundary token's row, between
    /// the pooling and the finish.
    pub pooled: &'static str,
    /// The host's RoPE rows with `rope.table: per_token`: f32 per request (HCA), or, with
    /// the ring state, bf16 per token (`cmp_freqs_*`, the row at p − 3 of boundary tokens).
    pub per_token_rope: [&'static str; 2],
    /// With `rope.table: positions`, a pooled row rotates with the table row p0 rounded
    /// down to a multiple of this (the ratio: the window start; 1: the step's first position).
    pub rope_align: usize,
}

/// Plans compressor `inst`: its two projections on the cube, then (`dsv4/compressor.h`)
/// the pooling launch and the state commit. False when the stage is missing (said why).
pub fn plan_instance(b: &mut Builder, inst: &Instance, t: &Tiling<Tile>) -> bool {
    let p = b.plan;
    let c = inst.plan;
    let (m, seq) = (&p.model, p.shape.decode_seq);
    let (tokens, channels) = (t.tokens.value, t.channels.value);
    let tiles = [t.m.value, t.n.value, t.k.value];
    let (hd, rd, out) = (c.head_dim, m.rope_dim, c.out_width);
    let positions = p.rope.table == RopeTable::Positions;
    let ring = c.state == StateLayout::Ring;
    // The rows a pooled row rotates with (dsv4/compressor.h CmpRope): the host's f32 rows
    // per request, the position table's, or (ring) the boundary token's bf16 row.
    let cmp_rope = match (ring, positions) {
        (true, _) => 2,
        (false, true) => 1,
        (false, false) => 0,
    };
    // What dsv4/compressor.h handles: one request per state-update tile, halving trees
    // over a power-of-two window of whole state pages, channel tiles in whole blocks and
    // whole repeats, rope rows and slice in whole f32 blocks, bf16 rows in blocks.
    let unmet = unmet([
        (
            tokens == seq,
            format!(
                "tile tokens {tokens} is not decode_seq {seq} (one request per state-update tile)"
            ),
        ),
        (
            c.pool_entries.is_power_of_two() && c.pool_entries <= 128,
            format!(
                "{} pooled entries per row is not a power of two up to 128 (the pooling trees halve)",
                c.pool_entries
            ),
        ),
        (
            c.ratio.is_multiple_of(c.state_block_size),
            format!(
                "ratio {} is not a whole number of state pages of {}",
                c.ratio, c.state_block_size
            ),
        ),
        (
            channels.is_multiple_of(8)
                && channels / 8 <= 255
                && (channels <= 64 || channels.is_multiple_of(64))
                && hd.is_multiple_of(channels),
            format!(
                "tile channels {channels} is not a multiple of 8 in whole 64-lane repeats, \
                 dividing head_dim {hd}"
            ),
        ),
        (
            hd.is_multiple_of(16),
            format!("head_dim {hd} is not a multiple of 16 (whole bf16 blocks)"),
        ),
        (
            rd.is_multiple_of(16) && rd <= hd,
            format!("rope_dim {rd} is not a multiple of 16 up to head_dim {hd}"),
        ),
        (
            inst.to_token || p.tensor(inst.rows[1]).is_some(),
            format!("the ABI has no {}", inst.rows[1]),
        ),
    ]);
    if let Some(why) = unmet {
        b.missing(why);
        return false;
    }
    let [kv, score] = inst.projections;
    let [wkv, wgate, ape, norm_w] = inst.weights;
    let [state_slots, state_table, state] = inst.state;
    let [row_slots, rows] = inst.rows;
    let pooled = inst.pooled;
    let t_rows = || Dim::Var("t");
    b.workspace(kv, vec![t_rows(), Dim::Const(out)], DType::F32);
    b.workspace(score, vec![t_rows(), Dim::Const(out)], DType::F32);
    b.workspace(pooled, vec![t_rows(), Dim::Const(hd)], DType::F32);
    if inst.to_token {
        b.workspace(rows, vec![t_rows(), Dim::Const(hd)], DType::Bf16);
    }
    let proj = Matmul::new(
        Operands::Bf16,
        BLayout::Nk,
        Rows::Tokens,
        p.shape.local_t,
        out,
        m.hidden,
    );
    if gemm::launch(b, tiles, &proj, ["x_normed", wkv, kv]).is_none()
        || gemm::launch(b, tiles, &proj, ["x_normed", wgate, score]).is_none()
    {
        return false;
    }
    // Named after what they are specialised on; HCA's names predate overlap and tables.
    let ov = if c.overlap { "_ov" } else { "" };
    let ring_tag = if ring { "_ring" } else { "" };
    // Both stage the step's per-token metadata: tokens up to the capacity.
    let cap = p.shape.local_t;
    let channel_tiles = hd / channels;
    // What the pooling and the commit are specialised on alike.
    let shape = [
        ("HD", Value::u32(hd)),
        ("COFF", Value::u32(c.coff)),
        ("RATIO", Value::u32(c.ratio)),
        ("SEQ", Value::u32(seq)),
    ];
    let pool = Kernel {
        name: format!(
            "compressor_pool_r{}{ov}_hd{hd}_s{seq}_bs{}_tw{}_c{channels}_cap{cap}{ring_tag}",
            c.ratio, c.state_block_size, c.state_table_width,
        ),
        doc: format!(
            "softmax pooling of {} window as the earlier requests left the state, a \
             {channels}-channel tile per item, into the boundary token's f32 row of a workspace",
            if ring {
                "every boundary's"
            } else {
                "each request's first boundary's"
            }
        ),
        block: "compressor.h",
        class: "CompressorPool",
        cores: Cores::Aiv,
        params: [
            &shape[..],
            &[
                ("STATE_BS", Value::u32(c.state_block_size)),
                ("TABLE_W", Value::u32(c.state_table_width)),
                ("CH", Value::u32(channels)),
                ("RING", Value::Bool(ring)),
            ],
        ]
        .concat(),
        args: vec![
            "kvp",
            "score",
            "ape",
            "positions",
            "state_slots",
            "cmp_slots",
            "state_table",
            "state",
            "pooled",
        ],
        buffers: pool_buffers(cap, c.pool_entries, channels),
        parts: Vec::new(),
    };
    let rows_per_request = if ring { seq.div_ceil(c.ratio) } else { 1 };
    let rows_in_step = p.shape.b * rows_per_request;
    let pool_kernel = pool.clone();
    b.launch_spreading(
        pool,
        fewest_blocks(rows_in_step * channel_tiles, p.chip.aiv_cores),
        &[
            kv,
            score,
            ape,
            "position_ids",
            state_slots,
            row_slots,
            state_table,
            state,
            pooled,
        ],
    );
    let (class, dest, out_arg) = if inst.to_token {
        (
            "CompressorFinishToToken",
            "to the request's first token row",
            "rows",
        )
    } else {
        ("CompressorFinish", "into cmp_kv", "cmp_kv")
    };
    let finish_head = format!("compressor_finish_r{}{ov}_hd{hd}_s{seq}", c.ratio);
    let mut finish = Kernel {
        name: format!(
            "{finish_head}_rd{rd}_eps{}_cap{cap}{ring_tag}",
            float_tag(m.rms_eps)
        ),
        doc: format!("RMSNorm and RoPE of each pooled row, bf16 row {dest}"),
        block: "compressor.h",
        class,
        cores: Cores::Aiv,
        params: vec![
            ("HD", Value::u32(hd)),
            ("RATIO", Value::u32(c.ratio)),
            ("SEQ", Value::u32(seq)),
            ("RING", Value::Bool(ring)),
            ("RD", Value::u32(rd)),
            ("EPS", Value::F32(m.rms_eps)),
            ("INV_HD", Value::F32(1.0 / hd as f32)),
            ("CMP_ROPE", Value::u32(cmp_rope)),
        ],
        args: vec![
            "pooled",
            "norm_w",
            "cos",
            "sin",
            "positions",
            "cmp_slots",
            out_arg,
        ],
        buffers: finish_buffers(cap, hd, rd, cmp_rope != 0),
        parts: Vec::new(),
    };
    let rope = if ring {
        finish.doc.push_str(", RoPE with the boundary token's row");
        inst.per_token_rope
    } else if positions {
        finish.name.push_str("_positions");
        if inst.rope_align != c.ratio {
            finish.name.push_str(&format!("_a{}", inst.rope_align));
        }
        finish
            .doc
            .push_str(", RoPE row gathered from the position table");
        finish
            .params
            .push(("ROPE_ALIGN", Value::u32(inst.rope_align)));
        ["freqs_cos", "freqs_sin"]
    } else {
        inst.per_token_rope
    };
    if inst.to_token {
        finish.name.push_str("_to_token");
    }
    let finish_blocks = p.chip.aiv_cores.min(rows_in_step) as u32;
    // A row of one tile pools on one core anyway: the finish then takes the pooling as its
    // prologue, the row staying in UB.
    let in_place = (p.fuse && channel_tiles == 1).then(|| {
        let name = format!(
            "compressor_r{}{ov}_hd{hd}_s{seq}_bs{}_tw{}_c{channels}{}",
            c.ratio,
            c.state_block_size,
            c.state_table_width,
            &finish.name[finish_head.len()..]
        );
        pooled_in_place(&pool_kernel, &finish, (name, pooled), finish_blocks)
    });
    b.launch_spreading(
        finish,
        finish_blocks,
        &[
            pooled,
            norm_w,
            rope[0],
            rope[1],
            "position_ids",
            row_slots,
            rows,
        ],
    );
    if let Some(offer) = in_place {
        b.spreads(&offer.fused.name);
        b.prologue(offer);
    }
    // A later launch: every request has pooled the state it must see before it changes.
    let commit = Kernel {
        name: format!("compressor_commit_r{}{ov}_hd{hd}_s{seq}", c.ratio),
        doc: "APE + this step's state rows, after every request pooled".into(),
        block: "compressor.h",
        class: "CompressorCommit",
        cores: Cores::Aiv,
        params: shape.to_vec(),
        args: vec!["kvp", "score", "ape", "positions", "state_slots", "state"],
        buffers: commit_buffers(seq, out),
        parts: Vec::new(),
    };
    b.launch_spreading(
        commit,
        p.chip.aiv_cores.min(p.shape.b) as u32,
        &[kv, score, ape, "position_ids", state_slots, state],
    );
    true
}

/// The fewest blocks that take `items` in as few rounds as `cores` would, so that the launch
/// leaves cores to a part beside it (`kernel_plan::together`).
fn fewest_blocks(items: usize, cores: usize) -> u32 {
    items.div_ceil(items.div_ceil(cores).max(1)) as u32
}

/// `dsv4/compressor.h` CompressorPoolFinish, `name`d: `pool`'s rows pooled into UB and
/// finished there as `finish` would (one row per item, on `blocks`), so the workspace
/// `pooled` they hand over is not needed: the pooling's arguments but `pooled`, then the
/// finish's others; both kernels' parameters and buffers, the row in place of the pooled
/// tile.
fn pooled_in_place(
    pool: &Kernel,
    finish: &Kernel,
    (name, pooled): (String, &'static str),
    blocks: u32,
) -> Prologue {
    let mut params = pool.params.clone();
    let mut args: Vec<&'static str> = Vec::new();
    let mut buffers: Vec<Buffer> = Vec::new();
    for (n, v) in &finish.params {
        if !params.iter().any(|(m, _)| m == n) {
            params.push((n, *v));
        }
    }
    for a in pool.args.iter().chain(&finish.args) {
        if *a != "pooled" && !args.contains(a) {
            args.push(a);
        }
    }
    for buf in pool
        .buffers
        .iter()
        .filter(|b| b.name != "pooled")
        .chain(&finish.buffers)
    {
        if !buffers.iter().any(|b| b.name == buf.name) {
            buffers.push(buf.clone());
        }
    }
    Prologue {
        producer: pool.name.clone(),
        consumer: finish.name.clone(),
        input: pooled,
        block_dim: blocks,
        fused: Kernel {
            name,
            doc: format!(
                "{}, each row whole on one core; then {}",
                pool.doc, finish.doc
            ),
            class: if finish.class.ends_with("ToToken") {
                "CompressorPoolFinishToToken"
            } else {
                "CompressorPoolFinish"
            },
            params,
            args,
            buffers,
            ..finish.clone()
        },
    }
}

/// The per-token metadata both kernels stage in UB for `tokens` (`UbTable` in
/// `dsv4/scalar_stream.h`): positions and cmp slots.
fn token_tables(tokens: usize) -> [Buffer; 2] {
    use DType::*;
    use Mem::Ub;
    [
        row("positions", Ub, I32, tokens, 1, Some(tokens)),
        row("cmp_slots", Ub, I64, tokens, 1, Some(tokens)),
    ]
}

/// CompressorPool's UB (`dsv4/compressor.h`): the token tables and the state slots of
/// `tokens`, a pooling tile of `entries` rows × `channels` of kv, score and the APE of rows
/// this step writes, its column-max tree, the pooled tile out.
fn pool_buffers(tokens: usize, entries: usize, channels: usize) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    let tile = entries * channels;
    let mut v = token_tables(tokens).to_vec();
    v.extend([
        row("state_slots", Ub, I64, tokens, 1, Some(tokens)),
        row("pool_kv", Ub, F32, tile, 1, Some(channels)),
        row("pool_score", Ub, F32, tile, 1, Some(channels)),
        row("pool_ape", Ub, F32, tile, 1, Some(channels)),
        row("pool_max", Ub, F32, tile / 2, 1, None),
        row("pooled", Ub, F32, channels, 1, None),
    ]);
    v
}

/// CompressorFinish's UB: the token tables of `tokens`, the pooled row and its RMSNorm
/// scratch (squares, ReduceSum's), norm_w widened and as read, the bf16 row out, inv beside
/// a block of ones; the rope's angles (cos | sin | −sin of the host's f32 row, or rope.h's
/// bf16 rows and their f32 widening with `positions`), gather offsets, interleaved tables
/// and swapped row.
fn finish_buffers(tokens: usize, hd: usize, rd: usize, bf16_rows: bool) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    let half = rd / 2;
    // ReduceSum's scratch for a row: one f32 per 64-lane repeat, in whole blocks.
    let reduce_sum_tmp = hd.div_ceil(64).next_multiple_of(8);
    let mut v = token_tables(tokens).to_vec();
    v.extend([
        row("pooled", Ub, F32, hd, 1, None),
        row("squares", Ub, F32, hd, 1, None),
        row("reduce_tmp", Ub, F32, reduce_sum_tmp, 1, None),
        row("norm_w", Ub, F32, hd, 1, None),
        row("norm_w_in", Ub, Bf16, hd, 1, Some(hd)),
        row("cmp_out", Ub, Bf16, hd, 1, Some(hd)),
        row("scalars", Ub, F32, 16, 1, None),
    ]);
    let [rows, trig, rotation @ ..] = rope_buffers(rd, 1);
    if bf16_rows {
        v.extend([rows, trig]);
    } else {
        v.push(row("cmp_trig", Ub, F32, 3 * half, 1, Some(half)));
    }
    v.extend(rotation);
    v
}

/// CompressorCommit's UB: a request's `seq` token rows of kvp, score and APE, `out` wide.
fn commit_buffers(seq: usize, out: usize) -> Vec<Buffer> {
    use DType::F32;
    use Mem::Ub;
    vec![
        row("kv_rows", Ub, F32, seq * out, 1, Some(out)),
        row("score_rows", Ub, F32, seq * out, 1, Some(out)),
        row("ape_rows", Ub, F32, seq * out, 1, Some(out)),
    ]
}

/// With `state: ring`, `pool_blocks` (written at `loc`) must hold a ring of `c`'s pages for
/// each of `decode_batch` requests; `rule` says whose.
pub fn check_ring_pool(
    c: &CompressorPlan,
    (pool_blocks, loc): (usize, Loc),
    decode_batch: usize,
    rule: &str,
    d: &mut Diagnostics,
) {
    let pages = c.state_table_width;
    if c.state == StateLayout::Ring && pool_blocks < decode_batch * pages {
        d.error(
            loc,
            format!(
                "state_pool_blocks {pool_blocks} holds fewer than decode_batch {decode_batch} rings of {pages} pages"
            ),
            rule,
        );
    }
}

/// The state layout against the layer and its RoPE rows: a ring is CSA's (pypto-lib PR
/// #1013, the overlapping compressor) with token-local RoPE rows; the snapshot CSA gathers
/// from the whole table. The reference defines no other mix. False when the layout is no
/// layout this layer can have (nothing more to check against it).
fn check_state(s: &Params, parts: &LayerParts, d: &mut Diagnostics) -> bool {
    let (table, table_loc) = parts.rope_table;
    let loc = s.state_loc.unwrap_or(s.ratio_loc);
    match s.state {
        StateLayout::Ring => {
            if parts.layer != LayerKind::Csa || !s.overlap {
                d.error(
                    loc,
                    format!(
                        "state: ring on a{} {} compressor",
                        if s.overlap {
                            "n overlapping"
                        } else {
                            " non-overlapping"
                        },
                        parts.layer.name()
                    ),
                    "the state ring is CSA's overlapping compressor's (pypto-lib PR #1013): \
                     layer: csa with overlap: true",
                );
                return false;
            }
            if table != RopeTable::PerToken {
                d.error(
                    loc,
                    "state: ring with rope.table: positions",
                    "the ring CSA (PR #1013) takes token-local RoPE rows: rope.table: per_token",
                );
            }
        }
        StateLayout::Paged => {
            if parts.layer == LayerKind::Csa && table == RopeTable::PerToken {
                d.error(
                    table_loc,
                    "rope.table: per_token on a CSA layer with paged compressor state",
                    "the snapshot CSA (paged state) gathers its RoPE rows from the whole table \
                     (rope.table: positions); token-local rows are the ring CSA's (compressor state: ring)",
                );
            }
        }
    }
    true
}

/// A compressor `head_dim` wide whose rows land in a cache of `cache_blocks` pages.
pub fn cache_compressor(
    state: StateLayout,
    ratio: usize,
    overlap: bool,
    head_dim: usize,
    (state_block_size, state_pool_blocks): (usize, usize),
    cache_blocks: usize,
    pools: &Pools,
) -> CompressorPlan {
    let coff = if overlap { 2 } else { 1 };
    let out_width = coff * head_dim;
    let cache_rows = cache_blocks * pools.block_size;
    // A per-request ceiling, apart from the pool's capacity (pages may alias, as in the
    // reference's fixtures): every position compressed.
    let max_rows = pools.max_positions / ratio;
    let state_rows = match state {
        StateLayout::Paged => pools.max_positions,
        StateLayout::Ring => coff * ratio,
    };
    CompressorPlan {
        state,
        ratio,
        overlap,
        coff,
        head_dim,
        out_width,
        state_row_width: 2 * out_width,
        pool_entries: coff * ratio,
        state_block_size,
        state_pool_blocks,
        state_pool_rows: state_block_size * state_pool_blocks,
        state_table_width: state_rows.div_ceil(state_block_size),
        cache_pool_blocks: cache_blocks,
        cache_pool_rows: cache_rows,
        max_rows,
        cache_table_width: max_rows.div_ceil(pools.block_size),
    }
}
