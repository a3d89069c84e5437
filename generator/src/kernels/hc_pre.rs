//! Kernels of stage hc_pre (swa.md §3.1), building block `dsv4/hc_pre.h`:
//! 1. a split-K cube projection (AIC): each block multiplies its slice of the
//!    `hc_mult · hidden` columns of x_hc by hc_attn_fn and by x_hc itself (the
//!    diagonal is the sum of squares), so both cross GM once, into `hc_partials`;
//! 2. a vector kernel (AIV) that adds the parts in ascending order, applies the
//!    RMS scale, the gates and Sinkhorn over 8-token lane groups, writes `post`
//!    and `comb`, and mixes the streams into `x_mixed`.

use super::float_tag;
use super::{Builder, Cores, Kernel, Value};
use crate::plan::budget::{HcPreSplit, hc_pre_split};
use crate::plan::{DType, Dim, ModelDims, StagePlan};

/// The stream count the building block is written for (Sinkhorn pairs the streams).
const HC: usize = 4;
/// Tokens per gate group: one f32 lane per token of a 32-byte block.
const GROUP: usize = 8;

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    let p = b.plan;
    let md = &p.model;
    if md.hc_mult != HC {
        b.missing(
            s.kind,
            format!(
                "hc_mult {} is not {HC}, the only width hc_pre.h is built for",
                md.hc_mult
            ),
        );
        return;
    }
    let [("m", m), ("k", k), ("tokens", _), ("cols", cols)] = s.tiles[..] else {
        unreachable!("hc_pre tiling is m, k, tokens, cols")
    };
    // The kernels move whole 32-byte blocks (no DataCopyPad path): 16 bf16 per block.
    if cols % 16 != 0 {
        b.missing(
            s.kind,
            format!("tile cols {cols} is not a multiple of 16 (hc_pre.h moves whole 32-byte blocks of bf16)"),
        );
        return;
    }
    let split = hc_pre_split(md.hc_dim, k, p.chip.aic_cores);
    let part = m + md.mix_hc;
    let per_token = |n: usize| vec![Dim::Var("t"), Dim::Const(n)];
    b.workspace("hc_partials", per_token(split.blocks * part), DType::F32);
    b.workspace("x_mixed", per_token(md.hidden), DType::Bf16);
    b.workspace("post", per_token(md.hc_mult), DType::F32);
    b.workspace("comb", per_token(md.hc_mult * md.hc_mult), DType::F32);

    b.launch(
        s.kind,
        projection(md, m, k, split),
        split.blocks as u32,
        &["x_hc", "hc_attn_fn", "hc_partials"],
    );
    let items = p.shape.local_t / GROUP * (md.hidden / cols);
    b.launch(
        s.kind,
        mix(md, m, split.blocks, cols),
        p.chip.aiv_cores.min(items) as u32,
        &[
            "x_hc",
            "hc_attn_scale",
            "hc_attn_base",
            "hc_partials",
            "x_mixed",
            "post",
            "comb",
        ],
    );
}

fn u32(v: usize) -> Value {
    Value::U32(v as u32)
}

fn projection(md: &ModelDims, m: usize, k: usize, split: HcPreSplit) -> Kernel {
    let (hidden, span, parts) = (md.hidden, split.chunks_per_block, split.blocks);
    Kernel {
        name: format!("hc_pre_proj_hc{HC}_d{hidden}_m{m}_k{k}_s{span}_p{parts}"),
        doc:
            "hc_pre split-K projection: per-block partial logits and token dot products (f32 cube)"
                .into(),
        block: "hc_pre.h",
        class: "HcPreProjection",
        cores: Cores::Aic,
        params: vec![
            ("HC", u32(HC)),
            ("HIDDEN", u32(hidden)),
            ("M_TILE", u32(m)),
            ("K_CHUNK", u32(k)),
            ("SPAN_CHUNKS", u32(span)),
            ("PARTS", u32(parts)),
        ],
        args: vec!["x_hc", "hc_attn_fn", "hc_partials"],
    }
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
    }
}
