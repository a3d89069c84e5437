//! The HCA layer end to end on the sim: the generated plans of hca_small at TP 1, 2 and 4
//! (and hca_groups6, six output groups, at TP 3 and 6) against the golden with the reference's comparators (x_out, compress_state, kv_cache,
//! cmp_kv) at the default starts at capacity and capacity − 8 tokens (below capacity the
//! default state table makes requests pool rows other requests write in the same step,
//! hca_csa.md §4.7), the reference's mixed list, and 1M-context starts; every case three
//! times with identical bits. The reference's own vectors replay through hca_ref.

mod layer_checks;

use golden::fixtures::StartPositions;
use golden::io;
use layer_checks::{judge_repeated, runtime, start_sets};
use runner::variant;

const OUTPUTS: [&str; 4] = ["x_out", "compress_state", "kv_cache", "cmp_kv"];

/// Default starts at capacity and capacity − 8 tokens; the reference's mixed list (one
/// request each at 16384, 16384, 131072 and 524288); the largest legal start alone (8192
/// compressed rows fill the 256-block pool) and beside two requests without compressed
/// rows; three runs each.
fn every_start_set(name: &str) -> usize {
    let others = vec![
        StartPositions::List(vec![16384, 16384, 131072, 524288]),
        StartPositions::Scalar(1_048_568),
        StartPositions::List(vec![10, 1_048_568, 100]),
    ];
    start_sets(name, others, 3, &OUTPUTS)
}

// At TP 1 and 2 the batches below capacity (15 and 7 requests) pool rows that other
// requests write in the same step: the sequential order is exercised.
#[test]
fn hca_small_tp1_passes_the_golden() {
    let aliases = every_start_set("hca_small_tp1");
    assert!(aliases > 0, "hca_small_tp1: no cross-request state reads");
}

#[test]
fn hca_small_tp2_passes_the_golden() {
    let aliases = every_start_set("hca_small_tp2");
    assert!(aliases > 0, "hca_small_tp2: no cross-request state reads");
}

#[test]
fn hca_small_tp4_passes_the_golden() {
    every_start_set("hca_small_tp4");
}

/// TP degrees that are not powers of two: six output groups over 3 and 6 ranks.
#[test]
fn hca_groups6_tp3_and_tp6_pass_the_golden() {
    every_start_set("hca_groups6_tp3");
    every_start_set("hca_groups6_tp6");
}

#[test]
fn the_reference_vectors_replay_through_hca_ref_at_tp1() {
    let dir = variant::repo_root().join("../shared/golden-vectors/hca_small_tp1");
    let saved = io::load_case(&dir).unwrap();
    let rt = runtime("hca_ref_tp1");
    let spec = variant::layer_spec(rt.plan()).unwrap();
    judge_repeated(
        "reference vectors",
        rt,
        &spec,
        (&saved.inputs, &layer_checks::saved(&saved.outputs)),
        3,
        &OUTPUTS,
    );
}

/// The plan with `fuse: false` gives the fused plan's bits, and both pass.
#[test]
fn hca_small_unfused_gives_the_fused_bits() {
    layer_checks::fused_as_unfused("hca_small_tp1", "hca_small_unfused_tp1", &OUTPUTS);
}
