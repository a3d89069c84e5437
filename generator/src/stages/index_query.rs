//! Stage index_query: the lightning indexer's int8 queries and head weights (hca_csa.md
//! §5.1, §5.2), with the geometry of the layer's indexer (`IndexerPlan`). Three cube
//! matmuls (`gemm`) and two vector kernels (`dsv4/index_query.h`):
//!
//! ```text
//! qr i8 ·idx_wq_b→ idx_acc i32 ─IndexQHeads→ idx_q_rot bf16 ·hadamard_idx→ idx_qh f32 ─┐
//! x_normed ·weights_proj→ idx_head_sums f32 ──────────────────────────────IndexQQuant┴→
//!     idx_q i8, idx_q_scale f32, idx_weights f32
//! ```
//!
//! IndexQHeads dequantises (acc · qr_scale[t] · idx_wq_b_scale[col]), rotates each head's
//! last rope dims with the request's step row (row p0_b of the full table: every token of
//! a request rotates at its first position, §5.1, §11.6) and rounds to bf16. The Hadamard
//! product is one `[t · heads, head_dim]` problem: the token-major `[t, heads, head_dim]`
//! rows read as `t · heads` rows (`Rows::TokensTimes(heads)`), so the matrix all heads
//! share is read once per row range, not once per head.
//! IndexQQuant quantises each (token, head) row to int8 and scales the head sums by
//! `weights_scale`.

use abi::{DType, Dim};

use super::kind::{Data, Kind, Tile, TileCheck, Tiled, tiling};
use super::qkv_proj_rope::{head_grid, head_group_buffers, heads_at_once_buffers, rope_buffers};
use crate::budget::{Buffer, reduce_tmp, row};
use crate::chip::Mem::Ub;
use crate::diag::Diagnostics;
use crate::kernel_plan::gemm::{self, BLayout, Matmul, Operands, Rows};
use crate::kernel_plan::{Builder, Cores, Kernel, Value, float_tag, unmet};
use crate::plan::IndexerPlan;
use crate::spec::{RopeTable, StateLayout};

pub struct IndexQuery;

tiling! {
    /// Cube tile `m`×`n`×`k`; `tokens` rows per quantisation pass.
    m, n, k, tokens
}

impl Kind for IndexQuery {
    const NAME: &'static str = "index_query";
    const NEEDS: &'static [Data] = &[Data::XNormed, Data::Q];
    const PRODUCES: &'static [Data] = &[Data::IndexQuery];
    type Spec = Tiled<Tiling>;
    type Params = Tiling<Tile>;

    fn read(spec: &Tiled<Tiling>, d: &mut Diagnostics) -> Tiling<Tile> {
        spec.tiling.value.read(d)
    }

    fn check(t: &Tiling<Tile>, c: &mut TileCheck) {
        let Some(i) = c.plan.indexer.clone() else {
            return; // the graph check reports index_query without an indexer
        };
        let m = &c.plan.model;
        let ns = [
            (i.q_width, "indexer heads x head_dim"),
            (i.head_dim, "indexer head_dim"),
            (i.heads, "indexer heads"),
        ];
        let ks = [
            (m.q_lora_rank, "q_lora_rank"),
            (i.head_dim, "indexer head_dim"),
            (m.hidden, "hidden"),
        ];
        c.products([t.m, t.n, t.k, t.tokens], &ns, &ks);
    }

    fn plan(t: &Tiling<Tile>, b: &mut Builder) {
        let p = b.plan;
        let Some(ix) = &p.indexer else {
            unreachable!("the graph check puts an indexer beside index_query")
        };
        let (heads, hd, rd, nope) = (ix.heads, ix.head_dim, ix.rope_dim, ix.nope_dim);
        let (width, ql, seq) = (ix.q_width, p.model.q_lora_rank, p.shape.decode_seq);
        let tile_rows = t.tokens.value;
        // The ring CSA rotates each token's query at its own position (csa_1m.md §5.1).
        let token_rows = ix.inner.state == StateLayout::Ring;
        // Whole 32-byte blocks: bf16 RoPE rows and heads, f32 rope slices, a token's f32
        // scales and weights.
        let unmet = unmet([
            (
                p.rope.table == RopeTable::Positions || token_rows,
                "the snapshot's index queries gather their step row from the full position \
                 table (rope.table: positions)"
                    .into(),
            ),
            (
                rd.is_multiple_of(16),
                format!("rope_dim {rd} is not a multiple of 16 (whole bf16 blocks)"),
            ),
            (
                nope.is_multiple_of(8),
                format!(
                    "indexer head_dim − rope_dim = {nope} is not a multiple of 8 (whole f32 blocks)"
                ),
            ),
            (
                heads.is_multiple_of(8),
                format!("indexer heads {heads} is not a multiple of 8 (whole f32 blocks)"),
            ),
        ]);
        if let Some(why) = unmet {
            b.missing(why);
            return;
        }
        let t_cap = p.shape.local_t;
        let tokens = || Dim::Var("t");
        let rows = |w: usize| vec![tokens(), Dim::Const(w)];
        // idx_acc stays i32: the index queries are quantised again and select an exact
        // top-k, so an 11-bit rounding here moves near-tie selections (as half, CSA's
        // reference vectors failed on x_out: 16186 bad points of 8389 allowed)
        b.workspace("idx_acc", rows(width), DType::I32);
        b.workspace("idx_q_rot", rows(width), DType::Bf16);
        b.workspace("idx_qh", rows(width), DType::F32);
        b.workspace("idx_head_sums", rows(heads), DType::F32);
        b.workspace("idx_q", rows(width), DType::I8);
        b.workspace("idx_q_scale", rows(heads), DType::F32);
        b.workspace("idx_weights", rows(heads), DType::F32);

        let tiles = [t.m.value, t.n.value, t.k.value];
        let wq_b = Matmul::new(Operands::I8, BLayout::Kn, Rows::Tokens, t_cap, width, ql);
        if gemm::launch_alone(b, tiles, &wq_b, ["qr", "idx_wq_b", "idx_acc"]).is_none() {
            return;
        }
        let (per_item, blocks) = head_grid(heads, hd, t_cap, p.chip.aiv_cores);
        b.launch_spreading(
            q_heads(ix, per_item, seq, token_rows),
            blocks as u32,
            &[
                "idx_acc",
                "qr_scale",
                "idx_wq_b_scale",
                "freqs_cos",
                "freqs_sin",
                "position_ids",
                "idx_q_rot",
            ],
        );
        // Every (token, head) row: idx_q_rot[t, h, :] · hadamard_idx → idx_qh[t, h, :].
        let hadamard = Matmul::new(
            Operands::Bf16,
            BLayout::Kn,
            Rows::TokensTimes(heads),
            t_cap * heads,
            hd,
            hd,
        );
        if gemm::launch(b, tiles, &hadamard, ["idx_q_rot", "hadamard_idx", "idx_qh"]).is_none() {
            return;
        }
        let weights = Matmul::new(
            Operands::Bf16,
            BLayout::Kn,
            Rows::Tokens,
            t_cap,
            heads,
            p.model.hidden,
        );
        if gemm::launch(
            b,
            tiles,
            &weights,
            ["x_normed", "weights_proj", "idx_head_sums"],
        )
        .is_none()
        {
            return;
        }
        b.launch(
            q_quant(ix, tile_rows),
            // token tiles, each in up to heads / 8 head parts (`IndexQQuant`)
            p.chip.aiv_cores.min(t_cap / tile_rows * (ix.heads / 8)) as u32,
            &[
                "idx_qh",
                "idx_head_sums",
                "idx_q",
                "idx_q_scale",
                "idx_weights",
            ],
        );
    }
}

fn q_heads(ix: &IndexerPlan, per_item: usize, seq: usize, token_rows: bool) -> Kernel {
    let (heads, hd, rd) = (ix.heads, ix.head_dim, ix.rope_dim);
    Kernel {
        name: format!(
            "index_q_heads_h{heads}_hd{hd}_rd{rd}_g{per_item}_s{seq}{}",
            if token_rows { "_tok" } else { "" }
        ),
        doc: format!(
            "dequant of the int8 index-query product, RoPE of each head's rope dims with {}, bf16",
            if token_rows {
                "the token's own row"
            } else {
                "the request's step row (position_ids of its first token)"
            }
        ),
        block: "index_query.h",
        class: "IndexQHeads",
        cores: Cores::Aiv,
        params: vec![
            ("H", Value::u32(heads)),
            ("HD", Value::u32(hd)),
            ("RD", Value::u32(rd)),
            ("HG", Value::u32(per_item)),
            ("SEQ", Value::u32(seq)),
            ("TOKEN_ROWS", Value::Bool(token_rows)),
        ],
        args: vec![
            "acc",
            "qr_scale",
            "wq_b_scale",
            "cos",
            "sin",
            "positions",
            "q",
        ],
        buffers: q_heads_buffers(hd, rd, per_item),
        parts: Vec::new(),
    }
}

fn q_quant(ix: &IndexerPlan, tile_rows: usize) -> Kernel {
    let (heads, hd) = (ix.heads, ix.head_dim);
    let scale = ix.weights_scale;
    Kernel {
        name: format!(
            "index_q_quant_h{heads}_hd{hd}_t{tile_rows}_ws{}",
            float_tag(scale)
        ),
        doc: "int8 index queries per (token, head) with their dequant scales, head weights \
              times weights_scale"
            .into(),
        block: "index_query.h",
        class: "IndexQQuant",
        cores: Cores::Aiv,
        params: vec![
            ("H", Value::u32(heads)),
            ("HD", Value::u32(hd)),
            ("TILE_ROWS", Value::u32(tile_rows)),
            ("WEIGHTS_SCALE", Value::F32(scale)),
        ],
        args: vec!["qh", "head_sums", "q", "q_scale", "weights"],
        buffers: q_quant_buffers(heads, hd, tile_rows),
        parts: Vec::new(),
    }
}

/// IndexQHeads' UB: qkv_proj_rope's [`head_group_buffers`] (the group's idx_wq_b_scale as
/// `wq_b_scale`) and rope.h's buffers, `RopeHeads`' where a row's heads rotate at once.
fn q_heads_buffers(hd: usize, rd: usize, per_item: usize) -> Vec<Buffer> {
    let mut v = head_group_buffers(DType::I32, hd, per_item, 1);
    v.extend(rope_buffers(rd, 1));
    v.extend(heads_at_once_buffers(rd, per_item));
    v
}

/// IndexQQuant's UB: tiles of `tile_rows` tokens' Hadamard rows in (f32) and int8 rows
/// out, their scales, head sums in and weights out; quant.h's scratch of a batch of rows
/// (f32, f16, a block of scalars each) and the ReduceMax scratch of a head.
fn q_quant_buffers(heads: usize, hd: usize, tile_rows: usize) -> Vec<Buffer> {
    use DType::*;
    let (w, s) = (tile_rows * heads * hd, tile_rows * heads);
    vec![
        row("qh_in", Ub, F32, w, 2, Some(heads * hd)),
        row("q_out", Ub, I8, w, 2, Some(heads * hd)),
        row("scales_out", Ub, F32, s, 2, Some(heads)),
        row("sums_in", Ub, F32, s, 2, Some(heads)),
        row("weights_out", Ub, F32, s, 2, Some(heads)),
        // QuantizeRows' batch of Q_BATCH rows: their scratch, f16 staging (2 bytes, sized
        // as bf16) and maxima (a block each)
        row("work", Ub, F32, Q_BATCH * hd, 1, None),
        row("f16", Ub, Bf16, Q_BATCH * hd, 1, None),
        row("slot", Ub, F32, Q_BATCH * 8, 1, None),
        row("reduce_tmp", Ub, F32, reduce_tmp(hd), 1, None),
    ]
}

/// (token, head) rows IndexQQuant quantises at once (`dsv4/quant.h` QuantizeRows): an
/// item holds whole 8-head pieces, so 16 rows are one or two of them.
const Q_BATCH: usize = 16;
