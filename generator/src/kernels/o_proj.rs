//! Kernels of stage o_proj (swa.md §3.7–3.8): per group, wo_a (bf16 cube matmul, f32
//! latent), per-(token, group) int8 quantisation, the exact int8 wo_b product of the
//! group's column block, then the dequantised sum over groups in ascending order.
//!
//! TP 1 projects every group of `o_packed_heads` and rounds the sum to bf16 (`attn_out`).
//! TP > 1 projects the rank's local groups of `attention_local` (the all-to-all's output,
//! `tp · t` group tokens per slab) into the f32 partial `o_partial` that the reduce-scatter
//! sums. Both read the runtime row count `group_t` (= t at TP 1), so the kernels of
//! equal-shaped degrees are shared.

use super::gemm::{self, BLayout, Matmul, Operands, Rows};
use super::{Builder, Cores, Kernel, Value};
use crate::plan::{DType, Dim, StagePlan};

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    let p = b.plan;
    let (m, sh) = (&p.model, &p.shape);
    let (lora, gin, hidden) = (m.o_lora_rank, m.o_group_in, m.hidden);
    let groups = sh.local_o_groups;
    // Capacity rows of a group slab: T_PAD at TP 1, GROUP_T_PAD (= tp · T_PAD) beyond; the
    // runtime rows are group_t (≤ tp · LOCAL_T, the capacity the work split is planned for).
    let rows = sh.group_t_pad;
    let max_rows = sh.tp * sh.local_t;
    let tile_rows = tile(s, "tokens");
    // The combine's one-row tiles, sized in the stage budget.
    let cols = s
        .buffers
        .iter()
        .find(|b| b.name == "combine_acc")
        .map(|b| b.elems)
        .unwrap_or_else(|| unreachable!("o_proj budget has no combine_acc row"));

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
    let row_tiles = groups * max_rows / tile_rows;
    if gemm::launch(b, s, &wo_a, [input, "wo_a", "o_latent"]).is_none() {
        return;
    }
    b.launch(
        s.kind,
        quant(groups, rows, lora, tile_rows),
        aiv(row_tiles),
        &["o_latent", "o_i8", "o_scale"],
    );
    if gemm::launch(b, s, &wo_b, ["o_i8", "wo_b", "o_acc"]).is_none() {
        return;
    }
    b.launch(
        s.kind,
        combine(groups, rows, hidden, cols, sh.tp == 1),
        aiv(max_rows * (hidden / cols)),
        &["o_acc", "o_scale", "wo_b_scale", out],
    );
}

/// A tile size of the stage's spec tiling (validation guarantees every key).
pub(super) fn tile(s: &StagePlan, name: &str) -> usize {
    s.tiles
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, v)| v)
        .unwrap_or_else(|| unreachable!("stage {} has no tile {name}", s.name()))
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
    }
}
