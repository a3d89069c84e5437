//! Stage sparse_attention of CSA (window + the indexer's top-k compressed rows, hca_csa.md
//! §6.1, §6.3) on the CPU model against `golden::{candidates::csa, attention}`:
//! o_packed_heads within the reference's standalone threshold ratio_allclose(1e-4, 1/128)
//! on the valid rows of every group slab (§8.3; the kernel's tiles are the golden's, so no
//! element may miss), padding rows still poisoned, peak on-chip memory equal to each
//! kernel's planned buffers. Inputs are the CSA fixture's (raw and compressed pools, block
//! tables, window indices, positions, the full RoPE table); q and attn_sink are seeded
//! normals; `topk_idx` (the indexer stage's workspace) is built here: per token distinct
//! seeded rows of [0, (p_t + 1) / 4), best first as the indexer would list them, -1 padded,
//! with tokens that list rows at or past their bound (to be masked) or other negative
//! values, and one token per request whose whole compressed tile is out of bounds. Starts
//! give windows with -1 lanes (p_t < 127), tokens with no or fewer visible rows than
//! top-k, and full lists. GM traffic per kernel is printed.

mod attention_checks;
mod support;

use std::collections::BTreeMap;

use attention_checks::packed_heads;
use golden::attention::{KvSources, pack_heads, sparse_attention};
use golden::candidates;
use golden::fixtures::random::Draws;
use golden::fixtures::{self, FixtureOptions, StartPositions};
use golden::rope::RopeRows;
use golden::tensor::{Tensor, TensorMap};
use golden::{LayerKind, LayerSpec};
use half::bf16;
use harness::runtime::{StepKind, Tiling};
use harness::sim::LaunchStats;
use kernelgen::plan::Plan;
use runner::variant;
use support::plan;

const STAGE: &[&str] = &["sparse_attention"];
const SEED: u64 = 20_260_819;

/// Starts per request: no visible compressed row for the first tokens (0), a few (5, 60,
/// 100: windows with -1 lanes), fewer than top-k (120, 130, 200, 250), top-k reached inside
/// the request (255), full lists (300 ..), up to the rows the plan's cmp_block_table width
/// can map (2040: 512 rows; see `Case::new`).
const STARTS_TP1: [i32; 16] = [
    0, 5, 60, 100, 120, 130, 200, 250, 255, 300, 700, 1000, 1500, 1800, 2000, 2040,
];
const STARTS_TP2: [i32; 8] = [0, 100, 255, 130, 1000, 2040, 60, 1500];

/// One rank's stage inputs for `starts`, built by the CSA fixture at TP 1 (the stage runs
/// per rank; a rank's inputs have the same shapes at every TP).
struct Case {
    spec: LayerSpec,
    t: usize,
    inputs: TensorMap,
    q: Vec<bf16>,
    sink: Vec<f32>,
    topk: Vec<i32>,
}

impl Case {
    fn new(variant_name: &str, starts: &[i32], vary: bool) -> Case {
        let plan = variant::by_name(variant_name).unwrap();
        let mut spec = variant::layer_spec(plan).unwrap();
        spec.dims.tp = 1;
        let opts = FixtureOptions {
            seed: SEED,
            starts: StartPositions::List(starts.iter().map(|&s| i64::from(s)).collect()),
            tokens: None,
        };
        let mut f = fixtures::build(&spec, &opts).unwrap_or_else(|e| panic!("{starts:?}: {e}"));
        // The fixture's table maps every position of the RoPE table (4096 / 4 rows); the
        // plan's only the rows the compressed pool can hold per request: its first pages.
        let width = support::plan(variant_name)
            .compressor
            .as_ref()
            .unwrap()
            .cache_table_width;
        narrow_table(&mut f.inputs, "cmp_block_table", width);
        let d = &spec.dims;
        let t = starts.len() * d.seq;
        let draws = Draws::new(SEED + 1);
        let q = draws
            .normal("q", t * d.heads * d.head_dim, 1.0)
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        let sink = draws.normal("attn_sink", d.heads, 1.0);
        let LayerKind::Csa(c) = &spec.kind else {
            unreachable!("a CSA variant")
        };
        let positions = f.inputs.values::<i32>("position_ids").unwrap();
        let topk = top_k_lists(&draws, positions, d.seq, c.ratio, c.index_topk, vary);
        Case {
            t,
            inputs: f.inputs,
            q,
            sink,
            topk,
            spec,
        }
    }

    fn get<T: golden::tensor::Element>(&self, name: &str) -> &[T] {
        self.inputs.values::<T>(name).unwrap()
    }

    fn width(&self, name: &str) -> usize {
        self.inputs.get(name).unwrap().shape()[1]
    }

    fn cmp_pool_blocks(&self) -> usize {
        self.inputs.get("cmp_kv").unwrap().shape()[0]
    }

    /// The golden o_packed_heads `[o_groups · t_pad, o_group_in]` (padding rows zero); with
    /// `window_only` the compressed tiles are left out (to show the case depends on them).
    fn expected(&self, t_pad: usize, window_only: bool) -> Vec<bf16> {
        let d = &self.spec.dims;
        let LayerKind::Csa(c) = &self.spec.kind else {
            unreachable!("a CSA variant")
        };
        let mut tiles = candidates::csa(
            d,
            c,
            self.get("window_swa_indices"),
            self.get("position_ids"),
            &self.topk,
            self.get("cmp_block_table"),
            self.width("cmp_block_table"),
            self.cmp_pool_blocks(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        if window_only {
            tiles.iter_mut().for_each(|t| t.truncate(1));
        }
        let kv = KvSources {
            raw: self.get("kv_cache"),
            compressed: self.get("cmp_kv"),
            width: d.head_dim,
        };
        let rows: Vec<usize> = self
            .get::<i32>("position_ids")
            .iter()
            .map(|&p| usize::try_from(p).unwrap())
            .collect();
        let rope = RopeRows::gather(
            self.get("freqs_cos"),
            self.get("freqs_sin"),
            d.rope_dim,
            d.half_rope(),
            &rows,
        );
        let o = sparse_attention(d, &self.q, &tiles, kv, &self.sink, &rope);
        pack_heads(d, &o, t_pad)
    }

    /// Kernel inputs by name; q (NaN) and topk_idx (row 0) at capacity, with rows past t
    /// that are never to be read.
    fn tensors(&self, p: &Plan) -> BTreeMap<String, Tensor> {
        let d = &self.spec.dims;
        let (h, hd, cap) = (d.heads, d.head_dim, p.shape.local_t);
        let k = self.topk.len() / self.t;
        let mut q = self.q.clone();
        q.resize(cap * h * hd, bf16::NAN);
        let mut topk = self.topk.clone();
        topk.resize(cap * k, 0);
        let mut out = BTreeMap::new();
        out.insert(
            "q".to_string(),
            Tensor::from_vec(vec![cap, h, hd], q).unwrap(),
        );
        out.insert(
            "topk_idx".to_string(),
            Tensor::from_vec(vec![cap, k], topk).unwrap(),
        );
        out.insert(
            "attn_sink".to_string(),
            Tensor::from_vec(vec![h], self.sink.clone()).unwrap(),
        );
        for name in [
            "kv_cache",
            "window_swa_indices",
            "window_swa_lens",
            "freqs_cos",
            "freqs_sin",
            "cmp_kv",
            "cmp_block_table",
            "position_ids",
        ] {
            out.insert(name.to_string(), self.inputs.get(name).unwrap().clone());
        }
        out
    }

    fn tiling(&self) -> Tiling {
        let d = &self.spec.dims;
        support::tiling(&[
            ("t", self.t),
            ("b", self.t / d.seq),
            ("nb", d.kv_pool_blocks),
            ("group_t", self.t),
            ("cmp_nb", self.cmp_pool_blocks()),
            ("cmp_tw", self.width("cmp_block_table")),
        ])
    }

    /// The case has tokens with and without kept rows and slots listed but not kept.
    fn assert_varied(&self) {
        let (with_rows, masked) = self.counts();
        assert!(
            with_rows > 0 && with_rows < self.t && masked > 0,
            "{with_rows} of {} tokens with kept rows, {masked} masked slots",
            self.t
        );
    }

    /// Tokens whose list keeps at least one row, and slots listed but not kept.
    fn counts(&self) -> (usize, usize) {
        let LayerKind::Csa(c) = &self.spec.kind else {
            unreachable!("a CSA variant")
        };
        let k = c.index_topk;
        let (mut with_rows, mut masked) = (0, 0);
        for (list, &p) in self
            .topk
            .chunks_exact(k)
            .zip(self.get::<i32>("position_ids"))
        {
            let bound = (p + 1) / c.ratio as i32;
            let kept = list.iter().filter(|&&j| (0..bound).contains(&j)).count();
            with_rows += usize::from(kept > 0);
            masked += list.iter().filter(|&&j| j >= bound || j < -1).count();
        }
        (with_rows, masked)
    }
}

/// Keeps the first `width` columns of the 2-D table `name`.
fn narrow_table(inputs: &mut TensorMap, name: &str, width: usize) {
    let table = inputs.get(name).unwrap();
    let full = table.shape()[1];
    let rows: Vec<i32> = table
        .values::<i32>()
        .unwrap()
        .chunks_exact(full)
        .flat_map(|r| r[..width].to_vec())
        .collect();
    let narrowed = Tensor::from_vec(vec![rows.len() / width, width], rows).unwrap();
    inputs.insert(name, narrowed);
}

/// Each token's top-k list: min(k, bound) distinct seeded rows of [0, bound), bound =
/// (p + 1) / ratio, then -1. With `vary`, token s of a request (s = t mod seq) varies it:
/// s = 1 lists its bound and bound + 3 (rows it cannot see) in its first and last slots,
/// s = 2 a -5 in its middle slot, s = 3 only rows at or past its bound (a fully invalid
/// compressed tile).
fn top_k_lists(
    draws: &Draws,
    positions: &[i32],
    seq: usize,
    ratio: usize,
    k: usize,
    vary: bool,
) -> Vec<i32> {
    let mut out = Vec::with_capacity(positions.len() * k);
    for (t, &p) in positions.iter().enumerate() {
        let bound = (p + 1) / ratio as i32;
        let mut rows: Vec<i32> = (0..bound).collect();
        let u = draws.uniform(&format!("topk_idx {t}"), rows.len(), 0.0, 1.0);
        // Fisher-Yates from the end with the seeded uniforms
        for i in (1..rows.len()).rev() {
            let j = ((u[i] * (i + 1) as f32) as usize).min(i);
            rows.swap(i, j);
        }
        rows.truncate(k);
        rows.resize(k, -1);
        match if vary { t % seq } else { 0 } {
            1 => {
                rows[0] = bound;
                rows[k - 1] = bound + 3;
            }
            2 => rows[k / 2] = -5,
            3 => rows = (0..k as i32).map(|i| bound + i).collect(),
            _ => {}
        }
        out.extend(rows);
    }
    out
}

/// Runs the stage and checks o_packed_heads, the poisoned padding and the peak memory;
/// prints each launch's GM traffic.
fn check(variant_name: &str, case: &Case) {
    let p = plan(variant_name);
    let given: TensorMap = case.tensors(p).into_iter().collect();
    let rt = support::stages(variant_name, STAGE);
    let out = rt
        .run_stages(&given, &case.tiling())
        .unwrap_or_else(|e| panic!("{e}"));
    let launches: Vec<(String, LaunchStats)> = out
        .steps
        .iter()
        .map(|s| match &s.kind {
            StepKind::Launch {
                kernel, counters, ..
            } => (
                kernel.to_string(),
                counters.clone().expect("the sim counts every launch").stats,
            ),
            StepKind::Exchange { .. } => unreachable!("a stage run has no collectives"),
        })
        .collect();

    let (t, t_pad) = (case.t, p.shape.t_pad);
    let (with_rows, masked) = case.counts();
    let want = case.expected(t_pad, false);
    assert_ne!(
        want,
        case.expected(t_pad, true),
        "the case must depend on the indexed rows"
    );
    let got = out.tensors.values::<bf16>("o_packed_heads").unwrap();
    let worst = packed_heads(variant_name, p, got, &want, t, 0.0);
    support::check_peaks(&p.variant, &launches);
    println!(
        "{variant_name}, t = {t} ({with_rows} tokens with kept rows, {masked} masked slots): \
         max |d| {worst:.2e}"
    );
    for (kernel, s) in &launches {
        println!(
            "  {kernel}: GM {} B (distinct {} B), scalar GM reads {}",
            s.gm_bytes(),
            s.gm_distinct_bytes(),
            s.scalar_gm_reads
        );
    }
}

#[test]
fn csa_small_tp1_window_and_indexed_rows_at_capacity_and_below() {
    let case = Case::new("csa_small_tp1", &STARTS_TP1, true);
    assert_eq!(case.t, plan("csa_small_tp1").shape.local_t);
    case.assert_varied();
    check("csa_small_tp1", &case);
    let case = Case::new("csa_small_tp1", &STARTS_TP1[..STARTS_TP1.len() - 1], true);
    case.assert_varied();
    check("csa_small_tp1", &case);
}

#[test]
fn csa_small_tp2_rank_at_capacity_and_below() {
    let case = Case::new("csa_small_tp2", &STARTS_TP2, true);
    assert_eq!(case.t, plan("csa_small_tp2").shape.local_t);
    case.assert_varied();
    check("csa_small_tp2", &case);
    let case = Case::new("csa_small_tp2", &STARTS_TP2[..STARTS_TP2.len() - 1], true);
    case.assert_varied();
    check("csa_small_tp2", &case);
}
