//! The on-chip buffers of every stage: the one table the budget check and the
//! kernels' `InitBuffer` sizes come from. Each row names a buffer, its memory,
//! element type, element count (from the tiling), how many copies rotate
//! (2 = double buffering), and, for buffers that move rows to or from GM, the
//! contiguous run of elements one transfer moves (its alignment decides whether
//! plain `DataCopy` can move it).
//!
//! This is a starting model; the kernel issue adjusts the rows to exactly what
//! the kernels allocate.

use crate::chip::{Chip, Mem};

use super::abi::DType;
use super::stages::Tiling;
use super::{CompressorPlan, IndexerPlan, ModelDims, StageKind};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    pub name: &'static str,
    pub mem: Mem,
    pub dtype: DType,
    pub elems: usize,
    pub count: usize,
    /// Elements per contiguous GM transfer, for buffers that move rows to or from GM.
    pub gm_run: Option<usize>,
}

impl Buffer {
    /// Bytes of one copy.
    pub fn bytes(&self) -> usize {
        self.elems * self.dtype.size()
    }

    /// Bytes of all copies, each rounded up to the memory's alignment.
    pub fn allocated(&self, chip: &Chip) -> usize {
        self.bytes().next_multiple_of(chip.alignment(self.mem)) * self.count
    }

    pub fn gm_run_bytes(&self) -> Option<usize> {
        self.gm_run.map(|r| r * self.dtype.size())
    }

    pub fn const_name(&self) -> String {
        self.name.to_ascii_uppercase()
    }
}

pub fn bytes_in(buffers: &[Buffer], mem: Mem, chip: &Chip) -> usize {
    buffers
        .iter()
        .filter(|b| b.mem == mem)
        .map(|b| b.allocated(chip))
        .sum()
}

/// What the buffer sizes depend on besides the tiling.
pub(super) struct Dims<'a> {
    pub model: &'a ModelDims,
    pub compressor: Option<&'a CompressorPlan>,
    pub indexer: Option<&'a IndexerPlan>,
    pub block_size: usize,
}

const fn row(
    name: &'static str,
    mem: Mem,
    dtype: DType,
    elems: usize,
    count: usize,
    gm_run: Option<usize>,
) -> Buffer {
    Buffer {
        name,
        mem,
        dtype,
        elems,
        count,
        gm_run,
    }
}

/// L1/L0 buffers of a cube matmul tile m×n×k, inputs `a` and accumulator `acc`,
/// all double buffered.
fn cube(m: usize, n: usize, k: usize, a: DType, acc: DType) -> Vec<Buffer> {
    use Mem::*;
    vec![
        row("a_l1", L1, a, m * k, 2, None),
        row("b_l1", L1, a, k * n, 2, None),
        row("a_l0", L0a, a, m * k, 2, None),
        row("b_l0", L0b, a, k * n, 2, None),
        row("c_l0", L0c, acc, m * n, 2, None),
    ]
}

/// The buffers of one stage. Matmul inputs are sized for bf16 even where a
/// matmul of the stage is int8 (the larger of the two).
pub(super) fn buffers(kind: StageKind, tiling: &Tiling, d: &Dims) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    let md = d.model;
    match (kind, *tiling) {
        (StageKind::HcPre, Tiling::HcPre { m, k, tokens, cols }) => {
            let (m, k, t, c) = (m.value, k.value, tokens.value, cols.value);
            let hc = md.hc_mult;
            let mut v = cube(m, md.mix_hc.next_multiple_of(16), k, F32, F32);
            v.extend([
                row("x_in", Ub, F32, t * c, 2, Some(c)),
                row("x_mixed", Ub, Bf16, t * c, 2, Some(c)),
                row("sumsq", Ub, F32, t * 8, 1, None),
                row("mix", Ub, F32, t * md.mix_hc, 1, Some(t * md.mix_hc)),
                row("pre", Ub, F32, t * hc, 1, None),
                row("post", Ub, F32, t * hc, 1, Some(t * hc)),
                row("comb", Ub, F32, t * hc * hc, 1, Some(t * hc * hc)),
            ]);
            v
        }
        (StageKind::RmsNorm, Tiling::Vector { tokens, cols }) => {
            let (t, c) = (tokens.value, cols.value);
            vec![
                row("x_in", Ub, Bf16, t * c, 2, Some(c)),
                row("weight", Ub, Bf16, c, 2, Some(c)),
                row("x_f32", Ub, F32, t * c, 1, None),
                row("sumsq", Ub, F32, t * 8, 1, None),
                row("x_out", Ub, Bf16, t * c, 2, Some(c)),
            ]
        }
        (StageKind::QkvProjRope, Tiling::Matmul { m, n, k, tokens }) => {
            let t = tokens.value;
            let (hd, ql, rd) = (md.head_dim, md.q_lora_rank, md.rope_dim);
            let mut v = cube(m.value, n.value, k.value, Bf16, F32);
            v.extend([
                row("latent", Ub, F32, t * ql, 1, Some(ql)),
                row("qr", Ub, I8, t * ql, 1, Some(ql)),
                row("qr_scale", Ub, F32, t, 1, Some(t)),
                row("q_acc", Ub, I32, t * hd, 2, Some(hd)),
                row("q_scale", Ub, F32, hd, 2, Some(hd)),
                row("q_f32", Ub, F32, t * hd, 1, None),
                row("q_out", Ub, Bf16, t * hd, 2, Some(hd)),
                row("rope_cos", Ub, Bf16, t * rd, 1, Some(rd)),
                row("rope_sin", Ub, Bf16, t * rd, 1, Some(rd)),
            ]);
            v
        }
        (StageKind::CacheInsert, Tiling::Tokens { tokens }) => {
            let t = tokens.value;
            vec![
                row("slots", Ub, I64, t, 1, Some(t)),
                row("kv_rows", Ub, Bf16, t * md.head_dim, 2, Some(md.head_dim)),
            ]
        }
        (
            StageKind::Compressor,
            Tiling::Compressor {
                m,
                n,
                k,
                tokens,
                channels,
            },
        ) => {
            let Some(c) = d.compressor else {
                return Vec::new();
            };
            let (t, ch) = (tokens.value, channels.value);
            let mut v = cube(m.value, n.value, k.value, Bf16, F32);
            v.extend(compressor_vector(c, t, ch, md.half_rope));
            v
        }
        (
            StageKind::Indexer,
            Tiling::Indexer {
                m,
                n,
                k,
                tokens,
                key_rows,
            },
        ) => {
            let Some(i) = d.indexer else {
                return Vec::new();
            };
            let (t, kr, hd, h) = (tokens.value, key_rows.value, i.head_dim, i.heads);
            let mut v = cube(m.value, n.value, k.value, Bf16, F32);
            v.extend([
                row("q_acc", Ub, I32, t * hd, 2, Some(hd)),
                row("q_f32", Ub, F32, t * hd, 1, None),
                row("q_i8", Ub, I8, t * hd, 2, Some(hd)),
                row("q_scale", Ub, F32, t * h, 1, Some(t * h)),
                row("head_weights", Ub, F32, t * h, 1, Some(t * h)),
                row("keys", Ub, I8, kr * hd, 2, Some(hd)),
                // Scales are read page by page: runs of at most one block.
                row("key_scales", Ub, F32, kr, 2, Some(kr.min(d.block_size))),
                row("scores", Ub, F32, i.candidates, 1, Some(i.candidates)),
                row("topk", Ub, I32, i.topk, 1, Some(i.topk)),
                row("key_scale_out", Ub, F32, 1, 1, Some(1)),
            ]);
            v.extend(compressor_vector(&i.inner, t, hd, i.rope_dim / 2));
            v
        }
        (
            StageKind::SparseAttention,
            Tiling::Attention {
                heads,
                kv_rows,
                d: dk,
            },
        ) => {
            let (h, kv, dk, hd) = (heads.value, kv_rows.value, dk.value, md.head_dim);
            use Mem::*;
            vec![
                row("q", L1, Bf16, h * hd, 1, None),
                row("kv", L1, Bf16, kv * hd, 2, None),
                row("p", L1, Bf16, h * kv, 1, None),
                row("a_l0", L0a, Bf16, h * dk.max(kv), 2, None),
                row("b_l0", L0b, Bf16, dk * kv, 2, None),
                row("c_l0", L0c, F32, h * kv.max(dk), 2, None),
                row("indices", Ub, I32, kv, 2, Some(kv)),
                row("bias", Ub, F32, kv, 1, None),
                row("scores", Ub, F32, h * kv, 2, Some(kv)),
                row("probs", Ub, Bf16, h * kv, 1, Some(kv)),
                row("stats", Ub, F32, h * 8, 3, None),
                row("sink", Ub, F32, h, 1, Some(h)),
                row("o_acc", Ub, F32, h * hd, 1, None),
                row("o_out", Ub, Bf16, h * hd, 1, Some(hd)),
                row("rope_cos", Ub, Bf16, md.rope_dim, 1, Some(md.rope_dim)),
                row("rope_sin", Ub, Bf16, md.rope_dim, 1, Some(md.rope_dim)),
            ]
        }
        (StageKind::OGroupAllToAll, Tiling::Collective { rows, cols }) => {
            let (r, c) = (rows.value, cols.value);
            vec![row("rows", Ub, Bf16, r * c, 2, Some(c))]
        }
        (StageKind::OProj, Tiling::Matmul { m, n, k, tokens }) => {
            let (t, n) = (tokens.value, n.value);
            let ol = md.o_lora_rank;
            let mut v = cube(m.value, n, k.value, Bf16, F32);
            v.extend([
                row("a_f32", Ub, F32, t * ol, 2, Some(ol)),
                row("a_i8", Ub, I8, t * ol, 2, Some(ol)),
                row("a_scale", Ub, F32, t, 1, Some(t)),
                row("p_i32", Ub, I32, t * n, 2, Some(n)),
                row("acc", Ub, F32, t * n, 1, None),
                row("wo_b_scale", Ub, F32, n, 1, Some(n)),
                row("out", Ub, F32, t * n, 1, Some(n)),
            ]);
            v
        }
        (StageKind::OReduceScatter, Tiling::Collective { rows, cols }) => {
            let (r, c) = (rows.value, cols.value);
            vec![
                row("rows_in", Ub, F32, r * c, 2, Some(c)),
                row("acc", Ub, F32, r * c, 1, None),
                row("rows_out", Ub, Bf16, r * c, 1, Some(c)),
            ]
        }
        (StageKind::HcPost, Tiling::Vector { tokens, cols }) => {
            let (t, c, hc) = (tokens.value, cols.value, md.hc_mult);
            vec![
                row("attn_out", Ub, Bf16, t * c, 2, Some(c)),
                row("x_hc", Ub, F32, t * hc * c, 2, Some(c)),
                row("post", Ub, F32, t * hc, 1, Some(t * hc)),
                row("comb", Ub, F32, t * hc * hc, 1, Some(t * hc * hc)),
                row("x_out", Ub, F32, t * hc * c, 2, Some(c)),
            ]
        }
        // The spec model pairs each stage kind with exactly one tiling shape.
        _ => unreachable!("stage {} read with a foreign tiling", kind.name()),
    }
}

/// Vector side of a compressor: state-row writes per token tile, then pooling of
/// `pool_entries` state rows in `channels`-wide slices, normalise, rotate, write.
fn compressor_vector(
    c: &CompressorPlan,
    tokens: usize,
    channels: usize,
    half_rope: usize,
) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    vec![
        row(
            "state_rows",
            Ub,
            F32,
            tokens * c.state_row_width,
            2,
            Some(c.state_row_width),
        ),
        row("ape", Ub, F32, tokens * c.out_width, 1, Some(c.out_width)),
        row(
            "pool_kv",
            Ub,
            F32,
            c.pool_entries * channels,
            2,
            Some(channels),
        ),
        row(
            "pool_score",
            Ub,
            F32,
            c.pool_entries * channels,
            2,
            Some(channels),
        ),
        row("pooled", Ub, F32, c.head_dim, 1, None),
        row("norm_w", Ub, Bf16, c.head_dim, 1, Some(c.head_dim)),
        row("cmp_cos", Ub, F32, half_rope, 1, Some(half_rope)),
        row("cmp_sin", Ub, F32, half_rope, 1, Some(half_rope)),
        row("cmp_out", Ub, Bf16, c.head_dim, 1, Some(c.head_dim)),
    ]
}

/// A budget violation: what to say and which rule it breaks.
pub(super) struct Violation {
    pub message: String,
    pub rule: &'static str,
}

fn kib(bytes: usize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

/// Checks capacities per memory and the alignment of GM runs through UB.
pub(super) fn check(
    stage: &str,
    buffers: &[Buffer],
    pad_unaligned: bool,
    chip: &Chip,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for mem in Mem::ALL {
        let used = bytes_in(buffers, mem, chip);
        let cap = chip.capacity(mem);
        if used > cap {
            let parts: Vec<String> = buffers
                .iter()
                .filter(|b| b.mem == mem)
                .map(|b| format!("{} {}x{}", b.name, b.count, kib(b.bytes())))
                .collect();
            out.push(Violation {
                message: format!(
                    "{stage} buffers need {} of {mem} but {} has {} ({})",
                    kib(used),
                    chip.name,
                    kib(cap),
                    parts.join(", ")
                ),
                rule: "the buffers of a stage must fit each on-chip memory of the target chip",
            });
        }
    }
    if !pad_unaligned {
        let align = chip.alignment(Mem::Ub);
        for b in buffers.iter().filter(|b| b.mem == Mem::Ub) {
            if let Some(run) = b.gm_run_bytes().filter(|r| r % align != 0) {
                out.push(Violation {
                    message: format!(
                        "{stage} moves GM rows of {run} B through UB buffer {}, not a multiple of {align} B",
                        b.name
                    ),
                    rule: "unaligned UB rows need `unaligned_rows: data_copy_pad` on the stage",
                });
            }
        }
    }
    out
}
