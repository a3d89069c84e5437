//! Our fixture formulas reproduce the reference's own metadata: the swa_small
//! vectors' slot mapping, window indices and lengths, positions and RoPE rows
//! come out bit-identical from the same dims and the default start set.

use golden::LayerSpec;
use golden::fixtures::{self, FixtureOptions};
use golden::io::load_case;
use std::path::PathBuf;

fn vectors() -> PathBuf {
    std::fs::canonicalize(env!("CARGO_MANIFEST_DIR"))
        .expect("manifest dir exists")
        .join("../../shared/golden-vectors/swa_small_tp1")
}

#[test]
fn swa_metadata_matches_the_reference_fixture() {
    let dir = vectors();
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap();
    let spec = LayerSpec::from_reference_meta(&meta).unwrap();
    let reference = load_case(&dir).unwrap().inputs;
    let ours = fixtures::build(&spec, &FixtureOptions::default())
        .unwrap()
        .inputs;
    for name in [
        "swa_slot_mapping",
        "swa_indices",
        "swa_lens",
        "position_ids",
        "freqs_cos",
        "freqs_sin",
    ] {
        assert_eq!(
            ours.get(name).unwrap(),
            reference.get(name).unwrap(),
            "{name} differs from the reference"
        );
    }
    // Distributions are ours (torch's RNG stream is not reproducible), shapes and dtypes are the reference's.
    for (name, t) in reference.iter() {
        let o = ours.get(name).unwrap();
        assert_eq!((o.dtype(), o.shape()), (t.dtype(), t.shape()), "{name}");
    }
    assert_eq!(ours.len(), reference.len());
}
