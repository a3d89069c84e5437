//! Stage qkv_proj_rope: LoRA q with int8 wq_b, kv latent, RMSNorm and RoPE
//! (swa.md §3.3). Three cube matmuls (`gemm`) and three vector kernels
//! (`dsv4/qkv_proj_rope.h`), handing off through per-token workspaces:
//!
//! ```text
//! x_normed ·wq_a→ q_latent f32 ─QLatentQuant→ qr i8, qr_scale ·wq_b→ q_acc i32 ─QHeads→ q bf16
//! x_normed ·wkv → kv_latent f32 ─KvFinish→ kv bf16
//! ```
//!
//! The RoPE rows are the host's token-local `freqs_cos` / `freqs_sin` `[t, rope_dim]`
//! (`rope.table: per_token`), or, with `rope.table: positions` (CSA, hca_csa.md §2.3, §3),
//! the full `[max_positions, rope_dim]` table, whose row `position_ids[t]` QHeads and
//! KvFinish gather themselves: those two kernels then take `position_ids`, set
//! `POSITIONS` and are named `…_positions`. Their buffers are the same either way.

use abi::{DType, Dim};

use super::kind::{Data, Kind, Tile, TileCheck, Tiled, tiling};
use crate::budget::{self, Buffer, reduce_tmp, row};
use crate::chip::Mem::Ub;
use crate::diag::Diagnostics;
use crate::kernel_plan::gemm::{self, BLayout, Matmul, Operands, Rows};
use crate::kernel_plan::{Builder, Cores, Kernel, Value, float_tag, unmet};
use crate::spec::RopeTable;

pub struct QkvProjRope;

tiling! {
    /// Cube tile `m`×`n`×`k`; `tokens` rows per vector epilogue pass.
    m, n, k, tokens
}

impl Kind for QkvProjRope {
    const NAME: &'static str = "qkv_proj_rope";
    const NEEDS: &'static [Data] = &[Data::XNormed];
    const PRODUCES: &'static [Data] = &[Data::Q, Data::Kv];
    type Spec = Tiled<Tiling>;
    type Params = Tiling<Tile>;

    fn read(spec: &Tiled<Tiling>, d: &mut Diagnostics) -> Tiling<Tile> {
        spec.tiling.value.read(d)
    }

    fn check(t: &Tiling<Tile>, c: &mut TileCheck) {
        let m = &c.plan.model;
        let ns = [
            (m.q_lora_rank, "q_lora_rank"),
            (m.heads * m.head_dim, "heads x head_dim"),
            (m.head_dim, "head_dim"),
        ];
        let ks = [(m.hidden, "hidden"), (m.q_lora_rank, "q_lora_rank")];
        c.products([t.m, t.n, t.k, t.tokens], &ns, &ks);
    }

    fn plan(t: &Tiling<Tile>, b: &mut Builder) {
        let p = b.plan;
        let m = &p.model;
        let t_cap = p.shape.local_t;
        let tile_rows = t.tokens.value;
        let tiles = [t.m.value, t.n.value, t.k.value];
        let (hd, rd, ql) = (m.head_dim, m.rope_dim, m.q_lora_rank);
        let nope = hd - rd;
        let positions = p.rope.table == RopeTable::Positions;
        // Whole 32-byte blocks: bf16 RoPE rows, f32 rope slices, int8 qr rows.
        let unmet = unmet([
            (
                rd.is_multiple_of(16),
                format!("rope_dim {rd} is not a multiple of 16 (whole bf16 blocks)"),
            ),
            (
                nope.is_multiple_of(8),
                format!("head_dim − rope_dim = {nope} is not a multiple of 8 (whole f32 blocks)"),
            ),
            (
                hd.is_multiple_of(16),
                format!("head_dim {hd} is not a multiple of 16 (whole bf16 blocks)"),
            ),
            (
                ql.is_multiple_of(32),
                format!("q_lora_rank {ql} is not a multiple of 32 (whole int8 blocks)"),
            ),
        ]);
        if let Some(why) = unmet {
            b.missing(why);
            return;
        }
        let t = || Dim::Var("t");
        // q_acc as half: QHeads dequantises each element on its own (half the bytes of i32)
        let wq_b = Matmul {
            c_half: true,
            ..Matmul::new(
                Operands::I8,
                BLayout::Kn,
                Rows::Tokens,
                t_cap,
                m.heads * hd,
                ql,
            )
        };
        b.workspace("q_latent", vec![t(), Dim::Const(ql)], DType::F32);
        b.workspace("qr", vec![t(), Dim::Const(ql)], DType::I8);
        b.workspace("qr_scale", vec![t(), Dim::Const(1)], DType::F32);
        b.workspace("q_acc", vec![t(), Dim::Const(m.heads * hd)], wq_b.c_dtype());
        b.workspace(
            "q",
            vec![t(), Dim::Const(m.heads), Dim::Const(hd)],
            DType::Bf16,
        );
        b.workspace("kv_latent", vec![t(), Dim::Const(hd)], DType::F32);
        b.workspace("kv", vec![t(), Dim::Const(hd)], DType::Bf16);

        let aiv = p.chip.aiv_cores;
        // blocks own whole 8-row units (TokenRows): a per-token scale row of 4 bytes is
        // written in whole 32-byte blocks whatever the pass tile
        let row_blocks = aiv.min(t_cap / 8) as u32;
        let eps = m.rms_eps;

        let wq_a = Matmul::new(
            Operands::Bf16,
            BLayout::Kn,
            Rows::Tokens,
            t_cap,
            ql,
            m.hidden,
        );
        if gemm::launch(b, tiles, &wq_a, ["x_normed", "wq_a", "q_latent"]).is_none() {
            return;
        }
        // a pass quantises its rows at once: the spec's tile or the largest divisor that
        // fits UB
        let quant_tile = [tile_rows, 4, 2, 1]
            .into_iter()
            .filter(|d| tile_rows.is_multiple_of(*d))
            .find(|&d| {
                let ub = budget::bytes_in(&q_latent_quant_buffers(ql, d), Ub, p.chip);
                ub <= p.chip.capacity(Ub)
            })
            .unwrap_or(1);
        b.launch_spreading(
            q_latent_quant(ql, quant_tile, eps),
            row_blocks,
            &["q_latent", "gamma_cq", "qr", "qr_scale"],
        );
        // At a few rows the vector cores may share wq_b's columns; it then runs apart from
        // the indexer's projection of qr, which beats the pair on the cube cores alone (CSA
        // deployment: 102 µs grouped, 60 + 24 µs shared apart). At many, QHeads (which
        // finishes q head by head) runs beside wq_b's later heads where each half of the
        // product still fills the cube cores (gemm::overlap; FLASH at 512 tokens: 147 + 68 →
        // 74 + 69 + 38 µs, CSA's grouping with the indexer's projection given up for it);
        // else wq_b may group with that projection.
        let rope_args: &[&str] = if positions {
            &["freqs_cos", "freqs_sin", "position_ids"]
        } else {
            &["freqs_cos", "freqs_sin"]
        };
        let q_args = [&["q_acc", "qr_scale", "wq_b_scale"], rope_args, &["q"]].concat();
        let heads_of = |first: usize, cols: usize| {
            let (head0, heads) = (first / hd, cols / hd);
            let (per_item, blocks) = head_grid(heads, hd, t_cap, aiv);
            let k = q_heads(
                QHeadRange {
                    heads: m.heads,
                    head0,
                    count: heads,
                },
                hd,
                rd,
                per_item,
                eps,
                positions,
                wq_b.c_shift(),
            );
            (k, blocks as u32)
        };
        let consumer = gemm::Consumer {
            unit: hd,
            args: &q_args,
            kernel: &heads_of,
        };
        if gemm::launch_overlapped(b, tiles, &wq_b, ["qr", "wq_b", "q_acc"], &consumer).is_none() {
            return;
        }
        let wkv = Matmul::new(
            Operands::Bf16,
            BLayout::Kn,
            Rows::Tokens,
            t_cap,
            hd,
            m.hidden,
        );
        if gemm::launch(b, tiles, &wkv, ["x_normed", "wkv", "kv_latent"]).is_none() {
            return;
        }
        // kv rows carry no per-token scalar, so blocks take units of a pass tile: of the
        // spec's tile and its divisors, the one that leaves the busiest block the fewest
        // rows (then the largest: fewer copies)
        let kv_tile = [tile_rows, 4, 2, 1]
            .into_iter()
            .filter(|d| tile_rows.is_multiple_of(*d))
            .min_by_key(|&d| {
                let units = t_cap / d;
                (units.div_ceil(aiv.min(units)) * d, std::cmp::Reverse(d))
            })
            .unwrap_or(1);
        let kv_args = [&["kv_latent", "gamma_ckv"], rope_args, &["kv"]].concat();
        b.launch_spreading(
            kv_finish(hd, rd, kv_tile, eps, positions),
            aiv.min(t_cap / kv_tile) as u32,
            &kv_args,
        );
    }
}

/// Heads per work item and blocks of a per-head kernel over a grid of head groups × 8-token
/// runs (`HeadGroupRows` in `dsv4/qkv_proj_rope.h`: QHeads, and index_query's): as many heads
/// per item as fit 4096 values (16 KiB of f32) while the grid still fills the `aiv` vector
/// cores, so few head groups share a token's RoPE rows when there are many tokens (`t_cap`)
/// and many do at a decode step of a few; never more groups than cores.
pub fn head_grid(heads: usize, head_dim: usize, t_cap: usize, aiv: usize) -> (usize, usize) {
    let blocks = |g: usize| {
        let groups = heads / g;
        groups * (aiv / groups).clamp(1, (t_cap / 8).max(1))
    };
    let fits = |g: &usize| heads.is_multiple_of(*g) && g * head_dim <= 4096;
    let g = (1..=heads)
        .filter(|g| fits(g) && heads / g <= aiv)
        .max_by_key(|&g| (blocks(g), g))
        .or_else(|| (1..=heads).filter(fits).max())
        .unwrap_or(1);
    (g, blocks(g))
}

fn q_latent_quant(ql: usize, tile_rows: usize, eps: f32) -> Kernel {
    Kernel {
        name: format!(
            "qkv_q_latent_quant_ql{ql}_t{tile_rows}_eps{}",
            float_tag(eps)
        ),
        doc: "RMSNorm of the q latent with gamma_cq (f32), then per-token int8 qr and qr_scale"
            .into(),
        block: "qkv_proj_rope.h",
        class: "QLatentQuant",
        cores: Cores::Aiv,
        params: vec![
            ("QL", Value::u32(ql)),
            ("TILE_ROWS", Value::u32(tile_rows)),
            ("EPS", Value::F32(eps)),
            ("INV_QL", Value::F32(1.0 / ql as f32)),
        ],
        args: vec!["latent", "gamma", "qr", "qr_scale"],
        buffers: q_latent_quant_buffers(ql, tile_rows),
        parts: Vec::new(),
    }
}

/// The heads of q a QHeads kernel finishes: `count` from `head0`, of a row's `heads`.
struct QHeadRange {
    heads: usize,
    head0: usize,
    count: usize,
}

/// QHeads over the int8 product written as half · 2^-`deq_shift` (`Matmul::c_shift`), for the
/// heads of `range`.
fn q_heads(
    range: QHeadRange,
    hd: usize,
    rd: usize,
    per_item: usize,
    eps: f32,
    positions: bool,
    deq_shift: u32,
) -> Kernel {
    let QHeadRange {
        heads,
        head0,
        count,
    } = range;
    // a range of the heads names where it starts and how many it takes
    let part = match count == heads {
        true => String::new(),
        false => format!("_from{head0}x{count}"),
    };
    let mut k = Kernel {
        name: format!(
            "qkv_q_heads_h{heads}{part}_hd{hd}_rd{rd}_g{per_item}_d{deq_shift}_eps{}",
            float_tag(eps)
        ),
        doc: "dequant of the int8 q product, per-head RMSNorm, RoPE on the rope dims, bf16 q"
            .into(),
        block: "qkv_proj_rope.h",
        class: "QHeads",
        cores: Cores::Aiv,
        params: vec![
            ("H", Value::u32(heads)),
            ("HEAD0", Value::u32(head0)),
            ("HEADS", Value::u32(count)),
            ("HD", Value::u32(hd)),
            ("RD", Value::u32(rd)),
            ("HG", Value::u32(per_item)),
            ("EPS", Value::F32(eps)),
            ("INV_HD", Value::F32(1.0 / hd as f32)),
            ("DEQ_SHIFT", Value::u32(deq_shift as usize)),
        ],
        args: vec!["acc", "qr_scale", "wq_b_scale", "cos", "sin", "q"],
        buffers: q_heads_buffers(hd, rd, per_item),
        parts: Vec::new(),
    };
    if positions {
        at_positions(&mut k, "sin");
    }
    k
}

fn kv_finish(hd: usize, rd: usize, tile_rows: usize, eps: f32, positions: bool) -> Kernel {
    let mut k = Kernel {
        name: format!(
            "qkv_kv_finish_hd{hd}_rd{rd}_t{tile_rows}_eps{}",
            float_tag(eps)
        ),
        doc: "RMSNorm of the kv latent with gamma_ckv, RoPE on the rope dims, bf16 kv".into(),
        block: "qkv_proj_rope.h",
        class: "KvFinish",
        cores: Cores::Aiv,
        params: vec![
            ("HD", Value::u32(hd)),
            ("RD", Value::u32(rd)),
            ("TILE_ROWS", Value::u32(tile_rows)),
            ("EPS", Value::F32(eps)),
            ("INV_HD", Value::F32(1.0 / hd as f32)),
        ],
        args: vec!["latent", "gamma", "cos", "sin", "kv"],
        buffers: kv_finish_buffers(hd, rd, tile_rows),
        parts: Vec::new(),
    };
    if positions {
        at_positions(&mut k, "sin");
    }
    k
}

/// Turns a kernel reading token-local RoPE rows into its twin reading the full
/// `[max_positions, rope_dim]` table at row `position_ids[t]` (rope.h `RopeRow`): the
/// name says so, `POSITIONS` selects it and `positions` follows the table argument
/// `after`. Its on-chip buffers are the same (the position is a scalar GM read).
fn at_positions(k: &mut Kernel, after: &str) {
    k.name.push_str("_positions");
    k.doc
        .push_str(", RoPE rows gathered from the position table by position_ids");
    k.params.push(("POSITIONS", Value::Bool(true)));
    let at = k
        .args
        .iter()
        .position(|a| *a == after)
        .expect("the kernel takes the RoPE table");
    k.args.insert(at + 1, "positions");
}

/// QLatentQuant's UB: tiles of `tile_rows` latent rows in (f32) and qr rows out (int8),
/// their scales (moved with DataCopyPad), gamma_cq as read and widened, a tile's f32 and
/// f16 scratch for the RMSNorm and the quantisation, a block of scalars per row and the
/// ReduceMax scratch.
fn q_latent_quant_buffers(ql: usize, tile_rows: usize) -> Vec<Buffer> {
    use DType::*;
    let t = tile_rows;
    vec![
        row("latent_in", Ub, F32, t * ql, 2, Some(ql)),
        row("qr_out", Ub, I8, t * ql, 2, Some(ql)),
        row("qr_scales", Ub, F32, 8, 2, None),
        row("gamma_in", Ub, Bf16, ql, 1, Some(ql)),
        row("gamma", Ub, F32, ql, 1, None),
        row("work", Ub, F32, t * ql, 1, None),
        // f16 staging of the int8 quantisation (2 bytes, sized as bf16)
        row("f16", Ub, Bf16, t * ql, 1, None),
        row("slot", Ub, F32, 8 * t, 1, None),
        row("reduce_tmp", Ub, F32, reduce_tmp(ql), 1, None),
    ]
}

/// Whether n is 8^L (QHeads' `BLOCK_SUMS`: a head's squares sum in L levels of block sums).
fn power_of_8(n: usize) -> bool {
    n == 1 || (n.is_multiple_of(8) && power_of_8(n / 8))
}

/// QHeads' UB: [`head_group_buffers`], a head's scratch (or the row's squares), a block of
/// scalars per head of the item, the ReduceSum scratch (or the row's block sums) and
/// rope.h's buffers.
fn q_heads_buffers(hd: usize, rd: usize, per_item: usize) -> Vec<Buffer> {
    use DType::*;
    let mut v = head_group_buffers(DType::F16, hd, per_item, 2);
    // Heads of 8^L values sum their squares in block sums, a row's heads at once: the
    // squares of the row in work, the first level's sums in reduce_tmp (RmsInvBlocks).
    let (work, sums) = if power_of_8(hd) {
        (per_item * hd, reduce_tmp(hd).max(per_item * hd / 8))
    } else {
        (hd, reduce_tmp(hd))
    };
    v.extend([
        row("work", Ub, F32, work, 1, None),
        row("slot", Ub, F32, 8 * per_item, 1, None),
        row("reduce_tmp", Ub, F32, sums, 1, None),
    ]);
    // two 8-token blocks' rope rows: the next block's fetched while one computes
    v.extend(rope_buffers(rd, 16));
    v.extend(heads_at_once_buffers(rd, per_item));
    v
}

/// rope.h's `RopeHeads` UB for `heads` slices of `rd` dims, which a row's heads take where
/// a rope slice is one f32 repeat (rd ≤ 64; none else): their pair-swap gather offsets and
/// swapped slices.
pub fn heads_at_once_buffers(rd: usize, heads: usize) -> Vec<Buffer> {
    use DType::*;
    if rd > 64 {
        return Vec::new();
    }
    vec![
        row("rope_partners", Ub, I32, heads * rd, 1, None),
        row("rope_swap_heads", Ub, F32, heads * rd, 1, None),
    ]
}

/// The UB every dequant of a head-group product has (QHeads, index_query's IndexQHeads):
/// a token's row of `per_item` heads in (the int8 product's C: `acc` half for QHeads, i32
/// for IndexQHeads) and out (bf16), its f32 values and the group's wq_b_scale, the
/// qr_scale of `blocks` 8-token blocks.
pub fn head_group_buffers(acc: DType, hd: usize, per_item: usize, blocks: usize) -> Vec<Buffer> {
    use DType::*;
    let w = per_item * hd;
    vec![
        row("acc_in", Ub, acc, w, 2, Some(w)),
        row("q_out", Ub, Bf16, w, 2, Some(w)),
        row("x", Ub, F32, w, 1, None),
        row("wq_b_scale", Ub, F32, w, 1, Some(w)),
        row("qr_scale", Ub, F32, 8 * blocks, 1, None),
    ]
}

/// KvFinish's UB: tiles of `tile_rows` kv latent rows in (f32) and out (bf16), gamma_ckv
/// as read and widened, a row's scratch, a block of scalars, the ReduceSum scratch and
/// rope.h's buffers for two tiles' rows (this tile's and the next's, fetched ahead).
fn kv_finish_buffers(hd: usize, rd: usize, tile_rows: usize) -> Vec<Buffer> {
    use DType::*;
    let t = tile_rows;
    let mut v = vec![
        row("latent_in", Ub, F32, t * hd, 2, Some(hd)),
        row("kv_out", Ub, Bf16, t * hd, 2, Some(hd)),
        row("gamma_in", Ub, Bf16, hd, 1, Some(hd)),
        row("gamma", Ub, F32, hd, 1, None),
        row("work", Ub, F32, hd, 1, None),
        row("slot", Ub, F32, 8, 1, None),
        row("reduce_tmp", Ub, F32, reduce_tmp(hd), 1, None),
    ];
    v.extend(rope_buffers(rd, 2 * t));
    v
}

/// rope.h's UB for `rd` rope dims: `tokens` tokens' cos and sin rows, [cos | sin | -sin]
/// in f32, the gather offsets, the interleaved tables and the pair-swapped slice.
pub fn rope_buffers(rd: usize, tokens: usize) -> [Buffer; 5] {
    use DType::*;
    [
        row("rope_rows", Ub, Bf16, tokens * 2 * rd, 1, Some(rd)),
        row("rope_trig", Ub, F32, 3 * rd, 1, None),
        row("rope_offsets", Ub, I32, 3 * rd, 1, None),
        row("rope_tables", Ub, F32, 2 * rd, 1, None),
        row("rope_swap", Ub, F32, rd, 1, None),
    ]
}
