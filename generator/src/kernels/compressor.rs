//! Kernels of stage compressor without overlap (HCA's ratio 128, hca_csa.md §4.1–4.3,
//! §4.5, §4.7): the two projections on the cube (`gemm`), then two vector kernels
//! (`dsv4/compressor.h`): per request at a boundary, pool the window as the requests before
//! it left the state (`dsv4/state_overlay.h`), normalise, rotate and write the cmp_kv row;
//! then, once every request has pooled, add the APE rows and write this step's state rows.
//!
//! ```text
//! x_normed ·cmp_wkvᵀ  → compress_kv f32  ─┐
//! x_normed ·cmp_wgateᵀ→ compress_score f32┴─Compressor→ cmp_kv ─CompressorCommit→ compress_state
//! ```
//!
//! The overlapping ratio-4 compressor (CSA) is not supported yet: its stage is marked
//! missing.

use super::gemm::{self, BLayout, Matmul, Operands, Rows};
use super::{Builder, Cores, Kernel, Value};
use crate::plan::{DType, Dim, StagePlan};

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    let p = b.plan;
    let Some(c) = &p.compressor else {
        unreachable!("a compressor stage has a compressor plan")
    };
    let (m, seq) = (&p.model, p.shape.decode_seq);
    let tile = |name: &str| {
        s.tiles
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| v)
            .unwrap_or_else(|| unreachable!("compressor tiling has {name}"))
    };
    let (tokens, channels) = (tile("tokens"), tile("channels"));
    let (hd, rd) = (c.head_dim, m.rope_dim);
    // What dsv4/compressor.h handles: one request per state-update tile, halving trees
    // over a power-of-two window of whole state pages, channel tiles one repeat wide
    // (whole f32 blocks), rope rows and slice in whole f32 blocks, bf16 rows in blocks.
    let unmet = super::unmet([
        (
            !c.overlap,
            "the overlapping (ratio-4) compressor has no kernels yet".into(),
        ),
        (
            tokens == seq,
            format!(
                "tile tokens {tokens} is not decode_seq {seq} (one request per state-update tile)"
            ),
        ),
        (
            c.ratio > seq,
            format!(
                "ratio {} is not above decode_seq {seq} (at most one boundary per request)",
                c.ratio
            ),
        ),
        (
            c.ratio.is_power_of_two() && c.ratio <= 128,
            format!(
                "ratio {} is not a power of two up to 128 (the pooling trees halve)",
                c.ratio
            ),
        ),
        (
            c.ratio.is_multiple_of(c.state_block_size),
            format!(
                "ratio {} is not a whole number of state pages of {}",
                c.ratio, c.state_block_size
            ),
        ),
        (
            channels.is_multiple_of(8) && channels <= 64 && hd.is_multiple_of(channels),
            format!(
                "tile channels {channels} is not a multiple of 8, up to 64, dividing head_dim {hd}"
            ),
        ),
        (
            hd.is_multiple_of(16),
            format!("head_dim {hd} is not a multiple of 16 (whole bf16 blocks)"),
        ),
        (
            rd.is_multiple_of(16) && rd <= hd,
            format!("rope_dim {rd} is not a multiple of 16 up to head_dim {hd}"),
        ),
        (p.tensor("cmp_kv").is_some(), "the ABI has no cmp_kv".into()),
    ]);
    if let Some(why) = unmet {
        b.missing(s.kind, why);
        return;
    }
    let t = || Dim::Var("t");
    b.workspace("compress_kv", vec![t(), Dim::Const(hd)], DType::F32);
    b.workspace("compress_score", vec![t(), Dim::Const(hd)], DType::F32);
    let proj = Matmul::new(
        Operands::Bf16,
        BLayout::Nk,
        Rows::Tokens,
        p.shape.local_t,
        hd,
        m.hidden,
    );
    if gemm::launch(b, s, &proj, ["x_normed", "cmp_wkv", "compress_kv"]).is_none()
        || gemm::launch(b, s, &proj, ["x_normed", "cmp_wgate", "compress_score"]).is_none()
    {
        return;
    }
    let kernel = Kernel {
        name: format!(
            "compressor_r{}_hd{hd}_s{seq}_bs{}_tw{}_c{channels}_rd{rd}_eps{}",
            c.ratio,
            c.state_block_size,
            c.state_table_width,
            super::float_tag(m.rms_eps)
        ),
        doc: "at a boundary softmax pooling of the window as the earlier requests left the \
              state, RMSNorm, RoPE, bf16 row into cmp_kv"
            .into(),
        block: "compressor.h",
        class: "Compressor",
        cores: Cores::Aiv,
        params: vec![
            ("HD", u(hd)),
            ("RATIO", u(c.ratio)),
            ("SEQ", u(seq)),
            ("STATE_BS", u(c.state_block_size)),
            ("TABLE_W", u(c.state_table_width)),
            ("CH", u(channels)),
            ("RD", u(rd)),
            ("EPS", Value::F32(m.rms_eps)),
            ("INV_HD", Value::F32(1.0 / hd as f32)),
        ],
        args: vec![
            "kvp",
            "score",
            "ape",
            "norm_w",
            "cos",
            "sin",
            "positions",
            "state_slots",
            "cmp_slots",
            "state_table",
            "state",
            "cmp_kv",
        ],
    };
    let blocks = p.chip.aiv_cores.min(p.shape.b) as u32;
    b.launch(
        s.kind,
        kernel,
        blocks,
        &[
            "compress_kv",
            "compress_score",
            "cmp_ape",
            "cmp_norm_w",
            "cmp_freqs_cos",
            "cmp_freqs_sin",
            "position_ids",
            "state_slot_mapping",
            "cmp_slot_mapping",
            "compress_state_block_table",
            "compress_state",
            "cmp_kv",
        ],
    );
    // A later launch: every request has pooled the state it must see before it changes.
    let commit = Kernel {
        name: format!("compressor_commit_r{}_hd{hd}_s{seq}", c.ratio),
        doc: "APE + this step's state rows, after every request pooled".into(),
        block: "compressor.h",
        class: "CompressorCommit",
        cores: Cores::Aiv,
        params: vec![("HD", u(hd)), ("RATIO", u(c.ratio)), ("SEQ", u(seq))],
        args: vec!["kvp", "score", "ape", "positions", "state_slots", "state"],
    };
    b.launch(
        s.kind,
        commit,
        blocks,
        &[
            "compress_kv",
            "compress_score",
            "cmp_ape",
            "position_ids",
            "state_slot_mapping",
            "compress_state",
        ],
    );
}

fn u(v: usize) -> Value {
    Value::U32(u32::try_from(v).expect("model dims fit u32"))
}
