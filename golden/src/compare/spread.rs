//! Where an output's bad elements sit, for failure pictures and their summary in words:
//! bad counts over a grid of cells of the tensor seen as a matrix (rows: every axis but
//! the last, flattened; columns: the last axis, so tokens × columns for activations and
//! pool rows × columns for caches), bad counts by index along each axis, and a histogram
//! of the rule's measure beside its threshold.

use crate::tensor::unravel;

/// Cells per side of the grid, at most.
pub const GRID: usize = 64;

/// Decade bins of the histogram: bin 0 holds values below 10^LOW (zeros too), bin i
/// values in [10^(LOW+i−1), 10^(LOW+i)), the last bin everything from 10^HIGH (NaN too).
pub const LOW: i32 = -8;
pub const HIGH: i32 = 4;

#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    pub shape: Vec<usize>,
    /// The matrix view: `rows × cols` elements.
    pub rows: usize,
    pub cols: usize,
    /// Elements per cell along each side.
    pub cell_rows: usize,
    pub cell_cols: usize,
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
    pub fn new(shape: &[usize], measure: &'static str, threshold: f64) -> Spread {
        let cols = shape.last().copied().unwrap_or(1).max(1);
        let rows = (shape.iter().product::<usize>() / cols).max(1);
        let (cell_rows, cell_cols) = (rows.div_ceil(GRID), cols.div_ceil(GRID));
        let cells = rows.div_ceil(cell_rows) * cols.div_ceil(cell_cols);
        Spread {
            shape: shape.to_vec(),
            rows,
            cols,
            cell_rows,
            cell_cols,
            bad: vec![0; cells],
            compared: vec![0; cells],
            by_axis: shape.iter().map(|&n| vec![0; n]).collect(),
            measure,
            threshold,
            hist: vec![0; (HIGH - LOW + 2) as usize],
        }
    }

    /// Grid rows and columns.
    pub fn grid(&self) -> (usize, usize) {
        (
            self.rows.div_ceil(self.cell_rows),
            self.cols.div_ceil(self.cell_cols),
        )
    }

    /// The bin of a measure value.
    pub fn bin(value: f64) -> usize {
        let last = (HIGH - LOW + 1) as usize;
        if value.is_nan() || value >= 10f64.powi(HIGH) {
            last
        } else if value < 10f64.powi(LOW) {
            0
        } else {
            ((value.log10().floor() as i32 - LOW + 1) as usize).min(last)
        }
    }

    /// Counts the element at `flat` with its measure.
    pub(super) fn add(&mut self, flat: usize, measure: f64, bad: bool) {
        let (row, col) = (flat / self.cols, flat % self.cols);
        let cell = (row / self.cell_rows) * self.grid().1 + col / self.cell_cols;
        self.compared[cell] += 1;
        self.hist[Spread::bin(measure)] += 1;
        if bad {
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
        let gc = self.grid().1;
        let (r0, c0) = ((cell / gc) * self.cell_rows, (cell % gc) * self.cell_cols);
        let r1 = (r0 + self.cell_rows).min(self.rows) - 1;
        let c1 = (c0 + self.cell_cols).min(self.cols) - 1;
        format!(
            "{}; densest cell rows {r0}..={r1} × columns {c0}..={c1} ({bad} of {} bad)",
            parts.join(", "),
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
        let mut s = Spread::new(&shape, "rdiff", 4e-3);
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
