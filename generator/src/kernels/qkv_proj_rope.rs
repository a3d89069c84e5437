//! Kernels of stage qkv_proj_rope: LoRA q with int8 wq_b, kv latent, RMSNorm and RoPE
//! (swa.md §3.3). Three cube matmuls (`gemm`) and three vector kernels
//! (`dsv4/qkv_proj_rope.h`), handing off through per-token workspaces:
//!
//! ```text
//! x_normed ·wq_a→ q_latent f32 ─QLatentQuant→ qr i8, qr_scale ·wq_b→ q_acc i32 ─QHeads→ q bf16
//! x_normed ·wkv → kv_latent f32 ─KvFinish→ kv bf16
//! ```
//!
//! The RoPE rows are the host's token-local `freqs_cos` / `freqs_sin`; a variant with the
//! full position table (`rope.table: positions`, CSA) is not supported yet.

use super::gemm::{self, BLayout, Matmul, Operands, Rows};
use super::{Builder, Cores, Kernel, Value};
use crate::plan::{DType, Dim, StagePlan, budget};
use crate::spec::RopeTable;

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    let p = b.plan;
    let m = &p.model;
    let t_cap = p.shape.local_t;
    let tile_rows = s
        .tiles
        .iter()
        .find(|(n, _)| *n == "tokens")
        .map_or(8, |&(_, v)| v);
    let (hd, rd, ql) = (m.head_dim, m.rope_dim, m.q_lora_rank);
    let nope = hd - rd;
    // Whole 32-byte blocks: bf16 RoPE rows, f32 rope slices, int8 qr rows.
    let unmet = super::unmet([
        (
            p.rope.table == RopeTable::PerToken,
            "qkv_proj_rope.h reads per-token RoPE rows (`table: per_token`), not the whole table"
                .into(),
        ),
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
        b.missing(s.kind, why);
        return;
    }
    let heads_per_item = budget::qkv_heads_per_item(m.heads, hd);
    let t = || Dim::Var("t");
    b.workspace("q_latent", vec![t(), Dim::Const(ql)], DType::F32);
    b.workspace("qr", vec![t(), Dim::Const(ql)], DType::I8);
    b.workspace("qr_scale", vec![t(), Dim::Const(1)], DType::F32);
    b.workspace("q_acc", vec![t(), Dim::Const(m.heads * hd)], DType::I32);
    b.workspace(
        "q",
        vec![t(), Dim::Const(m.heads), Dim::Const(hd)],
        DType::Bf16,
    );
    b.workspace("kv_latent", vec![t(), Dim::Const(hd)], DType::F32);
    b.workspace("kv", vec![t(), Dim::Const(hd)], DType::Bf16);

    let aiv = p.chip.aiv_cores;
    let row_blocks = aiv.min(t_cap / tile_rows) as u32;
    let eps = m.rms_eps;

    let wq_a = Matmul::new(
        Operands::Bf16,
        BLayout::Kn,
        Rows::Tokens,
        t_cap,
        ql,
        m.hidden,
    );
    if gemm::launch(b, s, &wq_a, ["x_normed", "wq_a", "q_latent"]).is_none() {
        return;
    }
    b.launch(
        s.kind,
        q_latent_quant(ql, tile_rows, eps),
        row_blocks,
        &["q_latent", "gamma_cq", "qr", "qr_scale"],
    );
    let wq_b = Matmul::new(
        Operands::I8,
        BLayout::Kn,
        Rows::Tokens,
        t_cap,
        m.heads * hd,
        ql,
    );
    if gemm::launch(b, s, &wq_b, ["qr", "wq_b", "q_acc"]).is_none() {
        return;
    }
    let groups = m.heads / heads_per_item;
    let ranges = (aiv / groups).clamp(1, t_cap / 8);
    b.launch(
        s.kind,
        q_heads(m.heads, hd, rd, heads_per_item, eps),
        (groups * ranges) as u32,
        &[
            "q_acc",
            "qr_scale",
            "wq_b_scale",
            "freqs_cos",
            "freqs_sin",
            "q",
        ],
    );
    let wkv = Matmul::new(
        Operands::Bf16,
        BLayout::Kn,
        Rows::Tokens,
        t_cap,
        hd,
        m.hidden,
    );
    if gemm::launch(b, s, &wkv, ["x_normed", "wkv", "kv_latent"]).is_none() {
        return;
    }
    b.launch(
        s.kind,
        kv_finish(hd, rd, tile_rows, eps),
        row_blocks,
        &["kv_latent", "gamma_ckv", "freqs_cos", "freqs_sin", "kv"],
    );
}

fn u(v: usize) -> Value {
    Value::U32(u32::try_from(v).expect("model dims fit u32"))
}

fn q_latent_quant(ql: usize, tile_rows: usize, eps: f32) -> Kernel {
    Kernel {
        name: format!(
            "qkv_q_latent_quant_ql{ql}_t{tile_rows}_eps{}",
            super::float_tag(eps)
        ),
        doc: "RMSNorm of the q latent with gamma_cq (f32), then per-token int8 qr and qr_scale"
            .into(),
        block: "qkv_proj_rope.h",
        class: "QLatentQuant",
        cores: Cores::Aiv,
        params: vec![
            ("QL", u(ql)),
            ("TILE_ROWS", u(tile_rows)),
            ("EPS", Value::F32(eps)),
            ("INV_QL", Value::F32(1.0 / ql as f32)),
        ],
        args: vec!["latent", "gamma", "qr", "qr_scale"],
    }
}

fn q_heads(heads: usize, hd: usize, rd: usize, per_item: usize, eps: f32) -> Kernel {
    Kernel {
        name: format!(
            "qkv_q_heads_h{heads}_hd{hd}_rd{rd}_g{per_item}_eps{}",
            super::float_tag(eps)
        ),
        doc: "dequant of the int8 q product, per-head RMSNorm, RoPE on the rope dims, bf16 q"
            .into(),
        block: "qkv_proj_rope.h",
        class: "QHeads",
        cores: Cores::Aiv,
        params: vec![
            ("H", u(heads)),
            ("HD", u(hd)),
            ("RD", u(rd)),
            ("HG", u(per_item)),
            ("EPS", Value::F32(eps)),
            ("INV_HD", Value::F32(1.0 / hd as f32)),
        ],
        args: vec!["acc", "qr_scale", "wq_b_scale", "cos", "sin", "q"],
    }
}

fn kv_finish(hd: usize, rd: usize, tile_rows: usize, eps: f32) -> Kernel {
    Kernel {
        name: format!(
            "qkv_kv_finish_hd{hd}_rd{rd}_t{tile_rows}_eps{}",
            super::float_tag(eps)
        ),
        doc: "RMSNorm of the kv latent with gamma_ckv, RoPE on the rope dims, bf16 kv".into(),
        block: "qkv_proj_rope.h",
        class: "KvFinish",
        cores: Cores::Aiv,
        params: vec![
            ("HD", u(hd)),
            ("RD", u(rd)),
            ("TILE_ROWS", u(tile_rows)),
            ("EPS", Value::F32(eps)),
            ("INV_HD", Value::F32(1.0 / hd as f32)),
        ],
        args: vec!["latent", "gamma", "cos", "sin", "kv"],
    }
}
