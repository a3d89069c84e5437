//! Kernels of stage hc_pre (swa.md §3.1), building block `dsv4/hc_pre.h`:
//! 1. a split-K cube projection (AIC): each block multiplies its slice of the
//!    `hc_mult · hidden` columns of x_hc by hc_attn_fn and by x_hc itself (the
//!    diagonal is the sum of squares), so both cross GM once, into `hc_partials`;
//! 2. a vector kernel (AIV) that adds the parts in ascending order, applies the
//!    RMS scale and the gates over 8-token lane groups and mixes the streams into
//!    `x_mixed`, a `cols` chunk per item, while one more item per group runs
//!    Sinkhorn and writes `post` and `comb`.
//!
//! With `fuse` (the default) the two are one mixed launch (`HcPreFused`): the vector cores
//! mix a tile's tokens as soon as every cube core has projected it, under the projection
//! of the next tiles.
//!
//! Where a block's columns allow, its two vector cores take [`VECTOR_COLS`] of them
//! (`HcPreShare`, fused or launched alone alike, so both give the same bits): the cube
//! cores are bound by their x_hc loads, and the vector cores load beside them.

use abi::{DType, Dim};

use super::kind::{Data, Kind, Tile, TileCheck, Tiled, tiling};
use crate::budget::{Buffer, row};
use crate::chip::Mem;
use crate::diag::Diagnostics;
use crate::kernel_plan::{Builder, Cores, Kernel, Value, float_tag};
use crate::plan::ModelDims;

pub struct HcPre;

tiling! {
    /// Cube rows `m` × K chunk `k` for the mixing projection; `tokens` × `cols` for
    /// the vector passes.
    m, k, tokens, cols
}

/// The stream count the building block is written for (Sinkhorn pairs the streams).
const HC: usize = 4;
/// Tokens per gate group: one f32 lane per token of a 32-byte block.
const GROUP: usize = 8;

/// The columns of a block the vector cores take, where its columns are at least three times
/// as many, whole `k` chunks stay on the cube and every block's lie wholly in the row or past
/// it: two 64-lane repeats a token. (FLASH at 512 tokens, hand-measured on the modeled
/// timeline: 128 of 704 columns take `hc_pre` from 96.6 to ~83 µs; 64 gain less, 192 make
/// the vector cores the bound.)
const VECTOR_COLS: usize = 128;

impl Kind for HcPre {
    const NAME: &'static str = "hc_pre";
    const NEEDS: &'static [Data] = &[];
    const PRODUCES: &'static [Data] = &[Data::XMixed];
    type Spec = Tiled<Tiling>;
    type Params = Tiling<Tile>;

    fn read(spec: &Tiled<Tiling>, d: &mut Diagnostics) -> Tiling<Tile> {
        spec.tiling.value.read(d)
    }

    fn check(t: &Tiling<Tile>, c: &mut TileCheck) {
        let m = &c.plan.model;
        let (hc_dim, hidden) = (m.hc_dim, m.hidden);
        c.cube(t.m, "m");
        c.cube(t.k, "k");
        c.rows(t.m, "m");
        c.divides(t.k, "k", hc_dim, "hc_mult x hidden");
        // The gates run with one f32 lane per token in a 32-byte block.
        c.equals(t.tokens, "tokens", GROUP);
        c.divides(t.cols, "cols", hidden, "hidden");
        // The projection copies x_hc tiles to L1 with ND2NZ, whose source row length
        // (srcDValue) is 16 bits: one token's hc_mult x hidden floats must fit it.
        if hc_dim > usize::from(u16::MAX) {
            c.limit(
                c.model.hidden,
                format!(
                    "an x_hc row of hc_mult x hidden = {} x {hidden} = {hc_dim} floats is longer than one ND2NZ source row",
                    m.hc_mult
                ),
                "Nd2NzParams.srcDValue is at most 65535: hc_mult x hidden <= 65535",
            );
        }
    }

    fn plan(t: &Tiling<Tile>, b: &mut Builder) {
        let p = b.plan;
        let md = &p.model;
        if md.hc_mult != HC {
            b.missing(format!(
                "hc_mult {} is not {HC}, the only width hc_pre.h is built for",
                md.hc_mult
            ));
            return;
        }
        let (m, k, cols) = (t.m.value, t.k.value, t.cols.value);
        // The kernels move whole 32-byte blocks (no DataCopyPad path): 16 bf16 per block.
        if cols % 16 != 0 {
            b.missing(format!(
                "tile cols {cols} is not a multiple of 16 (hc_pre.h moves whole 32-byte blocks of bf16)"
            ));
            return;
        }
        let split = split(md.hc_dim, k, p.chip.aic_cores);
        let vspan = vector_cols(md.hc_dim, k, split);
        let part = m + md.mix_hc;
        let per_token = |n: usize| vec![Dim::Var("t"), Dim::Const(n)];
        b.workspace("hc_partials", per_token(split.blocks * part), DType::F32);
        b.workspace("x_mixed", per_token(md.hidden), DType::Bf16);
        b.workspace("post", per_token(md.hc_mult), DType::F32);
        b.workspace("comb", per_token(md.hc_mult * md.hc_mult), DType::F32);

        let (projection, mix) = (
            projection(md, m, k, split, vspan),
            mix(md, m, split.blocks, cols),
        );
        // each kernel's arguments are the tensors its launch binds
        if p.fuse {
            let fused = fused(projection, mix);
            let args = fused.args.clone();
            b.launch(fused, split.blocks as u32, &args);
            return;
        }
        let args = projection.args.clone();
        b.launch(projection, split.blocks as u32, &args);
        // a group's mix items, one per `cols` chunk, and its Sinkhorn item
        let items = p.shape.local_t / GROUP * (md.hidden / cols + 1);
        let args = mix.args.clone();
        b.launch(mix, p.chip.aiv_cores.min(items) as u32, &args);
    }
}

/// The projection and the mix as one mixed launch on the projection's blocks, each block's
/// two vector cores mixing items of the tiles already projected (`HcPreFused`): the
/// projection's arguments, then the mix's others, in `HcPreFused::Run`'s order.
fn fused(projection: Kernel, mix: Kernel) -> Kernel {
    let mut args = projection.args.clone();
    args.extend(mix.args.iter().filter(|a| !projection.args.contains(a)));
    // the projection's knobs, then the mix's own (those the projection's name lacks)
    let knobs = projection.name.trim_start_matches("hc_pre_proj_");
    let own: Vec<&str> = (mix.name.trim_start_matches("hc_pre_mix_").split('_'))
        .filter(|knob| !knobs.split('_').any(|k| k == *knob))
        .collect();
    Kernel {
        name: format!("hc_pre_{knobs}_{}", own.join("_")),
        doc: "hc_pre in one mixed launch: the split-K projection on the cube, each tile's gates, Sinkhorn and stream mixing on the vector cores under the next tiles".into(),
        block: "hc_pre.h",
        class: "HcPreFused",
        cores: Cores::Mix,
        params: Vec::new(),
        args,
        buffers: Vec::new(),
        parts: [projection, mix]
            .map(|k| Kernel {
                args: Vec::new(),
                ..k
            })
            .into(),
    }
}

/// How the projection splits the `hc_dim` columns over the cube cores: whole
/// `k`-column chunks, as many per block as spreading them over `aic_cores` takes,
/// and as many blocks (each one part of a token's partials row) as that needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Split {
    chunks_per_block: usize,
    blocks: usize,
}

/// The vector cores' columns of each block ([`VECTOR_COLS`] or none).
fn vector_cols(hc_dim: usize, k: usize, split: Split) -> usize {
    let stride = split.chunks_per_block * k;
    if stride < 3 * VECTOR_COLS || !(stride - VECTOR_COLS).is_multiple_of(k) {
        return 0;
    }
    let whole = (0..split.blocks).all(|b| {
        let first = (b + 1) * stride - VECTOR_COLS;
        first >= hc_dim || first + VECTOR_COLS <= hc_dim
    });
    if whole { VECTOR_COLS } else { 0 }
}

fn split(hc_dim: usize, k: usize, aic_cores: usize) -> Split {
    let chunks = hc_dim.div_ceil(k);
    let chunks_per_block = chunks.div_ceil(aic_cores);
    Split {
        chunks_per_block,
        blocks: chunks.div_ceil(chunks_per_block),
    }
}

fn u32(v: usize) -> Value {
    Value::U32(v as u32)
}

fn projection(md: &ModelDims, m: usize, k: usize, split: Split, vspan: usize) -> Kernel {
    let (hidden, parts) = (md.hidden, split.blocks);
    let span = split.chunks_per_block - vspan / k;
    let tag = if vspan > 0 {
        format!("_v{vspan}")
    } else {
        String::new()
    };
    let mut buffers = projection_buffers(md, m, k, span);
    if vspan > 0 {
        buffers.extend(share_buffers(md, m, vspan));
    }
    Kernel {
        name: format!("hc_pre_proj_hc{HC}_d{hidden}_m{m}_k{k}_s{span}{tag}_p{parts}"),
        doc: "hc_pre split-K projection: per-block partial logits and token dot products (f32 cube, and the vector cores' columns)"
            .into(),
        block: "hc_pre.h",
        class: "HcPreProjection",
        cores: if vspan > 0 { Cores::Mix } else { Cores::Aic },
        params: vec![
            ("HC", u32(HC)),
            ("HIDDEN", u32(hidden)),
            ("M_TILE", u32(m)),
            ("K_CHUNK", u32(k)),
            ("SPAN_CHUNKS", u32(span)),
            ("VSPAN", u32(vspan)),
            ("PARTS", u32(parts)),
        ],
        args: vec!["x_hc", "hc_attn_fn", "hc_partials"],
        buffers,
        parts: Vec::new(),
    }
}

/// HcPreShare's UB: the block's fn columns, two tiles' halves of x rows over them, the
/// accumulators (64 lanes per logit and for the squares, per token), their block sums and
/// the rows out.
fn share_buffers(md: &ModelDims, m: usize, vspan: usize) -> Vec<Buffer> {
    use DType::F32;
    use Mem::Ub;
    let (tokens, mix) = (m / 2, md.mix_hc);
    vec![
        row("share_fn", Ub, F32, mix * vspan, 1, Some(vspan)),
        row("share_x", Ub, F32, tokens * vspan, 2, Some(vspan)),
        row("share_acc", Ub, F32, tokens * (mix + 1) * 64, 1, None),
        row("share_sums", Ub, F32, tokens * (mix + 1) * 9 + 8, 1, None),
        row("share_out", Ub, F32, tokens * (m + mix), 1, Some(m + mix)),
    ]
}

fn mix(md: &ModelDims, m: usize, parts: usize, cols: usize) -> Kernel {
    let (hidden, iters) = (md.hidden, md.hc_sinkhorn_iters);
    let (rms, hc) = (float_tag(md.rms_eps), float_tag(md.hc_eps));
    Kernel {
        name: format!(
            "hc_pre_mix_hc{HC}_d{hidden}_m{m}_p{parts}_c{cols}_it{iters}_rms{rms}_hc{hc}"
        ),
        doc: "hc_pre gates, Sinkhorn and stream mixing from the projection partials".into(),
        block: "hc_pre.h",
        class: "HcPreMix",
        cores: Cores::Aiv,
        params: vec![
            ("HC", u32(HC)),
            ("HIDDEN", u32(hidden)),
            ("M_TILE", u32(m)),
            ("PARTS", u32(parts)),
            ("COLS", u32(cols)),
            ("ITERS", u32(iters)),
            ("RMS_EPS", Value::F32(md.rms_eps)),
            ("HC_EPS", Value::F32(md.hc_eps)),
        ],
        args: vec![
            "x_hc",
            "hc_attn_scale",
            "hc_attn_base",
            "hc_partials",
            "x_mixed",
            "post",
            "comb",
        ],
        buffers: mix_buffers(md, m, parts, cols),
        parts: Vec::new(),
    }
}

/// HcPreProjection's L1 and L0: the block's fn slice (its logits padded to whole
/// 16-column fractals), x tiles of `m` tokens over the block's span, one k chunk of x in
/// L0A, x^T and fn^T of a chunk sharing an L0B slot, the logits and squares in L0C.
fn projection_buffers(md: &ModelDims, m: usize, k: usize, span_chunks: usize) -> Vec<Buffer> {
    use DType::F32;
    use Mem::*;
    let mix_pad = md.mix_hc.next_multiple_of(16);
    let span = span_chunks * k;
    vec![
        row("fn_l1", L1, F32, mix_pad * span, 1, None),
        row("x_l1", L1, F32, m * span, 2, None),
        row("x_l0a", L0a, F32, m * k, 2, None),
        row("x_fn_l0b", L0b, F32, (m + mix_pad) * k, 2, None),
        row("logits_l0c", L0c, F32, m * mix_pad, 1, None),
        row("squares_l0c", L0c, F32, m * m, 1, None),
    ]
}

/// HcPreMix's UB: a group's partials rows (per projection block, `m` dot products and
/// the logits), the x_hc rows of a `cols` chunk and its mixed bf16 row, post and comb
/// out, the entry-major table, gather offsets (u32, sized as i32),
/// the base rows, hc_attn_scale and hc_attn_base (moved with DataCopyPad), ones, and
/// Sinkhorn's pair and sum rows.
fn mix_buffers(md: &ModelDims, m: usize, parts: usize, cols: usize) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    let (t, hc, mix) = (GROUP, md.hc_mult, md.mix_hc);
    let (rows, out) = (1 + mix, t * (hc + hc * hc));
    let row_len = parts * (m + mix);
    vec![
        row("partials", Ub, F32, t * row_len, 1, Some(t * row_len)),
        row("x_in", Ub, F32, hc * cols, 2, Some(cols)),
        row("x_mixed", Ub, Bf16, cols, 2, Some(cols)),
        row("gates_out", Ub, F32, out, 1, Some(t * hc)),
        row("table", Ub, F32, rows * t, 1, None),
        row("in_offsets", Ub, I32, rows * t, 1, None),
        row("diag_offsets", Ub, I32, t, 1, None),
        row("out_offsets", Ub, I32, out, 1, None),
        row("base_rows", Ub, F32, mix * t, 1, None),
        row("weights", Ub, F32, t + mix.next_multiple_of(t), 1, None),
        row("ones", Ub, F32, 2 * hc * t, 1, None),
        row("pairs", Ub, F32, 2 * hc * t, 1, None),
        row("sums", Ub, F32, hc * t, 1, None),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vector_cores_take_columns_where_blocks_have_room() {
        // FLASH: 256 chunks of 64 over 24 cube cores, 11 a block: 128 of 704 columns
        assert_eq!(vector_cols(16384, 64, split(16384, 64, 24)), VECTOR_COLS);
        // one or two chunks of 128 a block: fewer than three times the vector columns
        assert_eq!(vector_cols(2048, 128, split(2048, 128, 24)), 0);
        assert_eq!(vector_cols(3584, 128, split(3584, 128, 24)), 0);
        // one chunk of 64 a block: fewer columns than the vector cores' share
        assert_eq!(vector_cols(1024, 64, split(1024, 64, 24)), 0);
    }

    #[test]
    fn the_vector_cores_take_no_columns_a_row_ends_inside() {
        // 7 chunks of 64 a block on 2 cores: block 1's vector columns are [768, 896)
        assert_eq!(vector_cols(896, 64, split(896, 64, 2)), VECTOR_COLS);
        // a row of 832 ends inside them
        assert_eq!(vector_cols(832, 64, split(832, 64, 2)), 0);
    }
}
