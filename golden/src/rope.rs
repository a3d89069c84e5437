//! Interleaved rotary embedding on the last `rope_dim` values of a head
//! (swa.md §3.3, hca_csa.md §1.4): pair i is (x[2i], x[2i+1]).

use half::bf16;

/// Per-row cos/sin values for the `rope_dim / 2` frequencies, in f32.
#[derive(Debug, Clone, PartialEq)]
pub struct RopeRows {
    pub half: usize,
    pub cos: Vec<f32>,
    pub sin: Vec<f32>,
}

impl RopeRows {
    /// From bf16 tables `[rows, width]` (width ≥ half): only the first `half`
    /// columns are read; the reference duplicates them in the second half.
    pub fn from_tables(cos: &[bf16], sin: &[bf16], width: usize, half: usize) -> RopeRows {
        let take = |table: &[bf16]| {
            table
                .chunks_exact(width)
                .flat_map(|row| row[..half].iter().map(|v| v.to_f32()))
                .collect::<Vec<f32>>()
        };
        RopeRows {
            half,
            cos: take(cos),
            sin: take(sin),
        }
    }

    /// Selected rows of a bf16 table (CSA gathers rows by position).
    pub fn gather(
        cos: &[bf16],
        sin: &[bf16],
        width: usize,
        half: usize,
        rows: &[usize],
    ) -> RopeRows {
        let take = |table: &[bf16]| {
            rows.iter()
                .flat_map(|&r| {
                    table[r * width..r * width + half]
                        .iter()
                        .map(|v| v.to_f32())
                })
                .collect::<Vec<f32>>()
        };
        RopeRows {
            half,
            cos: take(cos),
            sin: take(sin),
        }
    }

    pub fn cos(&self, row: usize) -> &[f32] {
        &self.cos[row * self.half..(row + 1) * self.half]
    }

    pub fn sin(&self, row: usize) -> &[f32] {
        &self.sin[row * self.half..(row + 1) * self.half]
    }
}

/// Forward rotation: y0 = x0·c − x1·s, y1 = x0·s + x1·c.
pub fn rotate(x: &mut [f32], cos: &[f32], sin: &[f32]) {
    for ((pair, &c), &s) in x.chunks_exact_mut(2).zip(cos).zip(sin) {
        let (x0, x1) = (pair[0], pair[1]);
        pair[0] = x0 * c - x1 * s;
        pair[1] = x0 * s + x1 * c;
    }
}

/// Inverse rotation (attention outputs): y0 = x0·c + x1·s, y1 = x1·c − x0·s.
pub fn rotate_inverse(x: &mut [f32], cos: &[f32], sin: &[f32]) {
    for ((pair, &c), &s) in x.chunks_exact_mut(2).zip(cos).zip(sin) {
        let (x0, x1) = (pair[0], pair[1]);
        pair[0] = x0 * c + x1 * s;
        pair[1] = x1 * c - x0 * s;
    }
}
