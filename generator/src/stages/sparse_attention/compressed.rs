//! HCA's compressed source (`dsv4/attention_compressed.h`): one mixed launch continuing
//! each query row's online softmax over the request's compressed rows, chunk by chunk, and
//! where a request can have more chunks than one, the combine of its splits over KV.

use abi::{DType, Dim};

use super::combine::{Split, VH};
use super::window::{
    self, cube_buffers, exp_rows_scratch, further_params, part_rows, per_token, running_stats,
    union_rows,
};
use crate::budget::{Buffer, row};
use crate::chip::{Chip, Mem};
use crate::kernel_plan::{Builder, Cores, Kernel};
use crate::plan::{CompressorPlan, Plan};

/// Slabs of a group's part scratch and of the merge's scales: consecutive chunk steps
/// alternate, so the cube computes one step's part while the AIV merges the previous.
const SLABS: usize = 2;

/// The compressed source (hca_csa.md §6.2): one mixed launch continuing every query row's
/// online softmax over its request's compressed rows in chunks
/// (`dsv4/attention_compressed.h`), between the window values and the finish. When a
/// request's rows can span more than one chunk, the launch takes every core group and splits
/// requests over KV when they are fewer than the groups (a 1M request on every group), and
/// `attn_combine_cmp` merges the splits into the window's o and denominators.
/// The window's o and the chunks' parts are scaled by 2^-`shift` ([`window::o_shift`] over
/// [`chunk`]). Whether the launch or its combine finishes the heads too (fused: the layer
/// then has no finish launch).
pub(super) fn launch(
    b: &mut Builder,
    ratio: usize,
    [head_tile, kv_tile, d_tile]: [usize; 3],
    shift: usize,
) -> bool {
    let p = b.plan;
    let m = &p.model;
    let (heads, hd, seq) = (m.heads, m.head_dim, p.shape.decode_seq);
    let max_rows = p.pools.max_positions / ratio;
    let chunk = chunk(p, head_tile);
    let max_splits = max_rows.div_ceil(chunk);
    // Without splits over KV a request's heads spread over groups, in pieces of whole cube
    // and vector tiles (`HEAD_PIECE`).
    let head_pieces = heads / head_tile.max(VH);
    let groups = Split::groups(max_splits, p.shape.b, head_pieces, p.chip.aic_cores);
    let split = Split {
        tag: "cmp",
        part: "attn_cmp_part",
        stats: "attn_cmp_stats",
        unit_rows: seq * heads,
        per_token: false,
        groups,
        max_splits,
        parts: SLABS,
    };
    // Per group: two steps' scores and probs (consecutive steps alternate, so the cube can
    // make the next step's scores while the vector cores use this step's), and the
    // `SplitSlots`.
    let group_rows = |last: usize| {
        vec![
            Dim::Const(groups * SLABS * seq),
            Dim::Const(heads),
            Dim::Const(last),
        ]
    };
    // parts (and the window's o) leave the cube with their nope columns in half, the
    // probabilities scaled
    let (half_cols, part_row) = part_rows(m, shift);
    // The kernel's buffers with `slots` slots of scores and probabilities (`SCORE_BUFFERS`).
    let buffers = |slots| {
        [
            cube_buffers(("chunk", chunk), hd, head_tile, kv_tile, d_tile),
            vector_buffers(heads, hd, part_row, seq, chunk, slots),
        ]
        .concat()
    };
    b.workspace("attn_max", per_token(&[heads]), DType::F32);
    b.workspace("attn_cmp_scores", group_rows(chunk), DType::F32);
    b.workspace("attn_cmp_probs", group_rows(chunk), DType::Bf16);
    split.workspaces(b, hd);
    let kernel = Kernel {
        name: format!(
            "attn_compressed_h{heads}_d{hd}_s{seq}_bs{}_r{ratio}_max{max_rows}_ht{head_tile}_kv{kv_tile}_dk{d_tile}_ch{chunk}_g{groups}_ph{shift}",
            p.pools.block_size
        ),
        doc: "compressed-row attention: online-softmax merge of every visible compressed row \
              into the window's o and denominators, or into a split's partial"
            .into(),
        block: "attention_compressed.h",
        class: "AttentionCompressed",
        cores: Cores::Mix,
        params: further_params(
            p,
            ratio,
            ("MAX_ROWS", max_rows),
            [head_tile, kv_tile, d_tile],
            &[
                ("CHUNK", chunk),
                ("GROUPS", groups),
                ("O_SHIFT", shift),
                ("O_HALF_COLS", half_cols),
            ],
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
            "stats",
            "o",
            "denom",
        ],
        buffers: buffers(2),
        parts: Vec::new(),
    };
    let bind = [
        "q",
        "cmp_kv",
        "cmp_block_table",
        "position_ids",
        "kv_seq_lens",
        "attn_max",
        "attn_cmp_scores",
        "attn_cmp_probs",
        split.part,
        split.stats,
        "attn_o",
        "attn_denom",
    ];
    // Beside the finish one slot of scores and probabilities (`SCORE_BUFFERS`: its o queue
    // takes the vector cores' last V_MTE2 event ids).
    let one_slot = Kernel {
        buffers: buffers(1),
        ..kernel.clone()
    };
    if let Some(finishing) = finishing(p, &one_slot, split.can(), shift) {
        let finish_bind = ["freqs_cos", "freqs_sin", "o_packed_heads"];
        b.launch(
            finishing,
            groups as u32,
            &[&bind[..], &finish_bind].concat(),
        );
        return true;
    }
    b.launch(kernel, groups as u32, &bind);
    split.combine(b, heads, hd, head_tile, shift)
}

/// Compressed rows per chunk of the plan's compressed source for query tiles of `head_tile`
/// heads ([`compressed_chunk_rows`]).
pub(super) fn chunk(p: &Plan, head_tile: usize) -> usize {
    compressed_chunk_rows(
        p.model.head_dim,
        head_tile,
        union_rows(p.attention.window, p.shape.decode_seq),
        p.pools.block_size,
        p.attention.max_compressed_rows,
        p.chip,
    )
}

/// The compressed kernel that also finishes every item's heads (fused, where requests never
/// split over KV, so no combine follows, and the finish's buffers fit beside its own in UB);
/// None where it does not. The finish's RoPE rows by position read the kernel's own
/// `positions`.
fn finishing(p: &Plan, kernel: &Kernel, splits: bool, shift: usize) -> Option<Kernel> {
    let finish = window::finish_part(p, VH, shift);
    if !p.fuse || splits || !window::fits_beside(p, kernel, &finish) {
        return None;
    }
    let name = kernel
        .name
        .replacen("attn_compressed_", "attn_compressed_finish_", 1)
        + &window::finish_tag(p);
    Some(window::finishing(
        kernel.clone(),
        finish,
        name,
        &["freqs_cos", "freqs_sin", "packed"],
    ))
}

/// Why `dsv4/attention_compressed.h` cannot run this plan, if it cannot: the two AIVs of a
/// block split a request's tokens evenly, a tile is whole pages and whole fractals, the
/// cube's head tile is the window kernels'.
pub(super) fn unmet(
    p: &Plan,
    [_, kv_tile, d_tile]: [usize; 3],
    c: &CompressorPlan,
) -> Option<String> {
    let union = union_rows(p.attention.window, p.shape.decode_seq);
    crate::kernel_plan::unmet([
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

/// `attention_compressed.h`'s AIV UB (its AIC has [`cube_buffers`] with the chunk): 8
/// heads of one token's scores in and probabilities out over a chunk's lanes, `slots` of
/// each (two: the next heads' scores load while these are worked on), per-lane
/// constants, the running statistics of its half of a request's tokens, and 8 head rows
/// of o (f32 for a split, else as the cube leaves them) and of the chunk's part in
/// (`part_row` halves each), and of o out, two of each (the merge loads the next rows while
/// it works on these), with the heads' scales spread over a block each; the merge's f32 rows
/// and a repeat of them (the window's o widens into the sum a repeat at a time).
fn vector_buffers(
    heads: usize,
    head_dim: usize,
    part_row: usize,
    seq: usize,
    chunk: usize,
    slots: usize,
) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    let (hd, tile, stats) = (head_dim, VH * chunk, seq / 2 * heads);
    [
        vec![
            row("scores", Ub, F32, tile, slots, Some(tile)),
            row("probs", Ub, Bf16, tile, slots, Some(tile)),
            row("lane", Ub, F32, chunk, 1, None),
            row("bias", Ub, F32, chunk, 1, None),
            row("reduce_tmp", Ub, F32, exp_rows_scratch(VH, chunk), 1, None),
            row("row_stats", Ub, F32, VH * 8, 1, None),
        ],
        running_stats(stats, stats, SLABS, 1),
        vec![
            row("o_in", Ub, F32, VH * hd, 2, Some(VH * hd)),
            row("part_in", Ub, F16, VH * part_row, 2, Some(VH * part_row)),
            row("o_out", Ub, F32, VH * hd, 2, Some(VH * hd)),
            row("wide", Ub, F32, VH * hd, 1, None),
            row("chunk_f32", Ub, F32, VH * 64, 1, None),
            row("spread", Ub, F32, VH * 8, 1, None),
        ],
    ]
    .concat()
}

/// Compressed rows per chunk of `attention_compressed.h` (0 without compressed rows): as
/// many whole pages (and fractals) as L1 holds beside the two head-tile rows, at most
/// [`MAX_CHUNK`] (its UB rows grow with it) and no more than `max_rows` need. Every chunk
/// moves a request's o and part through GM once, so fewer, larger chunks move less; but
/// where a request can span several chunks, no more than an even share of `max_rows` over
/// the cube cores, so that one long request splits over every core group (FLASH at 1M:
/// 8192 rows in 24 chunks of 352, not 19 of 448).
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
    if chunk < max_rows {
        chunk = chunk.min(max_rows.div_ceil(chip.aic_cores).next_multiple_of(unit));
    }
    chunk
}

/// The largest compressed-row chunk (f32 scores of 8 heads: 16 KiB of UB).
pub const MAX_CHUNK: usize = 512;

#[cfg(test)]
mod tests {
    use super::compressed_chunk_rows;
    use crate::chip::CHIPS;

    #[test]
    fn a_long_request_splits_over_every_cube_core() {
        let chip = &CHIPS[0];
        // FLASH (window union 144 rows): L1 would hold 448 rows, but 8192 (1M / 128) go in
        // 24 chunks of 352, one per cube core
        assert_eq!(compressed_chunk_rows(512, 16, 144, 32, 8192, chip), 352);
        assert_eq!(8192usize.div_ceil(352), chip.aic_cores);
        // a capacity that fits one chunk stays one chunk
        assert_eq!(compressed_chunk_rows(512, 16, 144, 32, 128, chip), 128);
    }
}
