//! Checks shared by the attention stage tests (SWA window, HCA window + compressed rows).

#![allow(dead_code)] // each test binary uses part of this module

use golden::compare::ratio_allclose;
use golden::tensor::Tensor;
use half::bf16;
use harness::sim::LaunchStats;
use kernelgen::chip::Mem;
use kernelgen::plan::Plan;
use kernelgen::variant::Variant;

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

/// The vector kernels allocate exactly their budget rows (the compressed kernel's AIVs the
/// `cmp_` rows); the cube kernels (window and compressed) at most the `cube_` rows, and the
/// largest of them exactly.
pub fn check_peaks(v: &Variant, stats: &[(String, LaunchStats)]) {
    let (p, buffers) = (&v.plan, &v.stage("sparse_attention").unwrap().buffers);
    let rows = |prefix: &str, mem: Mem| -> u64 {
        buffers
            .iter()
            .filter(|b| b.mem == mem && b.name.starts_with(prefix))
            .map(|b| b.allocated(p.chip) as u64)
            .sum()
    };
    let mut cube_peaks = std::collections::BTreeMap::<Mem, u64>::new();
    for (kernel, s) in stats {
        let peaks = [
            (Mem::Ub, s.peak_ub),
            (Mem::L1, s.peak_l1),
            (Mem::L0a, s.peak_l0a),
            (Mem::L0b, s.peak_l0b),
            (Mem::L0c, s.peak_l0c),
        ];
        for (mem, peak) in peaks {
            let prefix = if kernel.starts_with("attn_window_softmax") {
                "softmax_"
            } else if kernel.starts_with("attn_finish") {
                "finish_"
            } else if kernel.starts_with("attn_compressed") && mem == Mem::Ub {
                "cmp_"
            } else if mem == Mem::Ub {
                // the cube kernels use no UB
                assert_eq!(peak, 0, "{kernel}: UB");
                continue;
            } else {
                let budget = rows("cube_", mem);
                assert!(
                    peak <= budget,
                    "{kernel}: peak {mem} {peak} > the budget rows {budget}"
                );
                let max = cube_peaks.entry(mem).or_default();
                *max = (*max).max(peak);
                continue;
            };
            assert_eq!(
                peak,
                rows(prefix, mem),
                "{kernel}: peak {mem} vs the budget rows"
            );
        }
    }
    for (mem, peak) in cube_peaks {
        assert_eq!(
            peak,
            rows("cube_", mem),
            "the largest cube kernel's peak {mem} vs the budget rows"
        );
    }
}
