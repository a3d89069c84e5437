//! Where an output's bad elements sit, for failure pictures and their summary in words:
//! bad counts over a grid of cells of the tensor seen as a matrix (rows: every axis but
//! the last, flattened; columns: the last axis, so tokens × columns for activations and
//! pool rows × columns for caches), bad counts by index along each axis, and a histogram
//! of the rule's measure beside its threshold.

use std::ops::Range;

use crate::tensor::unravel;

/// Cells per side of the grid, at most.
pub const GRID: usize = 64;

/// Decade bins of the histogram: bin 0 holds values below 10^LOW (zeros too), bin i
/// values in [10^(LOW+i−1), 10^(LOW+i)), the last bin everything from 10^HIGH (NaN too).
pub const LOW: i32 = -8;
pub const HIGH: i32 = 4;

/// The bins' lower edges 10^LOW … 10^HIGH: a bin is comparisons, not a logarithm (every
/// compared element is binned, on every run).
const EDGES: [f64; (HIGH - LOW + 1) as usize] = [
    1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4,
];

#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    pub shape: Vec<usize>,
    /// The matrix view: `rows × cols` elements.
    pub rows: usize,
    pub cols: usize,
    /// Elements per cell along each side, and cells per grid row.
    pub cell_rows: usize,
    pub cell_cols: usize,
    grid_cols: usize,
    /// Bad and compared elements per cell, row-major over the grid (a mapped pool
    /// compares some rows only).
    pub bad: Vec<u32>,
    pub compared: Vec<u32>,
    /// Bad elements by index along each axis of `shape`.
    pub by_axis: Vec<Vec<u32>>,
    /// What the histogram counts (the rule's measure) and the value above which an
    /// element is bad.
    pub measure: &'static str,
    pub threshold: f64,
    /// `HIGH − LOW + 2` decade bins.
    pub hist: Vec<u64>,
}

impl Spread {
    /// An empty spread over `shape`; `whole` when every element will be compared (else the
    /// comparison marks each compared element, [`Spread::compared_at`]).
    pub fn new(shape: &[usize], measure: &'static str, threshold: f64, whole: bool) -> Spread {
        let cols = shape.last().copied().unwrap_or(1).max(1);
        let rows = (shape.iter().product::<usize>() / cols).max(1);
        let (cell_rows, cell_cols) = (rows.div_ceil(GRID), cols.div_ceil(GRID));
        let (grid_rows, grid_cols) = (rows.div_ceil(cell_rows), cols.div_ceil(cell_cols));
        let mut s = Spread {
            shape: shape.to_vec(),
            rows,
            cols,
            cell_rows,
            cell_cols,
            grid_cols,
            bad: vec![0; grid_rows * grid_cols],
            compared: vec![0; grid_rows * grid_cols],
            by_axis: shape.iter().map(|&n| vec![0; n]).collect(),
            measure,
            threshold,
            hist: vec![0; (HIGH - LOW + 2) as usize],
        };
        if whole {
            for i in 0..s.compared.len() {
                let (r, c) = s.cell(i);
                s.compared[i] = (r.len() * c.len()) as u32;
            }
        }
        s
    }

    /// Grid rows and columns.
    pub fn grid(&self) -> (usize, usize) {
        (self.bad.len() / self.grid_cols, self.grid_cols)
    }

    /// The rows and columns (of the matrix view) cell `i` covers.
    pub fn cell(&self, i: usize) -> (Range<usize>, Range<usize>) {
        let (r0, c0) = (
            i / self.grid_cols * self.cell_rows,
            i % self.grid_cols * self.cell_cols,
        );
        (
            r0..(r0 + self.cell_rows).min(self.rows),
            c0..(c0 + self.cell_cols).min(self.cols),
        )
    }

    /// The bin of a measure value.
    pub fn bin(value: f64) -> usize {
        if value.is_nan() {
            EDGES.len()
        } else {
            // Branch-free: the count of edges at or below the value.
            EDGES.iter().map(|&e| usize::from(e <= value)).sum()
        }
    }

    fn cell_of(&self, flat: usize) -> usize {
        let (row, col) = (flat / self.cols, flat % self.cols);
        (row / self.cell_rows) * self.grid_cols + col / self.cell_cols
    }

    /// Marks the element at `flat` compared (a comparison of part of the tensor).
    pub(super) fn compared_at(&mut self, flat: usize) {
        let cell = self.cell_of(flat);
        self.compared[cell] += 1;
    }

    /// Counts a compared element's measure, and where it is when it is bad.
    pub(super) fn add(&mut self, flat: usize, measure: f64, bad: bool) {
        self.hist[Spread::bin(measure)] += 1;
        if bad {
            let cell = self.cell_of(flat);
            self.bad[cell] += 1;
            for (axis, i) in unravel(flat, &self.shape).into_iter().enumerate() {
                self.by_axis[axis][i] += 1;
            }
        }
    }

    /// Where the bad elements are, in words: per axis the index range they span (and the
    /// index with most), then the cell with the most.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (axis, counts) in self.by_axis.iter().enumerate() {
            let hit: Vec<usize> = (0..counts.len()).filter(|&i| counts[i] > 0).collect();
            let (Some(&first), Some(&last)) = (hit.first(), hit.last()) else {
                return "no bad elements".into();
            };
            let n = counts.len();
            if hit.len() == n {
                parts.push(format!("axis {axis}: all {n}"));
                continue;
            }
            let most = (0..n)
                .max_by_key(|&i| (counts[i], usize::MAX - i))
                .unwrap_or(0);
            parts.push(format!(
                "axis {axis}: {first}..={last} of {n} ({} indices, most at {most})",
                hit.len()
            ));
        }
        let (cell, &bad) = self
            .bad
            .iter()
            .enumerate()
            .max_by_key(|&(i, b)| (*b, usize::MAX - i))
            .expect("a grid has cells");
        let (r, c) = self.cell(cell);
        format!(
            "{}; densest cell rows {}..={} × columns {}..={} ({bad} of {} bad)",
            parts.join(", "),
            r.start,
            r.end - 1,
            c.start,
            c.end - 1,
            self.compared[cell]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_block_shows_in_its_cells_axes_and_words() {
        // [16 tokens, 4 streams, 256 columns]: tokens 8..16, columns 0..64 broken.
        let shape = [16, 4, 256];
        let mut s = Spread::new(&shape, "rdiff", 4e-3, true);
        assert_eq!((s.rows, s.cols, s.cell_rows, s.cell_cols), (64, 256, 1, 4));
        for flat in 0..16 * 4 * 256 {
            let (t, c) = (flat / 1024, flat % 256);
            let bad = t >= 8 && c < 64;
            s.add(flat, if bad { 0.5 } else { 1e-5 }, bad);
        }
        assert_eq!(s.bad.iter().map(|&b| b as usize).sum::<usize>(), 8 * 4 * 64);
        let (gr, gc) = s.grid();
        for r in 0..gr {
            for c in 0..gc {
                let broken = r >= 32 && c < 16;
                assert_eq!(s.bad[r * gc + c] > 0, broken, "cell {r},{c}");
            }
        }
        assert_eq!(s.hist[Spread::bin(0.5)], 8 * 4 * 64);
        let words = s.describe();
        assert!(
            words.starts_with(
                "axis 0: 8..=15 of 16 (8 indices, most at 8), axis 1: all 4, axis 2: 0..=63 of 256"
            ),
            "{words}"
        );
        assert!(
            words.contains("densest cell rows 32..=32 × columns 0..=3 (4 of 4 bad)"),
            "{words}"
        );
    }

    #[test]
    fn bins_are_decades_with_the_ends_open() {
        assert_eq!(Spread::bin(0.0), 0);
        assert_eq!(Spread::bin(1e-9), 0);
        assert_eq!(Spread::bin(1e-8), 1);
        assert_eq!(Spread::bin(4e-3), (-3 - LOW + 1) as usize);
        assert_eq!(Spread::bin(f64::NAN), (HIGH - LOW + 1) as usize);
        assert_eq!(Spread::bin(1e9), (HIGH - LOW + 1) as usize);
    }
}
