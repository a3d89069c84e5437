//! A product as a stage describes it: operand types, B's layout, where its runtime rows
//! come from, and the shapes, leading dimensions and batch strides of A, B and C.

use abi::DType;

use crate::kernel_plan::Value;

/// Operand types: bf16 × bf16 → f32, or int8 × int8 → i32 (exact), or with
/// [`Matmul::c_half`] half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operands {
    Bf16,
    I8,
}

/// The power of two an int8 product of depth `k` is written scaled down by as half
/// ([`Matmul::c_half`]): the least s with 128 · 128 · k · 2^-s ≤ 65504 (half's largest
/// value). A power of two scales exactly, so the one rounding to half (11 bits) is all C
/// loses, and 1 · 2^-s is still a half while s ≤ 24 (k < 2^25).
pub fn deq_shift(k: usize) -> u32 {
    let most = 128 * 128 * k as u64;
    (0..=24)
        .find(|&s| most <= 65504 << s)
        .expect("an int8 product's depth below 2^25")
}

impl Operands {
    pub(super) fn bytes(self) -> usize {
        match self {
            Operands::Bf16 => 2,
            Operands::I8 => 1,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Operands::Bf16 => "bf16",
            Operands::I8 => "i8",
        }
    }
}

/// How B is stored in GM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BLayout {
    /// `[K, N]` row-major: weights stored in × out (wq_a, wkv, wq_b).
    Kn,
    /// `[N, K]` row-major: weights stored out × in (wo_a, wo_b).
    Nk,
}

impl BLayout {
    pub(super) fn name(self) -> &'static str {
        match self {
            BLayout::Kn => "kn",
            BLayout::Nk => "nk",
        }
    }
}

/// Which runtime extent the rows of A and C are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// `TilingData::t`: the rank's tokens.
    Tokens,
    /// `TilingData::group_t`: the tokens of the TP group.
    GroupTokens,
    /// `t · r` (r ≥ 2): r rows per token of the rank, a token-major `[t, r, w]` tensor
    /// read as `[t · r, w]`. r problems that share B become one product whose B is read
    /// once per row range, not once per problem (the index queries' Hadamard product, r
    /// the heads). [`Matmul::max_rows`] is then the token capacity × r.
    TokensTimes(usize),
}

impl Rows {
    /// The kernels' row knobs: M = (GROUP_ROWS ? group_t : t) · ROWS_PER_TOKEN.
    pub(super) fn params(self) -> [(&'static str, Value); 2] {
        let per_token = match self {
            Rows::TokensTimes(r) => r,
            Rows::Tokens | Rows::GroupTokens => 1,
        };
        [
            ("GROUP_ROWS", Value::Bool(self == Rows::GroupTokens)),
            ("ROWS_PER_TOKEN", Value::u32(per_token)),
        ]
    }

    /// The kernel-name suffix (none for the rank's tokens).
    pub(super) fn tag(self) -> String {
        match self {
            Rows::Tokens => String::new(),
            Rows::GroupTokens => "_grouprows".into(),
            Rows::TokensTimes(r) => format!("_tokx{r}"),
        }
    }
}

/// One matmul: `batch` problems C[b] = A[b] · B[b], strides in elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Matmul {
    pub operands: Operands,
    pub b_layout: BLayout,
    pub rows: Rows,
    /// Capacity of the runtime rows (`TokensTimes(r)`: the token capacity × r): the split
    /// is planned for it.
    pub max_rows: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
    pub stride_a: usize,
    pub stride_b: usize,
    pub stride_c: usize,
    /// int8: C written as half, the exact i32 sums · 2^-[`deq_shift`] (Fixpipe DEQF16),
    /// half the bytes of i32, for a consumer that dequantises each element on its own
    /// (11 bits of each: a sum over products that cancel would lose the small result).
    pub c_half: bool,
    /// A arrives from HBM: a collective received it, so no launch left it in L2 (else the
    /// launch that wrote it did; the split planner times A's loads so).
    pub a_from_hbm: bool,
}

impl Matmul {
    /// One dense problem `[M, K] · B → [M, N]` (leading dimensions K, N or K, N).
    pub fn new(
        operands: Operands,
        b_layout: BLayout,
        rows: Rows,
        max_rows: usize,
        n: usize,
        k: usize,
    ) -> Matmul {
        Matmul {
            operands,
            b_layout,
            rows,
            max_rows,
            n,
            k,
            batch: 1,
            lda: k,
            ldb: match b_layout {
                BLayout::Kn => n,
                BLayout::Nk => k,
            },
            ldc: n,
            stride_a: 0,
            stride_b: 0,
            stride_c: 0,
            c_half: false,
            a_from_hbm: false,
        }
    }

    /// C's element type in GM.
    pub fn c_dtype(&self) -> DType {
        match (self.operands, self.c_half) {
            (Operands::Bf16, _) => DType::F32,
            (Operands::I8, false) => DType::I32,
            (Operands::I8, true) => DType::F16,
        }
    }

    pub(super) fn c_bytes(&self) -> usize {
        self.c_dtype().size()
    }

    /// The power of two C is written scaled down by (0: not at all).
    pub fn c_shift(&self) -> u32 {
        if self.c_half { deq_shift(self.k) } else { 0 }
    }
}

/// FLASH's `wo_b` at 512 tokens, TP 1: 8 groups of 512 token rows, `o_acc` per group (the
/// passes' unit tests plan it).
#[cfg(test)]
pub(crate) fn flash_wo_b() -> Matmul {
    let rows = 512;
    Matmul {
        batch: 8,
        ldb: 8192,
        stride_a: rows * 1024,
        stride_b: 1024,
        stride_c: rows * 4096,
        ..Matmul::new(
            Operands::I8,
            BLayout::Nk,
            Rows::GroupTokens,
            rows,
            4096,
            1024,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The least shift that keeps 128 · 128 · K within half's largest value (65504).
    #[test]
    fn deq_shift_is_the_least_that_keeps_c_in_half_range() {
        // K = 1024: 2^24 / 2^8 = 65536 > 65504, / 2^9 fits
        assert_eq!(deq_shift(1024), 9);
        assert_eq!(deq_shift(1536), 9);
        // K = 32: 2^19 / 2^3 = 65536 > 65504
        assert_eq!(deq_shift(32), 4);
        for k in [32, 64, 128, 1024, 1536, 4096, 7168] {
            let (s, most) = (deq_shift(k), 128.0 * 128.0 * k as f64);
            assert!(most / f64::from(1u32 << s) <= 65504.0, "K {k}: in range");
            assert!(most / f64::from(1u32 << (s - 1)) > 65504.0, "K {k}: least");
        }
    }
}
