//! Stage indexer (CSA's lightning indexer, hca_csa.md §5): holds the indexer's parameters
//! (the `index_query` and `index_compressor` stages use its plan) and plans the scores and
//! the exact top-k (§5.4, §5.5) over the index queries and the int8 index-key cache:
//! 1. `index_scores` (cube, `dsv4/index_score.h`): per request, its keys gathered once
//!    through `idx_block_table` and all `decode_seq · heads` query rows against them,
//!    `index_raw` = ReLU(q_i8 · k_i8ᵀ) (int32, exact).
//! 2. `index_select` (vector, `dsv4/index_select.h`): per token, the head-weighted sum of
//!    the raw rows times the key scales, padded with FP32_NEG_INF past the token's visible
//!    rows, and the top-k by the sort instructions (`dsv4/topk.h`) into `topk_idx`.
//!
//! The two hand off through GM: the cube cannot reach UB on dav-c220.
//!
//! The ring CSA (compressor `state: ring`, up to 262,144 candidates per token) plans
//! `plan_leaves` instead: `index_leaves` (mixed, `dsv4/index_leaves.h`) scores and keeps
//! each leaf's top-k on every core group through a per-group stage, then `index_merge`
//! levels merge the leaves' lists into `topk_idx`.

use abi::{DType, Dim};
use serde::Deserialize;

use super::compressor::{cache_compressor, check_ring_pool};
use super::kind::{Data, Kind, LayerParts, Tile, TileCheck, tiling};
use crate::budget::{Buffer, bytes_in, row};
use crate::chip::{Chip, Mem};
use crate::diag::{Diagnostics, Loc};
use crate::kernel_plan::{Builder, Cores, Kernel, Value, unmet};
use crate::plan::IndexerPlan;
use crate::spec::range::{positive, positive_large};
use crate::spec::{Int, PadPolicy, Sp, StateLayout};

pub struct Indexer;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub heads: Int,
    pub head_dim: Int,
    pub topk: Int,
    /// State pages of the inner (index-key) compressor, which mirrors the main one.
    pub state_block_size: Int,
    pub state_pool_blocks: Int,
    /// Physical pages of the int8 index-key cache.
    pub key_pool_blocks: Int,
    pub tiling: Sp<Tiling>,
    #[serde(default)]
    pub unaligned_rows: Option<Sp<PadPolicy>>,
}

tiling! {
    /// Score tiles on the cube: `m` query rows × `n` keys × `k` head dims per Mmad;
    /// `key_rows` keys per L1 load (cube) and raw columns per vector pass.
    m, n, k, key_rows
}

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub heads: usize,
    pub head_dim: usize,
    pub head_dim_loc: Loc,
    pub topk: usize,
    pub topk_loc: Loc,
    pub state_block_size: usize,
    pub state_pool_blocks: usize,
    pub state_pool_loc: Loc,
    pub key_pool_blocks: usize,
    pub tiling: Tiling<Tile>,
}

impl Kind for Indexer {
    const NAME: &'static str = "indexer";
    const NEEDS: &'static [Data] = &[Data::IndexQuery, Data::IndexKeys, Data::Compressed];
    const PRODUCES: &'static [Data] = &[Data::TopK];
    type Spec = Spec;
    type Params = Params;

    fn read(spec: &Spec, d: &mut Diagnostics) -> Params {
        Params {
            tiling: spec.tiling.value.read(d),
            head_dim: positive(d, &spec.head_dim, "indexer head_dim"),
            head_dim_loc: Loc::of(&spec.head_dim),
            topk: positive(d, &spec.topk, "indexer topk"),
            topk_loc: Loc::of(&spec.topk),
            heads: positive(d, &spec.heads, "indexer heads"),
            state_block_size: positive(d, &spec.state_block_size, "state_block_size"),
            state_pool_blocks: positive_large(d, &spec.state_pool_blocks, "state_pool_blocks"),
            state_pool_loc: Loc::of(&spec.state_pool_blocks),
            key_pool_blocks: positive_large(d, &spec.key_pool_blocks, "key_pool_blocks"),
        }
    }

    /// The index-key compressor mirrors the main one (ratio, overlap), `head_dim` wide.
    fn layer(raw: &Params, parts: &mut LayerParts, d: &mut Diagnostics) {
        let Some(main) = parts.compressor.clone() else {
            return; // the graph check reports an indexer without a compressor
        };
        let (head_dim, topk) = (raw.head_dim, raw.topk);
        if !head_dim.is_power_of_two() {
            d.error(
                raw.head_dim_loc,
                format!("indexer head_dim {head_dim} is not a power of two"),
                "the indexer's Hadamard transform needs a power-of-two head_dim",
            );
        }
        if head_dim < parts.model.rope_dim {
            d.error(
                raw.head_dim_loc,
                format!(
                    "indexer head_dim {head_dim} is smaller than rope_dim {}",
                    parts.model.rope_dim
                ),
                "index heads end with the model's rope_dim rotary dims",
            );
        }
        let inner = cache_compressor(
            main.state,
            main.ratio,
            main.overlap,
            head_dim,
            (raw.state_block_size, raw.state_pool_blocks),
            raw.key_pool_blocks,
            parts.pools,
        );
        check_ring_pool(
            &inner,
            (raw.state_pool_blocks, raw.state_pool_loc),
            parts.decode_batch,
            "the index-key compressor keeps a ring per request like the main one",
            d,
        );
        let candidates = main.max_rows.min(inner.max_rows);
        if topk > candidates {
            d.error(
                raw.topk_loc,
                format!(
                    "indexer topk {topk} is larger than the {candidates} compressed rows a request can have"
                ),
                "topk <= max_positions / ratio",
            );
        }
        parts.indexer = Some(IndexerPlan {
            heads: raw.heads,
            head_dim,
            rope_dim: parts.model.rope_dim,
            nope_dim: head_dim.saturating_sub(parts.model.rope_dim),
            q_width: raw.heads * head_dim,
            topk,
            weights_scale: ((head_dim as f64).powf(-0.5) * (raw.heads as f64).powf(-0.5)) as f32,
            candidates,
            inner,
        });
    }

    fn check(s: &Params, c: &mut TileCheck) {
        let t = &s.tiling;
        c.cube(t.m, "m");
        c.cube(t.n, "n");
        c.multiple(t.k, "k", 32, "int8 cube tiles are whole 16x32 fractals");
        c.multiple(
            t.key_rows,
            "key_rows",
            32,
            "key passes are whole 32-element sort lists",
        );
        c.divides(t.n, "n", t.key_rows.value, "key_rows");
        if let Some(i) = &c.plan.indexer {
            let rows = c.plan.shape.decode_seq * i.heads;
            c.divides(
                t.m,
                "m",
                rows,
                "a request's index-query rows (decode_seq x heads)",
            );
            c.divides(t.k, "k", i.head_dim, "indexer head_dim");
        }
    }

    fn plan(s: &Params, b: &mut Builder) {
        let p = b.plan;
        let Some(i) = p.indexer.as_ref() else {
            return; // the layer check reports an indexer without a compressor
        };
        let t = &s.tiling;
        let (m, n, k, key_rows) = (t.m.value, t.n.value, t.k.value, t.key_rows.value);
        let (heads, hd, topk, seq) = (i.heads, i.head_dim, i.topk, p.shape.decode_seq);
        let (bs, cap, ratio) = (p.pools.block_size, i.candidates, i.inner.ratio);
        let stride = cap.next_multiple_of(key_rows);
        let chunk = sort_chunk(topk, key_rows);
        let unmet = unmet([
            (
                bs.is_multiple_of(32) && key_rows.is_multiple_of(bs),
                format!(
                    "block_size {bs} is not a multiple of 32 dividing key_rows {key_rows} (key loads are whole pages of whole sort lists)"
                ),
            ),
            (
                topk.is_multiple_of(8) && topk <= 4095,
                format!("topk {topk} is not a multiple of 8 up to 4095 (one MrgSort list)"),
            ),
            (
                chunk / 32 <= 255,
                format!("a sort chunk of {chunk} scores is more than one Sort32 call"),
            ),
        ]);
        if let Some(why) = unmet {
            b.missing(why);
            return;
        }
        for (name, (shape, dtype)) in [
            ("idx_q", per_token(&[heads * hd], DType::I8)),
            ("idx_q_scale", per_token(&[heads], DType::F32)),
            ("idx_weights", per_token(&[heads], DType::F32)),
            ("topk_idx", per_token(&[topk], DType::I32)),
        ] {
            b.workspace(name, shape, dtype);
        }
        if i.inner.state == StateLayout::Ring {
            plan_leaves(b, i, (m, n, k, key_rows));
            return;
        }
        let (shape, dtype) = per_token(&[heads, stride], DType::I32);
        b.workspace("index_raw", shape, dtype);
        let u = |v: usize| Value::U32(v as u32);
        let shared = format!("h{heads}_s{seq}_r{ratio}_bs{bs}_cap{cap}_kr{key_rows}");
        let scores = Kernel {
            name: format!("index_scores_{shared}_d{hd}_m{m}_n{n}_k{k}"),
            doc: "indexer raw scores ReLU(q_i8 · k_i8ᵀ) per request, keys gathered once".into(),
            block: "index_score.h",
            class: "IndexScores",
            cores: Cores::Aic,
            params: vec![
                ("HEADS", u(heads)),
                ("HEAD_DIM", u(hd)),
                ("SEQ", u(seq)),
                ("RATIO", u(ratio)),
                ("BLOCK_SIZE", u(bs)),
                ("CAP", u(cap)),
                ("STRIDE", u(stride)),
                ("TILE_M", u(m)),
                ("TILE_N", u(n)),
                ("TILE_K", u(k)),
                ("KEY_ROWS", u(key_rows)),
            ],
            args: vec!["q", "kv_seq_lens", "keys", "table", "raw"],
            buffers: score_buffers((seq * heads).next_multiple_of(16), hd, (m, n, k), key_rows),
            parts: Vec::new(),
        };
        // A request's key loads spread over the blocks when requests are fewer than cores.
        b.launch(
            scores,
            p.chip.aic_cores.min(p.shape.b * cap.div_ceil(key_rows)) as u32,
            &[
                "idx_q",
                "kv_seq_lens",
                "idx_kv_cache",
                "idx_block_table",
                "index_raw",
            ],
        );
        let select = Kernel {
            name: format!("index_select_{shared}_k{topk}_c{chunk}"),
            doc: "indexer scores (head-weighted raw times key scales) and exact top-k per token"
                .into(),
            block: "index_select.h",
            class: "IndexSelect",
            cores: Cores::Aiv,
            params: vec![
                ("HEADS", u(heads)),
                ("SEQ", u(seq)),
                ("RATIO", u(ratio)),
                ("BLOCK_SIZE", u(bs)),
                ("CAP", u(cap)),
                ("STRIDE", u(stride)),
                ("KEY_ROWS", u(key_rows)),
                ("TOPK", u(topk)),
                ("SORT_CHUNK", u(chunk)),
            ],
            args: vec![
                "raw",
                "q_scale",
                "weights",
                "key_scale",
                "table",
                "kv_seq_lens",
                "positions",
                "topk",
            ],
            buffers: Vec::new(),
            parts: Vec::new(),
        };
        let select = with_raw_buffers(select, p.chip, |bufs| {
            select_buffers(heads, bs, key_rows, stride, topk, chunk, bufs)
        });
        b.launch(
            select,
            p.chip.aiv_cores.min(p.shape.local_t) as u32,
            &[
                "index_raw",
                "idx_q_scale",
                "idx_weights",
                "idx_kv_scale",
                "idx_block_table",
                "kv_seq_lens",
                "position_ids",
                "topk_idx",
            ],
        );
    }
}

/// A per-token workspace shape `[t, dims…]`.
fn per_token(dims: &[usize], dtype: DType) -> (Vec<Dim>, DType) {
    let mut v = vec![Dim::Var("t")];
    v.extend(dims.iter().map(|&d| Dim::Const(d)));
    (v, dtype)
}

/// Candidates per leaf (the reference's, csa_1m.md §5.5): a leaf is one work item's keys and
/// sort; 128 of them cover a 1M token's 262,144 candidates.
const LEAF: usize = 2048;

/// Lists a merge item reads: a 1M token's 128 leaves merge in two levels (8, then 1), each
/// item streaming at most FAN_IN · topk pairs through one AIV.
const FAN_IN: usize = 16;

/// The merge levels' workspaces (level l + 1's lists), `[t, lists, 2·topk]` f32.
const MERGE_LEVELS: [&str; 4] = [
    "index_merge1",
    "index_merge2",
    "index_merge3",
    "index_merge4",
];

/// The ring CSA's indexer (csa_1m.md §5.4, §5.5; `dsv4/index_leaves.h`): the candidates of a
/// request in leaves of LEAF rows, one work item each over every core group (cube scores into
/// a per-group stage, vector weighting and the leaf's top-k), then the leaves' lists merged
/// FAN_IN at a time until one is left: `topk_idx`. The stage is reused per group, so the
/// workspaces do not grow with a 1M request's 262,144 candidates the way `index_raw` would.
fn plan_leaves(
    b: &mut Builder,
    i: &IndexerPlan,
    (m, n, k, key_rows): (usize, usize, usize, usize),
) {
    let p = b.plan;
    let (heads, hd, topk, seq) = (i.heads, i.head_dim, i.topk, p.shape.decode_seq);
    let (bs, cap, ratio) = (p.pools.block_size, i.candidates, i.inner.ratio);
    let leaf = LEAF
        .next_multiple_of(key_rows)
        .min(cap.next_multiple_of(key_rows));
    let leaves = cap.div_ceil(leaf);
    let chunk = sort_chunk(topk, key_rows);
    let unmet = unmet([
        (
            topk.is_multiple_of(32) && 2 * topk / 32 <= 255,
            format!(
                "topk {topk} is not a multiple of 32 up to 4080 (lists of whole Sort32 units, two per merge)"
            ),
        ),
        (
            leaves <= FAN_IN.pow(MERGE_LEVELS.len() as u32),
            format!(
                "{leaves} leaves need more than {} merge levels",
                MERGE_LEVELS.len()
            ),
        ),
    ]);
    if let Some(why) = unmet {
        b.missing(why);
        return;
    }
    let rows = seq * heads;
    let groups = p.chip.aic_cores.min(p.shape.b * leaves);
    b.workspace(
        "index_stage",
        vec![Dim::Const(groups * 2 * rows), Dim::Const(leaf)],
        DType::I32,
    );
    let (shape, dtype) = per_token(&[leaves, 2 * topk], DType::F32);
    b.workspace("index_leaves", shape, dtype);
    let u = |v: usize| Value::U32(v as u32);
    let buffers = |bufs| {
        let mut v = score_buffers(rows.next_multiple_of(16), hd, (m, n, k), key_rows);
        v.extend(topk_buffers(topk, chunk));
        v.extend(weighted_buffers(heads, key_rows, bufs));
        v.extend([
            row("key_scales", Mem::Ub, DType::F32, leaf, 1, Some(bs)),
            row("pad", Mem::Ub, DType::F32, 2 * topk, 1, None),
        ]);
        v
    };
    let leaves_kernel = Kernel {
        name: format!(
            "index_leaves_h{heads}_d{hd}_s{seq}_r{ratio}_bs{bs}_cap{cap}_l{leaf}_kr{key_rows}_k{topk}_m{m}_n{n}_k{k}"
        ),
        doc: "indexer scores and each leaf's exact top-k per token, a work item per (request, leaf) on every core group".into(),
        block: "index_leaves.h",
        class: "IndexLeaves",
        cores: Cores::Mix,
        params: vec![
            ("HEADS", u(heads)),
            ("HEAD_DIM", u(hd)),
            ("SEQ", u(seq)),
            ("RATIO", u(ratio)),
            ("BLOCK_SIZE", u(bs)),
            ("CAP", u(cap)),
            ("LEAF", u(leaf)),
            ("LEAVES", u(leaves)),
            ("TILE_M", u(m)),
            ("TILE_N", u(n)),
            ("TILE_K", u(k)),
            ("KEY_ROWS", u(key_rows)),
            ("TOPK", u(topk)),
            ("SORT_CHUNK", u(chunk)),
        ],
        args: vec![
            "q", "q_scale", "weights", "keys", "key_scale", "table", "kv_seq_lens", "positions", "stage", "leaves",
        ],
        buffers: Vec::new(),
        parts: Vec::new(),
    };
    let leaves_kernel = with_raw_buffers(leaves_kernel, p.chip, buffers);
    b.launch(
        leaves_kernel,
        groups as u32,
        &[
            "idx_q",
            "idx_q_scale",
            "idx_weights",
            "idx_kv_cache",
            "idx_kv_scale",
            "idx_block_table",
            "kv_seq_lens",
            "position_ids",
            "index_stage",
            "index_leaves",
        ],
    );
    // Levels of FAN_IN-list merges until one list is left.
    let (mut lists, mut input) = (leaves, "index_leaves");
    for level in 0.. {
        let out_lists = lists.div_ceil(FAN_IN);
        let last = out_lists == 1;
        let output = if last {
            "topk_idx"
        } else {
            MERGE_LEVELS[level]
        };
        if !last {
            let (shape, dtype) = per_token(&[out_lists, 2 * topk], DType::F32);
            b.workspace(output, shape, dtype);
        }
        let merge = Kernel {
            name: format!(
                "index_merge_s{seq}_r{ratio}_cap{cap}_l{leaf}_k{topk}_f{FAN_IN}_lv{level}_{lists}to{out_lists}"
            ),
            doc: if last {
                "the last merge of each token's lists: its exact top-k rows".into()
            } else {
                format!("level {level} of the merge of each token's top-k lists, {FAN_IN} to one")
            },
            block: "index_leaves.h",
            class: "IndexMerge",
            cores: Cores::Aiv,
            params: vec![
                ("TOPK", u(topk)),
                ("SORT_CHUNK", u(2 * topk)),
                ("SEQ", u(seq)),
                ("RATIO", u(ratio)),
                ("CAP", u(cap)),
                ("LEAF", u(leaf)),
                ("FAN_IN", u(FAN_IN)),
                ("LEVEL", u(level)),
                ("N_IN", u(lists)),
                ("N_OUT", u(out_lists)),
                ("FINAL", Value::Bool(last)),
            ],
            args: vec!["input", "kv_seq_lens", "positions", "output"],
            buffers: merge_buffers(topk),
            parts: Vec::new(),
        };
        b.launch(
            merge,
            p.chip.aiv_cores.min(p.shape.local_t * out_lists) as u32,
            &[input, "kv_seq_lens", "position_ids", output],
        );
        if last {
            break;
        }
        (lists, input) = (out_lists, output);
    }
}

/// TopK's UB (`dsv4/topk.h`, allocated first): the merge ping-pong, the iota and a chunk's
/// indices and scores, the running best.
fn topk_buffers(topk: usize, chunk: usize) -> Vec<Buffer> {
    use DType::{F32, I32};
    use Mem::Ub;
    vec![
        row("topk_sort_a", Ub, F32, 2 * chunk, 1, None),
        row("topk_sort_b", Ub, F32, 2 * chunk, 1, None),
        row("topk_iota", Ub, I32, chunk, 1, None),
        row("topk_index", Ub, I32, chunk, 1, None),
        row("topk_scores", Ub, F32, chunk, 1, None),
        row("topk_best", Ub, F32, 2 * topk, 1, None),
    ]
}

/// `kernel` with its buffers: two raw-pass buffers (the next pass loads under this one's
/// vector work, `dsv4/index_select.h` HeadWeighted) where they fit UB, else one.
fn with_raw_buffers(
    mut kernel: Kernel,
    chip: &Chip,
    buffers: impl Fn(usize) -> Vec<Buffer>,
) -> Kernel {
    let bufs = if bytes_in(&buffers(2), Mem::Ub, chip) <= chip.capacity(Mem::Ub) {
        2
    } else {
        1
    };
    kernel.buffers = buffers(bufs);
    kernel.params.push(("RAW_BUFS", Value::U32(bufs as u32)));
    kernel
}

/// HeadWeighted's UB (`dsv4/index_select.h`): `bufs` passes of raw rows as read, a pass as
/// f32, the c[h] tile, the q_s and w rows.
fn weighted_buffers(heads: usize, key_rows: usize, bufs: usize) -> Vec<Buffer> {
    use DType::{F32, I32};
    use Mem::Ub;
    let tile = heads * key_rows;
    vec![
        row("raw_i32", Ub, I32, tile, bufs, Some(key_rows)),
        row("raw_f32", Ub, F32, tile, 1, None),
        row("head_scales", Ub, F32, tile, 1, None),
        row(
            "head_rows",
            Ub,
            F32,
            2 * heads.next_multiple_of(8),
            1,
            Some(heads),
        ),
    ]
}

/// IndexMerge's UB (`dsv4/index_leaves.h`): TopK's with chunks of two lists, two lists of
/// pairs as read, a top-k row out.
fn merge_buffers(topk: usize) -> Vec<Buffer> {
    let mut v = topk_buffers(topk, 2 * topk);
    v.extend([
        row("pairs", Mem::Ub, DType::F32, 4 * topk, 1, None),
        row("out", Mem::Ub, DType::I32, topk, 1, Some(topk)),
    ]);
    v
}

/// Scores per top-k pass: twice the top-k (the merge of the running best with a chunk's
/// best fits a merge buffer), in whole raw passes. Longer chunks would save merges with the
/// running best (each about 2·topk elements) but cost UB.
fn sort_chunk(topk: usize, key_rows: usize) -> usize {
    (2 * topk).next_multiple_of(key_rows)
}

/// IndexScores' L1 and L0 (`dsv4/index_score.h`): a request's query rows, two key loads,
/// and double-buffered Mmad tiles.
fn score_buffers(
    rows: usize,
    hd: usize,
    (m, n, k): (usize, usize, usize),
    keys: usize,
) -> Vec<Buffer> {
    use DType::{I8, I32};
    vec![
        row("q_l1", Mem::L1, I8, rows * hd, 1, None),
        row("keys_l1", Mem::L1, I8, keys * hd, 2, None),
        row("a_l0", Mem::L0a, I8, m * k, 2, None),
        row("b_l0", Mem::L0b, I8, k * n, 2, None),
        row("c_l0", Mem::L0c, I32, m * n, 2, None),
    ]
}

/// IndexSelect's UB (`dsv4/index_select.h`): TopK's merge ping-pong, a chunk's indices and
/// scores and the running best (`dsv4/topk.h`, allocated first); a pass of raw rows as read
/// and as f32, the c[h] tile, the q_s and w rows, a request's key scales, the top-k row out.
fn select_buffers(
    heads: usize,
    bs: usize,
    key_rows: usize,
    stride: usize,
    topk: usize,
    chunk: usize,
    bufs: usize,
) -> Vec<Buffer> {
    use DType::{F32, I32};
    use Mem::Ub;
    let mut v = topk_buffers(topk, chunk);
    v.extend(weighted_buffers(heads, key_rows, bufs));
    v.extend([
        row("key_scales", Ub, F32, stride, 1, Some(bs)),
        row("out", Ub, I32, topk, 1, Some(topk)),
    ]);
    v
}
