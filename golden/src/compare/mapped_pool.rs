//! `mapped_pool_ratio_allclose`: a paged pool compared row by row through the
//! slot mapping that names the rows this step wrote. Mapped rows must be
//! finite and within tolerance (pooled `ratio_allclose`); every other row must
//! be bit-identical to the golden, which catches stray writes and keeps
//! sentinel rows (−inf state scores) out of the numeric check.

use super::elementwise::{allclose_values, as_f32, layout_mismatch};
use super::report::{Report, Rule};
use crate::tensor::Tensor;
use std::collections::HashSet;

/// How a pool is mapped.
#[derive(Debug, Clone, Copy)]
pub struct MappedPool<'a> {
    /// The slot mapping tensor (`[t]`, or `[tp, t]` with a rank axis).
    pub mapping: &'a Tensor,
    pub mapping_name: &'a str,
    /// The mapping's required shape.
    pub mapping_shape: &'a [usize],
    /// Rows per page: the pool is `[(tp,) pages, block_size, …]`.
    pub block_size: usize,
    /// The pool and mapping carry a leading rank axis.
    pub rank_axis: bool,
    pub atol: f32,
    pub rtol: f32,
    pub max_error_ratio: f64,
}

pub fn mapped_pool(output: &str, got: &Tensor, want: &Tensor, m: MappedPool) -> Report {
    let rule = Rule::AllClose {
        atol: m.atol,
        rtol: m.rtol,
        max_error_ratio: m.max_error_ratio,
    };
    let broken = |reason: String| Report::broken(output, rule.clone(), reason);
    if let Some(reason) = layout_mismatch(got, want) {
        return broken(reason);
    }
    let block_axis = usize::from(m.rank_axis) + 1;
    if got.shape().len() <= block_axis || got.shape()[block_axis] != m.block_size {
        return broken(format!(
            "expected a block-major pool with block_size={} on axis {block_axis}, got {:?}",
            m.block_size,
            got.shape()
        ));
    }
    let Some(slots) = integer_values(m.mapping) else {
        return broken(format!(
            "`{}` must have an integer dtype, got {}",
            m.mapping_name,
            m.mapping.dtype().name()
        ));
    };
    if m.mapping.shape() != m.mapping_shape {
        return broken(format!(
            "`{}` must have shape {:?}, got {:?}",
            m.mapping_name,
            m.mapping_shape,
            m.mapping.shape()
        ));
    }
    let ranks = if m.rank_axis { got.shape()[0] } else { 1 };
    if m.rank_axis && m.mapping_shape.first() != Some(&ranks) {
        return broken(format!(
            "leading rank count of the pool must be {:?}, got {ranks}",
            m.mapping_shape.first()
        ));
    }
    let rows = got.shape()[usize::from(m.rank_axis)] * m.block_size;
    let width = got.numel() / (ranks * rows).max(1);
    let per_rank = slots.len() / ranks.max(1);

    // The mapping contract: -1 or an in-range row, no row twice per rank.
    let mut written = vec![false; ranks * rows];
    for rank in 0..ranks {
        let mut seen = HashSet::new();
        for (i, &s) in slots[rank * per_rank..(rank + 1) * per_rank]
            .iter()
            .enumerate()
        {
            let at = if m.rank_axis {
                format!("[{rank}, {i}]")
            } else {
                format!("[{i}]")
            };
            if s < -1 {
                return broken(format!(
                    "`{}`{at}={s} is invalid; only -1 is a negative sentinel",
                    m.mapping_name
                ));
            }
            if s == -1 {
                continue;
            }
            let r = s as usize;
            if r >= rows {
                return broken(format!(
                    "`{}`{at}={s} is outside physical row range [0, {rows})",
                    m.mapping_name
                ));
            }
            if !seen.insert(r) {
                return broken(format!(
                    "`{}` maps physical row {r} twice on rank {rank}",
                    m.mapping_name
                ));
            }
            written[rank * rows + r] = true;
        }
    }

    // Unmapped rows: bit-identical.
    let row_bytes = width * got.dtype().size();
    let (gb, wb) = (got.as_le_bytes(), want.as_le_bytes());
    let (g, w) = (as_f32(got), as_f32(want));
    if let Some(row) = (0..ranks * rows).find(|&r| {
        !written[r]
            && gb[r * row_bytes..(r + 1) * row_bytes] != wb[r * row_bytes..(r + 1) * row_bytes]
    }) {
        let size = got.dtype().size();
        let changed: Vec<usize> = (row * width..(row + 1) * width)
            .filter(|&i| gb[i * size..(i + 1) * size] != wb[i * size..(i + 1) * size])
            .collect();
        let mut report = broken(format!(
            "unmapped row {} (rank {}) changed: {} value(s) differ",
            row % rows,
            row / rows,
            changed.len()
        ));
        report.worst = changed
            .iter()
            .take(super::report::WORST)
            .map(|&i| super::Worst {
                flat: i,
                index: crate::tensor::unravel(i, got.shape()),
                got: f64::from(g[i]),
                want: f64::from(w[i]),
            })
            .collect();
        return report;
    }

    // Mapped rows: finite on both sides, then pooled ratio_allclose.
    let mapped: Vec<usize> = (0..ranks * rows)
        .filter(|&r| written[r])
        .flat_map(|r| r * width..(r + 1) * width)
        .collect();
    let (mg, mw): (Vec<f32>, Vec<f32>) = mapped.iter().map(|&i| (g[i], w[i])).unzip();
    for (side, v) in [("got", &mg), ("want", &mw)] {
        let n = v.iter().filter(|x| !x.is_finite()).count();
        if n > 0 {
            return broken(format!(
                "{side}: mapped rows from `{}` contain {n} non-finite value(s)",
                m.mapping_name
            ));
        }
    }
    allclose_values(output, &mg, &mw, |i| mapped[i], got.shape(), rule)
}

fn integer_values(t: &Tensor) -> Option<Vec<i64>> {
    if let Some(v) = t.values::<i64>() {
        return Some(v.to_vec());
    }
    if let Some(v) = t.values::<i32>() {
        return Some(v.iter().map(|&x| i64::from(x)).collect());
    }
    t.values::<i8>()
        .map(|v| v.iter().map(|&x| i64::from(x)).collect())
}
