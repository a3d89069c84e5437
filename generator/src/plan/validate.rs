//! The rules that do not depend on the TP degree: value ranges, model
//! consistency, pools, compression and attention parameters; and the
//! TP-independent parts of the plan. The stage graph is checked in `graph.rs`;
//! tiles and budgets per TP degree in `derive.rs`.

use crate::chip::{self, Chip};
use crate::diag::{Diagnostics, Loc};
use crate::spec::{self as s, Int, KvSource, LayerKind, Sp, Spec};

use super::graph::check_stage_graph;
use super::stages::{Attention, Compressor, Indexer, StageSpec, read_stages};
use super::{AttentionPlan, CompressorPlan, IndexerPlan, ModelDims, Pools, RopePlan, YarnPlan};

const POSITIVE: &str = "dims, counts and tiles are positive integers up to 65536; positions and pool sizes up to 16777216";

/// Everything of a valid spec that is the same at every TP degree.
#[derive(Debug)]
pub(super) struct Base {
    pub name: String,
    pub layer: LayerKind,
    pub chip: &'static Chip,
    pub tp: Vec<(usize, Loc)>,
    pub model: ModelDims,
    pub rope: RopePlan,
    pub decode_batch: usize,
    pub decode_seq: usize,
    pub pools: Pools,
    pub compressor: Option<CompressorPlan>,
    pub indexer: Option<IndexerPlan>,
    pub attention: AttentionPlan,
    pub stages: Vec<StageSpec>,
    /// `draft: true` where it is written: stages without kernels are allowed.
    pub draft: Option<Loc>,
}

pub(super) fn check(spec: &Spec, d: &mut Diagnostics) -> Option<Base> {
    let f = &spec.file;
    let name = check_name(d, &f.name);
    let chip = match chip::find(&f.target.value) {
        Some(c) => Some(c),
        None => {
            d.error(
                Loc::of(&f.target),
                format!(
                    "unknown target chip `{}`; known chips: {}",
                    f.target.value,
                    chip::known_names()
                ),
                "target names a chip of the built-in table",
            );
            None
        }
    };
    let tp = check_tp(d, &f.tp);
    let m = &f.model.value;
    let dims = Dims {
        hidden: positive(d, &m.hidden, "hidden"),
        heads: positive(d, &m.heads, "heads"),
        head_dim: positive(d, &m.head_dim, "head_dim"),
        rope_dim: positive(d, &m.rope_dim, "rope_dim"),
        q_lora_rank: positive(d, &m.q_lora_rank, "q_lora_rank"),
        o_lora_rank: positive(d, &m.o_lora_rank, "o_lora_rank"),
        o_groups: positive(d, &m.o_groups, "o_groups"),
        hc_mult: positive(d, &m.hc_mult, "hc_mult"),
        hc_sinkhorn_iters: positive(d, &m.hc_sinkhorn_iters, "hc_sinkhorn_iters"),
    };
    let hc_eps = positive_f(d, &m.hc_eps, "hc_eps");
    let rms_eps = positive_f(d, &m.rms_eps, "rms_eps");
    let rope = check_rope(d, &m.rope.value);
    let dep = &f.deployment.value;
    let decode_batch = positive(d, &dep.decode_batch, "decode_batch");
    let decode_seq = positive(d, &dep.decode_seq, "decode_seq");
    let block_size = positive(d, &dep.block_size, "block_size");
    let kv_pool_blocks = positive_large(d, &dep.kv_pool_blocks, "kv_pool_blocks");
    let max_positions = positive_large(d, &dep.max_positions, "max_positions");
    let read = read_stages(d, &f.stages.value);
    if !d.is_clean() {
        return None;
    }
    let (name, chip) = (name?, chip?);

    // Relations between values; ranges are known to hold from here on.
    if !dims.rope_dim.is_multiple_of(2) {
        d.error(
            Loc::of(&m.rope_dim),
            format!("rope_dim {} is odd", dims.rope_dim),
            "rope_dim is even: RoPE rotates pairs of dims",
        );
    } else if dims.rope_dim > dims.head_dim {
        d.error(
            Loc::of(&m.rope_dim),
            format!(
                "rope_dim {} is larger than head_dim {}",
                dims.rope_dim, dims.head_dim
            ),
            "the rotary dims are the last rope_dim dims of a head",
        );
    }
    if !dims.heads.is_multiple_of(dims.o_groups) {
        d.error(
            Loc::of(&m.o_groups),
            format!(
                "heads {} is not divisible by o_groups {}",
                dims.heads, dims.o_groups
            ),
            "o_groups must divide heads: each output group takes whole heads",
        );
    }
    if !block_size.is_multiple_of(16) {
        d.error(
            Loc::of(&dep.block_size),
            format!("block_size {block_size} is not a multiple of 16"),
            "block_size is a multiple of 16: window gathers copy 16-row runs",
        );
    }
    let pools = Pools {
        block_size,
        kv_pool_blocks,
        kv_pool_rows: kv_pool_blocks * block_size,
        max_positions,
    };
    check_stage_graph(d, f, &read.graph);
    let compressor = read
        .compressor
        .as_ref()
        .map(|c| compressor_plan(c, &dims, &pools));
    if let (Some(c), Some(raw)) = (&compressor, &read.compressor)
        && c.ratio > max_positions
    {
        d.error(
            Loc::of(raw.ratio),
            format!(
                "compressor ratio {} exceeds max_positions {max_positions}",
                c.ratio
            ),
            "a compressed row covers ratio positions, so ratio <= max_positions",
        );
    }
    let indexer = match (&read.indexer, &compressor) {
        (Some(raw), Some(main)) => check_indexer(d, raw, main, &dims, &pools),
        _ => None,
    };
    let attention = read
        .attention
        .as_ref()
        .and_then(|a| check_attention(d, a, &pools, compressor.as_ref(), indexer.as_ref()));
    if !d.is_clean() {
        return None;
    }
    Some(Base {
        draft: f.draft.as_ref().filter(|d| d.value).map(Loc::of),
        name,
        layer: f.layer.value,
        chip,
        tp,
        model: dims.derive(hc_eps, rms_eps),
        rope: with_yarn_band(rope?, dims.rope_dim),
        decode_batch,
        decode_seq,
        pools,
        compressor,
        indexer,
        attention: attention?,
        stages: read.stages,
    })
}

/// Dims, counts and tiles: at most 65536, beyond what any chip's buffers or the copy
/// instructions' 16-bit fields can use, so that size arithmetic never overflows.
const MAX_COUNT: usize = 1 << 16;
/// Positions and pool sizes.
const MAX_LARGE: usize = 1 << 24;

/// A dim, count or tile: an integer in 1..=65536.
pub(super) fn positive(d: &mut Diagnostics, v: &Int, what: &str) -> usize {
    bounded(d, v, what, MAX_COUNT)
}

/// A position count or pool size: an integer in 1..=2^24.
pub(super) fn positive_large(d: &mut Diagnostics, v: &Int, what: &str) -> usize {
    bounded(d, v, what, MAX_LARGE)
}

fn bounded(d: &mut Diagnostics, v: &Int, what: &str, max: usize) -> usize {
    match usize::try_from(v.value) {
        Ok(n) if n > 0 && n <= max => n,
        _ => {
            d.error(
                Loc::of(v),
                format!(
                    "{what} {} is not a positive integer of at most {max}",
                    v.value
                ),
                POSITIVE,
            );
            0
        }
    }
}

fn positive_f(d: &mut Diagnostics, v: &Sp<f64>, what: &str) -> f64 {
    if !(v.value.is_finite() && v.value > 0.0) {
        d.error(
            Loc::of(v),
            format!("{what} {} is not a positive number", v.value),
            "epsilons, thetas and YaRN parameters are positive finite numbers",
        );
    }
    v.value
}

fn check_name(d: &mut Diagnostics, name: &Sp<String>) -> Option<String> {
    let n = &name.value;
    let ok = n.starts_with(|c: char| c.is_ascii_lowercase())
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Some(n.clone())
    } else {
        d.error(
            Loc::of(name),
            format!("spec name `{n}` is not a lowercase identifier"),
            "name matches [a-z][a-z0-9_]*: it names Rust modules, C++ namespaces and directories",
        );
        None
    }
}

fn check_tp(d: &mut Diagnostics, list: &Sp<Vec<Int>>) -> Vec<(usize, Loc)> {
    if list.value.is_empty() {
        d.error(
            Loc::of(list),
            "empty tp list",
            "tp lists at least one TP degree to generate",
        );
    }
    let mut seen: Vec<(usize, Loc)> = Vec::new();
    for entry in &list.value {
        let tp = positive(d, entry, "tp");
        if tp == 0 {
            continue;
        }
        if seen.iter().any(|&(t, _)| t == tp) {
            d.error(
                Loc::of(entry),
                format!("tp {tp} is listed twice"),
                "each TP degree appears once in tp",
            );
        } else {
            seen.push((tp, Loc::of(entry)));
        }
    }
    seen
}

fn check_rope(d: &mut Diagnostics, rope: &s::Rope) -> Option<RopePlan> {
    let theta = positive_f(d, &rope.theta, "rope theta");
    let yarn = rope.yarn.as_ref().map(|y| {
        let y = &y.value;
        let factor = positive_f(d, &y.factor, "yarn factor");
        let beta_fast = positive_f(d, &y.beta_fast, "yarn beta_fast");
        let beta_slow = positive_f(d, &y.beta_slow, "yarn beta_slow");
        let original = positive_large(d, &y.original_max_positions, "yarn original_max_positions");
        if beta_fast <= beta_slow {
            d.error(
                Loc::of(&y.beta_fast),
                format!("yarn beta_fast {beta_fast} is not larger than beta_slow {beta_slow}"),
                "beta_fast > beta_slow: they bound the frequency band YaRN blends",
            );
        }
        (factor, beta_fast, beta_slow, original)
    });
    Some(RopePlan {
        theta,
        table: rope.table.value,
        yarn: yarn.map(
            |(factor, beta_fast, beta_slow, original_max_positions)| YarnPlan {
                factor,
                beta_fast,
                beta_slow,
                original_max_positions,
                low: 0.0,
                high: 0.0,
            },
        ),
    })
}

/// YaRN's blend band in frequency indices (hca_csa.md §1.4): the dims whose
/// wavelength fits beta_fast (beta_slow) times into the original context.
fn with_yarn_band(mut rope: RopePlan, rope_dim: usize) -> RopePlan {
    if let Some(y) = &mut rope.yarn {
        let dim = rope_dim as f64;
        let correction = |rotations: f64| {
            dim * (y.original_max_positions as f64 / (rotations * 2.0 * std::f64::consts::PI)).ln()
                / (2.0 * rope.theta.ln())
        };
        let low = correction(y.beta_fast).floor().clamp(0.0, dim - 1.0);
        let mut high = correction(y.beta_slow).ceil().clamp(0.0, dim - 1.0);
        if low == high {
            high += 0.001;
        }
        y.low = low;
        y.high = high;
    }
    rope
}

struct Dims {
    hidden: usize,
    heads: usize,
    head_dim: usize,
    rope_dim: usize,
    q_lora_rank: usize,
    o_lora_rank: usize,
    o_groups: usize,
    hc_mult: usize,
    hc_sinkhorn_iters: usize,
}

impl Dims {
    fn derive(&self, hc_eps: f64, rms_eps: f64) -> ModelDims {
        let heads_per_group = self.heads / self.o_groups;
        ModelDims {
            hidden: self.hidden,
            heads: self.heads,
            head_dim: self.head_dim,
            rope_dim: self.rope_dim,
            nope_dim: self.head_dim - self.rope_dim,
            half_rope: self.rope_dim / 2,
            q_lora_rank: self.q_lora_rank,
            o_lora_rank: self.o_lora_rank,
            o_groups: self.o_groups,
            heads_per_group,
            o_group_in: heads_per_group * self.head_dim,
            hc_mult: self.hc_mult,
            hc_dim: self.hc_mult * self.hidden,
            mix_hc: (2 + self.hc_mult) * self.hc_mult,
            hc_sinkhorn_iters: self.hc_sinkhorn_iters,
            hc_eps: hc_eps as f32,
            rms_eps: rms_eps as f32,
            softmax_scale: (self.head_dim as f64).powf(-0.5) as f32,
        }
    }
}

fn compressor_plan(c: &Compressor, m: &Dims, pools: &Pools) -> CompressorPlan {
    let ratio = c.ratio.value as usize;
    cache_compressor(
        ratio,
        c.overlap,
        m.head_dim,
        (c.state_block_size, c.state_pool_blocks),
        c.cmp_pool_blocks,
        pools,
    )
}

/// A compressor `head_dim` wide whose rows land in a cache of `cache_blocks` pages.
fn cache_compressor(
    ratio: usize,
    overlap: bool,
    head_dim: usize,
    (state_block_size, state_pool_blocks): (usize, usize),
    cache_blocks: usize,
    pools: &Pools,
) -> CompressorPlan {
    let coff = if overlap { 2 } else { 1 };
    let out_width = coff * head_dim;
    let cache_rows = cache_blocks * pools.block_size;
    let max_rows = (pools.max_positions / ratio).min(cache_rows);
    CompressorPlan {
        ratio,
        overlap,
        coff,
        head_dim,
        out_width,
        state_row_width: 2 * out_width,
        pool_entries: coff * ratio,
        state_block_size,
        state_pool_blocks,
        state_pool_rows: state_block_size * state_pool_blocks,
        state_table_width: pools.max_positions.div_ceil(state_block_size),
        cache_pool_blocks: cache_blocks,
        cache_pool_rows: cache_rows,
        max_rows,
        cache_table_width: max_rows.div_ceil(pools.block_size),
    }
}

fn check_indexer(
    d: &mut Diagnostics,
    raw: &Indexer,
    main: &CompressorPlan,
    m: &Dims,
    pools: &Pools,
) -> Option<IndexerPlan> {
    let head_dim = raw.head_dim.value as usize;
    let topk = raw.topk.value as usize;
    if !head_dim.is_power_of_two() {
        d.error(
            Loc::of(raw.head_dim),
            format!("indexer head_dim {head_dim} is not a power of two"),
            "the indexer's Hadamard transform needs a power-of-two head_dim",
        );
    }
    if head_dim < m.rope_dim {
        d.error(
            Loc::of(raw.head_dim),
            format!(
                "indexer head_dim {head_dim} is smaller than rope_dim {}",
                m.rope_dim
            ),
            "index heads end with the model's rope_dim rotary dims",
        );
    }
    let inner = cache_compressor(
        main.ratio,
        main.overlap,
        head_dim,
        (raw.state_block_size, raw.state_pool_blocks),
        raw.key_pool_blocks,
        pools,
    );
    let candidates = main.max_rows.min(inner.max_rows);
    if topk > candidates {
        d.error(
            Loc::of(raw.topk),
            format!(
                "indexer topk {topk} is larger than the {candidates} compressed rows a request can have"
            ),
            "topk <= min(max_positions / ratio, rows of the cmp_kv and index-key pools)",
        );
    }
    if !d.is_clean() {
        return None;
    }
    Some(IndexerPlan {
        heads: raw.heads,
        head_dim,
        rope_dim: m.rope_dim,
        nope_dim: head_dim - m.rope_dim,
        q_width: raw.heads * head_dim,
        topk,
        weights_scale: ((head_dim as f64).powf(-0.5) * (raw.heads as f64).powf(-0.5)) as f32,
        candidates,
        inner,
    })
}

fn check_attention(
    d: &mut Diagnostics,
    a: &Attention,
    pools: &Pools,
    compressor: Option<&CompressorPlan>,
    indexer: Option<&IndexerPlan>,
) -> Option<AttentionPlan> {
    let window = a.window.value as usize;
    let kv_rows = a.kv_rows.value;
    if window > pools.kv_pool_rows {
        d.error(
            Loc::of(a.window),
            format!(
                "window {window} is larger than the physical KV pool of {} rows ({} blocks x {})",
                pools.kv_pool_rows, pools.kv_pool_blocks, pools.block_size
            ),
            "the window must fit in the physical KV pool of one rank",
        );
    }
    if !window.is_multiple_of(kv_rows) {
        d.error(
            a.kv_rows.loc,
            format!("sparse_attention tile kv_rows {kv_rows} does not divide window {window}"),
            "a tile must divide the dimension it tiles",
        );
    }
    if !d.is_clean() {
        return None;
    }
    let mut sources: Vec<KvSource> = a.sources.iter().map(|s| s.0).collect();
    sources.sort();
    let topk = match (sources.contains(&KvSource::Indexed), indexer) {
        (true, Some(i)) => i.topk,
        _ => 0,
    };
    let max_compressed_rows = match (sources.contains(&KvSource::Compressed), compressor) {
        (true, Some(c)) => c.max_rows,
        _ => 0,
    };
    let window_tiles = window / kv_rows;
    let topk_tiles = topk.div_ceil(kv_rows);
    Some(AttentionPlan {
        window,
        sources,
        kv_rows,
        window_tiles,
        topk,
        topk_tiles,
        padded_topk: (window_tiles + topk_tiles) * kv_rows,
        max_compressed_rows,
        compressed_tiles: max_compressed_rows.div_ceil(kv_rows),
    })
}
