//! How the compressor's pooling and finish run (`stages::compressor`): a row of several
//! channel tiles spreads its tiles over cores (CompressorPool), and its RMSNorm and RoPE,
//! which need the whole row, follow in a later launch (CompressorFinish); a row of one tile
//! gains nothing from spreading, so the finish takes the pooling as its prologue
//! (CompressorPoolFinish, the row in UB) unless `fuse: false`.

mod common;

use common::{hca, replace, tp1};

/// The building-block classes of the spec's TP 1 plan, the parts of merged launches
/// included.
fn classes(text: &str) -> Vec<&'static str> {
    tp1(text)
        .kernels
        .kernels
        .iter()
        .flat_map(|k| std::iter::once(k).chain(&k.parts))
        .map(|k| k.class)
        .collect()
}

fn has(classes: &[&str], class: &str) -> bool {
    classes.contains(&class)
}

#[test]
fn a_row_of_several_tiles_pools_apart_from_its_finish() {
    // head_dim 128 in tiles of 32 channels
    let c = classes(&hca());
    assert!(
        has(&c, "CompressorPool") && has(&c, "CompressorFinish"),
        "{c:?}"
    );
    assert!(!has(&c, "CompressorPoolFinish"), "{c:?}");
}

#[test]
fn a_row_of_one_tile_is_pooled_and_finished_in_one_kernel_unless_unfused() {
    // ratio 16 so that a tile of all 128 channels fits UB
    let whole = replace(&hca(), "ratio: 128", "ratio: 16");
    let whole = replace(
        &whole,
        "tokens: 8, channels: 32",
        "tokens: 8, channels: 128",
    );
    let c = classes(&whole);
    assert!(has(&c, "CompressorPoolFinish"), "{c:?}");
    assert!(
        !has(&c, "CompressorPool") && !has(&c, "CompressorFinish"),
        "{c:?}"
    );
    let unfused = classes(&replace(&whole, "layer: hca", "layer: hca\nfuse: false"));
    assert!(
        has(&unfused, "CompressorPool") && has(&unfused, "CompressorFinish"),
        "{unfused:?}"
    );
    assert!(!has(&unfused, "CompressorPoolFinish"), "{unfused:?}");
}
