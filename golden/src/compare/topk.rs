//! Top-k index lists compared as sets, tolerating swaps between candidates
//! whose scores tie at the selection boundary (hca_csa.md §5.5, §8.2). The
//! hardware sort and torch.topk both leave the order of equal scores open.

use super::report::{Report, Rule, Worst};
use crate::tensor::unravel;

/// Compares `rows` top-k lists of width `k` (−1 padded, best first).
/// `scores` `[rows, score_len]` holds the (golden) score of every candidate.
/// A row passes when both lists hold the same number of valid indices, `got`
/// has no duplicates and no out-of-range index, every index in one list but
/// not the other scores within `atol + rtol·|kth|` of the boundary score `kth`
/// (the lowest score `want` kept), and `got` is in descending score order
/// within the same tolerance.
pub fn topk_sets(
    output: &str,
    got: &[i32],
    want: &[i32],
    k: usize,
    scores: &[f32],
    atol: f32,
    rtol: f32,
) -> Report {
    let rule = Rule::TopK { atol, rtol };
    let rows = want.len() / k.max(1);
    if got.len() != want.len() || !scores.len().is_multiple_of(rows.max(1)) {
        return Report::broken(
            output,
            rule,
            format!(
                "shapes differ: got {} indices, want {}, scores {}",
                got.len(),
                want.len(),
                scores.len()
            ),
        );
    }
    let score_len = scores.len() / rows.max(1);
    let mut bad_rows = Vec::new();
    let mut max_abs = 0.0f32;
    for r in 0..rows {
        let (g, w) = (&got[r * k..(r + 1) * k], &want[r * k..(r + 1) * k]);
        let s = &scores[r * score_len..(r + 1) * score_len];
        match row_mismatch(g, w, s, atol, rtol) {
            Ok(gap) => max_abs = max_abs.max(gap),
            Err(pos) => bad_rows.push((r, pos)),
        }
    }
    let worst = bad_rows
        .iter()
        .take(5)
        .map(|&(r, pos)| Worst {
            flat: r * k + pos,
            index: unravel(r * k + pos, &[rows, k]),
            got: f64::from(got[r * k + pos]),
            want: f64::from(want[r * k + pos]),
        })
        .collect();
    Report {
        output: output.into(),
        pass: bad_rows.is_empty(),
        rule,
        numel: rows,
        bad: bad_rows.len(),
        allowed: 0,
        max_abs: f64::from(max_abs),
        max_rel: 0.0,
        worst,
        reason: (!bad_rows.is_empty())
            .then(|| format!("{} row(s) select a different set or order", bad_rows.len())),
        spread: None,
    }
}

/// [`topk_sets`] against one score row per token over its visible candidates (an index
/// past a row's end scores −inf and fails), ties within `tol` of the largest |score|
/// plus `tol` of the boundary score.
pub fn topk_rows(
    output: &str,
    got: &[i32],
    want: &[i32],
    k: usize,
    rows: &[Vec<f32>],
    tol: f32,
) -> Report {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let mut scores = vec![f32::NEG_INFINITY; rows.len() * width];
    for (dst, row) in scores.chunks_exact_mut(width).zip(rows) {
        dst[..row.len()].copy_from_slice(row);
    }
    let scale = scores
        .iter()
        .filter(|s| s.is_finite())
        .fold(0.0f32, |m, s| m.max(s.abs()));
    topk_sets(output, got, want, k, &scores, tol * scale, tol)
}

/// Ok(the largest score gap a tolerated swap needed), or Err(first bad position).
fn row_mismatch(
    got: &[i32],
    want: &[i32],
    scores: &[f32],
    atol: f32,
    rtol: f32,
) -> Result<f32, usize> {
    let valid = |l: &[i32]| l.iter().take_while(|&&i| i >= 0).count();
    let (ng, nw) = (valid(got), valid(want));
    if ng != nw || got[ng..].iter().any(|&i| i != -1) {
        return Err(ng.min(nw));
    }
    let score = |i: i32| scores.get(i as usize).copied();
    let mut seen = std::collections::HashSet::new();
    for (p, &i) in got[..ng].iter().enumerate() {
        if score(i).is_none() || !seen.insert(i) {
            return Err(p);
        }
    }
    if ng == 0 {
        return Ok(0.0);
    }
    let kth = want[..nw]
        .iter()
        .filter_map(|&i| score(i))
        .fold(f32::INFINITY, f32::min);
    let tol = atol + rtol * kth.abs();
    let wanted: std::collections::HashSet<i32> = want[..nw].iter().copied().collect();
    let mut gap = 0.0f32;
    for (p, &i) in got[..ng].iter().enumerate() {
        let s = score(i).unwrap_or(f32::NAN);
        if !wanted.contains(&i) {
            let d = (s - kth).abs();
            if d.is_nan() || d > tol {
                return Err(p);
            }
            gap = gap.max(d);
        }
        if p > 0 {
            let prev = score(got[p - 1]).unwrap_or(f32::NAN);
            if prev + tol < s {
                return Err(p);
            }
        }
    }
    Ok(gap)
}
