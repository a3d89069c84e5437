//! Stage index_compressor on the CPU model against the golden's inner compressor
//! (`golden::compressor::update_and_pool` with the indexer's geometry, then
//! `golden::indexer::write_index_keys`, as the CSA layer golden calls them): projection,
//! APE, state rows, the overlapping ratio-4 pooling at the first boundary of a step
//! (hca_csa.md §4.1, §4.2, §4.4), RMSNorm and RoPE with the full table's row at the step's
//! first position p0 (not the window start, §4.5 end), bf16, the Hadamard product and the
//! int8 quant-on-write into idx_kv_cache / idx_kv_scale (§5.3).
//! inner_compress_state within mapped_pool(inner_state_slot_mapping, 1e-3, 1e-3, ratio 0),
//! idx_kv_cache within mapped_pool(idx_slot_mapping, atol 1, rtol 0, ratio 0.01) and
//! idx_kv_scale within mapped_pool(idx_slot_mapping, 1e-4, 1/128, ratio 0.01) (§8.3):
//! mapped rows within tolerance, every other row bit-identical (no stray writes).
//! Inputs: the CSA fixture's weights, tables, slot mappings and RoPE table for starts
//! with p0 mod 4 = 0, 1, 2, 3 (two boundaries in a step, only the first written), and
//! p0 < 4 (the first window without its previous one); the last written key's idx slot
//! −1 (nothing written) and one token with inner state slot −1 (no state row). x_normed
//! and the initial state are seeded normals (never-written rows keep their −inf scores).
//! Rows of x_normed past the runtime count are NaN; workspaces are poisoned. Peak on-chip
//! memory of every launch is asserted to be the plan's budget; GM traffic is printed.
//!
//! Cross-request aliasing (§4.7): the fixture's packed inner state tables let requests pool
//! rows other requests write in the same step; with exact values (and the identity as the
//! Hadamard matrix, so that the keys are exact too) the state, keys and scales are
//! bit-identical to the golden's sequential order, which the two other plausible orders
//! (every write first, own writes only) are not.

mod compressor_checks;
mod stage_checks;
mod support;

use std::collections::BTreeMap;

use compressor_checks::{Case, Compressor, Names, Pool};
use golden::compressor::RopeRowOf;
use golden::indexer;
use golden::rope::RopeRows;
use golden::tensor::Tensor;
use golden::{LayerKind, LayerSpec};
use half::bf16;
use kernelgen::plan::{CompressorPlan, Plan};
use stage_checks::tensor;

/// The indexer's inner compressor: inner_compress_state and the index keys and scales.
struct Inner;

/// Starts (every request reaches a boundary), with the first boundary token and the
/// step's RoPE row p0: 8 (3 and 7), 2 (1: no previous window), 1001 (2), 506 (1), 0 (3
/// and 7: no previous window), 4087 (0), 3 (0: no previous window), 100 (3 and 7). The
/// main compressor would rotate at the window start p0 − p0 mod 4 instead.
const STARTS: [i64; 8] = [8, 2, 1001, 506, 0, 4087, 3, 100];

/// Ring CSA starts: both boundaries of every step, steps starting anywhere in the ring, on
/// both sides of the snapshot's 16,384 ceiling; each boundary rotates at its own e − 3.
const RING_STARTS: [i64; 8] = [8, 2, 1001, 506, 16_377, 4087, 16_376, 101];

impl Compressor for Inner {
    const STAGE: &'static str = "index_compressor";
    const NAMES: Names = Names {
        wkv: "inner_wkv",
        wgate: "inner_wgate",
        ape: "inner_ape",
        norm_w: "inner_norm_w",
        state: "inner_compress_state",
        state_draws: "inner_state",
        state_slots: "inner_state_slot_mapping",
        state_table: "inner_compress_state_block_table",
        rows: "idx_kv_cache",
        row_slots: "idx_slot_mapping",
    };

    fn plan(p: &Plan) -> &CompressorPlan {
        &p.indexer.as_ref().expect("a csa plan has an indexer").inner
    }

    fn starts(p: &Plan) -> &'static [i64] {
        if compressor_checks::is_ring::<Self>(p) {
            &RING_STARTS
        } else {
            &STARTS
        }
    }

    fn fixed_inputs(p: &Plan) -> Vec<&'static str> {
        let rope = if compressor_checks::is_ring::<Self>(p) {
            ["cmp_freqs_cos", "cmp_freqs_sin"]
        } else {
            ["freqs_cos", "freqs_sin"]
        };
        [
            "hadamard_idx",
            rope[0],
            rope[1],
            "idx_kv_cache",
            "idx_kv_scale",
        ]
        .to_vec()
    }

    /// The identity as hadamard_idx, so that a key is its bf16 row quantised.
    fn exact_inputs(p: &Plan) -> Vec<(&'static str, Tensor)> {
        let hd = Self::plan(p).head_dim;
        let identity: Vec<bf16> = (0..hd * hd)
            .map(|i| bf16::from_f32(if i / hd == i % hd { 1.0 } else { 0.0 }))
            .collect();
        vec![("hadamard_idx", tensor(vec![hd, hd], identity))]
    }

    /// The golden's inner state, index keys and scales (the CSA layer golden's inner
    /// compressor).
    fn golden(p: &Plan, spec: &LayerSpec, case: &Case) -> BTreeMap<&'static str, Tensor> {
        let d = &spec.dims;
        let LayerKind::Csa(csa) = &spec.kind else {
            panic!("{}: not a csa layer", p.variant)
        };
        let (state, pooled) = compressor_checks::update_and_pool::<Self>(p, spec, case);
        let ring = compressor_checks::is_ring::<Self>(p);
        let (step, of) = if ring {
            // The boundary token's row at e − 3 (csa_1m.md §1.4).
            let rows = RopeRows::from_tables(
                &case.get::<bf16>("cmp_freqs_cos"),
                &case.get::<bf16>("cmp_freqs_sin"),
                d.rope_dim,
                d.rope_dim / 2,
            );
            (rows, RopeRowOf::Token)
        } else {
            // The step rows: each request's first position (hca_csa.md §4.5 end).
            let firsts: Vec<usize> = case
                .tokens::<i32>("position_ids")
                .iter()
                .step_by(d.seq)
                .map(|&p0| p0 as usize)
                .collect();
            let rows = RopeRows::gather(
                &case.get::<bf16>("freqs_cos"),
                &case.get::<bf16>("freqs_sin"),
                d.rope_dim,
                d.rope_dim / 2,
                &firsts,
            );
            (rows, RopeRowOf::Request)
        };
        let mut keys = case.get::<i8>("idx_kv_cache");
        let mut scales = case.get::<f32>("idx_kv_scale");
        indexer::write_index_keys(
            d,
            csa,
            pooled,
            &case.get::<bf16>("inner_norm_w"),
            &case.get::<bf16>("hadamard_idx"),
            &step,
            of,
            &case.tokens::<i64>("idx_slot_mapping"),
            &mut keys,
            &mut scales,
        )
        .expect("golden index-key write");
        let shape = |name: &str| case.inputs[name].shape().to_vec();
        BTreeMap::from([
            (
                "inner_compress_state",
                tensor(shape("inner_compress_state"), state),
            ),
            ("idx_kv_cache", tensor(shape("idx_kv_cache"), keys)),
            ("idx_kv_scale", tensor(shape("idx_kv_scale"), scales)),
        ])
    }

    fn pools(p: &Plan) -> Vec<Pool> {
        let bs = p.pools.block_size;
        vec![
            Pool {
                out: "inner_compress_state",
                mapping: "inner_state_slot_mapping",
                block_size: Self::plan(p).state_block_size,
                atol: 1e-3,
                rtol: 1e-3,
                max_error_ratio: 0.0,
            },
            Pool {
                out: "idx_kv_cache",
                mapping: "idx_slot_mapping",
                block_size: bs,
                atol: 1.0,
                rtol: 0.0,
                max_error_ratio: 0.01,
            },
            Pool {
                out: "idx_kv_scale",
                mapping: "idx_slot_mapping",
                block_size: bs,
                atol: 1e-4,
                rtol: 1.0 / 128.0,
                max_error_ratio: 0.01,
            },
        ]
    }
}

#[test]
fn csa_small_tp1_matches_the_golden() {
    compressor_checks::variant::<Inner>("csa_small_tp1");
}

#[test]
fn csa_small_tp2_matches_the_golden() {
    compressor_checks::variant::<Inner>("csa_small_tp2");
}

/// hca_csa.md §4.4, §4.7: every request pools at its first boundary, and the fixture's
/// packed inner state tables let requests pool rows that other requests write in the same
/// step (counted here); with exact values inner_compress_state, idx_kv_cache and
/// idx_kv_scale are bit-identical to the golden's sequential order. The golden with every
/// write visible first, or with only each request's own writes visible, differs.
#[test]
fn csa_index_keys_see_the_writes_of_earlier_requests_only() {
    compressor_checks::sequential_order::<Inner>("csa_small_tp1");
}

/// The ring CSA's index keys (csa_1m.md §4, §5.3): every boundary of a step pooled against
/// the old ring and the step's own rows, rotated at its own e − 3, written at its own slot.
#[test]
fn csa1m_small_tp1_ring_matches_the_golden() {
    compressor_checks::variant::<Inner>("csa1m_small_tp1");
}
