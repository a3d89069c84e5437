//! CSA's indexed source (`dsv4/attention_indexed.h`): one mixed launch continuing every
//! head's online softmax over the compressed rows its token's top-k list selects, and with
//! fewer tokens than core groups the combine of its splits over KV.

use abi::{DType, Dim};

use super::combine::{Split, VH};
use super::window::{
    exp_rows_scratch, further_params, head_tile_l0, part_rows, per_token, running_stats,
};
use crate::budget::{self, Buffer, row};
use crate::chip::{Chip, Mem};
use crate::kernel_plan::{Builder, Cores, Kernel};
use crate::plan::Plan;

/// Slabs of GM scratch (scores, probs, part) and of the merge's scales: consecutive tiles
/// alternate, so the cube computes one tile's scores while the AIV works on the previous.
const SLABS: usize = 2;

/// The indexed source (hca_csa.md §6.3): one mixed launch continuing every head's online
/// softmax over the compressed rows its token's top-k list selects, a tile of `kv_tile`
/// slots at a time (`dsv4/attention_indexed.h`), between the window values and the finish.
/// Where a token has more than one tile, the launch takes every core group, splits tokens
/// over KV when they are fewer than the groups, and `attn_combine_idx` merges the splits.
/// The window's o and the tiles' parts are scaled by 2^-`shift` ([`window::o_shift`] over
/// `kv_tile`). Whether the combine finishes the heads too (fused: the layer then has no
/// finish launch).
///
/// [`window::o_shift`]: super::window::o_shift
pub(super) fn launch(
    b: &mut Builder,
    ratio: usize,
    [head_tile, kv_tile, d_tile]: [usize; 3],
    shift: usize,
) -> bool {
    let p = b.plan;
    let m = &p.model;
    let (heads, hd, seq, topk) = (m.heads, m.head_dim, p.shape.decode_seq, p.attention.topk);
    b.workspace("topk_idx", per_token(&[topk]), DType::I32);
    b.workspace("attn_max", per_token(&[heads]), DType::F32);
    let tiles = topk.div_ceil(kv_tile);
    let groups = Split::groups(tiles, p.shape.local_t, 1, p.chip.aic_cores);
    let split = Split {
        tag: "idx",
        part: "attn_idx_part",
        stats: "attn_idx_stats",
        unit_rows: heads,
        per_token: true,
        groups,
        max_splits: tiles,
        parts: SLABS,
    };
    // Per group: a tile's scores and probs in each slab, and the `SplitSlots`.
    let group_rows = vec![
        Dim::Const(groups * SLABS),
        Dim::Const(heads),
        Dim::Const(kv_tile),
    ];
    b.workspace("attn_idx_scores", group_rows.clone(), DType::F32);
    b.workspace("attn_idx_probs", group_rows, DType::Bf16);
    split.workspaces(b, hd);
    let l1 = CubeL1::new(heads, hd, head_tile, kv_tile);
    // parts (and the window's o) leave the cube with their nope columns in half, the
    // probabilities scaled
    let (half_cols, part_row) = part_rows(m, shift);
    let (vector, states) = vector_ub(heads, hd, part_row, topk, kv_tile, p.chip);
    let row_buffers = l1.row_buffers(p.chip.l1_bytes);
    let kernel = Kernel {
        name: format!(
            "attn_indexed_h{heads}_d{hd}_s{seq}_bs{}_r{ratio}_k{topk}_ht{head_tile}_kv{kv_tile}_dk{d_tile}_g{groups}_rb{row_buffers}_st{states}_ph{shift}",
            p.pools.block_size
        ),
        doc: "indexed-row attention: online-softmax merge of each token's top-k compressed rows \
              into the window's o and denominators"
            .into(),
        block: "attention_indexed.h",
        class: "AttentionIndexed",
        cores: Cores::Mix,
        params: further_params(
            p,
            ratio,
            ("TOPK", topk),
            [head_tile, kv_tile, d_tile],
            &[
                ("GROUPS", groups),
                ("ROW_BUFFERS", row_buffers),
                ("STATE_BUFFERS", states),
                ("O_SHIFT", shift),
                ("O_HALF_COLS", half_cols),
            ],
        ),
        args: vec![
            "q",
            "cmp_kv",
            "cmp_table",
            "positions",
            "topk_idx",
            "scores",
            "probs",
            "part",
            "stats",
            "o",
            "denom",
            "row_max",
        ],
        buffers: [
            l1.buffers(row_buffers),
            head_tile_l0(head_tile, kv_tile, d_tile),
            vector,
        ]
        .concat(),
        parts: Vec::new(),
    };
    b.launch(
        kernel,
        groups as u32,
        &[
            "q",
            "cmp_kv",
            "cmp_block_table",
            "position_ids",
            "topk_idx",
            "attn_idx_scores",
            "attn_idx_probs",
            split.part,
            split.stats,
            "attn_o",
            "attn_denom",
            "attn_max",
        ],
    );
    split.combine(b, heads, hd, head_tile, shift)
}

/// Why `dsv4/attention_indexed.h` cannot run this plan, if it cannot: heads in groups of 8
/// (whole blocks of per-head f32), slots in whole fractals, the ABI's compressed-row inputs.
pub(super) fn unmet(p: &Plan, [_, _, d_tile]: [usize; 3]) -> Option<String> {
    let topk = p.attention.topk;
    crate::kernel_plan::unmet([
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

/// `attention_indexed.h`'s L1, in bf16 elements: a token's q in head tiles (rows padded to
/// a fractal), a tile of selected rows, a probability-row tile over a tile's lanes. (Its L0:
/// the tiles of `HeadTileMmad`, k chunks of `d` or `kv_rows`.)
struct CubeL1 {
    q: usize,
    rows: usize,
    a_tile: usize,
}

impl CubeL1 {
    fn new(heads: usize, head_dim: usize, head_tile: usize, kv_tile: usize) -> Self {
        let m_pad = head_tile.next_multiple_of(16);
        CubeL1 {
            q: heads / head_tile * m_pad * head_dim,
            rows: kv_tile * head_dim,
            a_tile: m_pad * kv_tile,
        }
    }

    /// Tiles of rows in flight: three where L1 holds them (two gather while the cube works
    /// on one), else two.
    fn row_buffers(&self, l1_bytes: usize) -> usize {
        let bytes: usize = self.buffers(3).iter().map(|b| b.bytes() * b.count).sum();
        if bytes <= l1_bytes { 3 } else { 2 }
    }

    fn buffers(&self, row_buffers: usize) -> Vec<Buffer> {
        use DType::Bf16;
        use Mem::L1;
        vec![
            row("q", L1, Bf16, self.q, 1, None),
            row("rows", L1, Bf16, self.rows, row_buffers, None),
            row("a_tile", L1, Bf16, self.a_tile, 2, None),
        ]
    }
}

/// The AIV's UB for `attention_indexed.h` with the most state buffers that fit `chip` (two:
/// an item's state loads while the previous item's last part is on the cube; else one, which
/// the budget check refuses if even that does not fit), and their count.
fn vector_ub(
    heads: usize,
    head_dim: usize,
    part_row: usize,
    topk: usize,
    kv_tile: usize,
    chip: &Chip,
) -> (Vec<Buffer>, usize) {
    let with = |states| vector_buffers(heads, head_dim, part_row, topk, kv_tile, states);
    let two = with(2);
    if budget::bytes_in(&two, Mem::Ub, chip) <= chip.capacity(Mem::Ub) {
        (two, 2)
    } else {
        (with(1), 1)
    }
}

/// `attention_indexed.h`'s AIV UB: a token's top-k slots (as read, and their f32 validity
/// and bias), 8 heads of scores in and probabilities out over a tile's lanes, the running
/// statistics and o of the AIV's heads (the busier AIV's: half the 8-head groups, rounded
/// up; and a group's rows more as the cube leaves them: the window's load a group ahead)
/// for `states` items, and a group's rows of a tile's part (`part_row` halves each as the
/// cube leaves them, two: the next group's load while one merges; and a repeat of columns
/// of each widened) with the heads' part scales spread over a block each.
fn vector_buffers(
    heads: usize,
    head_dim: usize,
    part_row: usize,
    topk: usize,
    kv_tile: usize,
    states: usize,
) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    let (hd, tile) = (head_dim, VH * kv_tile);
    let stats = (heads / 8).div_ceil(2) * 8;
    let slots = 8.max(topk.div_ceil(kv_tile));
    [
        vec![
            row("index_row", Ub, I32, topk, 1, Some(topk)),
            row("valid", Ub, F32, topk, 1, None),
            row("bias", Ub, F32, topk, 1, None),
            row("scores", Ub, F32, tile, 1, Some(tile)),
            row("probs", Ub, Bf16, tile, 1, Some(tile)),
            row(
                "reduce_tmp",
                Ub,
                F32,
                exp_rows_scratch(VH, kv_tile),
                1,
                None,
            ),
            row("row_stats", Ub, F32, slots * 8, 1, None),
        ],
        running_stats(stats, 8, SLABS, states),
        vec![
            row(
                "o",
                Ub,
                F32,
                stats * hd + VH * part_row / 2,
                states,
                Some(VH * hd),
            ),
            row("part", Ub, F16, VH * part_row, 2, Some(VH * part_row)),
            row("part_chunk", Ub, F32, VH * 64, 1, None),
            row("spread", Ub, F32, VH * 8, 1, None),
        ],
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::{CubeL1, vector_ub};
    use crate::chip::CHIPS;

    /// 910B's L1.
    const L1: usize = 512 * 1024;

    #[test]
    fn three_tiles_of_rows_where_l1_holds_them() {
        // FLASH: q 64 KiB, rows 128 KiB each, a_tile 4 KiB each: 456 KiB with three
        let flash = CubeL1::new(64, 512, 16, 128);
        assert_eq!(flash.row_buffers(L1), 3);
        // 128 heads (Pro): q 128 KiB; three tiles of rows would need 520 KiB
        let pro = CubeL1::new(128, 512, 16, 128);
        assert_eq!(pro.row_buffers(L1), 2);
        assert_eq!(flash.buffers(3)[1].count, 3);
    }

    #[test]
    fn two_items_state_where_ub_holds_them() {
        let chip = &CHIPS[0];
        // FLASH: o of 32 heads × 512 (64 KiB) and 8 mixed rows (9 KiB) twice beside ~35 KiB
        // of the rest
        let (buffers, states) = vector_ub(64, 512, 576, 512, 128, chip);
        assert_eq!(states, 2);
        let o = buffers.iter().find(|b| b.name == "o").unwrap();
        assert_eq!((o.count, o.bytes()), (2, 73 * 1024));
        // Pro: 64 heads' o is 128 KiB; two would need more than the 184 KiB
        assert_eq!(vector_ub(128, 512, 576, 1024, 128, chip).1, 1);
    }
}
