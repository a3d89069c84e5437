//! Whole-tensor comparators: `ratio_reldiff` (x_out) and `ratio_allclose`.
//! Arithmetic is f32 like the reference's torch code.

use super::report::{Report, Rule, WorstList};
use super::spread::Spread;
use crate::tensor::Tensor;

/// Python's `round()` (ties to even) of `fraction · numel`: the reference's
/// allowance of bad points.
pub fn allowance(fraction: f64, numel: usize) -> usize {
    (fraction * numel as f64).round_ties_even() as usize
}

/// Elements of a tensor as f32 (exact for bf16, f32, i8 and small ints).
pub(super) fn as_f32(t: &Tensor) -> Vec<f32> {
    match t.values::<f32>() {
        Some(v) => v.to_vec(),
        None => t.to_f64().into_iter().map(|v| v as f32).collect(),
    }
}

/// Why two tensors cannot be compared element by element, if they cannot.
pub(super) fn layout_mismatch(got: &Tensor, want: &Tensor) -> Option<String> {
    (got.shape() != want.shape() || got.dtype() != want.dtype()).then(|| {
        format!(
            "layout differs: got {} {:?}, want {} {:?}",
            got.dtype().name(),
            got.shape(),
            want.dtype().name(),
            want.shape()
        )
    })
}

/// NaN/Inf counts of both sides, as a failure reason if any.
pub(super) fn nonfinite(got: &[f32], want: &[f32]) -> Option<String> {
    let count = |v: &[f32]| {
        (
            v.iter().filter(|x| x.is_nan()).count(),
            v.iter().filter(|x| x.is_infinite()).count(),
        )
    };
    let ((gn, gi), (wn, wi)) = (count(got), count(want));
    (gn + gi + wn + wi > 0)
        .then(|| format!("illegal values: got NaN={gn} Inf={gi}; want NaN={wn} Inf={wi}"))
}

/// `ratio_reldiff`: d = |got − want|; rdiff = d if d < diff_thd else
/// d / (max(|got|, |want|, 2^-14 / diff_thd) + 1e-9); a point is bad if
/// rdiff > diff_thd. Pass iff bad ≤ round(pct_thd · numel) and the worst bad
/// rdiff < max_diff_hd. Any NaN/Inf fails.
pub fn ratio_reldiff(
    output: &str,
    got: &Tensor,
    want: &Tensor,
    diff_thd: f32,
    pct_thd: f64,
    max_diff_hd: f64,
) -> Report {
    let rule = Rule::RelDiff {
        diff_thd,
        pct_thd,
        max_diff_hd,
    };
    if let Some(reason) = layout_mismatch(got, want) {
        return Report::broken(output, rule, reason);
    }
    let (g, w) = (as_f32(got), as_f32(want));
    let floor = ((1.0 / f64::from(1u32 << 14)) / f64::from(diff_thd)) as f32;
    let (mut bad, mut max_abs, mut worst_bad, mut max_rd) = (0usize, 0.0f32, 0.0f32, 0.0f32);
    let mut worst = WorstList::new();
    let mut spread = Spread::new(got.shape(), "rdiff", f64::from(diff_thd), true);
    for (i, (&a, &e)) in g.iter().zip(&w).enumerate() {
        let d = (a - e).abs();
        let rd = if d < diff_thd {
            d
        } else {
            d / (a.abs().max(e.abs()).max(floor) + 1e-9)
        };
        max_abs = max_abs.max(d);
        max_rd = max_rd.max(rd);
        if rd > diff_thd {
            bad += 1;
            worst_bad = worst_bad.max(rd);
        }
        spread.add(i, f64::from(rd), rd > diff_thd || rd.is_nan());
        worst.offer(f64::from(rd), i, f64::from(a), f64::from(e));
    }
    let allowed = allowance(pct_thd, g.len());
    let mut reason = nonfinite(&g, &w);
    if reason.is_none() && f64::from(worst_bad) >= max_diff_hd {
        reason = Some(format!(
            "worst rdiff {worst_bad:.4} reaches the cap {max_diff_hd}"
        ));
    }
    if reason.is_none() && bad > allowed {
        reason = Some(format!("{bad} bad points exceed the allowance {allowed}"));
    }
    Report {
        output: output.into(),
        pass: reason.is_none(),
        rule,
        numel: g.len(),
        bad,
        allowed,
        max_abs: f64::from(max_abs),
        max_rel: f64::from(max_rd),
        worst: worst.into_worst(got.shape()),
        reason,
        spread: Some(spread),
    }
}

/// `ratio_allclose` over whole tensors: a point is bad if
/// |got − want| > atol + rtol·|want|; pass iff bad ≤ round(ratio · numel). Any
/// NaN/Inf fails.
pub fn ratio_allclose(
    output: &str,
    got: &Tensor,
    want: &Tensor,
    atol: f32,
    rtol: f32,
    max_error_ratio: f64,
) -> Report {
    let rule = Rule::AllClose {
        atol,
        rtol,
        max_error_ratio,
    };
    if let Some(reason) = layout_mismatch(got, want) {
        return Report::broken(output, rule, reason);
    }
    let (g, w) = (as_f32(got), as_f32(want));
    allclose_values(output, &g, &w, |i| i, got.shape(), rule)
}

/// `ratio_allclose` over selected values; `flat(i)` maps the i-th compared
/// value to its flat index in a tensor of `shape` (for the report).
pub(super) fn allclose_values(
    output: &str,
    got: &[f32],
    want: &[f32],
    flat: impl Fn(usize) -> usize,
    shape: &[usize],
    rule: Rule,
) -> Report {
    let Rule::AllClose {
        atol,
        rtol,
        max_error_ratio,
    } = rule
    else {
        unreachable!("allclose_values takes an AllClose rule")
    };
    let (mut bad, mut max_abs, mut max_rel) = (0usize, 0.0f32, 0.0f32);
    let mut worst = WorstList::new();
    let whole = got.len() == shape.iter().product::<usize>();
    let mut spread = Spread::new(shape, "|d| / (atol + rtol·|want|)", 1.0, whole);
    for (i, (&a, &e)) in got.iter().zip(want).enumerate() {
        let d = (a - e).abs();
        let tol = atol + rtol * e.abs();
        let out = d > tol || d.is_nan();
        if out {
            bad += 1;
        }
        let at = flat(i);
        if !whole {
            spread.compared_at(at);
        }
        spread.add(at, f64::from(d / tol), out);
        max_abs = max_abs.max(d);
        if e != 0.0 {
            max_rel = max_rel.max(d / e.abs());
        }
        worst.offer(f64::from(d / tol), flat(i), f64::from(a), f64::from(e));
    }
    let allowed = allowance(max_error_ratio, got.len());
    let mut reason = nonfinite(got, want);
    if reason.is_none() && bad > allowed {
        reason = Some(format!("{bad} bad points exceed the allowance {allowed}"));
    }
    Report {
        output: output.into(),
        pass: reason.is_none(),
        rule,
        numel: got.len(),
        bad,
        allowed,
        max_abs: f64::from(max_abs),
        max_rel: f64::from(max_rel),
        worst: worst.into_worst(shape),
        reason,
        spread: Some(spread),
    }
}
