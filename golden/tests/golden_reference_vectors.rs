//! The reference system's own vectors (`../shared/golden-vectors`): our SWA,
//! HCA and CSA goldens, run on the reference's inputs, must pass the reference comparators
//! against the reference's outputs.

use golden::compare::compare_layer;
use golden::io::load_case;
use golden::{self, LayerSpec};
use std::path::PathBuf;

fn vectors(name: &str) -> PathBuf {
    let manifest = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).expect("manifest dir exists");
    manifest.join("../../shared/golden-vectors").join(name)
}

/// The golden on `name`'s inputs against its outputs; returns the reports (all passing).
fn replay(name: &str) -> Vec<golden::compare::Report> {
    let dir = vectors(name);
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("meta.json")).expect("meta.json is readable"),
    )
    .expect("meta.json is JSON");
    let spec = LayerSpec::from_reference_meta(&meta).expect("meta.json describes the dims");
    let case = load_case(&dir).expect("the reference case loads");

    let got = golden::run(&spec, &case.inputs).expect("the golden runs on the reference inputs");
    let reports = compare_layer(&spec, &case.inputs, &got, &case.outputs);
    for r in &reports {
        println!("{}", r.detail());
    }
    assert!(
        reports.iter().all(|r| r.pass),
        "{name}: golden disagrees with the reference outputs"
    );
    reports
}

#[test]
fn swa_small_tp1_matches_reference_outputs() {
    let reports = replay("swa_small_tp1");
    assert_eq!(reports.len(), 2);
    // Closer than the thresholds demand: note the figures in the report.
    let x_out = &reports[0];
    assert!(x_out.bad * 10 < x_out.allowed, "x_out: {x_out}");
}

#[test]
fn hca_small_tp1_matches_reference_outputs() {
    let reports = replay("hca_small_tp1");
    let outputs: Vec<&str> = reports.iter().map(|r| r.output.as_str()).collect();
    assert_eq!(outputs, ["x_out", "compress_state", "kv_cache", "cmp_kv"]);
    let x_out = &reports[0];
    assert!(x_out.bad * 10 < x_out.allowed, "x_out: {x_out}");
}

#[test]
fn csa_small_tp1_matches_reference_outputs() {
    let reports = replay("csa_small_tp1");
    let outputs: Vec<&str> = reports.iter().map(|r| r.output.as_str()).collect();
    assert_eq!(
        outputs,
        [
            "x_out",
            "compress_state",
            "inner_compress_state",
            "kv_cache",
            "cmp_kv",
            "idx_kv_cache",
            "idx_kv_scale"
        ]
    );
    let x_out = &reports[0];
    assert!(x_out.bad * 10 < x_out.allowed, "x_out: {x_out}");
}
