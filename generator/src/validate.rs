//! The first pass, spec → [`Validated`]: the rules that do not depend on the TP degree
//! (value ranges, model consistency, pools, the stage graph, and each stage's layer-level
//! parameters), and the TP-independent parts of the plan. Tiles and budgets per TP
//! degree are the next pass (`derive`).

use crate::chip::{self, Chip};
use crate::diag::{Diagnostics, Loc};
use crate::plan::{
    AttentionPlan, CompressorPlan, IndexerPlan, ModelDims, Pools, RopePlan, YarnPlan,
};
use crate::spec::range::{positive, positive_f, positive_large};
use crate::spec::{self as s, Int, LayerKind, Sp};
use crate::stages::kind::{LayerParts, ModelLocs};
use crate::stages::{Spec, StageSpec, graph};

/// Everything of a valid spec that is the same at every TP degree.
#[derive(Debug)]
pub struct Validated {
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
    /// Where the model dims that a stage's kernel limits depend on are written.
    pub model_locs: ModelLocs,
    /// `draft: true` where it is written: stages without kernels are allowed.
    pub draft: Option<Loc>,
    /// Whether launches that can share a kernel are merged (`fuse`, default true).
    pub fuse: bool,
}

pub fn check(spec: &Spec, d: &mut Diagnostics) -> Option<Validated> {
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
    let stages: Vec<StageSpec> = f
        .stages
        .value
        .iter()
        .map(|e| e.value.read(Loc::of(e), d))
        .collect();
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
    graph::check(d, f, &stages);
    let model = dims.derive(hc_eps, rms_eps);
    let mut parts = LayerParts {
        layer: f.layer.value,
        model: &model,
        pools: &pools,
        rope_table: (m.rope.value.table.value, Loc::of(&m.rope.value.table)),
        decode_batch,
        compressor: None,
        indexer: None,
        attention: None,
    };
    for st in &stages {
        st.params.layer(&mut parts, d);
    }
    let (compressor, indexer, attention) = (parts.compressor, parts.indexer, parts.attention);
    if !d.is_clean() {
        return None;
    }
    Some(Validated {
        draft: f.draft.as_ref().filter(|d| d.value).map(Loc::of),
        fuse: f.fuse.as_ref().is_none_or(|f| f.value),
        name,
        layer: f.layer.value,
        chip,
        tp,
        model,
        rope: with_yarn_band(rope?, dims.rope_dim),
        decode_batch,
        decode_seq,
        pools,
        compressor,
        indexer,
        attention: attention?,
        stages,
        model_locs: ModelLocs {
            hidden: Loc::of(&m.hidden),
        },
    })
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
            // Valid specs only: rope_dim <= head_dim is reported otherwise.
            nope_dim: self.head_dim.saturating_sub(self.rope_dim),
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
