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
    /// The one kernel of the stage that allocates this buffer, when only one does: rows of
    /// different kernels are never live at once (a launch ends before the next starts).
    /// `None`: a role every kernel of the stage may use.
    pub kernel: Option<&'static str>,
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

    /// This row, allocated by `kernel` alone.
    const fn only_in(self, kernel: &'static str) -> Buffer {
        Buffer {
            kernel: Some(kernel),
            ..self
        }
    }
}

/// The bytes of `mem` a launch of the stage may hold at most: the shared rows plus the
/// largest one kernel's own rows.
pub fn bytes_in(buffers: &[Buffer], mem: Mem, chip: &Chip) -> usize {
    let of = |kernel: Option<&str>| -> usize {
        buffers
            .iter()
            .filter(|b| b.mem == mem && b.kernel == kernel)
            .map(|b| b.allocated(chip))
            .sum()
    };
    let own = buffers
        .iter()
        .filter_map(|b| b.kernel)
        .map(|k| of(Some(k)))
        .max()
        .unwrap_or(0);
    of(None) + own
}

/// What the buffer sizes depend on besides the tiling.
pub(super) struct Dims<'a> {
    pub model: &'a ModelDims,
    pub compressor: Option<&'a CompressorPlan>,
    pub indexer: Option<&'a IndexerPlan>,
    pub block_size: usize,
    pub chip: &'a Chip,
    /// SWA window lanes per token and tokens per request (the attention's union of windows).
    pub window: usize,
    pub decode_seq: usize,
    /// Compressed rows the attention reads densely at most (HCA), 0 for none.
    pub compressed_rows: usize,
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
        kernel: None,
    }
}

/// The on-chip buffers of the shared cube matmul (`dsv4/matmul.h`, planned by
/// `kernels::gemm`) for Mmad tiles `m × n × k` of bf16 (an int8 matmul keeps the byte
/// sizes: its tiles hold twice the k values). B tiles and the L0 operands rotate in
/// pairs; the A panel takes the rest of L1 and the panel's tail the rest of L0A; L0C
/// holds one `n`-column strip of C over as many `m`-row Mmad tiles as fit (at least one).
/// Each launch sizes its panel and tail within these rows, and a launch with narrower
/// tiles gives the bytes they free in L1 and L0A to its panel and tail: the rows of one
/// memory bound the launch's buffers together.
pub fn matmul(m: usize, n: usize, k: usize, chip: &Chip) -> Vec<Buffer> {
    use DType::{Bf16, F32};
    use Mem::*;
    let b_l1 = row("mm_b_l1", L1, Bf16, k * n, 2, None);
    let panel = chip.l1_bytes.saturating_sub(b_l1.allocated(chip)) / 32 * 32;
    let a_l0 = row("mm_a_l0", L0a, Bf16, m * k, 2, None);
    let tail = chip.l0a_bytes.saturating_sub(a_l0.allocated(chip));
    let strip_rows = (chip.l0c_bytes / (m * n * F32.size())).max(1) * m;
    vec![
        row("mm_a_panel", L1, Bf16, panel / Bf16.size(), 1, None),
        b_l1,
        a_l0,
        row("mm_a_tail", L0a, Bf16, tail / Bf16.size(), 1, None),
        row("mm_b_l0", L0b, Bf16, k * n, 2, None),
        row("mm_c_strip", L0c, F32, strip_rows * n, 1, None),
    ]
}

/// Elements of the zeroed UB tile `zero_rows.h` copies out (f32 or i32).
pub const ZERO_FILL_TILE: usize = 8192;

/// Elements (f32) of each of the four UB tiles of `k_slice_sum.h`: two partials in, two
/// sums out.
pub const K_SUM_TILE: usize = 2048;

/// The UB tiles of a split-K matmul's vector launches, each kernel's own: `zero_rows.h`
/// (int8) and `k_slice_sum.h` (bf16).
fn split_k() -> [Buffer; 2] {
    [
        row("zero_tile", Mem::Ub, DType::F32, ZERO_FILL_TILE, 1, None).only_in("zero_rows"),
        row("k_sum_tiles", Mem::Ub, DType::F32, K_SUM_TILE, 4, None).only_in("k_slice_sum"),
    ]
}

/// ReduceMax scratch (no index) for `count` f32 values: a (value, index) pair per whole
/// 64-lane repeat, at least one, rounded up to a 32-byte block (ReduceMax.md;
/// `dsv4/quant.h` ReduceTmpElems).
pub fn reduce_tmp(count: usize) -> usize {
    (2 * (count / 64).max(1)).next_multiple_of(8)
}

/// Heads per work item of qkv_proj_rope's QHeads kernel: as many as fit 4096 values
/// (16 KiB of f32), so few head groups share a token and its RoPE rows are read by few
/// blocks, while a group's rows stay small in UB.
pub fn qkv_heads_per_item(heads: usize, head_dim: usize) -> usize {
    (1..=heads)
        .filter(|g| heads.is_multiple_of(*g) && g * head_dim <= 4096)
        .max()
        .unwrap_or(1)
}

/// Columns of group_combine.h's one-row tiles: the widest divisor of `hidden` (whole
/// 32-byte blocks in bf16) whose buffers (7 rows of 4-byte values, one 32-byte block of
/// scales per group) fit `room` bytes of UB; 16 if none does (the budget check then
/// reports the overflow). Wide rows keep the vector instructions long and few.
pub fn o_proj_combine_cols(hidden: usize, groups: usize, room: usize) -> usize {
    (16..=hidden)
        .step_by(16)
        .filter(|c| hidden.is_multiple_of(*c) && 7 * 4 * c + 32 * groups <= room)
        .max()
        .unwrap_or(16)
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
            let (hc, mix) = (md.hc_mult, md.mix_hc);
            let mix_pad = mix.next_multiple_of(16);
            let split = hc_pre_split(md.hc_dim, k, d.chip.aic_cores);
            let span = split.chunks_per_block * k;
            let (rows, out) = (1 + mix, t * (hc + hc * hc));
            // A token's partials row: per projection block, m dot products and the logits.
            let row_len = split.blocks * (m + mix);
            use Mem::*;
            vec![
                // hc_pre.h HcPreProjection: the block's fn slice, x tiles, one k chunk in L0.
                row("fn_l1", L1, F32, mix_pad * span, 1, None),
                row("x_l1", L1, F32, m * span, 2, None),
                row("x_l0a", L0a, F32, m * k, 2, None),
                row("x_fn_l0b", L0b, F32, (m + mix_pad) * k, 2, None),
                row("logits_l0c", L0c, F32, m * mix_pad, 1, None),
                row("squares_l0c", L0c, F32, m * m, 1, None),
                // HcPreMix: a group of t tokens (its partials rows), the entry-major table,
                // gather offsets (u32, sized as i32), one mix chunk per token.
                row("partials", Ub, F32, t * row_len, 1, Some(t * row_len)),
                row("x_in", Ub, F32, hc * c, 2, Some(c)),
                row("x_mixed", Ub, Bf16, c, 2, Some(c)),
                row("gates_out", Ub, F32, out, 1, Some(t * hc)),
                row("table", Ub, F32, rows * t, 1, None),
                row("gathered", Ub, F32, rows * t, 1, None),
                row("in_offsets", Ub, I32, rows * t, 1, None),
                row("diag_offsets", Ub, I32, t, 1, None),
                row("out_offsets", Ub, I32, out, 1, None),
                row("base_rows", Ub, F32, mix * t, 1, None),
                // hc_attn_scale and hc_attn_base, moved with DataCopyPad.
                row("weights", Ub, F32, 8 + mix.next_multiple_of(8), 1, None),
                row("ones", Ub, F32, 2 * hc * t, 1, None),
                row("pairs", Ub, F32, 2 * hc * t, 1, None),
                row("sums", Ub, F32, hc * t, 1, None),
            ]
        }
        (StageKind::RmsNorm, Tiling::Vector { tokens, cols }) => {
            // rms_norm.h: tiles of t whole rows; f32 work in c-wide chunks.
            let (t, c, h) = (tokens.value, cols.value, md.hidden);
            vec![
                row("x_in", Ub, Bf16, t * h, 2, Some(h)),
                row("x_out", Ub, Bf16, t * h, 2, Some(h)),
                row("weight", Ub, F32, h, 1, None),
                row("x_f32", Ub, F32, c, 1, None),
                row("squares", Ub, F32, c, 1, None),
                row("square_sums", Ub, F32, c, 1, None),
                row("reduce_tmp", Ub, F32, c, 1, None),
                row("scalars", Ub, F32, 16, 1, None),
            ]
        }
        (StageKind::QkvProjRope, Tiling::Matmul { m, n, k, tokens }) => {
            // The cube matmuls (wq_a, wq_b int8, wkv) share the matmul rows. The UB rows are
            // roles shared by the stage's vector kernels (qkv_proj_rope.h QLatentQuant,
            // QHeads, KvFinish, and a split-K matmul's zero fill or slice sum), each allocating at
            // most the row: their sum bounds every one of them.
            let (t, hd, ql, rd) = (tokens.value, md.head_dim, md.q_lora_rank, md.rope_dim);
            let w = qkv_heads_per_item(md.heads, hd) * hd;
            let mut v = matmul(m.value, n.value, k.value, d.chip);
            v.extend([
                // latent tiles (f32), q_acc head groups (i32), kv latent tiles (f32)
                row(
                    "vec_in",
                    Ub,
                    F32,
                    (t * ql).max(w).max(t * hd),
                    2,
                    Some(hd.min(ql)),
                ),
                // qr tiles (i8), q head groups and kv tiles (bf16); sized in bytes
                row(
                    "vec_out",
                    Ub,
                    I8,
                    (t * ql).max(2 * w).max(2 * t * hd),
                    2,
                    Some(ql),
                ),
                row("vec_x", Ub, F32, w, 1, None),
                // gamma_cq / gamma_ckv widened, or the head group's wq_b_scale
                row("vec_weight", Ub, F32, ql.max(w).max(hd), 1, Some(w)),
                row("vec_weight_in", Ub, Bf16, ql.max(hd), 1, Some(hd.min(ql))),
                row("vec_work", Ub, F32, ql.max(hd), 1, None),
                // f16 staging of the int8 quantisation (2 bytes, sized as bf16)
                row("vec_f16", Ub, Bf16, ql, 1, None),
                // qr_scale out (DataCopyPad), or 8 tokens' qr_scale in
                row("vec_scales", Ub, F32, 8, 2, None),
                row("vec_slot", Ub, F32, 8, 1, None),
                row("vec_reduce_tmp", Ub, F32, reduce_tmp(ql.max(hd)), 1, None),
                // rope.h: the token's cos/sin rows, [cos | sin | -sin], gather offsets,
                // the interleaved tables and the pair-swapped slice
                row("rope_rows", Ub, Bf16, 2 * rd, 1, Some(rd)),
                row("rope_trig", Ub, F32, 3 * rd, 1, None),
                row("rope_offsets", Ub, I32, 3 * rd, 1, None),
                row("rope_tables", Ub, F32, 2 * rd, 1, None),
                row("rope_swap", Ub, F32, rd, 1, None),
            ]);
            v.extend(split_k());
            v
        }
        (StageKind::CacheInsert, Tiling::Tokens { tokens }) => {
            // cache_insert.h: t kv rows staged per DMA; the slots are scalar GM reads.
            let t = tokens.value;
            let hd = md.head_dim;
            vec![row("kv_rows", Ub, Bf16, t * hd, 2, Some(hd))]
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
            if c.overlap {
                // The ratio-4 compressor has no kernels yet: the starting model.
                let mut v = cube(m.value, n.value, k.value, Bf16, F32);
                v.extend(compressor_vector(c, t, ch, md.half_rope));
                return v;
            }
            // The projections run the shared matmul (and its split-K launches).
            let mut v = matmul(m.value, n.value, k.value, d.chip);
            v.extend(split_k());
            // compressor.h: a request's t token rows of kvp, score and APE (the commit); a
            // pooling tile of `ratio` rows × ch channels of kv, score and the APE of rows
            // this step writes, its column-max tree; the pooled row and its RMSNorm / RoPE
            // scratch.
            let (hd, rd, half) = (c.head_dim, md.rope_dim, md.half_rope);
            let tile = c.ratio * ch;
            v.extend([
                row("kv_rows", Ub, F32, t * hd, 1, Some(hd)),
                row("score_rows", Ub, F32, t * hd, 1, Some(hd)),
                row("ape_rows", Ub, F32, t * hd, 1, Some(hd)),
                row("pool_kv", Ub, F32, tile, 1, Some(ch)),
                row("pool_score", Ub, F32, tile, 1, Some(ch)),
                row("pool_ape", Ub, F32, tile, 1, Some(ch)),
                row("pool_max", Ub, F32, tile / 2, 1, None),
                row("pooled", Ub, F32, hd, 1, None),
                row("squares", Ub, F32, hd, 1, None),
                row("reduce_tmp", Ub, F32, reduce_tmp(hd), 1, None),
                row("norm_w", Ub, F32, hd, 1, None),
                row("norm_w_in", Ub, Bf16, hd, 1, Some(hd)),
                row("cmp_out", Ub, Bf16, hd, 1, Some(hd)),
                row("scalars", Ub, F32, 16, 1, None),
                row("cmp_trig", Ub, F32, 3 * half, 1, Some(half)),
                row("rope_offsets", Ub, I32, 3 * rd, 1, None),
                row("rope_tables", Ub, F32, 2 * rd, 1, None),
                row("rope_swap", Ub, F32, rd, 1, None),
            ]);
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
            let (ht, kv, dk) = (heads.value, kv_rows.value, dk.value);
            let (h, hd, rope) = (md.heads, md.head_dim, md.rope_dim);
            let union = attention_union_rows(d.window, d.decode_seq);
            let (m_pad, l0_k) = (ht.next_multiple_of(16), dk.max(kv));
            let lanes = d.window.next_multiple_of(8);
            let (tile, rope_tile) = (ht * hd, ht * rope);
            let chunk =
                compressed_chunk_rows(hd, ht, union, d.block_size, d.compressed_rows, d.chip);
            use Mem::*;
            let mut v = vec![
                // attention_cube.h, both cube kernels: a request's union rows (K = V) and
                // the query-side tiles (q rows or probability rows, whichever is wider);
                // attention_compressed.h a chunk of compressed rows and the same tiles.
                row("cube_union", L1, Bf16, union.max(chunk) * hd, 1, None),
                row(
                    "cube_a_tile",
                    L1,
                    Bf16,
                    m_pad * hd.max(union).max(chunk),
                    2,
                    None,
                ),
                row("cube_a_l0", L0a, Bf16, m_pad * l0_k, 2, None),
                row("cube_b_l0", L0b, Bf16, dk * kv, 2, None),
                row("cube_c_l0", L0c, F32, m_pad * l0_k, 2, None),
                // The vector kernels' UB rows are each one kernel's own (`only_in`).
                // attention_softmax.h: a tile of head rows over the union lanes, one
                // token's index row (DataCopyPad) for the contract check, per-lane
                // constants and per-head statistics (one 32-byte slot per row result).
                row("softmax_scores", Ub, F32, ht * union, 2, Some(ht * union))
                    .only_in("attention_softmax"),
                row("softmax_probs", Ub, Bf16, ht * union, 2, Some(ht * union))
                    .only_in("attention_softmax"),
                row("softmax_index_row", Ub, I32, lanes, 1, None).only_in("attention_softmax"),
                row("softmax_union", Ub, I32, union, 1, None).only_in("attention_softmax"),
                row("softmax_lane_offsets", Ub, I32, lanes, 1, None).only_in("attention_softmax"),
                row("softmax_gather_offsets", Ub, I32, lanes, 1, None).only_in("attention_softmax"),
                row("softmax_expected", Ub, I32, lanes, 1, None).only_in("attention_softmax"),
                row("softmax_mismatch", Ub, F32, lanes, 1, None).only_in("attention_softmax"),
                row("softmax_lane", Ub, F32, union, 1, None).only_in("attention_softmax"),
                row("softmax_bias", Ub, F32, union, 1, None).only_in("attention_softmax"),
                row("softmax_clamp", Ub, F32, union, 1, None).only_in("attention_softmax"),
                row("softmax_reduce_tmp", Ub, F32, union, 1, None).only_in("attention_softmax"),
                row("softmax_row_stats", Ub, F32, ht * 8, 1, None).only_in("attention_softmax"),
                row("softmax_sink", Ub, F32, h, 1, Some(h)).only_in("attention_softmax"),
                row("softmax_row_max", Ub, F32, h, 1, None).only_in("attention_softmax"),
                row("softmax_row_sum", Ub, F32, h, 1, None).only_in("attention_softmax"),
                row("softmax_denom", Ub, F32, h, 1, Some(h)).only_in("attention_softmax"),
                // attention_finish.h: a tile of head rows in and out (out leaves in runs of
                // whole heads), the token's denominators and freqs half-rows (DataCopyPad),
                // the rope gather tables.
                row("finish_o", Ub, F32, tile, 2, Some(tile)).only_in("attention_finish"),
                row("finish_out", Ub, Bf16, tile, 2, Some(hd)).only_in("attention_finish"),
                row("finish_denom", Ub, F32, h, 1, Some(h)).only_in("attention_finish"),
                row("finish_divisor", Ub, F32, hd, 1, None).only_in("attention_finish"),
                row("finish_cos_row", Ub, Bf16, rope / 2, 1, None).only_in("attention_finish"),
                row("finish_sin_row", Ub, Bf16, rope / 2, 1, None).only_in("attention_finish"),
                row("finish_trig", Ub, F32, 3 * rope / 2, 1, None).only_in("attention_finish"),
                row("finish_cos_table", Ub, F32, rope_tile, 1, None).only_in("attention_finish"),
                row("finish_sin_table", Ub, F32, rope_tile, 1, None).only_in("attention_finish"),
                row("finish_rope", Ub, F32, rope_tile, 1, None).only_in("attention_finish"),
                row("finish_partner", Ub, F32, rope_tile, 1, None).only_in("attention_finish"),
                row("finish_rope_offsets", Ub, I32, rope_tile, 1, None).only_in("attention_finish"),
                row("finish_partner_offsets", Ub, I32, rope_tile, 1, None)
                    .only_in("attention_finish"),
                row("finish_cos_offsets", Ub, I32, rope_tile, 1, None).only_in("attention_finish"),
                row("finish_sin_offsets", Ub, I32, rope_tile, 1, None).only_in("attention_finish"),
            ];
            if chunk > 0 {
                // attention_compressed.h. Its AIC allocates the cube rows above (a chunk in
                // the union's row; same L0 tiles). AIV: 8 heads of one token's scores in and
                // probabilities out over a chunk's lanes, per-lane constants, the running
                // statistics of its half of a request's tokens, and one head row of o and of
                // the chunk's part.
                let (vh, stats) = (8, d.decode_seq / 2 * h);
                v.extend([
                    row("cmp_scores", Ub, F32, vh * chunk, 1, Some(vh * chunk))
                        .only_in("attention_compressed"),
                    row("cmp_probs", Ub, Bf16, vh * chunk, 1, Some(vh * chunk))
                        .only_in("attention_compressed"),
                    row("cmp_lane", Ub, F32, chunk, 1, None).only_in("attention_compressed"),
                    row("cmp_bias", Ub, F32, chunk, 1, None).only_in("attention_compressed"),
                    row("cmp_reduce_tmp", Ub, F32, chunk, 1, None).only_in("attention_compressed"),
                    row("cmp_row_stats", Ub, F32, vh * 8, 1, None).only_in("attention_compressed"),
                    row("cmp_run_max", Ub, F32, stats, 1, Some(stats))
                        .only_in("attention_compressed"),
                    row("cmp_run_denom", Ub, F32, stats, 1, Some(stats))
                        .only_in("attention_compressed"),
                    row("cmp_tile_max", Ub, F32, stats, 1, None).only_in("attention_compressed"),
                    row("cmp_tile_sum", Ub, F32, stats, 1, None).only_in("attention_compressed"),
                    row("cmp_alpha", Ub, F32, stats, 1, None).only_in("attention_compressed"),
                    row("cmp_beta", Ub, F32, stats, 1, None).only_in("attention_compressed"),
                    row("cmp_o", Ub, F32, hd, 1, Some(hd)).only_in("attention_compressed"),
                    row("cmp_part", Ub, F32, hd, 1, Some(hd)).only_in("attention_compressed"),
                ]);
            }
            v
        }
        // A data-movement step between ranks: no kernel, no on-chip buffers.
        (StageKind::OGroupAllToAll, Tiling::Collective { .. }) => Vec::new(),
        (StageKind::OProj, Tiling::Matmul { m, n, k, tokens }) => {
            let t = tokens.value;
            let ol = md.o_lora_rank;
            // group_quant.h: a tile of t latent rows, quantised row by row (dsv4/quant.h).
            let quant = [
                row("quant_in", Ub, F32, t * ol, 2, Some(t * ol)).only_in("group_quant"),
                row("quant_i8", Ub, I8, t * ol, 2, Some(t * ol)).only_in("group_quant"),
                // Moved with DataCopyPad.
                row("quant_scale", Ub, F32, t.next_multiple_of(8), 2, None).only_in("group_quant"),
                row("quant_work", Ub, F32, ol, 1, None).only_in("group_quant"),
                // f16 staging between the f32 rne and int8 (2 bytes, sized as bf16).
                row("quant_f16", Ub, Bf16, ol, 1, None).only_in("group_quant"),
                row("quant_amax", Ub, F32, 8, 1, None).only_in("group_quant"),
                // ReduceMax scratch as its doc sizes it (value and index per repeat).
                row(
                    "quant_reduce_tmp",
                    Ub,
                    F32,
                    (2 * ol / 64).next_multiple_of(8),
                    1,
                    None,
                )
                .only_in("group_quant"),
            ];
            // group_combine.h (its own UB: the kernels of a stage run one after another): one
            // row × c columns of every group's products; the scales
            // (one 32-byte block per group; o_groups is TP 1's count, an upper bound) move
            // with DataCopyPad.
            let groups = md.o_groups;
            let c = o_proj_combine_cols(md.hidden, groups, d.chip.ub_bytes);
            // wo_a (bf16) and wo_b (int8) run the shared matmul with the same tiles.
            let mut v = matmul(m.value, n.value, k.value, d.chip);
            v.extend(quant);
            v.extend(split_k());
            v.extend([
                row("combine_p", Ub, I32, c, 2, Some(c)).only_in("group_combine"),
                row("combine_scales", Ub, F32, groups * 8, 1, None).only_in("group_combine"),
                row("combine_wo_b_scale", Ub, F32, c, 1, Some(c)).only_in("group_combine"),
                row("combine_acc", Ub, F32, c, 1, None).only_in("group_combine"),
                row("combine_term", Ub, F32, c, 1, None).only_in("group_combine"),
                // f32 at TP > 1, bf16 at TP 1.
                row("combine_out", Ub, F32, c, 2, Some(c)).only_in("group_combine"),
            ]);
            v
        }
        (StageKind::OReduceScatter, Tiling::Collective { rows, cols }) => {
            // rank_sum.h: a rows × cols tile of each source rank, double buffered.
            let (r, c) = (rows.value, cols.value);
            vec![
                row("rows_in", Ub, F32, r * c, 2, Some(c)),
                row("acc", Ub, F32, r * c, 1, None),
                row("rows_out", Ub, Bf16, r * c, 2, Some(c)),
            ]
        }
        (StageKind::HcPost, Tiling::Vector { tokens, cols }) => {
            // hc_post.h: an item of t tokens x c columns; post and comb by DataCopyPad.
            let (t, c, hc) = (tokens.value, cols.value, md.hc_mult);
            vec![
                row("attn_out", Ub, Bf16, t * c, 2, Some(c)),
                row("x_hc", Ub, F32, t * hc * c, 2, Some(c)),
                row("x_out", Ub, F32, t * hc * c, 2, Some(c)),
                row("attn_f32", Ub, F32, t * c, 1, None),
                row("product", Ub, F32, c, 1, None),
                row(
                    "weights",
                    Ub,
                    F32,
                    (t * hc).next_multiple_of(8) + (t * hc * hc).next_multiple_of(8),
                    1,
                    None,
                ),
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

/// Rows of the window attention's per-request union (a token's window plus one new row
/// per later token of its request), rounded up to whole 16-row fractals.
/// Compressed rows per chunk of `attention_compressed.h` (0 without compressed rows): as
/// many whole pages (and fractals) as L1 holds beside the two head-tile rows, at most
/// [`MAX_CHUNK`] (its UB rows grow with it) and no more than `max_rows` need. Every chunk
/// moves a request's o and part through GM once, so fewer, larger chunks move less.
pub fn compressed_chunk_rows(
    head_dim: usize,
    head_tile: usize,
    union: usize,
    block_size: usize,
    max_rows: usize,
    chip: &Chip,
) -> usize {
    if max_rows == 0 {
        return 0;
    }
    // whole pages and whole fractals
    let unit = (1..=16)
        .map(|k| k * block_size)
        .find(|r| r % 16 == 0)
        .expect("16 pages are 16k rows");
    let m_pad = head_tile.next_multiple_of(16);
    let l1 = |rows: usize| {
        let bf16 = DType::Bf16.size();
        rows.max(union) * head_dim * bf16 + 2 * m_pad * head_dim.max(union).max(rows) * bf16
    };
    let mut chunk = unit;
    while chunk + unit <= MAX_CHUNK.min(max_rows.next_multiple_of(unit))
        && l1(chunk + unit) <= chip.l1_bytes
    {
        chunk += unit;
    }
    chunk
}

/// The largest compressed-row chunk (f32 scores of 8 heads: 16 KiB of UB).
pub const MAX_CHUNK: usize = 512;

pub fn attention_union_rows(window: usize, decode_seq: usize) -> usize {
    (window + decode_seq - 1).next_multiple_of(16)
}

/// How hc_pre's projection splits the `hc_dim` columns over the cube cores: whole
/// `k`-column chunks, as many per block as spreading them over `aic_cores` takes,
/// and as many blocks (each one part of a token's partials row) as that needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HcPreSplit {
    pub chunks_per_block: usize,
    pub blocks: usize,
}

pub fn hc_pre_split(hc_dim: usize, k: usize, aic_cores: usize) -> HcPreSplit {
    let chunks = hc_dim.div_ceil(k);
    let chunks_per_block = chunks.div_ceil(aic_cores);
    HcPreSplit {
        chunks_per_block,
        blocks: chunks.div_ceil(chunks_per_block),
    }
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
