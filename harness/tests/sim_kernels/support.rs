//! Shared by the sim_*.rs test binaries: the library of all test kernels (built once per
//! machine thanks to the content-addressed cache), seeded inputs and comparisons.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use harness::kernel_library::{BuildSpec, SimLibrary};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub fn kernel_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("sim_kernels")
}

/// The headers the test kernels share (tests/kernel_include).
pub fn kernel_include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("kernel_include")
}

/// Every `*.cpp` of tests/sim_kernels compiled into one library.
pub fn lib() -> &'static SimLibrary {
    static LIB: OnceLock<SimLibrary> = OnceLock::new();
    LIB.get_or_init(|| {
        let mut sources: Vec<PathBuf> = std::fs::read_dir(kernel_dir())
            .expect("tests/sim_kernels exists")
            .map(|e| e.expect("readable dir entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "cpp"))
            .collect();
        sources.sort();
        SimLibrary::build(&BuildSpec::new(sources).include_dir(kernel_include_dir()))
            .unwrap_or_else(|e| panic!("{e}"))
    })
}

pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Element-wise |got - want| <= atol + rtol * |want|, NaN only where NaN is expected.
pub fn assert_close(what: &str, got: &[f32], want: &[f32], rtol: f32, atol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() {
            g == w
        } else {
            (g - w).abs() <= atol + rtol * w.abs()
        };
        assert!(ok, "{what}[{i}]: got {g}, want {w}");
    }
}

/// Bit-exact comparison of float results (NaN payloads ignored).
pub fn assert_same(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
            "{what}[{i}]: got {g}, want {w}"
        );
    }
}
