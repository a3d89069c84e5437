//! The window source's own pieces (its softmax and finish buffers, the finish's refusals,
//! the finish as a part of another launch) and what the further sources build on: the cube buffers of
//! `HeadTileMmad`, the running statistics, a further kernel's parameters, the union and
//! per-token workspace shapes.

use abi::{DType, Dim};

use crate::budget::{self, Buffer, row};
use crate::chip::{Chip, Mem};
use crate::kernel_plan::{Cores, Kernel, Value, unmet};
use crate::plan::{ModelDims, Plan};
use crate::spec::RopeTable;

/// Why the finish kernel cannot run these dims, if it cannot: it moves the nope and rope
/// parts of a head as whole 32-byte blocks of bf16 (and of f32 at their starts).
pub(super) fn finish_unmet(m: &ModelDims) -> Option<String> {
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
pub(super) fn cube_buffers(
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
/// tables, per-lane constants, per-head statistics (each row's max spread over a 32-byte block) and
/// a token's per-head values (sink in, denominators out).
pub(super) fn softmax_buffers(
    heads: usize,
    window: usize,
    union: usize,
    head_tile: usize,
) -> Vec<Buffer> {
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
        row(
            "reduce_tmp",
            Ub,
            F32,
            exp_rows_scratch(head_tile, union),
            1,
            None,
        ),
        row("row_stats", Ub, F32, head_tile * 8, 1, None),
        row("sink", Ub, F32, h, 1, Some(h)),
        row("row_max", Ub, F32, h, 1, None),
        row("row_sum", Ub, F32, h, 1, None),
        row("denom", Ub, F32, h, 1, Some(h)),
    ]
}

/// The reduction scratch beside `ExpRows` (`dsv4/online_softmax.h`) over `rows` score rows of
/// at most `lanes` lanes: a row's f32 lanes, or the rows' 64-lane chunks folded into one per
/// row (`FoldFloats`) where that is more.
pub(super) fn exp_rows_scratch(rows: usize, lanes: usize) -> usize {
    let fold = if lanes > 64 { rows * 64 } else { 0 };
    lanes.max(fold)
}

/// `attention_finish.h`'s UB: a tile of head rows in and out (out leaves in runs of whole
/// heads), the token's denominators and freqs half-rows (DataCopyPad), the tile's scales
/// (each spread over a block), and `dsv4/rope.h`'s `Rotation` over the tile's heads.
pub(super) fn finish_buffers(m: &ModelDims, head_tile: usize, o_half_cols: usize) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    let (h, hd, rd) = (m.heads, m.head_dim, m.rope_dim);
    let (tile, rope_tile) = (head_tile * hd, head_tile * rd);
    // o rows with half columns are read as they are and widened into one f32 tile
    let (o_row, o) = o_row(m, o_half_cols);
    let o_tile = head_tile * o_row;
    let widened = (o != F32).then(|| row("o_f32", Ub, F32, tile, 1, None));
    [row("o", Ub, o, o_tile, 2, Some(o_tile))]
        .into_iter()
        .chain(widened)
        .chain([
            row("out", Ub, Bf16, tile, 2, Some(hd)),
            row("denom", Ub, F32, h, 1, Some(h)),
            row("cos_row", Ub, Bf16, rd / 2, 1, None),
            row("sin_row", Ub, Bf16, rd / 2, 1, None),
            row("trig", Ub, F32, 3 * rd / 2, 1, None),
            row("scales", Ub, F32, head_tile, 1, None),
            row("spread", Ub, F32, head_tile * 8, 1, None),
            row("rope_offsets", Ub, I32, 3 * rd, 1, None),
            row("rope_tables", Ub, F32, 2 * rd, 1, None),
            row("rope_swap", Ub, F32, rd, 1, None),
            row("partners", Ub, I32, rope_tile, 1, None),
            row("swapped", Ub, F32, rope_tile, 1, None),
        ])
        .collect()
}

/// Per-token workspace dims: `[t, dims...]`.
pub(super) fn per_token(dims: &[usize]) -> Vec<Dim> {
    let mut v = vec![Dim::Var("t")];
    v.extend(dims.iter().map(|&n| Dim::Const(n)));
    v
}

/// The parameters of a further source's mixed kernel (`attention_compressed.h`,
/// `attention_indexed.h`): the dims, its bound on the rows it reads (`rows`), the tiles
/// `[heads, kv_rows, d]`, its own `extra` and the softmax scale.
pub(super) fn further_params(
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

/// C tiles of `HeadTileMmad` in L0C (`HEAD_TILE_C_BUFFERS` of `dsv4/head_tile_mmad.h`): the
/// products run ahead of the Fixpipe.
const C_BUFFERS: usize = 4;

/// The L0 tiles of `HeadTileMmad` (`dsv4/head_tile_mmad.h`): k chunks of `d` or `kv_rows`
/// over a head tile padded to a fractal, in two A and B tiles and [`C_BUFFERS`] C tiles.
pub(super) fn head_tile_l0(head_tile: usize, kv_tile: usize, d_tile: usize) -> Vec<Buffer> {
    use DType::*;
    use Mem::*;
    let (m_pad, l0_k) = (head_tile.next_multiple_of(16), d_tile.max(kv_tile));
    vec![
        row("a_l0", L0a, Bf16, m_pad * l0_k, 2, None),
        row("b_l0", L0b, Bf16, d_tile * kv_tile, 2, None),
        row("c_l0", L0c, F32, m_pad * l0_k, C_BUFFERS, None),
    ]
}

/// The running statistics a further source merges with `OnlineRescale`
/// (`dsv4/online_softmax.h`), a value per head of the AIV (`stats` of them): max and
/// denominator (copied in and out `copy` values at a time; one per item of the `states` the
/// kernel holds at once), the tile's max and sum, alpha and beta.
pub(super) fn running_stats(stats: usize, copy: usize, slabs: usize, states: usize) -> Vec<Buffer> {
    use DType::F32;
    use Mem::Ub;
    vec![
        row("run_max", Ub, F32, stats, states, Some(copy)),
        row("run_denom", Ub, F32, stats, states, Some(copy)),
        row("tile_max", Ub, F32, stats, 1, None),
        row("tile_sum", Ub, F32, stats, 1, None),
        row("alpha", Ub, F32, slabs * stats, 1, None),
        row("beta", Ub, F32, slabs * stats, 1, None),
    ]
}

/// The power of two the attention's o is scaled down by so that its columns before the
/// rope dims can leave the cube in half (`O_SHIFT`, `dsv4/attention_softmax.h`; `OutRows` in
/// `dsv4/head_tile_mmad.h`): [`lanes_shift`] of the most lanes one values product sums, the
/// window's or a further source's piece (`further_lanes`: a compressed chunk, an indexed
/// tile; its parts and the o it continues share the scale). It cuts the Fixpipe's largest
/// write, the further sources' and the finish's reads of o by 7/16 at FLASH dims (1152 of
/// 2048 bytes a row).
pub(super) fn o_shift(window: usize, further_lanes: usize) -> usize {
    lanes_shift(window.max(further_lanes))
}

/// A further source's rows (its parts, and the o it continues) for [`o_shift`] `shift`: the
/// half columns and a row in halves.
pub(super) fn part_rows(m: &ModelDims, shift: usize) -> (usize, usize) {
    let half_cols = o_half_cols(m, shift);
    (half_cols, o_row(m, half_cols).0)
}

/// The least `s` with `2^s >= lanes`: a values product over at most `lanes` probabilities
/// <= 1, scaled by 2^-s, is at most max |v| (half's range holds it).
pub(super) fn lanes_shift(lanes: usize) -> usize {
    lanes.next_power_of_two().trailing_zeros() as usize
}

/// The columns of an o row (or a further source's part) in half for [`o_shift`] `shift`:
/// those the finish does not rotate (a rotation's cancellation would show half's rounding),
/// or none.
pub(super) fn o_half_cols(m: &ModelDims, shift: usize) -> usize {
    if shift > 0 {
        m.head_dim - m.rope_dim
    } else {
        0
    }
}

/// An o row (a head's) for `half_cols` half columns, in elements of its type: `head_dim`
/// f32, or the half columns and then the others' f32 bits as pairs of halves.
pub(super) fn o_row(m: &ModelDims, half_cols: usize) -> (usize, DType) {
    match half_cols {
        0 => (m.head_dim, DType::F32),
        n => (n + 2 * (m.head_dim - n), DType::F16),
    }
}

/// The values product's parameters: the cube's and the half columns of its o rows.
fn with_o_rows(
    mut params: Vec<(&'static str, Value)>,
    m: &ModelDims,
    shift: usize,
) -> Vec<(&'static str, Value)> {
    params.push(("O_HALF_COLS", Value::U32(o_half_cols(m, shift) as u32)));
    params
}

/// What a shift adds to the names of the kernels it changes.
pub(super) fn o_tag(shift: usize) -> String {
    if shift > 0 {
        format!("_oh{shift}")
    } else {
        String::new()
    }
}

/// Rows of the window attention's per-request union (a token's window plus one new row
/// per later token of its request), rounded up to whole 16-row fractals.
pub fn union_rows(window: usize, decode_seq: usize) -> usize {
    (window + decode_seq - 1).next_multiple_of(16)
}

/// The window's four kernels (scores, softmax, values, finish) for tiles `[heads, kv_rows,
/// d]`, o scaled by 2^-`shift` ([`o_shift`]); with a further source the softmax also hands
/// each head's max on.
pub(super) fn kernels(
    p: &Plan,
    [head_tile, kv_tile, d_tile]: [usize; 3],
    with_further: bool,
    shift: usize,
) -> [Kernel; 4] {
    let m = &p.model;
    let (heads, hd, window) = (m.heads, m.head_dim, p.attention.window);
    let seq = p.shape.decode_seq;
    let union = union_rows(window, seq);
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
        ("UNION_BUFFERS", u32(1)),
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
        parts: Vec::new(),
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
            "attn_window_softmax{max_tag}_h{heads}_d{hd}_w{window}_s{seq}_ht{head_tile}{}",
            o_tag(shift)
        ),
        doc: "window attention softmax: lane mask, bf16 probabilities, sink denominators".into(),
        block: "attention_softmax.h",
        class: "AttentionSoftmax",
        cores: Cores::Aiv,
        params: softmax_params(p, head_tile, shift),
        args: softmax_args,
        buffers: softmax_buffers(heads, window, union, head_tile),
        parts: Vec::new(),
    };
    let values = Kernel {
        name: format!("attn_window_values_{cube_tag}{}", o_tag(shift)),
        doc: if shift > 0 {
            "window attention values probs · union per request (o rows in half but the rope dims, scaled by the probabilities' 2^-O_SHIFT)"
        } else {
            "window attention values probs · union per request (f32)"
        }
        .into(),
        block: "attention_cube.h",
        class: "AttentionValues",
        cores: Cores::Aic,
        params: with_o_rows(cube_params, m, shift),
        args: [&["probs"][..], &cube_args, &["o"]].concat(),
        buffers: cube_buffers,
        parts: Vec::new(),
    };
    // the finish on the largest tile of heads that fits UB (the query tile's, or a half)
    let finish = finish_tiles(head_tile)
        .map(|tile| finish(p, tile, shift))
        .find(|k| k.bytes_in(Mem::Ub, p.chip) <= p.chip.capacity(Mem::Ub))
        .unwrap_or_else(|| finish(p, head_tile, shift));
    [scores, softmax, values, finish]
}

/// Whether a kernel [`fused`] made finishes the heads.
pub(super) fn finishes(fused: &Kernel) -> bool {
    fused.parts.len() == 3
}

/// The finish as a part of the attention's last launch (`AttentionFinish::Heads`) on tiles of
/// `head_tile` heads, its o scaled by [`o_shift`] `shift`.
pub(super) fn finish_part(p: &Plan, head_tile: usize, shift: usize) -> Kernel {
    Kernel {
        args: Vec::new(),
        ..finish(p, head_tile, shift)
    }
}

/// The finish's tiles of heads for query tiles of `head_tile`, largest first: the query
/// tile and its halves while they are whole 8-head blocks (per-head f32 scales in whole
/// 32-byte blocks; each divides the heads as the query tile does). The finish only
/// streams its tile's rows, so a smaller one costs little where the larger does not fit UB.
pub(super) fn finish_tiles(head_tile: usize) -> impl Iterator<Item = usize> {
    std::iter::successors(Some(head_tile), |t| Some(t / 2)).take_while(|t| *t > 0 && t % 8 == 0)
}

/// Whether `finish` fits in UB beside `kernel` on one TPipe (a block of
/// `kernel_plan::PARTS_AT_ONCE` holds both).
pub(super) fn fits_beside(p: &Plan, kernel: &Kernel, finish: &Kernel) -> bool {
    let ub = |k: &Kernel| k.bytes_in(Mem::Ub, p.chip);
    ub(kernel) + ub(finish) <= p.chip.capacity(Mem::Ub)
}

/// `kernel` with `finish` as a second part (`Class<P0, P1>`), named `name`, taking `args`
/// after its own: the launch that finishes the heads it completes.
pub(super) fn finishing(
    kernel: Kernel,
    finish: Kernel,
    name: String,
    args: &[&'static str],
) -> Kernel {
    Kernel {
        name,
        doc: format!("{}, then its heads finished", kernel.doc),
        block: kernel.block,
        class: kernel.class,
        cores: kernel.cores,
        params: Vec::new(),
        args: [&kernel.args[..], args].concat(),
        buffers: Vec::new(),
        parts: vec![
            Kernel {
                args: Vec::new(),
                ..kernel
            },
            finish,
        ],
    }
}

/// What a launch that finishes adds to its name: the finish's dims.
pub(super) fn finish_tag(p: &Plan) -> String {
    let m = &p.model;
    let positions = p.rope.table == RopeTable::Positions;
    format!(
        "_r{}_hpg{}_tpad{}{}",
        m.rope_dim,
        m.heads_per_group,
        p.shape.t_pad,
        if positions { "_positions" } else { "" }
    )
}

/// The arguments a launch that finishes takes after its o and denominators.
pub(super) fn finish_args(p: &Plan) -> Vec<&'static str> {
    if p.rope.table == RopeTable::Positions {
        vec!["freqs_cos", "freqs_sin", "positions", "packed"]
    } else {
        vec!["freqs_cos", "freqs_sin", "packed"]
    }
}

/// The tensors bound to [`finish_args`].
pub(super) fn finish_binds(p: &Plan) -> Vec<&'static str> {
    if p.rope.table == RopeTable::Positions {
        vec!["freqs_cos", "freqs_sin", "position_ids", "o_packed_heads"]
    } else {
        vec!["freqs_cos", "freqs_sin", "o_packed_heads"]
    }
}

/// The finish kernel (`attention_finish.h`) on tiles of `head_tile` heads; with `rope.table:
/// positions` (CSA) token t de-rotates with row `position_ids[t]` of the full `[max_positions,
/// rope_dim]` tables (`dsv4/rope.h` RopeRow), the same on-chip buffers (the position is a
/// scalar GM read). Its o rows are f32, or [`o_row`]'s scaled by 2^-`shift` ([`o_shift`]).
fn finish(p: &Plan, head_tile: usize, shift: usize) -> Kernel {
    let m = &p.model;
    let (heads, hd, t_pad) = (m.heads, m.head_dim, p.shape.t_pad);
    let positions = p.rope.table == RopeTable::Positions;
    let u32 = |v: usize| Value::U32(v as u32);
    Kernel {
        name: format!(
            "attn_finish_h{heads}_d{hd}_r{}_hpg{}_tpad{t_pad}_ht{head_tile}{}{}",
            m.rope_dim,
            m.heads_per_group,
            if positions { "_positions" } else { "" },
            o_tag(shift)
        ),
        doc: "attention output: o / denom, inverse RoPE on the rope dims, bf16, heads packed by group"
            .into(),
        block: "attention_finish.h",
        class: "AttentionFinish",
        cores: Cores::Aiv,
        params: vec![
            ("HEADS", u32(heads)),
            ("HEAD_DIM", u32(hd)),
            ("RD", u32(m.rope_dim)),
            ("HEADS_PER_GROUP", u32(m.heads_per_group)),
            ("T_PAD", u32(t_pad)),
            ("HEAD_TILE", u32(head_tile)),
            ("POSITIONS", Value::Bool(positions)),
            ("O_SHIFT", u32(shift)),
            ("O_HALF_COLS", u32(o_half_cols(m, shift))),
        ],
        args: [&["o", "denom"][..], &finish_args(p)].concat(),
        buffers: finish_buffers(m, head_tile, o_half_cols(m, shift)),
        parts: Vec::new(),
    }
}

/// `attention_softmax.h`'s parameters for query tiles of `head_tile` heads, probabilities
/// scaled by 2^-`shift` ([`o_shift`]).
fn softmax_params(p: &Plan, head_tile: usize, shift: usize) -> Vec<(&'static str, Value)> {
    let u32 = |v: usize| Value::U32(v as u32);
    let (window, seq) = (p.attention.window, p.shape.decode_seq);
    vec![
        ("HEADS", u32(p.model.heads)),
        ("WINDOW", u32(window)),
        ("SEQ", u32(seq)),
        ("UNION_ROWS", u32(union_rows(window, seq))),
        ("HEAD_TILE", u32(head_tile)),
        ("SCALE", Value::F32(p.model.softmax_scale)),
        ("O_SHIFT", u32(shift)),
    ]
}

/// The window's scores, softmax and values as one mixed launch
/// (`dsv4/attention_window_fused.h`): the cube part is the scores kernel's, each vector
/// core runs the softmax on half of a query tile's heads (so `head_tile` must be whole
/// 16-head pairs of 8-head blocks); None where it is not. Where the window is the only
/// source (`with_further` false) the vector cores also finish their heads (a third part, the
/// finish on half tiles beside the softmax on its TPipe, where both fit in UB), so the layer
/// needs no finish launch: [`finishes`] says whether it does.
pub(super) fn fused(
    p: &Plan,
    head_tile: usize,
    scores: &Kernel,
    with_further: bool,
    shift: usize,
) -> Option<Kernel> {
    if !head_tile.is_multiple_of(16) {
        return None;
    }
    let m = &p.model;
    let (heads, window, seq) = (m.heads, p.attention.window, p.shape.decode_seq);
    let union = union_rows(window, seq);
    let half = head_tile / 2;
    let softmax = Kernel {
        name: format!(
            "attn_window_softmax_h{heads}_w{window}_s{seq}_ht{half}{}",
            o_tag(shift)
        ),
        doc: "half of a query tile's heads per vector core".into(),
        block: "attention_softmax.h",
        class: "AttentionSoftmax",
        cores: Cores::Aiv,
        params: softmax_params(p, half, shift),
        args: Vec::new(),
        buffers: softmax_buffers(heads, window, union, half),
        parts: Vec::new(),
    };
    let max_tag = if with_further { "_max" } else { "" };
    let mut args = vec![
        "q",
        "kv_cache",
        "swa_indices",
        "swa_lens",
        "scores",
        "attn_sink",
        "probs",
        "denom",
    ];
    if with_further {
        args.push("row_max");
    }
    args.push("o");
    // the cube part is the scores kernel's, its values writing o rows as the values kernel's
    let tag = format!(
        "{}{}",
        scores.name.trim_start_matches("attn_window_scores_"),
        o_tag(shift)
    );
    let mut parts = vec![
        with_two_unions(
            Kernel {
                args: Vec::new(),
                params: with_o_rows(scores.params.clone(), m, shift),
                ..scores.clone()
            },
            p.chip,
        ),
        softmax,
    ];
    let (mut name, mut doc) = (
        format!("attn_window{max_tag}_{tag}"),
        "window attention in one mixed launch: scores on the cube, softmax on the vector cores, values on the cube, tile by tile".to_string(),
    );
    let finish = finish_part(p, half, shift);
    if !with_further && fits_beside(p, &parts[1], &finish) {
        name = format!("attn_window_finish_{tag}{}", finish_tag(p));
        doc.push_str(", each tile's heads finished on the vector cores");
        args.extend(finish_args(p));
        parts.push(finish);
    }
    Some(Kernel {
        name,
        doc,
        block: "attention_window_fused.h",
        class: "AttentionWindowFused",
        cores: Cores::Mix,
        params: Vec::new(),
        args,
        buffers: Vec::new(),
        parts,
    })
}

/// The fused launch's cube part with a second union buffer where L1 holds it: the next
/// item's union then gathers while this item's tiles run (`BeginUnion` in
/// `dsv4/attention_cube.h`).
fn with_two_unions(mut cube: Kernel, chip: &Chip) -> Kernel {
    let mut two = cube.buffers.clone();
    for b in two.iter_mut().filter(|b| b.name == "union") {
        b.elems *= 2;
    }
    if budget::bytes_in(&two, Mem::L1, chip) <= chip.capacity(Mem::L1) {
        cube.buffers = two;
        for (name, v) in cube.params.iter_mut() {
            if *name == "UNION_BUFFERS" {
                *v = Value::U32(2);
            }
        }
    }
    cube
}

#[cfg(test)]
mod tests {
    use super::{exp_rows_scratch, finish_tiles, lanes_shift, o_shift};

    #[test]
    fn products_scale_by_the_least_power_of_two_reaching_their_lanes() {
        // FLASH: the window's and CSA's tiles of 128 lanes, HCA's chunks of 352 rows
        assert_eq!(lanes_shift(128), 7);
        assert_eq!(lanes_shift(129), 8);
        assert_eq!(lanes_shift(352), 9);
        // o shares one scale with the further source's parts: the larger product's
        assert_eq!(o_shift(128, 0), 7);
        assert_eq!(o_shift(128, 352), 9);
        assert_eq!(o_shift(256, 128), 8);
    }

    #[test]
    fn the_finish_halves_its_tile_down_to_whole_blocks() {
        assert_eq!(finish_tiles(32).collect::<Vec<_>>(), [32, 16, 8]);
        assert_eq!(finish_tiles(24).collect::<Vec<_>>(), [24]);
        assert_eq!(finish_tiles(8).collect::<Vec<_>>(), [8]);
    }

    #[test]
    fn only_rows_wider_than_a_repeat_fold() {
        // 16 rows of the 144-lane union fold into 16 × 64; a row of one repeat reduces as it is
        assert_eq!(exp_rows_scratch(16, 144), 16 * 64);
        assert_eq!(exp_rows_scratch(8, 64), 64);
        assert_eq!(exp_rows_scratch(8, 2048), 2048);
    }
}
