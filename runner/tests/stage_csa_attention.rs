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

use attention_checks::{CompressedCase, packed_heads};
use golden::LayerKind;
use golden::candidates;
use golden::fixtures::random::Draws;
use golden::rope::RopeRows;
use golden::tensor::{Tensor, TensorMap};
use half::bf16;
use harness::kernel_library::LaunchStats;
use harness::runtime::StepKind;
use kernelgen::plan::Plan;
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

/// One rank's stage inputs for `starts` ([`CompressedCase`]: the CSA fixture) and the
/// top-k lists.
struct Case {
    base: CompressedCase,
    topk: Vec<i32>,
}

impl Case {
    fn new(variant_name: &str, starts: &[i32], vary: bool) -> Case {
        let mut base = CompressedCase::new(variant_name, starts, SEED);
        // The fixture's table maps every position of the RoPE table (4096 / 4 rows); the
        // plan's only the rows the compressed pool can hold per request: its first pages.
        let width = support::plan(variant_name)
            .compressor
            .as_ref()
            .unwrap()
            .cache_table_width;
        narrow_table(&mut base.inputs, "cmp_block_table", width);
        let LayerKind::Csa(c) = &base.spec.kind else {
            unreachable!("a CSA variant")
        };
        let draws = Draws::new(SEED + 1);
        let positions = base.get::<i32>("position_ids");
        let topk = top_k_lists(
            &draws,
            positions,
            base.spec.dims.seq,
            c.ratio,
            c.index_topk,
            vary,
        );
        Case { base, topk }
    }

    /// The golden o_packed_heads `[o_groups · t_pad, o_group_in]` (padding rows zero); with
    /// `window_only` the compressed tiles are left out (to show the case depends on them).
    fn expected(&self, t_pad: usize, window_only: bool) -> Vec<bf16> {
        let c = &self.base;
        let d = &c.spec.dims;
        let LayerKind::Csa(csa) = &c.spec.kind else {
            unreachable!("a CSA variant")
        };
        let mut tiles = candidates::csa(
            d,
            csa,
            c.get("window_swa_indices"),
            c.get("position_ids"),
            &self.topk,
            c.get("cmp_block_table"),
            c.width("cmp_block_table"),
            c.cmp_pool_blocks(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        if window_only {
            tiles.iter_mut().for_each(|t| t.truncate(1));
        }
        let rows: Vec<usize> = c
            .get::<i32>("position_ids")
            .iter()
            .map(|&p| usize::try_from(p).unwrap())
            .collect();
        let rope = RopeRows::gather(
            c.get("freqs_cos"),
            c.get("freqs_sin"),
            d.rope_dim,
            d.half_rope(),
            &rows,
        );
        c.attend(&tiles, &rope, t_pad)
    }

    /// Kernel inputs by name ([`CompressedCase::tensors`]) and topk_idx at capacity, with
    /// rows (0) past t that are never to be read.
    fn tensors(&self, p: &Plan) -> BTreeMap<String, Tensor> {
        let k = self.topk.len() / self.base.t;
        let mut topk = self.topk.clone();
        topk.resize(p.shape.local_t * k, 0);
        let mut out = self.base.tensors(p, &[]);
        out.insert(
            "topk_idx".to_string(),
            Tensor::from_vec(vec![p.shape.local_t, k], topk).unwrap(),
        );
        out
    }

    /// The case has tokens with and without kept rows and slots listed but not kept.
    fn assert_varied(&self) {
        let (with_rows, masked) = self.counts();
        assert!(
            with_rows > 0 && with_rows < self.base.t && masked > 0,
            "{with_rows} of {} tokens with kept rows, {masked} masked slots",
            self.base.t
        );
    }

    /// Tokens whose list keeps at least one row, and slots listed but not kept.
    fn counts(&self) -> (usize, usize) {
        let LayerKind::Csa(c) = &self.base.spec.kind else {
            unreachable!("a CSA variant")
        };
        let k = c.index_topk;
        let (mut with_rows, mut masked) = (0, 0);
        for (list, &p) in self
            .topk
            .chunks_exact(k)
            .zip(self.base.get::<i32>("position_ids"))
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
        .run_stages(&given, &case.base.tiling())
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

    let (t, t_pad) = (case.base.t, p.shape.t_pad);
    let (with_rows, masked) = case.counts();
    let want = case.expected(t_pad, false);
    assert_ne!(
        want,
        case.expected(t_pad, true),
        "the case must depend on the indexed rows"
    );
    let got = out.tensors.values::<bf16>("o_packed_heads").unwrap();
    // the reference's bf16 allowance (as HCA's): o between sources is half, and where the
    // window's and the indexed rows' sums cancel a near-zero output keeps their rounding
    let worst = packed_heads(variant_name, p, got, &want, t, 0.005);
    support::check_peaks(&p.variant, &launches);
    println!(
        "{variant_name}, t = {t} ({with_rows} tokens with kept rows, {masked} masked slots): \
         max |d| {worst:.2e}"
    );
    for (kernel, s) in &launches {
        println!(
            "  {kernel}: GM {} B (minimum {} B), scalar GM reads {}",
            s.gm_bytes(),
            s.gm_min_bytes(),
            s.scalar_gm_reads
        );
    }
}

#[test]
fn csa_small_tp1_window_and_indexed_rows_at_capacity_and_below() {
    let case = Case::new("csa_small_tp1", &STARTS_TP1, true);
    assert_eq!(case.base.t, plan("csa_small_tp1").shape.local_t);
    case.assert_varied();
    check("csa_small_tp1", &case);
    let case = Case::new("csa_small_tp1", &STARTS_TP1[..STARTS_TP1.len() - 1], true);
    case.assert_varied();
    check("csa_small_tp1", &case);
}

#[test]
fn csa_small_tp2_rank_at_capacity_and_below() {
    let case = Case::new("csa_small_tp2", &STARTS_TP2, true);
    assert_eq!(case.base.t, plan("csa_small_tp2").shape.local_t);
    case.assert_varied();
    check("csa_small_tp2", &case);
    let case = Case::new("csa_small_tp2", &STARTS_TP2[..STARTS_TP2.len() - 1], true);
    case.assert_varied();
    check("csa_small_tp2", &case);
}

/// One request (8 tokens) whose top-512 lists span four 128-slot tiles: each token's tiles in
/// three splits over KV (one of two tiles), merged with the window by `attn_combine_idx`.
#[test]
fn csa_ref_tp1_one_request_splits_its_tokens_over_kv() {
    let p = plan("csa_ref_tp1");
    assert_eq!(p.attention.topk.div_ceil(p.attention.kv_rows), 4);
    let case = Case::new("csa_ref_tp1", &[2040], true);
    check("csa_ref_tp1", &case);
}

/// Four requests (32 tokens, more than the 24 core groups: no split over KV) whose top-512
/// lists span four 128-slot tiles: each token's kept tiles alternate between the two slabs
/// of scratch (a tile's scores computed while the AIV works on the previous one's).
#[test]
fn csa_ref_tp1_whole_tokens_alternate_their_tiles() {
    let case = Case::new("csa_ref_tp1", &[2040, 16000, 5000, 700], true);
    assert!(case.base.t > support::knob("csa_ref_tp1", "attn_indexed_h", "GROUPS") as usize);
    check("csa_ref_tp1", &case);
}

/// V4-Pro's 128 heads leave UB room for one token's state (`STATE_BUFFERS` 1): with more
/// tokens than core groups (whole tokens) each token's last part merges and its state is
/// stored before the next token's state loads.
#[test]
fn pro_csa_one_state_buffer_settles_each_token_before_the_next() {
    let name = "pro_csa_flash_tp4";
    assert_eq!(support::knob(name, "attn_indexed_h", "STATE_BUFFERS"), 1);
    let case = Case::new(name, &[2040, 16000, 5000, 700], true);
    assert!(case.base.t > support::knob(name, "attn_indexed_h", "GROUPS") as usize);
    check(name, &case);
}
