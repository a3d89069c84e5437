//! Checks shared by the attention stage tests (SWA window, HCA window + compressed rows).

#![allow(dead_code)] // each test binary uses part of this module

use golden::compare::ratio_allclose;
use golden::tensor::Tensor;
use half::bf16;
use kernelgen::plan::Plan;

/// o_packed_heads `[group, t_pad, width]`: the first `t` rows of every group within
/// ratio_allclose(1e-4, 1/128, max_error_ratio) of `want`, the padding rows still
/// poisoned. Returns the largest absolute difference.
pub fn packed_heads(
    variant: &str,
    p: &Plan,
    got: &[bf16],
    want: &[bf16],
    t: usize,
    max_error_ratio: f64,
) -> f32 {
    let (t_pad, width) = (p.shape.t_pad, p.model.o_group_in);
    assert_eq!(got.len(), want.len());
    let mut worst = 0.0f32;
    for g in 0..p.model.o_groups {
        let valid = (g * t_pad) * width..(g * t_pad + t) * width;
        let slab =
            |v: &[bf16]| Tensor::from_vec(vec![t, width], v[valid.clone()].to_vec()).unwrap();
        let report = ratio_allclose(
            &format!("o_packed_heads group {g}"),
            &slab(got),
            &slab(want),
            1e-4,
            1.0 / 128.0,
            max_error_ratio,
        );
        assert!(report.pass, "{variant}, t = {t}: {}", report.detail());
        for (a, e) in got[valid.clone()].iter().zip(&want[valid]) {
            worst = worst.max((a.to_f32() - e.to_f32()).abs());
        }
        let padding = &got[(g * t_pad + t) * width..(g + 1) * t_pad * width];
        assert!(
            padding.iter().all(|v| v.to_bits() == 0xFFFF),
            "{variant}: group {g} padding rows >= {t} were written"
        );
    }
    worst
}
