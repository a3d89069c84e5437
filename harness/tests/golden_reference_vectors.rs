//! The reference system's own vectors (`../shared/golden-vectors`): our SWA
//! golden, run on the reference's inputs, must pass the reference comparators
//! against the reference's outputs.

use harness::compare::compare_layer;
use harness::golden::{self, LayerSpec};
use harness::io::load_case;
use std::path::PathBuf;

fn vectors(name: &str) -> PathBuf {
    let manifest = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).expect("manifest dir exists");
    manifest.join("../../shared/golden-vectors").join(name)
}

#[test]
fn swa_small_tp1_matches_reference_outputs() {
    let dir = vectors("swa_small_tp1");
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("meta.json")).expect("meta.json is readable"),
    )
    .expect("meta.json is JSON");
    let spec = LayerSpec::from_reference_meta(&meta).expect("meta.json describes SWA dims");
    let case = load_case(&dir).expect("the reference case loads");

    let got = golden::run(&spec, &case.inputs).expect("the golden runs on the reference inputs");
    let reports = compare_layer(&spec, &case.inputs, &got, &case.outputs);
    for r in &reports {
        println!("{}", r.detail());
    }
    assert_eq!(reports.len(), 2);
    assert!(
        reports.iter().all(|r| r.pass),
        "golden disagrees with the reference outputs"
    );
    // Closer than the thresholds demand: note the figures in the report.
    let x_out = &reports[0];
    assert!(x_out.bad * 10 < x_out.allowed, "x_out: {x_out}");
}
