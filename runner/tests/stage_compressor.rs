//! Stage compressor on the CPU model against `golden::compressor` (projection, APE, state
//! rows, softmax pooling, and the pooled rows' RMSNorm, RoPE and cmp_kv write as the layer
//! goldens make them): HCA's ratio 128 (hca_csa.md §4.1–4.3, §4.5) and CSA's overlapping
//! ratio 4 (§4.4: front halves of the previous window, back halves of the current one;
//! only the first boundary of a step pooled, §11.1; RoPE row gathered from the full table
//! at the window start).
//! compress_state within mapped_pool(state_slot_mapping, 1e-3, 1e-3, ratio 0) and cmp_kv
//! within mapped_pool(cmp_slot_mapping, 1e-4, 1/128, ratio 0) (hca_csa.md §8.3, standalone
//! compressor): mapped rows within tolerance, every other row bit-identical (no stray
//! writes). Inputs: the layer fixture's weights, block tables, slot mappings and RoPE rows
//! for starts that do and do not reach a boundary (HCA: (p+1) mod 128 == 0 at token 0, 2,
//! 5, 7 of a request, RoPE at window starts 0 and beyond, and none; CSA: p0 mod 4 = 0, 1,
//! 2, 3, two boundaries in a step, and p0 < 4, the first window without its previous
//! one); the last pooling request's cmp slot −1 (row discarded) and one token with state
//! slot −1 (not written). x_normed and the initial state are seeded normals (a random
//! history makes the pooling weights matter; CSA's never-written rows keep their −inf
//! scores). Rows of x_normed past the runtime count are NaN; workspaces are poisoned. Peak
//! on-chip memory of every launch is asserted to be the plan's budget; GM traffic is
//! printed.
//!
//! Cross-request aliasing (hca_csa.md §4.7): bit-exact cases whose requests pool rows
//! other requests write in the same step (HCA: pages pointed at the neighbours' on
//! purpose; CSA: the fixture's packed state tables do it by themselves); each also shows
//! that the other two plausible orders (every write first, own writes only) would fail it.

mod compressor_checks;
mod stage_checks;
mod support;

use std::collections::BTreeMap;

use compressor_checks::{Case, Compressor, Names, Pool};
use golden::LayerSpec;
use golden::compressor;
use golden::rope::RopeRows;
use golden::tensor::Tensor;
use half::bf16;
use kernelgen::plan::{CompressorPlan, Plan};
use stage_checks::tensor;

/// The main compressor: compress_state and the pooled rows' cmp_kv.
struct Main;

/// HCA starts cycled over the requests, with the boundary token and the compressed row's
/// RoPE position (window start): 250 (5, 128), 8192 (none), 2045 (2, 1920), 127 (0, 0),
/// 10 (none), 1016 (7, 896), 255 (0, 128), 1000 (none).
const STARTS: [i64; 8] = [250, 8192, 2045, 127, 10, 1016, 255, 1000];

/// HCA starts for requests of two tokens (the reference's deployment), with the boundary
/// token: 127 (0), 8190 (1), 2045 (none), 254 (1).
const HCA_PAIR_STARTS: [i64; 4] = [127, 8190, 2045, 254];

/// CSA starts (every request reaches a boundary), with the first boundary token and the
/// window start: 8 (3 and 7, 8), 2 (1, 0: no previous window), 1001 (2, 1000), 506 (1,
/// 504), 0 (3 and 7, 0: no previous window), 4087 (0, 4084), 3 (0, 0: no previous
/// window), 100 (3 and 7, 100).
const CSA_STARTS: [i64; 8] = [8, 2, 1001, 506, 0, 4087, 3, 100];

/// Ring CSA starts (every request reaches both boundaries of its step; p0 mod 8 takes every
/// value, so the step's eight ring slots start anywhere in the ring), up to both sides of
/// the snapshot's 16,384 ceiling.
const RING_STARTS: [i64; 8] = [8, 2, 1001, 506, 16_377, 4087, 16_376, 101];

/// Whether the RoPE rows come from the full table (the snapshot CSA) rather than rows the
/// host passes (per request for HCA, per token for the ring CSA).
fn table_rope(p: &Plan) -> bool {
    p.tensor("cmp_freqs_cos").is_none()
}

impl Compressor for Main {
    const STAGE: &'static str = "compressor";
    const NAMES: Names = Names {
        wkv: "cmp_wkv",
        wgate: "cmp_wgate",
        ape: "cmp_ape",
        norm_w: "cmp_norm_w",
        state: "compress_state",
        state_draws: "state",
        state_slots: "state_slot_mapping",
        state_table: "compress_state_block_table",
        rows: "cmp_kv",
        row_slots: "cmp_slot_mapping",
    };

    fn plan(p: &Plan) -> &CompressorPlan {
        p.compressor.as_ref().expect("the layer plans a compressor")
    }

    fn starts(p: &Plan) -> &'static [i64] {
        if compressor_checks::is_ring::<Self>(p) {
            &RING_STARTS
        } else if Self::plan(p).overlap {
            &CSA_STARTS
        } else if p.shape.decode_seq == 2 {
            &HCA_PAIR_STARTS
        } else {
            &STARTS
        }
    }

    fn fixed_inputs(p: &Plan) -> Vec<&'static str> {
        let rope = if table_rope(p) {
            ["freqs_cos", "freqs_sin"]
        } else {
            ["cmp_freqs_cos", "cmp_freqs_sin"]
        };
        [rope[0], rope[1], "cmp_kv"].to_vec()
    }

    /// The golden's state and cmp_kv (the layer goldens' compressor part).
    fn golden(p: &Plan, spec: &LayerSpec, case: &Case) -> BTreeMap<&'static str, Tensor> {
        let d = &spec.dims;
        let c = Self::plan(p);
        let (state, pooled) = compressor_checks::update_and_pool::<Self>(p, spec, case);
        let ring = compressor_checks::is_ring::<Self>(p);
        let half = d.rope_dim / 2;
        let rope = if table_rope(p) {
            // The full table's row at each request's window start (hca_csa.md §4.5).
            let window_starts: Vec<usize> = case
                .tokens::<i32>("position_ids")
                .iter()
                .step_by(d.seq)
                .map(|&p0| p0 as usize - p0 as usize % c.ratio)
                .collect();
            RopeRows::gather(
                &case.get::<bf16>("freqs_cos"),
                &case.get::<bf16>("freqs_sin"),
                d.rope_dim,
                half,
                &window_starts,
            )
        } else if ring {
            // The boundary token's row (at p − 3).
            RopeRows::from_tables(
                &case.get::<bf16>("cmp_freqs_cos"),
                &case.get::<bf16>("cmp_freqs_sin"),
                d.rope_dim,
                half,
            )
        } else {
            RopeRows {
                half,
                cos: case.get::<f32>("cmp_freqs_cos"),
                sin: case.get::<f32>("cmp_freqs_sin"),
            }
        };
        let mut cmp_kv = case.get::<bf16>("cmp_kv");
        compressor::insert_pooled(
            pooled,
            &case.get::<bf16>("cmp_norm_w"),
            d.rms_eps,
            &rope,
            if ring {
                compressor::RopeRowOf::Token
            } else {
                compressor::RopeRowOf::Request
            },
            d.seq,
            &mut cmp_kv,
            &case.tokens::<i64>("cmp_slot_mapping"),
        )
        .expect("golden cmp_kv write");
        let shape = |name: &str| case.inputs[name].shape().to_vec();
        BTreeMap::from([
            ("compress_state", tensor(shape("compress_state"), state)),
            ("cmp_kv", tensor(shape("cmp_kv"), cmp_kv)),
        ])
    }

    fn pools(p: &Plan) -> Vec<Pool> {
        vec![
            Pool {
                out: "compress_state",
                mapping: "state_slot_mapping",
                block_size: Self::plan(p).state_block_size,
                atol: 1e-3,
                rtol: 1e-3,
                max_error_ratio: 0.0,
            },
            Pool {
                out: "cmp_kv",
                mapping: "cmp_slot_mapping",
                block_size: p.pools.block_size,
                atol: 1e-4,
                rtol: 1.0 / 128.0,
                max_error_ratio: 0.0,
            },
        ]
    }
}

#[test]
fn hca_small_tp1_matches_the_golden() {
    compressor_checks::variant::<Main>("hca_small_tp1");
}

#[test]
fn hca_small_tp2_matches_the_golden() {
    compressor_checks::variant::<Main>("hca_small_tp2");
}

#[test]
fn hca_small_tp4_matches_the_golden() {
    compressor_checks::variant::<Main>("hca_small_tp4");
}

#[test]
fn csa_small_tp1_matches_the_golden() {
    compressor_checks::variant::<Main>("csa_small_tp1");
}

#[test]
fn csa_small_tp2_matches_the_golden() {
    compressor_checks::variant::<Main>("csa_small_tp2");
}

/// The reference's deployment (FLASH dims, 8 tokens): the compressor's projections of
/// x_normed run in the fused group with wq_a and wkv, a mixed launch whose parts give the
/// vector cores their last columns (`dsv4/matmul_group.h`'s vector parts; HCA's plan
/// shares the compressor's own, CSA's wq_a's and wkv's), the pooled rows still the
/// golden's.
fn shares_its_projections_with_the_vector_cores(variant: &str) {
    let host = support::host(variant);
    let mixed = host
        .kernels
        .iter()
        .any(|k| k.name.starts_with("matmul_group") && k.name.contains("_vec"));
    assert!(
        mixed,
        "{variant}: the x_normed group gives the vector cores columns"
    );
    compressor_checks::variant::<Main>(variant);
}

#[test]
fn hca_deployment_tp1_shares_its_projections_with_the_vector_cores() {
    shares_its_projections_with_the_vector_cores("hca_deployment_tp1");
}

#[test]
fn csa_deployment_tp1_shares_its_projections_with_the_vector_cores() {
    shares_its_projections_with_the_vector_cores("csa_deployment_tp1");
}

/// The ring CSA (csa_1m.md §4): both boundaries of every step pooled against the ring as
/// the previous step left it and the request's own rows, at the boundary token's RoPE row
/// (p − 3), then the whole ring committed; steps starting anywhere in the ring.
#[test]
fn csa1m_small_tp1_ring_matches_the_golden() {
    compressor_checks::variant::<Main>("csa1m_small_tp1");
}

#[test]
fn csa1m_small_tp2_ring_matches_the_golden() {
    compressor_checks::variant::<Main>("csa1m_small_tp2");
}

/// Points two history pages of request `b` (at a boundary) at the pages requests b − 1
/// and b + 1 write this step: by the sequential order, b pools b − 1's new rows and b + 1's
/// old ones.
fn alias_neighbours(case: &mut Case, p: &Plan, b: usize) {
    let c = Main::plan(p);
    let seq = p.shape.decode_seq;
    let slots = case.get::<i64>("state_slot_mapping");
    let positions = case.get::<i32>("position_ids");
    let written_page = |r: usize| {
        let slot = slots[r * seq + seq - 1];
        assert!(slot >= 0, "request {r} writes its last token's state row");
        slot as usize / c.state_block_size
    };
    let end = (0..seq)
        .map(|s| positions[b * seq + s] as usize)
        .find(|&pos| (pos + 1) % c.ratio == 0)
        .unwrap_or_else(|| panic!("request {b} reaches a boundary"));
    let table = case.inputs.get_mut("compress_state_block_table").unwrap();
    let width = table.shape()[1];
    let mut entries = table.values::<i32>().unwrap().to_vec();
    // History pages, well before the request's own first position (≥ end − 7).
    for (back, writer) in [(64, b - 1), (32, b + 1)] {
        entries[b * width + (end - back) / c.state_block_size] = written_page(writer) as i32;
    }
    *table = tensor(table.shape().to_vec(), entries);
}

/// Request b pools the state as requests 0..=b left it, with rows b − 1 and b + 1 write in
/// the same step aliased into its window (STARTS: requests 2 and 5 reach boundaries,
/// their neighbours write whole pages): compress_state and cmp_kv bit-identical to the
/// golden. The golden with every write visible first, or with only each request's own
/// writes visible, differs: the case tells the orders apart.
#[test]
fn requests_see_the_writes_of_earlier_requests_only() {
    let (p, spec, mut case) = compressor_checks::exact_case::<Main>("hca_small_tp1");
    for b in [2, 5] {
        alias_neighbours(&mut case, p, b);
    }
    let got = compressor_checks::run_bit_exact::<Main>(p, &spec, &case);
    let all_first = compressor_checks::every_write_first::<Main>(p, &spec, &case, &got);
    // Own writes only: every other request's state rows dropped.
    let seq = p.shape.decode_seq;
    let mut own_only = case.clone();
    let mut slots = case.get::<i64>("state_slot_mapping");
    for (tok, slot) in slots.iter_mut().enumerate().take(case.t) {
        if ![2, 5].contains(&(tok / seq)) {
            *slot = -1;
        }
    }
    own_only.inputs.insert(
        "state_slot_mapping".into(),
        tensor(vec![slots.len()], slots),
    );
    let own = Main::golden(p, &spec, &own_only).remove("cmp_kv").unwrap();
    compressor_checks::assert_orders_differ(
        &got["cmp_kv"],
        [("every write first", all_first), ("own writes only", own)],
    );
}

/// CSA (hca_csa.md §4.4, §4.7): every request pools at its first boundary, and the
/// fixture's packed state tables let requests pool rows that other requests write in the
/// same step (counted here); with exact values compress_state and cmp_kv are
/// bit-identical to the golden's sequential order. The golden with every write visible
/// first, or with only each request's own writes visible, differs.
#[test]
fn csa_requests_see_the_writes_of_earlier_requests_only() {
    compressor_checks::sequential_order::<Main>("csa_small_tp1");
}
