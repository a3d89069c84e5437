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
use crate::budget::{self, Buffer, row};
use crate::chip::Chip;
use crate::chip::Mem::Ub;
use crate::diag::Diagnostics;
use crate::kernel_plan::gemm::{self, BLayout, Matmul, Operands, Rows};
use crate::kernel_plan::{Builder, Cores, Kernel, Prologue, Value};

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
        let Some(split) = gemm::launch_alone(b, tiles, &wo_a, [input, "wo_a", "o_latent"]) else {
            return;
        };
        let quant = quant(groups, rows, lora, tile_rows, None);
        let offer = gemm::slice_sum_after(&wo_a, &split)
            .and_then(|sum| with_slice_sum(&sum, &quant, aiv(row_units), p.chip));
        b.launch(quant, aiv(row_units), &["o_latent", "o_i8", "o_scale"]);
        if let Some(offer) = offer {
            b.prologue(offer);
        }
        if gemm::launch_alone(b, tiles, &wo_b, ["o_i8", "wo_b", "o_acc"]).is_none() {
            return;
        }
        let combine = combine(groups, rows, hidden, cols, sh.tp == 1);
        // on column ranges too, so wo_b's ranges may run beside it (gemm::overlap)
        let ranged = gemm::by_columns(&combine, "o_acc", hidden, cols, |n| {
            aiv(max_rows * (n / cols))
        });
        if let Some(ranged) = ranged {
            b.by_columns(ranged);
        }
        b.launch(
            combine,
            aiv(max_rows * (hidden / cols)),
            &["o_acc", "o_scale", "wo_b_scale", out],
        );
    }
}

/// Columns of group_combine.h's one-row tiles: the widest divisor of `hidden` (whole
/// 32-byte blocks in bf16) whose buffers ([`combine_buffers`]: 5 rows of 4-byte values and
/// the products', a 32-byte block of scales per group and 8 more it is spread over) fit
/// `room` bytes of UB and whose tiles over `rows` rows still give each
/// of `cores` vector cores one; the widest that fits if none does, 16 if none fits (the
/// budget check then reports the overflow). Wide rows keep the vector instructions long
/// and few; a decode step's few rows need narrower ones to reach every core.
fn combine_cols(hidden: usize, groups: usize, room: usize, rows: usize, cores: usize) -> usize {
    let row_bytes = (5 + COMBINE_PRODUCT_BUFFERS) * 4;
    let fits = |c: &usize| hidden.is_multiple_of(*c) && row_bytes * c + 9 * 32 * groups <= room;
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

/// `dsv4/group_quant.h`: f32 rows `[groups, rows, k]` → int8 + dequant scale per row; or,
/// with `slices` = (k slices, their rows per group), the sum of a split-K product's
/// partials in slice order instead of the rows.
fn quant(
    groups: usize,
    rows: usize,
    k: usize,
    tile_rows: usize,
    slices: Option<(usize, usize)>,
) -> Kernel {
    let (n, part_rows) = slices.unwrap_or((1, rows));
    let (name, doc, x) = match slices {
        None => (
            format!("group_quant_g{groups}_r{rows}_k{k}_t{tile_rows}"),
            "per-(group, token) int8 quantisation of the o_proj latent (scale 1/sq)",
            "x",
        ),
        Some(_) => (
            format!("group_quant_g{groups}_r{rows}_k{k}_t{tile_rows}_s{n}_pr{part_rows}"),
            "per-(group, token) int8 quantisation of the o_proj latent (scale 1/sq), the \
             latent summed from wo_a's k slices in slice order",
            "parts",
        ),
    };
    let mut buffers = quant_buffers(k, tile_rows);
    if slices.is_some() {
        // the slices after the first, at most two in flight (group_quant.h PARTS_AHEAD)
        let tile = tile_rows * k;
        buffers.push(row(
            "parts_in",
            Ub,
            DType::F32,
            tile,
            (n - 1).min(2),
            Some(tile),
        ));
    }
    Kernel {
        name,
        doc: doc.into(),
        block: "group_quant.h",
        class: "GroupQuant",
        cores: Cores::Aiv,
        params: vec![
            ("GROUPS", Value::u32(groups)),
            ("ROWS", Value::u32(rows)),
            ("K", Value::u32(k)),
            ("TILE_ROWS", Value::u32(tile_rows)),
            ("SLICES", Value::u32(n)),
            ("PART_ROWS", Value::u32(part_rows)),
        ],
        args: vec![x, "q", "scale"],
        buffers,
        parts: Vec::new(),
    }
}

/// The quantisation (`plain`) taking wo_a's slice sum as its prologue (`sum`,
/// dsv4/k_slice_sum.h's kernel for wo_a), so the f32 latent never reaches GM: at its rows
/// per tile, or half or a quarter of them where the partials' buffers would overflow UB.
/// None when `sum` does not write the latent as `plain` reads it or no tile fits.
fn with_slice_sum(sum: &Kernel, plain: &Kernel, block_dim: u32, chip: &Chip) -> Option<Prologue> {
    let [groups, rows, k, tile_rows] = ["GROUPS", "ROWS", "K", "TILE_ROWS"]
        .map(|n| plain.u32_param(n).expect("group_quant's params"));
    // the sum must write the latent as the quantisation reads it: [groups][rows][k]
    let c = ["N", "LD", "BATCH", "STRIDE"].map(|n| sum.u32_param(n));
    if sum.block != "k_slice_sum.h" || c != [Some(k), Some(k), Some(groups), Some(rows * k)] {
        return None;
    }
    let slices = (sum.u32_param("SLICES")?, sum.u32_param("ROWS")?);
    let fused = [tile_rows, tile_rows / 2, tile_rows / 4]
        .into_iter()
        .filter(|&t| t > 0 && 8 % t == 0)
        .map(|t| quant(groups, rows, k, t, Some(slices)))
        .find(|q| budget::bytes_in(&q.buffers, Ub, chip) <= chip.capacity(Ub))?;
    Some(Prologue {
        producer: sum.name.clone(),
        consumer: plain.name.clone(),
        input: "o_latent",
        block_dim,
        fused,
    })
}

/// Group products group_combine.h keeps in flight: the vector unit's sum of one tile then
/// runs under the next tile's loads.
const COMBINE_PRODUCT_BUFFERS: usize = 4;

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
            ("PRODUCT_BUFFERS", Value::u32(COMBINE_PRODUCT_BUFFERS)),
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
/// in turn, the groups' scales (one 32-byte block each, moved with DataCopyPad, then each
/// spread over a block), the tile out (bf16 at TP 1, else f32), its wo_b_scale slice, the
/// sum and one group's term (f32).
fn combine_buffers(groups: usize, cols: usize, bf16: bool) -> Vec<Buffer> {
    use DType::*;
    let c = cols;
    vec![
        row("products", Ub, I32, c, COMBINE_PRODUCT_BUFFERS, Some(c)),
        row("scales", Ub, F32, groups * 8, 1, None),
        row("scale_blocks", Ub, F32, groups * 8 * 8, 1, None),
        row("out", Ub, if bf16 { Bf16 } else { F32 }, c, 2, Some(c)),
        row("wo_b_scale", Ub, F32, c, 1, Some(c)),
        row("acc", Ub, F32, c, 1, None),
        row("term", Ub, F32, c, 1, None),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip;

    /// k_slice_sum.h's kernel for a product writing `[batch][rows][n]` (only what the offer
    /// reads).
    fn sum(n: usize, batch: usize, rows: usize, slices: usize) -> Kernel {
        Kernel {
            name: format!("k_slice_sum_n{n}_s{slices}"),
            doc: String::new(),
            block: "k_slice_sum.h",
            class: "KSliceSum",
            cores: Cores::Aiv,
            params: vec![
                ("N", Value::u32(n)),
                ("LD", Value::u32(n)),
                ("BATCH", Value::u32(batch)),
                ("STRIDE", Value::u32(rows * n)),
                ("SLICES", Value::u32(slices)),
                ("ROWS", Value::u32(rows)),
            ],
            args: vec!["parts", "out"],
            buffers: Vec::new(),
            parts: Vec::new(),
        }
    }

    /// The quantisation takes wo_a's slice sum where the sum writes the latent as it reads
    /// it, at fewer rows per tile where the partials' buffers would overflow UB (FLASH at
    /// 512 tokens: 8 rows of 1024 f32 per buffer do not fit, 4 do); never a sum of other
    /// rows or columns.
    #[test]
    fn quant_takes_the_slice_sum_of_its_latent() {
        let chip = chip::find("910b").unwrap();
        let plain = quant(8, 512, 1024, 8, None);
        let offer = with_slice_sum(&sum(1024, 8, 512, 4), &plain, 48, chip).expect("offered");
        assert_eq!(
            (
                offer.producer.as_str(),
                offer.consumer.as_str(),
                offer.input
            ),
            ("k_slice_sum_n1024_s4", plain.name.as_str(), "o_latent")
        );
        assert_eq!(offer.fused.name, "group_quant_g8_r512_k1024_t4_s4_pr512");
        assert_eq!(offer.fused.args, ["parts", "q", "scale"]);
        assert!(budget::bytes_in(&offer.fused.buffers, Ub, chip) <= chip.capacity(Ub));
        let small = quant(2, 128, 256, 8, None);
        let at_8 = with_slice_sum(&sum(256, 2, 128, 5), &small, 32, chip).expect("offered");
        assert_eq!(at_8.fused.param("TILE_ROWS"), Some(Value::u32(8)));
        assert!(
            with_slice_sum(&sum(512, 8, 512, 4), &plain, 48, chip).is_none(),
            "other columns"
        );
        assert!(
            with_slice_sum(&sum(1024, 4, 512, 4), &plain, 48, chip).is_none(),
            "other groups"
        );
        assert!(
            with_slice_sum(&sum(1024, 8, 256, 4), &plain, 48, chip).is_none(),
            "other rows"
        );
    }

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
