//! Stage indexer (CSA's lightning indexer scores and top-k, hca_csa.md §5.4–5.5) on the CPU
//! model against `golden::indexer::select`: topk_idx compared per token as sets with
//! score-tie tolerance (`golden::compare::topk_rows`, the reference's topk_pair_compare
//! generalised: an index in one list but not the other must score within tolerance of the
//! boundary score, the list must be in descending score order, −1 padding past V_t must
//! match, an index past V_t scores −inf and fails). Inputs: the CSA fixture's int8
//! index-key cache, key scales, block table, positions and lengths; index queries are
//! seeded normal rows quantised per (token, head) as §5.1 does, head weights seeded normals
//! (negative ones too, so the ReLU and the weights' signs matter). Rows past the runtime
//! count are NaN; workspaces are poisoned. Every launch's peak on-chip use equals its
//! kernel's budget.
//!
//! Starts make tokens see no row (V_t = 0), fewer rows than top-k, exactly top-k, a multiple
//! of the 32-score sort unit and of the sort chunk (several chunks through the running best)
//! and not, and the candidate cap. A ties case gives the pool only seven distinct key rows
//! and one weight for every head: the kernel must then return the golden's list exactly
//! (equal scores by ascending index, the sort instructions' stable order).
//! `csa_tp2_flash_sim_time` (ignored: minutes of golden) runs FLASH dims at TP 2.
//!
//! The ring CSA's indexer (csa1m_small: leaves of 2048 candidates on every core group, then
//! merges of 16 lists, `dsv4/index_leaves.h`) on the same checks: one to three leaves at TP 1
//! (three is no power of two), and at TP 4 a 1M request (262,142 to 262,144 candidates: all
//! 128 leaves, two merge levels) beside requests with no, fewer than top-k and exactly top-k
//! rows; the ties case then ties rows across leaves.

mod stage_checks;
mod support;

use std::collections::BTreeMap;

use golden::compare::topk_rows;
use golden::fixtures::random::Draws;
use golden::indexer::{self, IndexCache, IndexQuery};
use golden::quant::quantize_row;
use golden::tensor::{Element, Tensor, TensorMap};
use golden::{LayerKind, LayerSpec};
use harness::backend::Tiling;
use kernelgen::plan::Plan;

const STAGE: &[&str] = &["indexer"];
const SEED: u64 = 20_260_819;

/// csa_small (top-k 64, sort chunk 128, 512 candidate rows): starts whose 8 tokens see
/// V_t = 0..2 (0), 0..2 (3), 30..32 (120), 31..33 (124), 63..65 (252: around top-k),
/// 127..129 (508: around a chunk), 510..512 (2040: the cap, four whole chunks), and between.
const STARTS_TP1: [i32; 16] = [
    0, 3, 120, 124, 252, 508, 2040, 1000, 255, 300, 64, 1500, 2000, 7, 130, 400,
];
const STARTS_TP2: [i32; 8] = [0, 124, 252, 508, 2040, 1000, 3, 300];

/// csa1m_small at TP 1: csa_small's cases, and V_t up to 2049 (two leaves: 8190, 8200,
/// 16376, 16377), 1027 (one: 4100), 1538 (6150) and 5118 (three leaves: 20470).
const RING_STARTS_TP1: [i32; 16] = [
    0, 3, 120, 124, 252, 508, 2040, 8190, 8200, 16376, 16377, 20470, 4100, 6150, 64, 130,
];
/// csa1m_small at TP 4 (4 requests a rank): the 1M ceiling, three leaves, around top-k,
/// none.
const RING_STARTS_TP4: [i32; 4] = [1_048_568, 20_470, 252, 0];

/// One rank's stage inputs for `starts` (the CSA fixture at TP 1 with the rank's
/// requests), and its seeded index queries and weights.
struct Case {
    spec: LayerSpec,
    t: usize,
    inputs: TensorMap,
    query: IndexQuery,
    weights: Vec<f32>,
    /// idx_block_table columns given (what the ABI holds: the plan's table width).
    table_width: usize,
}

impl Case {
    fn new(p: &Plan, starts: &[i32]) -> Case {
        let (spec, inputs) = support::rank_fixture(p, starts, SEED);
        let LayerKind::Csa(c) = &spec.kind else {
            unreachable!("a CSA variant")
        };
        let (ih, id) = (c.index_heads, c.index_head_dim);
        let t = starts.len() * spec.dims.seq;
        let draws = Draws::new(SEED + 2);
        let rows = draws.normal("idx_q", t * ih * id, 1.0);
        let mut q = vec![0i8; t * ih * id];
        let scale = rows
            .chunks_exact(id)
            .zip(q.chunks_exact_mut(id))
            .map(|(row, q8)| quantize_row(row, q8))
            .collect();
        let weights = draws.normal("idx_weights", t * ih, 0.3);
        let table_width = p.indexer.as_ref().unwrap().inner.cache_table_width;
        Case {
            spec,
            t,
            inputs,
            query: IndexQuery { q, scale },
            weights,
            table_width,
        }
    }

    fn get<T: Element>(&self, name: &str) -> &[T] {
        self.inputs.values::<T>(name).unwrap()
    }

    fn pool_blocks(&self) -> usize {
        self.inputs.get("idx_kv_cache").unwrap().shape()[0]
    }

    /// The first `table_width` columns of idx_block_table.
    fn table(&self) -> Vec<i32> {
        let full = self.inputs.get("idx_block_table").unwrap();
        let width = full.shape()[1];
        full.values::<i32>()
            .unwrap()
            .chunks_exact(width)
            .flat_map(|r| r[..self.table_width].to_vec())
            .collect()
    }

    /// The case without its last request (the fixture is built for all of them: the small
    /// pools cannot always place the active pages of fewer requests).
    fn without_last_request(mut self) -> Case {
        let seq = self.spec.dims.seq;
        let b = self.t / seq - 1;
        self.t -= seq;
        let LayerKind::Csa(c) = &self.spec.kind else {
            unreachable!("a CSA variant")
        };
        let ih = c.index_heads;
        self.query.q.truncate(self.t * ih * c.index_head_dim);
        self.query.scale.truncate(self.t * ih);
        self.weights.truncate(self.t * ih);
        for (name, rows) in [
            ("position_ids", self.t),
            ("kv_seq_lens", b),
            ("idx_block_table", b),
        ] {
            let full = self.inputs.get(name).unwrap();
            let mut shape = full.shape().to_vec();
            let width: usize = shape[1..].iter().product();
            shape[0] = rows;
            let v = full.values::<i32>().unwrap()[..rows * width].to_vec();
            self.inputs
                .insert(name, Tensor::from_vec(shape, v).unwrap());
        }
        self
    }

    /// Only seven distinct key rows (each pool row a copy of one) and one head weight.
    fn with_ties(mut self) -> Case {
        let pool = self.inputs.get("idx_kv_cache").unwrap();
        let (shape, id) = (pool.shape().to_vec(), *pool.shape().last().unwrap());
        let keys = pool.values::<i8>().unwrap();
        let keys: Vec<i8> = (0..keys.len())
            .map(|i| keys[(i / id % 7) * id + i % id])
            .collect();
        let scales = self.get::<f32>("idx_kv_scale");
        let scales: Vec<f32> = (0..scales.len()).map(|r| scales[r % 7]).collect();
        let scale_shape = self.inputs.get("idx_kv_scale").unwrap().shape().to_vec();
        self.inputs
            .insert("idx_kv_cache", Tensor::from_vec(shape, keys).unwrap());
        self.inputs.insert(
            "idx_kv_scale",
            Tensor::from_vec(scale_shape, scales).unwrap(),
        );
        self.weights.fill(0.25);
        self
    }

    /// The golden per-token scores of the visible rows, and its top-k `[t, topk]`.
    fn expected(&self) -> (Vec<Vec<f32>>, Vec<i32>) {
        let LayerKind::Csa(c) = &self.spec.kind else {
            unreachable!("a CSA variant")
        };
        let table = self.table();
        let cache = IndexCache {
            keys: self.get("idx_kv_cache"),
            scales: self.get("idx_kv_scale"),
            table: &table,
            width: self.table_width,
        };
        let args = (
            &self.spec.dims,
            c,
            &self.query,
            &self.weights[..],
            self.get::<i32>("position_ids"),
            self.get::<i32>("kv_seq_lens"),
        );
        let scores = indexer::scores(args.0, args.1, args.2, args.3, args.4, args.5, cache)
            .expect("golden scores");
        let topk = indexer::select(args.0, args.1, args.2, args.3, args.4, args.5, cache)
            .expect("golden top-k");
        (scores, topk)
    }

    /// Kernel inputs by name; per-token rows at capacity, NaN (f32) past t.
    fn tensors(&self, p: &Plan) -> BTreeMap<String, Tensor> {
        let i = p.indexer.as_ref().unwrap();
        let (ih, id, cap) = (i.heads, i.head_dim, p.shape.local_t);
        let mut q = self.query.q.clone();
        q.resize(cap * ih * id, 0);
        let mut scale = self.query.scale.clone();
        scale.resize(cap * ih, f32::NAN);
        let mut weights = self.weights.clone();
        weights.resize(cap * ih, f32::NAN);
        let b = self.t / self.spec.dims.seq;
        let mut out = BTreeMap::new();
        let mut put = |name: &str, t: Tensor| {
            out.insert(name.to_string(), t);
        };
        put("idx_q", Tensor::from_vec(vec![cap, ih * id], q).unwrap());
        put(
            "idx_q_scale",
            Tensor::from_vec(vec![cap, ih], scale).unwrap(),
        );
        put(
            "idx_weights",
            Tensor::from_vec(vec![cap, ih], weights).unwrap(),
        );
        put(
            "idx_block_table",
            Tensor::from_vec(vec![b, self.table_width], self.table()).unwrap(),
        );
        for name in [
            "idx_kv_cache",
            "idx_kv_scale",
            "position_ids",
            "kv_seq_lens",
        ] {
            put(name, self.inputs.get(name).unwrap().clone());
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
            ("idx_nb", self.pool_blocks()),
            ("idx_tw", self.table_width),
        ])
    }
}

/// Runs the stage on `case` and judges topk_idx; `exact` also requires the golden's list
/// bit for bit.
fn check(name: &str, case: &Case, exact: bool) {
    let p = support::plan(name);
    let topk = p.indexer.as_ref().unwrap().topk;
    let (scores, want) = case.expected();
    let mut tensors = case.tensors(p);
    let rt = support::stages(name, STAGE);
    let stats = support::run(rt, &mut tensors, case.tiling());
    support::check_peaks(&p.variant, &stats);
    stage_checks::assert_unwritten("topk_idx", &tensors["topk_idx"], case.t * topk);
    let got = &tensors["topk_idx"].values::<i32>().unwrap()[..case.t * topk];
    let report = topk_rows("topk_idx", got, &want, topk, &scores, 1e-5);
    let visible: Vec<usize> = scores.iter().map(Vec::len).collect();
    println!(
        "{name} t={}: V_t in [{}, {}], {}",
        case.t,
        visible.iter().min().unwrap(),
        visible.iter().max().unwrap(),
        report.detail()
    );
    for (kernel, s) in &stats {
        println!(
            "  {kernel}: GM {} B moved, {} B minimum; {} scalar GM reads",
            s.gm_bytes(),
            s.gm_min_bytes(),
            s.scalar_gm_reads
        );
    }
    assert!(report.pass, "{}", report.detail());
    if exact {
        assert_eq!(
            got,
            &want[..],
            "{name}: exact ties must come out in the golden's order"
        );
    }
}

fn variant(name: &str, starts: &[i32]) {
    let p = support::plan(name);
    let case = Case::new(p, starts);
    assert_eq!(case.t, p.shape.local_t, "the starts fill the rank");
    let (scores, _) = case.expected();
    let topk = p.indexer.as_ref().unwrap().topk;
    let v: Vec<usize> = scores.iter().map(Vec::len).collect();
    for (what, hit) in [
        ("V_t = 0", v.contains(&0)),
        ("0 < V_t < topk", v.iter().any(|&n| n > 0 && n < topk)),
        ("V_t = topk", v.contains(&topk)),
        (
            "V_t a multiple of 32",
            v.iter().any(|&n| n > topk && n % 32 == 0),
        ),
        (
            "V_t not a multiple of 32",
            v.iter().any(|&n| n > topk && n % 32 != 0),
        ),
    ] {
        assert!(hit, "{name}: the starts must cover {what}");
    }
    check(name, &case, false);
    check(name, &Case::new(p, starts).without_last_request(), false);
    check(name, &Case::new(p, starts).with_ties(), true);
}

#[test]
fn csa_small_tp1_topk_matches_the_golden() {
    variant("csa_small_tp1", &STARTS_TP1);
}

#[test]
fn csa_small_tp2_topk_matches_the_golden() {
    variant("csa_small_tp2", &STARTS_TP2);
}

#[test]
fn csa1m_small_tp1_leaves_match_the_golden() {
    variant("csa1m_small_tp1", &RING_STARTS_TP1);
}

#[test]
fn csa1m_small_tp4_forest_of_a_1m_request_matches_the_golden() {
    variant("csa1m_small_tp4", &RING_STARTS_TP4);
}
