//! Checks shared by the attention stage tests (SWA window, HCA window + compressed rows).

#![allow(dead_code)] // each test binary uses part of this module

use half::bf16;
use harness::compare::ratio_allclose;
use harness::sim::LaunchStats;
use harness::tensor::Tensor;
use kernelgen::chip::Mem;
use kernelgen::plan::{Plan, StageKind};

/// o_packed_heads `[group, t_pad, width]`: the first `t` rows of every group within
/// ratio_allclose(1e-4, 1/128, 0) of `want`, the padding rows still poisoned. Returns
/// the largest absolute difference.
pub fn packed_heads(variant: &str, p: &Plan, got: &[bf16], want: &[bf16], t: usize) -> f32 {
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
            0.0,
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

/// The window kernels allocate exactly their budget rows; the compressed kernel's AIVs
/// exactly the `cmp_` rows and its AIC at most the window cube's rows.
pub fn check_peaks(p: &Plan, stats: &[(String, LaunchStats)]) {
    let buffers = &p.stage(StageKind::SparseAttention).unwrap().buffers;
    let rows = |prefix: &str, mem: Mem| -> u64 {
        buffers
            .iter()
            .filter(|b| b.mem == mem && b.name.starts_with(prefix))
            .map(|b| b.allocated(p.chip) as u64)
            .sum()
    };
    for (kernel, s) in stats {
        let peaks = [
            (Mem::Ub, s.peak_ub),
            (Mem::L1, s.peak_l1),
            (Mem::L0a, s.peak_l0a),
            (Mem::L0b, s.peak_l0b),
            (Mem::L0c, s.peak_l0c),
        ];
        for (mem, peak) in peaks {
            if kernel.starts_with("attn_compressed") {
                let budget = if mem == Mem::Ub {
                    rows("cmp_", mem)
                } else {
                    rows("cube_", mem)
                };
                assert!(
                    peak <= budget && (mem != Mem::Ub || peak == budget),
                    "{kernel}: peak {mem} {peak} vs the budget rows {budget}"
                );
                continue;
            }
            let prefix = if kernel.starts_with("attn_window_softmax") {
                "softmax_"
            } else if kernel.starts_with("attn_finish") {
                "finish_"
            } else {
                "cube_"
            };
            assert_eq!(
                peak,
                rows(prefix, mem),
                "{kernel}: peak {mem} vs the budget rows"
            );
        }
    }
}
