//! Kernels of stage sparse_attention over the SWA window (swa.md §3.5–3.6), building
//! blocks `dsv4/attention_*.h`. Attention is MQA over the latent (K = V = the cache row),
//! and a request's `decode_seq` tokens have windows that overlap almost entirely, so each
//! request's *union* of window rows is gathered once and all `decode_seq · heads` query
//! rows of the request run against it; each token then masks its own lanes.
//!
//! Four launches hand off through GM workspaces (the cube cannot reach UB on dav-c220, so
//! a fused kernel would round-trip the same data through GM and count it against itself):
//! 1. `attn_window_scores` (cube): `attn_scores` = q · unionᵀ per request.
//! 2. `attn_window_softmax` (vector): checks the metadata contract the union relies on,
//!    masks, softmax with bf16 probabilities `attn_probs` and the sink denominators
//!    `attn_denom`.
//! 3. `attn_window_values` (cube): `attn_o` = probs · union per request.
//! 4. `attn_finish` (vector): divides by the denominator, inverse RoPE on the rope dims,
//!    bf16, packs heads by output group into `o_packed_heads`.
//!
//! HCA's compressed source adds a fifth, mixed launch between 3 and 4:
//! `attn_compressed` (dsv4/attention_compressed.h) continues each query row's online
//! softmax over the request's compressed rows in chunks of as many rows as L1 holds
//! (`budget::compressed_chunk_rows`: each chunk round-trips the request's o and part
//! through GM) and updates `attn_o` and `attn_denom` in place; the window softmax then also
//! writes each head's max `attn_max`.
//! The indexed source (CSA) is not built: that variant marks the stage missing.

use super::{Builder, Cores, Kernel, Value};
use crate::plan::budget::{attention_union_rows, compressed_chunk_rows};
use crate::plan::{CompressorPlan, DType, Dim, ModelDims, StagePlan};
use crate::spec::KvSource;

pub(super) fn plan(b: &mut Builder, s: &StagePlan) {
    let p = b.plan;
    let m = &p.model;
    let compressed = match p.attention.sources[..] {
        [KvSource::Window] => None,
        [KvSource::Window, KvSource::Compressed] => p.compressor.as_ref(),
        _ => {
            b.missing(
                s.kind,
                "only the window and compressed sources have kernels yet",
            );
            return;
        }
    };
    let with_compressed = compressed.is_some();
    let unmet = finish_unmet(m).or_else(|| compressed.and_then(|c| compressed_unmet(p, s, c)));
    if let Some(why) = unmet {
        b.missing(s.kind, why);
        return;
    }
    let [("heads", head_tile), ("kv_rows", kv_tile), ("d", d_tile)] = s.tiles[..] else {
        unreachable!("sparse_attention tiling is heads, kv_rows, d")
    };
    let (heads, hd, window) = (m.heads, m.head_dim, p.attention.window);
    let (seq, t_pad) = (p.shape.decode_seq, p.shape.t_pad);
    let union = attention_union_rows(window, seq);
    let per_token = |dims: &[usize]| {
        let mut v = vec![Dim::Var("t")];
        v.extend(dims.iter().map(|&n| Dim::Const(n)));
        v
    };
    b.workspace("q", per_token(&[heads, hd]), DType::Bf16);
    b.workspace("attn_scores", per_token(&[heads, union]), DType::F32);
    b.workspace("attn_probs", per_token(&[heads, union]), DType::Bf16);
    b.workspace("attn_denom", per_token(&[heads]), DType::F32);
    b.workspace("attn_o", per_token(&[heads, hd]), DType::F32);
    b.workspace(
        "o_packed_heads",
        vec![Dim::Const(m.o_groups * t_pad), Dim::Const(m.o_group_in)],
        DType::Bf16,
    );

    let u32 = |v: usize| Value::U32(v as u32);
    let cube_tag = format!(
        "h{heads}_d{hd}_w{window}_s{seq}_bs{}_ht{head_tile}_kv{kv_tile}_dk{d_tile}",
        p.pools.block_size
    );
    let cube_params = vec![
        ("HEADS", u32(heads)),
        ("HEAD_DIM", u32(hd)),
        ("WINDOW", u32(window)),
        ("SEQ", u32(seq)),
        ("BLOCK_SIZE", u32(p.pools.block_size)),
        ("UNION_ROWS", u32(union)),
        ("HEAD_TILE", u32(head_tile)),
        ("KV_TILE", u32(kv_tile)),
        ("D_TILE", u32(d_tile)),
    ];
    let cube_args = vec!["kv_cache", "swa_indices", "swa_lens"];
    let scores = Kernel {
        name: format!("attn_window_scores_{cube_tag}"),
        doc: "window attention scores q · unionᵀ per request (f32, unscaled)".into(),
        block: "attention_cube.h",
        class: "AttentionScores",
        cores: Cores::Aic,
        params: cube_params.clone(),
        args: [&["q"][..], &cube_args, &["scores"]].concat(),
    };
    // With a further source the softmax also hands each head's max to it.
    let max_tag = if with_compressed { "_max" } else { "" };
    let mut softmax_args = vec![
        "scores",
        "swa_indices",
        "swa_lens",
        "attn_sink",
        "probs",
        "denom",
    ];
    if with_compressed {
        softmax_args.push("row_max");
    }
    let softmax = Kernel {
        name: format!("attn_window_softmax{max_tag}_h{heads}_d{hd}_w{window}_s{seq}_ht{head_tile}"),
        doc: "window attention softmax: lane mask, bf16 probabilities, sink denominators".into(),
        block: "attention_softmax.h",
        class: "AttentionSoftmax",
        cores: Cores::Aiv,
        params: vec![
            ("HEADS", u32(heads)),
            ("WINDOW", u32(window)),
            ("SEQ", u32(seq)),
            ("UNION_ROWS", u32(union)),
            ("HEAD_TILE", u32(head_tile)),
            ("SCALE", Value::F32(m.softmax_scale)),
        ],
        args: softmax_args,
    };
    let values = Kernel {
        name: format!("attn_window_values_{cube_tag}"),
        doc: "window attention values probs · union per request (f32)".into(),
        block: "attention_cube.h",
        class: "AttentionValues",
        cores: Cores::Aic,
        params: cube_params,
        args: [&["probs"][..], &cube_args, &["o"]].concat(),
    };
    let finish = Kernel {
        name: format!(
            "attn_finish_h{heads}_d{hd}_r{}_hpg{}_tpad{t_pad}_ht{head_tile}",
            m.rope_dim, m.heads_per_group
        ),
        doc: "attention output: o / denom, inverse RoPE on the rope dims, bf16, heads packed by group"
            .into(),
        block: "attention_finish.h",
        class: "AttentionFinish",
        cores: Cores::Aiv,
        params: vec![
            ("HEADS", u32(heads)),
            ("HEAD_DIM", u32(hd)),
            ("ROPE_DIM", u32(m.rope_dim)),
            ("HEADS_PER_GROUP", u32(m.heads_per_group)),
            ("T_PAD", u32(t_pad)),
            ("HEAD_TILE", u32(head_tile)),
        ],
        args: vec!["o", "denom", "freqs_cos", "freqs_sin", "packed"],
    };

    let requests = p.shape.b;
    let (aic, aiv) = (
        p.chip.aic_cores.min(requests),
        p.chip.aiv_cores.min(requests),
    );
    // HCA/CSA name the window metadata window_swa_*; their lens agree with the -1 lanes
    // (hca_csa.md §7.1), which the softmax's union check relies on.
    let (indices, lens) = if p.tensor("swa_indices").is_some() {
        ("swa_indices", "swa_lens")
    } else {
        ("window_swa_indices", "window_swa_lens")
    };
    let metadata = ["kv_cache", indices, lens];
    b.launch(
        s.kind,
        scores,
        aic as u32,
        &[&["q"][..], &metadata, &["attn_scores"]].concat(),
    );
    let mut softmax_bind = vec![
        "attn_scores",
        indices,
        lens,
        "attn_sink",
        "attn_probs",
        "attn_denom",
    ];
    if with_compressed {
        softmax_bind.push("attn_max");
    }
    b.launch(s.kind, softmax, aiv as u32, &softmax_bind);
    b.launch(
        s.kind,
        values,
        aic as u32,
        &[&["attn_probs"][..], &metadata, &["attn_o"]].concat(),
    );
    if let Some(c) = compressed {
        compressed_launch(b, s, c.ratio, head_tile, kv_tile, d_tile);
    }
    b.launch(
        s.kind,
        finish,
        p.chip.aiv_cores.min(p.shape.local_t) as u32,
        &[
            "attn_o",
            "attn_denom",
            "freqs_cos",
            "freqs_sin",
            "o_packed_heads",
        ],
    );
}

/// The compressed source (hca_csa.md §6.2): one mixed launch continuing every query row's
/// online softmax over its request's compressed rows in chunks
/// (`dsv4/attention_compressed.h`), between the window values and the finish.
fn compressed_launch(
    b: &mut Builder,
    s: &StagePlan,
    ratio: usize,
    head_tile: usize,
    kv_tile: usize,
    d_tile: usize,
) {
    let p = b.plan;
    let m = &p.model;
    let (heads, hd, seq) = (m.heads, m.head_dim, p.shape.decode_seq);
    let max_rows = p.pools.max_positions / ratio;
    let union = attention_union_rows(p.attention.window, seq);
    let chunk = compressed_chunk_rows(
        hd,
        head_tile,
        union,
        p.pools.block_size,
        p.attention.max_compressed_rows,
        p.chip,
    );
    let per_token = |dims: &[usize]| {
        let mut v = vec![Dim::Var("t")];
        v.extend(dims.iter().map(|&n| Dim::Const(n)));
        v
    };
    b.workspace("attn_max", per_token(&[heads]), DType::F32);
    b.workspace("attn_cmp_scores", per_token(&[heads, chunk]), DType::F32);
    b.workspace("attn_cmp_probs", per_token(&[heads, chunk]), DType::Bf16);
    b.workspace("attn_cmp_o", per_token(&[heads, hd]), DType::F32);
    let u32 = |v: usize| Value::U32(v as u32);
    let kernel = Kernel {
        name: format!(
            "attn_compressed_h{heads}_d{hd}_s{seq}_bs{}_r{ratio}_max{max_rows}_ht{head_tile}_kv{kv_tile}_dk{d_tile}_ch{chunk}",
            p.pools.block_size
        ),
        doc: "compressed-row attention: online-softmax merge of every visible compressed row \
              into the window's o and denominators"
            .into(),
        block: "attention_compressed.h",
        class: "AttentionCompressed",
        cores: Cores::Mix,
        params: vec![
            ("HEADS", u32(heads)),
            ("HEAD_DIM", u32(hd)),
            ("SEQ", u32(seq)),
            ("BLOCK_SIZE", u32(p.pools.block_size)),
            ("RATIO", u32(ratio)),
            ("MAX_ROWS", u32(max_rows)),
            ("HEAD_TILE", u32(head_tile)),
            ("KV_TILE", u32(kv_tile)),
            ("D_TILE", u32(d_tile)),
            ("CHUNK", u32(chunk)),
            ("SCALE", Value::F32(m.softmax_scale)),
        ],
        args: vec![
            "q",
            "cmp_kv",
            "cmp_table",
            "positions",
            "kv_seq_lens",
            "row_max",
            "scores",
            "probs",
            "part",
            "o",
            "denom",
        ],
    };
    let blocks = p.chip.aic_cores.min(p.shape.b) as u32;
    b.launch(
        s.kind,
        kernel,
        blocks,
        &[
            "q",
            "cmp_kv",
            "cmp_block_table",
            "position_ids",
            "kv_seq_lens",
            "attn_max",
            "attn_cmp_scores",
            "attn_cmp_probs",
            "attn_cmp_o",
            "attn_o",
            "attn_denom",
        ],
    );
}

/// Why `dsv4/attention_compressed.h` cannot run this plan, if it cannot: the two AIVs of a
/// block split a request's tokens evenly, a tile is whole pages and whole fractals, the
/// cube's head tile is the window kernels'.
fn compressed_unmet(p: &crate::plan::Plan, s: &StagePlan, c: &CompressorPlan) -> Option<String> {
    let [_, ("kv_rows", kv_tile), ("d", d_tile)] = s.tiles[..] else {
        unreachable!("sparse_attention tiling is heads, kv_rows, d")
    };
    let union = attention_union_rows(p.attention.window, p.shape.decode_seq);
    super::unmet([
        (
            !c.overlap,
            "compressed rows of the overlapping compressor have no kernels yet".into(),
        ),
        (
            p.shape.decode_seq.is_multiple_of(2),
            format!(
                "decode_seq {} is odd (two vector cores split a request's tokens)",
                p.shape.decode_seq
            ),
        ),
        (
            p.model.heads.is_multiple_of(8),
            format!("heads {} is not a multiple of 8", p.model.heads),
        ),
        (
            kv_tile <= union
                && kv_tile.is_multiple_of(p.pools.block_size)
                && kv_tile.is_multiple_of(16),
            format!(
                "tile kv_rows {kv_tile} is not whole pages of {} and fractals within the {union} window rows",
                p.pools.block_size
            ),
        ),
        (
            p.model.head_dim.is_multiple_of(d_tile),
            format!(
                "tile d {d_tile} does not divide head_dim {}",
                p.model.head_dim
            ),
        ),
        (
            ["cmp_block_table", "kv_seq_lens", "position_ids"]
                .iter()
                .all(|n| p.tensor(n).is_some()),
            "the ABI lacks cmp_block_table, kv_seq_lens or position_ids".into(),
        ),
    ])
}

/// Why the finish kernel cannot run these dims, if it cannot: it moves the nope and rope
/// parts of a head as whole 32-byte blocks of bf16 (and of f32 at their starts).
fn finish_unmet(m: &ModelDims) -> Option<String> {
    super::unmet([
        (
            m.nope_dim.is_multiple_of(16),
            format!(
                "head_dim − rope_dim = {} is not a multiple of 16",
                m.nope_dim
            ),
        ),
        (
            m.rope_dim.is_multiple_of(16),
            format!("rope_dim {} is not a multiple of 16", m.rope_dim),
        ),
    ])
}
