//! Matrix products for the goldens, through the `gemm` crate.
//!
//! f32 products: bf16 × bf16 products are exact in f32, so only the
//! accumulation order differs from torch (the reference's tolerances allow it).
//!
//! int8 products: the reference accumulates in i32. We multiply the int8 values
//! as f32 instead, which is exact while every partial sum stays an integer of
//! magnitude ≤ 2^24: that holds whenever `k · 128² ≤ 2^24` (k ≤ 1024), whatever
//! the summation order. Longer reductions are cut into such K slices, whose
//! exact integers add in i32 before the one rounding to f32.

use gemm::Parallelism;

/// Whether a product may use every rayon thread or must stay on the caller's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// Big layer-wide products: gemm splits the work over the rayon pool.
    All,
    /// Products inside an already-parallel loop (per token, per request).
    One,
}

impl Threads {
    fn parallelism(self) -> Parallelism {
        match self {
            Threads::All => Parallelism::Rayon(0),
            Threads::One => Parallelism::None,
        }
    }
}

/// A strided matrix view: element (r, c) is `data[r·rs + c·cs]`.
#[derive(Debug, Clone, Copy)]
pub struct Mat<'a, T> {
    pub data: &'a [T],
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

impl<'a, T> Mat<'a, T> {
    /// Row-major `[rows, cols]`.
    pub fn rows(data: &'a [T], rows: usize, cols: usize) -> Self {
        Mat {
            data,
            rows,
            cols,
            rs: cols,
            cs: 1,
        }
    }

    /// The transpose of a row-major `[cols, rows]` matrix, i.e. a `[rows, cols]`
    /// view of weights stored `[out, in]`.
    pub fn transposed(data: &'a [T], rows: usize, cols: usize) -> Self {
        Mat {
            data,
            rows,
            cols,
            rs: 1,
            cs: rows,
        }
    }

    /// Checks that every element lies inside `data` (an internal invariant:
    /// callers pass validated shapes).
    fn check(&self, what: &str) {
        if self.rows == 0 || self.cols == 0 {
            return;
        }
        let last = (self.rows - 1) * self.rs + (self.cols - 1) * self.cs;
        assert!(
            last < self.data.len(),
            "{what}: [{}x{}] view with strides ({}, {}) exceeds {} elements",
            self.rows,
            self.cols,
            self.rs,
            self.cs,
            self.data.len()
        );
    }
}

/// `A · B` in f32, row-major `[a.rows, b.cols]`.
pub fn matmul(a: Mat<f32>, b: Mat<f32>, threads: Threads) -> Vec<f32> {
    assert_eq!(a.cols, b.rows, "matmul: inner dims differ");
    a.check("lhs");
    b.check("rhs");
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let mut dst = vec![0.0f32; m * n];
    if m == 0 || n == 0 || k == 0 {
        return dst;
    }
    // SAFETY: `check` proved every strided lhs/rhs element is in bounds, and
    // dst is a fresh row-major m×n buffer (row stride n, column stride 1).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.data.as_ptr(),
            a.cs as isize,
            a.rs as isize,
            b.data.as_ptr(),
            b.cs as isize,
            b.rs as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            threads.parallelism(),
        );
    }
    dst
}

/// Largest reduction length whose int8 products stay exact in f32.
pub const EXACT_I8_K: usize = (1 << 24) / (128 * 128);

/// Widens int8 values to f32 (exact).
pub fn widen_i8(values: &[i8]) -> Vec<f32> {
    values.iter().map(|&v| f32::from(v)).collect()
}

/// `A · B` of int8 matrices with exact i32 semantics, returned as `f32(i32)`
/// (what the reference does next with the accumulator).
pub fn matmul_i8(a: Mat<i8>, b: Mat<i8>, threads: Threads) -> Vec<f32> {
    let (af, bf) = (widen_i8(a.data), widen_i8(b.data));
    matmul_int(
        Mat {
            data: af.as_slice(),
            rows: a.rows,
            cols: a.cols,
            rs: a.rs,
            cs: a.cs,
        },
        Mat {
            data: bf.as_slice(),
            rows: b.rows,
            cols: b.cols,
            rs: b.rs,
            cs: b.cs,
        },
        threads,
    )
}

/// `A · B` of int8 values already widened to f32 (so a large weight is widened
/// once), with exact i32 semantics and one rounding to f32: the f32 product of
/// K slices of at most `EXACT_I8_K` (each exact), their integers summed in i32.
pub fn matmul_int(a: Mat<f32>, b: Mat<f32>, threads: Threads) -> Vec<f32> {
    if a.cols <= EXACT_I8_K {
        return matmul(a, b, threads);
    }
    assert_eq!(a.cols, b.rows, "matmul_int: inner dims differ");
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let mut acc = vec![0i32; m * n];
    for k0 in (0..k).step_by(EXACT_I8_K) {
        let kk = EXACT_I8_K.min(k - k0);
        let part = matmul(
            Mat {
                data: &a.data[k0 * a.cs..],
                cols: kk,
                ..a
            },
            Mat {
                data: &b.data[k0 * b.rs..],
                rows: kk,
                ..b
            },
            threads,
        );
        for (s, p) in acc.iter_mut().zip(part) {
            *s += p as i32;
        }
    }
    acc.into_iter().map(|v| v as f32).collect()
}
