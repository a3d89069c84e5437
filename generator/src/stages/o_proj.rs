//! Stage o_proj (swa.md §3.7–3.8): per group, wo_a (bf16 cube matmul, f32
//! latent), per-(token, group) int8 quantisation, the exact int8 wo_b product of the
//! group's column block, then the dequantised sum over groups in ascending order.
//!
//! TP 1 projects every group of `o_packed_heads` and rounds the sum to bf16 (`attn_out`).
//! TP > 1 projects the rank's local groups of `attention_local` (the all-to-all's output,
//! `tp · t` group tokens per slab) into the f32 partial `o_partial` that the reduce-scatter
//! sums. Both read the runtime row count `group_t` (= t at TP 1), so the kernels of
//! equal-shaped degrees are shared.

use abi::{DType, Dim};

use super::kind::{Data, Kind, Tile, TileCheck, Tiled, tiling};
use crate::budget::{Buffer, row};
use crate::chip::Mem::Ub;
use crate::diag::Diagnostics;
use crate::kernel_plan::gemm::{self, BLayout, Matmul, Operands, Rows};
use crate::kernel_plan::{Builder, Cores, Kernel, Value};

pub struct OProj;

tiling! {
    /// Cube tile `m`×`n`×`k` of both products; `tokens` rows per quantisation pass.
    m, n, k, tokens
}

impl Kind for OProj {
    const NAME: &'static str = "o_proj";
    const NEEDS: &'static [Data] = &[Data::Grouped];
    const PRODUCES: &'static [Data] = &[Data::OPartial];
    type Spec = Tiled<Tiling>;
    type Params = Tiling<Tile>;

    fn read(spec: &Tiled<Tiling>, d: &mut Diagnostics) -> Tiling<Tile> {
        spec.tiling.value.read(d)
    }

    fn check(t: &Tiling<Tile>, c: &mut TileCheck) {
        let (m, s) = (&c.plan.model, &c.plan.shape);
        let ns = [(m.o_lora_rank, "o_lora_rank"), (m.hidden, "hidden")];
        let ks = [
            (m.o_group_in, "o_group_in"),
            (s.local_o_width, "local_o_width"),
        ];
        c.products([t.m, t.n, t.k, t.tokens], &ns, &ks);
    }

    fn plan(t: &Tiling<Tile>, b: &mut Builder) {
        let p = b.plan;
        let (m, sh) = (&p.model, &p.shape);
        let (lora, gin, hidden) = (m.o_lora_rank, m.o_group_in, m.hidden);
        let groups = sh.local_o_groups;
        // Capacity rows of a group slab: T_PAD at TP 1, GROUP_T_PAD (= tp · T_PAD) beyond; the
        // runtime rows are group_t (≤ tp · LOCAL_T, the capacity the work split is planned for).
        let rows = sh.group_t_pad;
        let max_rows = sh.tp * sh.local_t;
        let tile_rows = t.tokens.value;
        let tiles = [t.m.value, t.n.value, t.k.value];
        // The combine's one-row tiles, as its buffers are sized.
        let cols = combine_cols(
            m.hidden,
            m.o_groups,
            p.chip.ub_bytes,
            sh.tp * sh.local_t,
            p.chip.aiv_cores,
        );

        let (input, out) = if sh.tp == 1 {
            b.workspace(
                "o_packed_heads",
                vec![Dim::Const(m.o_groups * sh.t_pad), Dim::Const(gin)],
                DType::Bf16,
            );
            b.workspace(
                "attn_out",
                vec![Dim::Var("t"), Dim::Const(hidden)],
                DType::Bf16,
            );
            ("o_packed_heads", "attn_out")
        } else {
            b.workspace(
                "o_partial",
                vec![Dim::Const(rows), Dim::Const(hidden)],
                DType::F32,
            );
            ("attention_local", "o_partial")
        };
        let per_group = |width| vec![Dim::Const(groups), Dim::Const(rows), Dim::Const(width)];
        b.workspace("o_latent", per_group(lora), DType::F32);
        b.workspace("o_i8", per_group(lora), DType::I8);
        b.workspace(
            "o_scale",
            vec![Dim::Const(groups), Dim::Const(rows)],
            DType::F32,
        );
        b.workspace("o_acc", per_group(hidden), DType::I32);

        // wo_a per group: [rows, o_group_in] · wo_a[g]ᵀ → o_latent[g], bf16 → f32.
        let wo_a = Matmul {
            batch: groups,
            stride_a: rows * gin,
            stride_b: lora * gin,
            stride_c: rows * lora,
            ..Matmul::new(
                Operands::Bf16,
                BLayout::Nk,
                Rows::GroupTokens,
                max_rows,
                lora,
                gin,
            )
        };
        // wo_b per group: o_i8[g] · (the group's column block of wo_b)ᵀ → o_acc[g], exact i32.
        let wo_b = Matmul {
            batch: groups,
            ldb: groups * lora,
            stride_a: rows * lora,
            stride_b: lora,
            stride_c: rows * hidden,
            ..Matmul::new(
                Operands::I8,
                BLayout::Nk,
                Rows::GroupTokens,
                max_rows,
                hidden,
                lora,
            )
        };
        // The vector kernels split their tiles of the capacity rows over the AIV cores.
        let aiv = |tiles: usize| p.chip.aiv_cores.min(tiles) as u32;
        // group_quant's blocks own whole 8-row units (its o_scale rows in whole 32-byte blocks)
        let row_units = groups * max_rows / 8;
        if gemm::launch_alone(b, tiles, &wo_a, [input, "wo_a", "o_latent"]).is_none() {
            return;
        }
        b.launch(
            quant(groups, rows, lora, tile_rows),
            aiv(row_units),
            &["o_latent", "o_i8", "o_scale"],
        );
        if gemm::launch_alone(b, tiles, &wo_b, ["o_i8", "wo_b", "o_acc"]).is_none() {
            return;
        }
        b.launch(
            combine(groups, rows, hidden, cols, sh.tp == 1),
            aiv(max_rows * (hidden / cols)),
            &["o_acc", "o_scale", "wo_b_scale", out],
        );
    }
}

/// Columns of group_combine.h's one-row tiles: the widest divisor of `hidden` (whole
/// 32-byte blocks in bf16) whose buffers (7 rows of 4-byte values, one 32-byte block of
/// scales per group) fit `room` bytes of UB and whose tiles over `rows` rows still give each
/// of `cores` vector cores one; the widest that fits if none does, 16 if none fits (the
/// budget check then reports the overflow). Wide rows keep the vector instructions long
/// and few; a decode step's few rows need narrower ones to reach every core.
fn combine_cols(hidden: usize, groups: usize, room: usize, rows: usize, cores: usize) -> usize {
    let fits = |c: &usize| hidden.is_multiple_of(*c) && 7 * 4 * c + 32 * groups <= room;
    let widest = |enough: &dyn Fn(&usize) -> bool| {
        (16..=hidden)
            .step_by(16)
            .filter(|c| fits(c) && enough(c))
            .max()
    };
    widest(&|c| rows * (hidden / c) >= cores)
        .or_else(|| widest(&|_| true))
        .unwrap_or(16)
}

#[cfg(test)]
mod tests {
    use super::combine_cols;

    #[test]
    fn combine_tiles_reach_every_core_at_few_rows() {
        let ub = 184 * 1024;
        // 512 rows: whole 4096-column rows already make 512 tiles
        assert_eq!(combine_cols(4096, 8, ub, 512, 48), 4096);
        // 8 rows (a decode step): 512 columns make 64 tiles, 1024 only 32
        assert_eq!(combine_cols(4096, 8, ub, 8, 48), 512);
        // UB bounds the width first: 7 rows of 7168 4-byte columns (196 KiB) do not fit
        assert_eq!(combine_cols(7168, 16, ub, 512, 48), 3584);
    }
}

/// `dsv4/group_quant.h`: f32 rows `[groups, rows, k]` → int8 + dequant scale per row.
fn quant(groups: usize, rows: usize, k: usize, tile_rows: usize) -> Kernel {
    Kernel {
        name: format!("group_quant_g{groups}_r{rows}_k{k}_t{tile_rows}"),
        doc: "per-(group, token) int8 quantisation of the o_proj latent (scale 1/sq)".into(),
        block: "group_quant.h",
        class: "GroupQuant",
        cores: Cores::Aiv,
        params: vec![
            ("GROUPS", Value::U32(groups as u32)),
            ("ROWS", Value::U32(rows as u32)),
            ("K", Value::U32(k as u32)),
            ("TILE_ROWS", Value::U32(tile_rows as u32)),
        ],
        args: vec!["x", "q", "scale"],
        buffers: quant_buffers(k, tile_rows),
        parts: Vec::new(),
    }
}

/// `dsv4/group_combine.h`: Σ_g f32(p_g) · s_g, times wo_b_scale, to bf16 or f32, in
/// one-row tiles of `cols` columns.
fn combine(groups: usize, rows: usize, n: usize, cols: usize, bf16: bool) -> Kernel {
    let out = if bf16 { "bf16" } else { "f32" };
    Kernel {
        name: format!("group_combine_g{groups}_r{rows}_n{n}_c{cols}_{out}"),
        doc: format!("dequantised sum of the o_proj groups' int32 products, {out} out"),
        block: "group_combine.h",
        class: "GroupCombine",
        cores: Cores::Aiv,
        params: vec![
            ("GROUPS", Value::U32(groups as u32)),
            ("ROWS", Value::U32(rows as u32)),
            ("N", Value::U32(n as u32)),
            ("TILE_N", Value::U32(cols as u32)),
            ("OUT_BF16", Value::Bool(bf16)),
        ],
        args: vec!["p", "scale", "wo_b_scale", "out"],
        buffers: combine_buffers(groups, cols, bf16),
        parts: Vec::new(),
    }
}

/// group_quant.h's UB: a tile of `tile_rows` latent rows in (f32) and out (int8), quantised
/// at once (dsv4/quant.h QuantizeRows); their scales in whole blocks (moved with
/// DataCopyPad); the tile's f32 and f16 scratch, a block of scalars per row and the
/// ReduceMax scratch of a row as its doc sizes it (value and index per repeat).
fn quant_buffers(k: usize, tile_rows: usize) -> Vec<Buffer> {
    use DType::*;
    let tile = tile_rows * k;
    let reduce = (2 * k / 64).next_multiple_of(8);
    vec![
        row("x_in", Ub, F32, tile, 2, Some(tile)),
        row("q_out", Ub, I8, tile, 2, Some(tile)),
        row("scales", Ub, F32, tile_rows.next_multiple_of(8), 2, None),
        row("work", Ub, F32, tile, 1, None),
        // f16 staging between the f32 rne and int8 (2 bytes, sized as bf16)
        row("f16", Ub, Bf16, tile, 1, None),
        row("slot", Ub, F32, 8 * tile_rows, 1, None),
        row("reduce_tmp", Ub, F32, reduce, 1, None),
    ]
}

/// group_combine.h's UB for one-row tiles of `cols` columns: each group's products (i32)
/// in turn, the groups' scales (one 32-byte block each, moved with DataCopyPad), the tile
/// out (bf16 at TP 1, else f32), its wo_b_scale slice, the sum and one group's term (f32).
fn combine_buffers(groups: usize, cols: usize, bf16: bool) -> Vec<Buffer> {
    use DType::*;
    let c = cols;
    vec![
        row("products", Ub, I32, c, 2, Some(c)),
        row("scales", Ub, F32, groups * 8, 1, None),
        row("out", Ub, if bf16 { Bf16 } else { F32 }, c, 2, Some(c)),
        row("wo_b_scale", Ub, F32, c, 1, Some(c)),
        row("acc", Ub, F32, c, 1, None),
        row("term", Ub, F32, c, 1, None),
    ]
}
