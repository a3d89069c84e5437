//! The shared cube matmul (`dsv4/matmul.h`; split K: `k_slice_sum.h` after a bf16 one)
//! against `golden::gemm`:
//! - building-block cases rendered through the real kernel template with chosen splits:
//!   both B layouts, bf16 and int8, batches with strides, leading dimensions wider than
//!   the matrices, row ranges, bf16 k slices summed in order (whole rows and row pieces
//!   per copy) or chained on each core (the same C bit for bit), items dealt back and
//!   forth or in runs per block, ragged slices and N
//!   ranges, panels whose last columns stay in L0A (a tail), with and without a tail per
//!   slice; A tiles as deep as the B tile's k or tall ones of part of it; two to four B
//!   tiles in flight and one or two C strips; several rows per
//!   token (M = t × r: whole, k slices summed);
//! - the matmuls the generator plans for the small specs' qkv_proj_rope.
//!
//! Runtime tokens t at capacity and capacity − 8 (M = t, or t × r). A's buffer ends with
//! the last valid row, so reading a row ≥ M traps; C rows ≥ M and C's padding columns must
//! stay poisoned. int8 products are the exact int32 sums (also past 2^24, K = 1536, where
//! f32 accumulation would round) converted as Fixpipe DEQF16 documents it: to f32, times
//! 2^-DEQ_SHIFT, rounded once to half, bit for bit; bf16 ones within f32 accumulation
//! error. Every launch's peak L1/L0 use equals the buffers the
//! planner gives its split (`gemm::buffers`).
//!
//! Both run through the harness runtime on a plan built here ([`products_plan`]): each
//! product's launches (matmul, slice sum) bound to buffers of its own.

mod support;

use std::path::PathBuf;

use abi::plan::{Launch, Step, VariantPlan};
use abi::{AxisBound, DType, Dim, Dir, Placement, TensorDecl, VariantAbi};
use golden::gemm::{Mat, Threads, matmul};
use golden::tensor::{Tensor, TensorMap};
use half::{bf16, f16};
use harness::backend::LaunchCounters;
use harness::backend::sim::Sim;
use harness::backend::{KernelSources, poison};
use harness::runtime::{Runtime, RuntimeOptions, StepKind};
use kernelgen::budget;
use kernelgen::kernel_plan::gemm::{self, BLayout, Deal, Operands, Rows};
use kernelgen::kernel_plan::{Cores, Kernel, Value};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use runner::variant::repo_root;
use support::plan;

/// One building-block case: a product and the split the kernel is told to use.
#[derive(Clone, Copy)]
struct Case {
    name: &'static str,
    int8: bool,
    b_nk: bool,
    /// Rows per token: M = t × per_token (ROWS_PER_TOKEN; 1 for M = t).
    per_token: usize,
    /// Row capacity: the token capacity × per_token.
    max_rows: usize,
    n: usize,
    k: usize,
    batch: usize,
    lda: usize,
    ldb: usize,
    ldc: usize,
    /// Batch strides of A, B, C in elements.
    strides: [usize; 3],
    /// Mmad tile m, n, k.
    tile: [usize; 3],
    /// k of an A tile (the tile's k, or a part of it: the B tile's Mmads in steps).
    a_k: usize,
    /// Rows per range, k per slice, columns per range.
    split: [usize; 3],
    /// Columns at the end of a k slice held in L0A instead of the L1 panel.
    tail: usize,
    /// B tiles in flight in L1, C strips in L0C.
    buffers: [usize; 2],
    /// bf16 k slices chained on each core (the first writes C, the later ones add to it
    /// in order) instead of summed by a launch after.
    chain: bool,
    /// Items dealt back and forth, or in runs of consecutive ones per block with the row
    /// range or the column range innermost.
    deal: Deal,
    /// int8: C written as half · 2^-deq_shift(K) (`Matmul::c_half`) instead of i32.
    c_half: bool,
}

impl Case {
    /// The token capacity.
    fn max_tokens(&self) -> usize {
        self.max_rows / self.per_token
    }

    /// The runtime rows M at `t` tokens.
    fn rows(&self, t: usize) -> usize {
        t * self.per_token
    }

    fn slices(&self) -> usize {
        self.k.div_ceil(self.split[1])
    }

    /// bf16 k slices write partial products apart, summed into C afterwards.
    fn partials(&self) -> bool {
        !self.int8 && !self.chain && self.slices() > 1
    }

    /// bf16 k slices chained on each core.
    fn chained(&self) -> bool {
        self.chain && self.slices() > 1
    }

    /// The partials' extent: [slice][batch][max_rows][n].
    fn parts_len(&self) -> usize {
        self.slices() * self.batch * self.max_rows * self.n
    }

    fn kernel(&self) -> Kernel {
        let u = |v: usize| Value::U32(v as u32);
        // The matmul writes partials densely, or C itself.
        let (ldc, stride_c, slice_stride) = if self.partials() {
            let part = self.max_rows * self.n;
            (self.n, part, self.batch * part)
        } else {
            (self.ldc, self.strides[2], 0)
        };
        // Sized by the planner's rule for this split (the block asserts what it needs).
        let mm = gemm::Matmul {
            operands: if self.int8 {
                Operands::I8
            } else {
                Operands::Bf16
            },
            b_layout: if self.b_nk { BLayout::Nk } else { BLayout::Kn },
            rows: match self.per_token {
                1 => Rows::Tokens,
                r => Rows::TokensTimes(r),
            },
            max_rows: self.max_rows,
            n: self.n,
            k: self.k,
            batch: self.batch,
            lda: self.lda,
            ldb: self.ldb,
            ldc,
            stride_a: self.strides[0],
            stride_b: self.strides[1],
            stride_c,
            c_half: self.c_half,
            // (the kernel is the same either way: only the planner's timing differs)
            a_from_hbm: false,
        };
        let split = gemm::Split {
            tiles: gemm::Tiles {
                m: self.tile[0],
                n: self.tile[1],
                k: self.tile[2],
            },
            range_m: self.split[0],
            slice_k: self.split[1],
            range_n: self.split[2],
            tail_k: self.tail,
            a_k: self.a_k,
            sum: match (self.partials(), self.chained()) {
                (true, _) => gemm::KSum::Partials,
                (_, true) => gemm::KSum::Chained,
                _ => gemm::KSum::Whole,
            },
            b_buffers: self.buffers[0],
            c_buffers: self.buffers[1],
            deal: self.deal,
        };
        Kernel {
            name: format!("test_mm_{}", self.name),
            doc: format!("building-block case {}", self.name),
            block: "matmul.h",
            class: "Matmul",
            cores: Cores::Aic,
            params: vec![
                ("INT8", Value::Bool(self.int8)),
                ("DEQ_SHIFT", u(self.deq_shift() as usize)),
                ("B_NK", Value::Bool(self.b_nk)),
                ("GROUP_ROWS", Value::Bool(false)),
                ("ROWS_PER_TOKEN", u(self.per_token)),
                ("N", u(self.n)),
                ("K", u(self.k)),
                ("BATCH", u(self.batch)),
                ("LDA", u(self.lda)),
                ("LDB", u(self.ldb)),
                ("LDC", u(ldc)),
                ("STRIDE_A", u(self.strides[0])),
                ("STRIDE_B", u(self.strides[1])),
                ("STRIDE_C", u(stride_c)),
                ("TILE_M", u(self.tile[0])),
                ("TILE_N", u(self.tile[1])),
                ("TILE_K", u(self.tile[2])),
                ("A_TILE_K", u(self.a_k)),
                ("RANGE_M", u(self.split[0])),
                ("SLICE_K", u(self.split[1])),
                ("RANGE_N", u(self.split[2])),
                ("TAIL_K", u(self.tail)),
                ("B_L1_BUFFERS", u(self.buffers[0])),
                ("C_STRIP_BUFFERS", u(self.buffers[1])),
                ("CHAIN", Value::Bool(self.chained())),
                ("RUNS", Value::Bool(self.deal != Deal::BackAndForth)),
                (
                    "COLUMNS_INNER",
                    Value::Bool(self.deal == Deal::ColumnsInner),
                ),
                ("SLICE_STRIDE_C", u(slice_stride)),
            ],
            args: vec!["a", "b", "c"],
            buffers: gemm::buffers(&mm, &split),
            parts: Vec::new(),
        }
    }

    /// The power of two a half C is written scaled down by (the planner's, for this K).
    fn deq_shift(&self) -> u32 {
        if self.c_half {
            gemm::deq_shift(self.k)
        } else {
            0
        }
    }

    /// C's parameters for the vector launches around the matmul.
    fn c_params(&self) -> Vec<(&'static str, Value)> {
        let u = |v: usize| Value::U32(v as u32);
        vec![
            ("GROUP_ROWS", Value::Bool(false)),
            ("ROWS_PER_TOKEN", u(self.per_token)),
            ("N", u(self.n)),
            ("LD", u(self.ldc)),
            ("BATCH", u(self.batch)),
            ("STRIDE", u(self.strides[2])),
        ]
    }

    /// Elements per copy of the slice sum: cases with a tail copy 64-column pieces of a
    /// row, the others two rows.
    fn sum_tile(&self) -> usize {
        if self.tail > 0 { 64 } else { 2 * self.n }
    }

    fn sum_kernel(&self) -> Kernel {
        let u = |v: usize| Value::U32(v as u32);
        let mut params = self.c_params();
        params.extend([
            ("SLICES", u(self.slices())),
            ("ROWS", u(self.max_rows)),
            ("TILE", u(self.sum_tile())),
        ]);
        Kernel {
            name: format!("test_sum_{}", self.name),
            doc: format!("slice sum of case {}", self.name),
            block: "k_slice_sum.h",
            class: "KSliceSum",
            cores: Cores::Aiv,
            params,
            args: vec!["parts", "out"],
            buffers: gemm::slice_sum_buffers(self.sum_tile()),
            parts: Vec::new(),
        }
    }
}

const I8_KN_WIDE_LDB: Case = Case {
    name: "i8_kn_wide_ldb",
    int8: true,
    b_nk: false,
    per_token: 1,
    max_rows: 32,
    n: 64,
    k: 128,
    batch: 1,
    lda: 128,
    ldb: 65_600,
    ldc: 64,
    strides: [0, 0, 0],
    tile: [32, 64, 64],
    a_k: 64,
    split: [32, 128, 64],
    tail: 0,
    buffers: [2, 1],
    chain: false,
    deal: Deal::BackAndForth,
    c_half: false,
};

// bf16, B [K, N]: two row ranges, ragged k slices (128, 128, 64) summed in order two
// rows per copy, ragged N ranges (128, 64); four B tiles in flight, two C strips.
const BF16_KN_SPLIT: Case = Case {
    name: "bf16_kn_split",
    int8: false,
    b_nk: false,
    per_token: 1,
    max_rows: 96,
    n: 192,
    k: 320,
    batch: 1,
    lda: 320,
    ldb: 192,
    ldc: 192,
    strides: [0, 0, 0],
    tile: [32, 64, 64],
    a_k: 64,
    split: [64, 128, 128],
    tail: 0,
    buffers: [4, 2],
    chain: false,
    deal: Deal::BackAndForth,
    c_half: false,
};

// int8, B [N, K] inside wider rows, two batches, one k slice: a 128-column panel and
// a 64-column tail (one whole Mmad k step), read by three 16-row Mmad tiles; half C.
const I8_NK_TAIL: Case = Case {
    name: "i8_nk_tail",
    int8: true,
    b_nk: true,
    per_token: 1,
    max_rows: 48,
    n: 64,
    k: 192,
    batch: 2,
    lda: 192,
    ldb: 224,
    ldc: 64,
    strides: [48 * 192, 64 * 224, 48 * 64],
    tile: [16, 32, 64],
    a_k: 64,
    split: [48, 192, 64],
    tail: 64,
    buffers: [2, 1],
    chain: false,
    deal: Deal::BackAndForth,
    c_half: true,
};

// int8, B [K, N], 6 rows per token: M = 6t rows (72 at capacity: ranges of 48 and
// 24; 24 at t = 4); three B tiles in flight, two C strips; half C.
const I8_KN_TOKEN_ROWS: Case = Case {
    name: "i8_kn_token_rows",
    int8: true,
    b_nk: false,
    per_token: 6,
    max_rows: 72,
    n: 64,
    k: 256,
    batch: 1,
    lda: 256,
    ldb: 64,
    ldc: 64,
    strides: [0, 0, 0],
    tile: [32, 64, 64],
    a_k: 64,
    split: [48, 256, 64],
    tail: 0,
    buffers: [3, 2],
    chain: false,
    deal: Deal::BackAndForth,
    c_half: true,
};

const CASES: &[Case] = &[
    BF16_KN_SPLIT,
    // The same with its k slices chained on each core.
    Case {
        name: "bf16_kn_chain",
        chain: true,
        ..BF16_KN_SPLIT
    },
    // The same dealt in runs: 12 items, four per block, the two row ranges of a B slice
    // one after the other; and chained (6 items, two per block).
    Case {
        name: "bf16_kn_split_runs",
        deal: Deal::RowsInner,
        ..BF16_KN_SPLIT
    },
    Case {
        name: "bf16_kn_chain_runs",
        chain: true,
        deal: Deal::RowsInner,
        ..BF16_KN_SPLIT
    },
    // And with the column range innermost: 12 items on 3 blocks, each block two panels
    // and each panel's two column ranges under one copy of it.
    Case {
        name: "bf16_kn_split_cols",
        deal: Deal::ColumnsInner,
        ..BF16_KN_SPLIT
    },
    // bf16, B [N, K] (weights out x in), three batches, A and C inside wider rows.
    Case {
        name: "bf16_nk_batch",
        int8: false,
        b_nk: true,
        per_token: 1,
        max_rows: 48,
        n: 64,
        k: 96,
        batch: 3,
        lda: 128,
        ldb: 96,
        ldc: 80,
        strides: [48 * 128, 64 * 96, 48 * 80],
        tile: [32, 32, 32],
        a_k: 32,
        split: [48, 96, 32],
        tail: 0,
        buffers: [2, 1],
        chain: false,
        deal: Deal::BackAndForth,
        c_half: false,
    },
    // int8, B [K, N] through LoadDataWithTranspose; B is a column block of a wider matrix;
    // C as half.
    Case {
        name: "i8_kn_half",
        int8: true,
        b_nk: false,
        per_token: 1,
        max_rows: 64,
        n: 128,
        k: 256,
        batch: 1,
        lda: 256,
        ldb: 160,
        ldc: 128,
        strides: [0, 0, 0],
        tile: [32, 64, 64],
        a_k: 64,
        split: [64, 256, 64],
        tail: 0,
        buffers: [2, 1],
        chain: false,
        deal: Deal::BackAndForth,
        c_half: true,
    },
    // int8, B [N, K], two batches.
    Case {
        name: "i8_nk_batch",
        int8: true,
        b_nk: true,
        per_token: 1,
        max_rows: 32,
        n: 96,
        k: 192,
        batch: 2,
        lda: 192,
        ldb: 192,
        ldc: 96,
        strides: [32 * 192, 96 * 192, 32 * 96],
        tile: [16, 32, 64],
        a_k: 64,
        split: [32, 192, 96],
        tail: 0,
        buffers: [2, 1],
        chain: false,
        deal: Deal::BackAndForth,
        c_half: false,
    },
    // int8, B [K, N], K = 1536: sums past 2^24 (see `operands`) stay exact in int32 until
    // DEQF16 converts them to f32 and half; a 32-row panel holds all of K.
    Case {
        name: "i8_kn_long_k",
        int8: true,
        b_nk: false,
        per_token: 1,
        max_rows: 32,
        n: 64,
        k: 1536,
        batch: 1,
        lda: 1536,
        ldb: 64,
        ldc: 64,
        strides: [0, 0, 0],
        tile: [32, 64, 64],
        a_k: 64,
        split: [32, 1536, 64],
        tail: 0,
        buffers: [2, 1],
        chain: false,
        deal: Deal::BackAndForth,
        c_half: true,
    },
    // int8 and bf16, B [K, N] a column block of a matrix 65,600 wide (Pro's wq_b is
    // 1536 x 65,536): past the 16-bit ND2NZ stride, B is copied row by row.
    I8_KN_WIDE_LDB,
    Case {
        name: "bf16_kn_wide_ldb",
        int8: false,
        ldb: 65_552,
        ..I8_KN_WIDE_LDB
    },
    // bf16, B [K, N]: k slices of 192 = a 160-column panel (k steps 64, 64, 32) and a
    // 32-column L0A tail; the last slice (128) fits the panel and has no tail. Two row
    // ranges (64, then 32 or 24 rows), ragged N ranges; C inside wider rows.
    Case {
        name: "bf16_kn_tail",
        ldc: 208,
        split: [64, 192, 128],
        tail: 32,
        buffers: [2, 1],
        ..BF16_KN_SPLIT
    },
    // The same in tall A tiles: all 64 rows of a range × one k block (one LoadData call
    // each), four Mmads per 64-k B tile.
    Case {
        name: "bf16_kn_tail_tall",
        ldc: 208,
        tile: [64, 64, 64],
        a_k: 16,
        split: [64, 192, 128],
        tail: 32,
        buffers: [2, 1],
        ..BF16_KN_SPLIT
    },
    I8_NK_TAIL,
    // The same in tall A tiles (48 rows × one 32-k block) against each 64-k B tile.
    Case {
        name: "i8_nk_tail_tall",
        tile: [48, 32, 64],
        a_k: 32,
        ..I8_NK_TAIL
    },
    // int8, B [K, N] (transposed squares): one slice of 320 = a 256-column panel and a
    // 64-column tail.
    Case {
        name: "i8_kn_tail",
        int8: true,
        b_nk: false,
        per_token: 1,
        max_rows: 64,
        n: 128,
        k: 320,
        batch: 1,
        lda: 320,
        ldb: 160,
        ldc: 128,
        strides: [0, 0, 0],
        tile: [32, 64, 64],
        a_k: 64,
        split: [32, 320, 64],
        tail: 64,
        buffers: [2, 1],
        chain: false,
        deal: Deal::BackAndForth,
        c_half: false,
    },
    // bf16, B [K, N] shared by 5 rows per token (the index queries' Hadamard product: a
    // [t, heads, head_dim] operand read as [t · heads, head_dim]): M = 5t, two row
    // ranges at capacity (64, 16), one of 40 rows (not whole fractals) at t = 8.
    Case {
        name: "bf16_kn_token_rows",
        int8: false,
        b_nk: false,
        per_token: 5,
        max_rows: 80,
        n: 64,
        k: 64,
        batch: 1,
        lda: 64,
        ldb: 64,
        ldc: 64,
        strides: [0, 0, 0],
        tile: [32, 64, 64],
        a_k: 64,
        split: [64, 64, 64],
        tail: 0,
        buffers: [2, 1],
        chain: false,
        deal: Deal::BackAndForth,
        c_half: false,
    },
    // bf16, B [N, K], 3 rows per token: two k slices whose partials the slice sum adds
    // over M = 3t rows (48 at capacity, 24 at t = 8).
    Case {
        name: "bf16_nk_token_rows_split",
        int8: false,
        b_nk: true,
        per_token: 3,
        max_rows: 48,
        n: 32,
        k: 128,
        batch: 1,
        lda: 128,
        ldb: 128,
        ldc: 32,
        strides: [0, 0, 0],
        tile: [16, 32, 64],
        a_k: 64,
        split: [48, 64, 32],
        tail: 0,
        buffers: [2, 1],
        chain: false,
        deal: Deal::BackAndForth,
        c_half: false,
    },
    I8_KN_TOKEN_ROWS,
    // The same dealt in runs: a block's run takes a column range's row ranges in turn.
    Case {
        name: "i8_kn_token_rows_runs",
        deal: Deal::RowsInner,
        ..I8_KN_TOKEN_ROWS
    },
    // The same in two 32-column ranges, the column range innermost: 4 items on 3 blocks
    // (2 at t = 4), so one panel's ranges go to two blocks and another's to one.
    Case {
        name: "i8_kn_token_rows_cols",
        tile: [32, 32, 64],
        split: [48, 256, 32],
        deal: Deal::ColumnsInner,
        ..I8_KN_TOKEN_ROWS
    },
];

/// Renders `kernels` through the real kernel template into a directory of their own, to
/// be built with the building blocks in `generated/ascendc/include`; returns where they are
/// and their entries for a plan.
fn render(kernels: Vec<Kernel>) -> (KernelSources, Vec<abi::plan::Kernel>) {
    let entries = kernels
        .iter()
        .map(|k| abi::plan::Kernel {
            name: k.name.clone().leak(),
            cores: k.cores,
            args: k.args.clone().leak(),
        })
        .collect();
    let mut v = support::planned("swa_mini_tp1").clone();
    v.kernels.kernels = kernels;
    v.kernels.steps = Vec::new();
    let files = kernelgen::render::render(&[v], &[]).expect("kernels render");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stage_gemm");
    std::fs::create_dir_all(&dir).unwrap();
    for f in files {
        if let Some(name) = f.path.strip_prefix("generated/ascendc/kernels/") {
            std::fs::write(dir.join(name), f.content).unwrap();
        }
    }
    let sources = KernelSources {
        kernels_dirs: vec![dir],
        include_dir: repo_root().join("generated/ascendc/include"),
    };
    (sources, entries)
}

/// A's, B's and C's element counts: A ends with the last valid row of the last batch.
fn extents(c: &Case, rows: usize) -> [usize; 3] {
    let b_rows = if c.b_nk { c.n } else { c.k };
    let b_cols = if c.b_nk { c.k } else { c.n };
    [
        (c.batch - 1) * c.strides[0] + (rows - 1) * c.lda + c.k,
        (c.batch - 1) * c.strides[1] + (b_rows - 1) * c.ldb + b_cols,
        (c.batch - 1) * c.strides[2] + c.max_rows * c.ldc,
    ]
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Random A and B of a case as f32 values (int8 integers, or bf16-representable).
fn operands(c: &Case, rows: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let [na, nb, _] = extents(c, rows);
    let mut r = rng(seed);
    let mut draw = |n: usize| -> Vec<f32> {
        (0..n)
            .map(|_| {
                if c.int8 {
                    f32::from(r.random_range(-127i8..=127))
                } else {
                    bf16::from_f32(r.random_range(-1.0f32..1.0)).to_f32()
                }
            })
            .collect()
    };
    let (mut a, mut b) = (draw(na), draw(nb));
    if c.int8 && c.k * 127 * 127 >= 1 << 24 {
        // Row 0 of A against columns 0 and 1 of B at the int8 extreme: sums past 2^24, the
        // one at column 1 odd, which only exact int32 accumulation gets right.
        let (rs, cs) = if c.b_nk { (1, c.ldb) } else { (c.ldb, 1) };
        for kk in 0..c.k {
            a[kk] = 127.0;
            b[kk * rs] = 127.0;
            b[kk * rs + cs] = if kk == 0 { 126.0 } else { 127.0 };
        }
    }
    (a, b)
}

/// A GM operand of the case's input type.
fn input(c: &Case, values: &[f32]) -> Tensor {
    if c.int8 {
        Tensor::from_vec(
            vec![values.len()],
            values.iter().map(|&v| v as i8).collect(),
        )
        .unwrap()
    } else {
        Tensor::from_vec(
            vec![values.len()],
            values.iter().map(|&v| bf16::from_f32(v)).collect(),
        )
        .unwrap()
    }
}

/// The expected C of batch `bi`: `[rows, n]` f32 or exact i32, or the half DEQF16 writes.
fn reference(c: &Case, a: &[f32], b: &[f32], bi: usize, rows: usize) -> Vec<f64> {
    let (a, b) = (&a[bi * c.strides[0]..], &b[bi * c.strides[1]..]);
    let (rs, cs) = if c.b_nk { (1, c.ldb) } else { (c.ldb, 1) };
    if c.int8 {
        // Exact int32 sums (int8 products reach past 2^24 for long K: f32 accumulation
        // would round), or DEQF16's: to f32, times the scale, rounded once to half.
        let scale = 1.0 / (1u32 << c.deq_shift()) as f32;
        let mut out = vec![0.0; rows * c.n];
        for r in 0..rows {
            for col in 0..c.n {
                let sum: i64 = (0..c.k)
                    .map(|kk| a[r * c.lda + kk] as i64 * b[kk * rs + col * cs] as i64)
                    .sum();
                let sum = i32::try_from(sum).expect("an int32 sum");
                out[r * c.n + col] = match c.c_half {
                    true => f64::from(f16::from_f32(sum as f32 * scale)),
                    false => f64::from(sum),
                };
            }
        }
        return out;
    }
    let am = Mat {
        data: a,
        rows,
        cols: c.k,
        rs: c.lda,
        cs: 1,
    };
    let bm = Mat {
        data: b,
        rows: c.k,
        cols: c.n,
        rs,
        cs,
    };
    matmul(am, bm, Threads::One)
        .into_iter()
        .map(f64::from)
        .collect()
}

/// Checks C: valid rows against `want` (per batch), everything else still poisoned.
fn check_c(what: &str, c: &Case, got: &Tensor, want: &[Vec<f64>], rows: usize) {
    // the elements' bits: half, i32 or f32
    let size = got.dtype().size();
    let bits: Vec<u32> = got
        .as_le_bytes()
        .chunks_exact(size)
        .map(|b| b.iter().rev().fold(0, |v, &byte| v << 8 | u32::from(byte)))
        .collect();
    let poisoned = (0..size).fold(0u32, |v, _| v << 8 | u32::from(poison(got.dtype())));
    for bi in 0..c.batch {
        for r in 0..c.max_rows {
            for col in 0..c.ldc {
                let v = bits[bi * c.strides[2] + r * c.ldc + col];
                if r < rows && col < c.n {
                    let w = want[bi][r * c.n + col];
                    let (g, tol) = if c.c_half {
                        (f64::from(f16::from_bits(v as u16)), 0.0)
                    } else if c.int8 {
                        (f64::from(v as i32), 0.0)
                    } else {
                        // f32 accumulation of k products of magnitude < 1
                        (f64::from(f32::from_bits(v)), 1e-5 * c.k as f64)
                    };
                    assert!(
                        (g - w).abs() <= tol,
                        "{what}: c[{bi}][{r}][{col}] = {g}, want {w}"
                    );
                } else {
                    assert_eq!(
                        v, poisoned,
                        "{what}: c[{bi}][{r}][{col}] outside the product was written"
                    );
                }
            }
        }
    }
}

/// A product's launches: (kernel, blocks) of the matmul and the slice sum after it.
struct Launches {
    matmul: (&'static str, u32),
    sum: Option<(&'static str, u32)>,
}

/// A product and its launches; the case's name is its stage's.
struct Product {
    case: Case,
    launches: Launches,
}

/// A plan of `products` over `kernels` (from swa_mini_tp1's constants): each product a
/// stage of its own whose launches bind buffers of its own, `<stage>.a`, `.b`, `.c` and
/// (with a slice sum) `.parts`. A's length is a runtime axis, so the test gives A ending
/// with its last valid row; C and the partials are workspaces the runtime poisons, so a
/// slice that writes no partial fails.
fn products_plan(products: &[Product], kernels: Vec<abi::plan::Kernel>) -> &'static VariantPlan {
    let (mut axes, mut workspaces, mut steps) = (Vec::new(), Vec::new(), Vec::new());
    for p in products {
        let (c, l) = (&p.case, &p.launches);
        let buffer = |what: &str| -> &'static str { format!("{}.{what}", c.name).leak() };
        let (a, b, out, parts) = (buffer("a"), buffer("b"), buffer("c"), buffer("parts"));
        let [na, nb, nc] = extents(c, c.max_rows);
        let (input, output) = if c.int8 {
            (DType::I8, if c.c_half { DType::F16 } else { DType::I32 })
        } else {
            (DType::Bf16, DType::F32)
        };
        let decl = |name: &'static str, dim: Dim, dtype: DType| TensorDecl {
            name,
            shape: vec![dim].leak(),
            dtype,
            dir: Dir::Out,
            placement: Placement::PerRank,
        };
        axes.push(AxisBound { name: a, max: na });
        workspaces.extend([
            decl(a, Dim::Var(a), input),
            decl(b, Dim::Const(nb), input),
            decl(out, Dim::Const(nc), output),
        ]);
        let launch = |(kernel, block_dim): (&'static str, u32), args: Vec<&'static str>| {
            let k = kernels
                .iter()
                .find(|k| k.name == kernel)
                .expect("a kernel of the plan");
            Step::Launch(Launch {
                stage: c.name,
                kernel,
                cores: k.cores,
                block_dim,
                args: args.leak(),
                also: &[],
            })
        };
        let target = match l.sum {
            Some(_) => {
                workspaces.push(decl(parts, Dim::Const(c.parts_len()), DType::F32));
                parts
            }
            None => out,
        };
        steps.push(launch(l.matmul, vec![a, b, target]));
        if let Some(sum) = l.sum {
            steps.push(launch(sum, vec![parts, out]));
        }
    }
    let base = support::host("swa_mini_tp1");
    Box::leak(Box::new(VariantPlan {
        abi: VariantAbi {
            name: "stage_gemm",
            tensors: &[],
            axes: axes.leak(),
            ..base.abi
        },
        kernels: kernels.leak(),
        steps: steps.leak(),
        workspaces: workspaces.leak(),
        missing: &[],
        ..*base
    }))
}

/// The runtime of `stages` of `plan` on the sim.
fn prepare(plan: &'static VariantPlan, sources: &KernelSources, stages: &[&str]) -> Runtime {
    Runtime::prepare_stages(
        plan,
        &Sim::default(),
        sources,
        stages,
        RuntimeOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `products` (the stages `rt` was prepared with) at `t` tokens (t = group_t), each
/// with its operands `(A, B)`: each product's C and its matmul's counters.
fn run(
    rt: &Runtime,
    products: &[Product],
    t: usize,
    operands: &[(Vec<f32>, Vec<f32>)],
) -> Vec<(Tensor, LaunchCounters)> {
    let mut given = TensorMap::new();
    for (p, (af, bf)) in products.iter().zip(operands) {
        given.insert(format!("{}.a", p.case.name), input(&p.case, af));
        given.insert(format!("{}.b", p.case.name), input(&p.case, bf));
    }
    let tiling = support::tiling(&[("t", t), ("group_t", t)]);
    let out = rt
        .run_stages(&given, &tiling)
        .unwrap_or_else(|e| panic!("{e}"));
    products
        .iter()
        .map(|p| {
            let stats = out
                .steps
                .iter()
                .find_map(|s| match &s.kind {
                    StepKind::Launch {
                        kernel, counters, ..
                    } if s.stage == p.case.name && *kernel == p.launches.matmul.0 => {
                        counters.clone()
                    }
                    _ => None,
                })
                .expect("the sim counts the matmul");
            let c = out.tensors.get(&format!("{}.c", p.case.name)).unwrap();
            (c.clone(), stats)
        })
        .collect()
}

/// `cases` rendered with their launches (matmul, slice sum) on 3 blocks each.
fn launched(cases: &[Case]) -> (KernelSources, &'static VariantPlan, Vec<Product>) {
    launched_as(cases, Case::kernel)
}

/// `cases` rendered with their matmuls as `matmul` makes them.
fn launched_as(
    cases: &[Case],
    matmul: fn(&Case) -> Kernel,
) -> (KernelSources, &'static VariantPlan, Vec<Product>) {
    let mut kernels = Vec::new();
    for c in cases {
        kernels.push(matmul(c));
        if c.partials() {
            kernels.push(c.sum_kernel());
        }
    }
    let (sources, kernels) = render(kernels);
    let name = |k: Kernel| -> &'static str { k.name.leak() };
    let products: Vec<Product> = cases
        .iter()
        .map(|c| Product {
            case: *c,
            launches: Launches {
                matmul: (name(matmul(c)), 3),
                sum: c.partials().then(|| (name(c.sum_kernel()), 3)),
            },
        })
        .collect();
    let plan = products_plan(&products, kernels);
    (sources, plan, products)
}

#[test]
fn building_block_cases_match_the_reference() {
    assert!(
        [Case::partials, Case::chained]
            .iter()
            .all(|kind| CASES.iter().any(kind))
    );
    assert!(
        [Case::partials, |c: &Case| c.slices() == 1]
            .iter()
            .all(|kind| CASES.iter().any(|c| c.per_token > 1 && kind(c))),
        "rows per token with each way of making C"
    );
    assert!(
        CASES.iter().all(|c| !c.int8 || c.slices() == 1),
        "an int8 product is one k slice"
    );
    assert!(
        [true, false]
            .iter()
            .all(|&h| CASES.iter().any(|c| c.int8 && c.c_half == h)),
        "int8 products with C as i32 and as half"
    );
    assert!(
        [true, false]
            .iter()
            .all(|&i| CASES.iter().any(|c| c.int8 == i && c.a_k < c.tile[2])),
        "tall A tiles of bf16 and int8"
    );
    let (sources, gemm_plan, products) = launched(CASES);
    for (ci, p) in products.iter().enumerate() {
        let c = &p.case;
        let rt = prepare(gemm_plan, &sources, &[c.name]);
        for t in [c.max_tokens(), c.max_tokens() - 8] {
            let rows = c.rows(t);
            let (af, bf) = operands(c, rows, 300 + ci as u64);
            let want: Vec<Vec<f64>> = (0..c.batch)
                .map(|bi| reference(c, &af, &bf, bi, rows))
                .collect();
            let [(out, counters)] = &run(&rt, std::slice::from_ref(p), t, &[(af, bf)])[..] else {
                unreachable!("one product")
            };
            let stats = &counters.stats;
            check_c(c.name, c, out, &want, rows);
            assert_eq!(
                stats.macs(),
                (c.batch * rows * c.n * c.k) as u64,
                "{}: MACs",
                c.name
            );
            // matmul.h allocates exactly the buffers the planner's rule gives this split.
            let chip = support::plan("swa_mini_tp1").chip;
            for (mem, peak) in support::peaks(stats) {
                let budget = budget::bytes_in(&c.kernel().buffers, mem, chip) as u64;
                assert_eq!(peak, budget, "{}: peak {mem}", c.name);
            }
        }
    }
}

/// The building-block cases whose items each hold one panel's columns (all but those with
/// the column ranges innermost), each as one mixed launch whose vector cores read the
/// product's B into L2 ahead of the cube (`dsv4/matmul_prefetch.h`, the fusion pass's
/// `gemm::prefetch`): the same C, the same MACs.
#[test]
fn building_block_cases_with_b_read_ahead_match_the_reference() {
    let cases: Vec<Case> = (CASES.iter())
        .filter(|c| c.deal != Deal::ColumnsInner)
        .copied()
        .collect();
    assert!(
        [Deal::BackAndForth, Deal::RowsInner]
            .iter()
            .all(|d| cases.iter().any(|c| c.deal == *d && c.slices() > 1))
            && cases.iter().any(|c| c.int8 && !c.b_nk),
        "both deals over k slices, and int8 B stored [K, N]"
    );
    let (sources, gemm_plan, products) = launched_as(&cases, |c| gemm::prefetched(&c.kernel()));
    for (ci, p) in products.iter().enumerate() {
        let c = &p.case;
        let rt = prepare(gemm_plan, &sources, &[c.name]);
        let t = c.max_tokens() - 8;
        let rows = c.rows(t);
        let (af, bf) = operands(c, rows, 700 + ci as u64);
        let want: Vec<Vec<f64>> = (0..c.batch)
            .map(|bi| reference(c, &af, &bf, bi, rows))
            .collect();
        let [(out, counters)] = &run(&rt, std::slice::from_ref(p), t, &[(af, bf)])[..] else {
            unreachable!("one product")
        };
        check_c(c.name, c, out, &want, rows);
        assert_eq!(
            counters.stats.macs(),
            (c.batch * rows * c.n * c.k) as u64,
            "{}: MACs",
            c.name
        );
        let size = if c.int8 { 1 } else { 2 };
        let [_, b_elems, _] = extents(c, rows);
        check_read_ahead(
            c.name,
            counters,
            c.batch * rows * c.k * size,
            b_elems * size,
        );
    }
}

/// B reached the cube of a launch with its B read ahead from L2 only: its cube cores read
/// from HBM no more than A's `a_bytes` (their HBM bytes count C's writes too, all theirs),
/// its vector cores some of B's `b_bytes` and no more.
fn check_read_ahead(what: &str, counters: &LaunchCounters, a_bytes: usize, b_bytes: usize) {
    let time = counters.time.as_ref().expect("the timeline runs");
    let hbm = |aic: bool| -> u64 {
        (time.cores.iter().filter(|k| k.aic == aic))
            .map(|k| k.hbm_bytes)
            .sum()
    };
    let cube_reads = hbm(true) - counters.stats.gm_write_bytes;
    assert!(
        cube_reads <= a_bytes as u64,
        "{what}: the cube read {cube_reads} B from HBM, A is {a_bytes} B"
    );
    assert!(
        (1..=b_bytes as u64).contains(&hbm(false)),
        "{what}: the vector cores read {} B from HBM, B is {b_bytes} B",
        hbm(false)
    );
}

/// k slices chained on one core add in slice order, as `k_slice_sum.h` does: the same
/// operands give the same C, bit for bit, either way.
#[test]
fn chained_k_slices_equal_the_slice_sum_bit_for_bit() {
    let chained = Case {
        name: "bf16_kn_chain",
        chain: true,
        ..BF16_KN_SPLIT
    };
    let cases = [BF16_KN_SPLIT, chained];
    let (sources, plan, products) = launched(&cases);
    let rt = prepare(plan, &sources, &[cases[0].name, cases[1].name]);
    let t = BF16_KN_SPLIT.max_tokens();
    let operands = operands(&BF16_KN_SPLIT, t, 501);
    let outs = run(&rt, &products, t, &[operands.clone(), operands]);
    let rows = BF16_KN_SPLIT.rows(t) * BF16_KN_SPLIT.ldc * 4;
    assert_eq!(
        outs[0].0.as_le_bytes()[..rows],
        outs[1].0.as_le_bytes()[..rows],
        "chained C differs from the slice sum's"
    );
}

/// The qkv_proj_rope matmuls of the small specs, as the generated plan launches them:
/// random operands, launched with their slice sums, against the reference at
/// capacity and capacity − 8.
#[test]
fn planned_qkv_matmuls_match_the_reference() {
    for variant in ["swa_mini_tp1", "swa_small_tp2", "hca_ref_tp1"] {
        let p = plan(variant);
        let planned = support::planned(variant);
        let host = support::host(variant);
        let launches: Vec<&Launch> = host
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Launch(l) if l.stage == "qkv_proj_rope" => Some(l),
                _ => None,
            })
            .collect();
        let kernel = |name: &str| {
            planned
                .kernels
                .kernels
                .iter()
                .find(|k| k.name == name)
                .unwrap()
        };
        let param = |k: &Kernel, name: &str| match k.params.iter().find(|(n, _)| *n == name) {
            Some((_, Value::U32(v))) => *v as usize,
            Some((_, Value::Bool(v))) => usize::from(*v),
            _ => panic!("{}: no param {name}", k.name),
        };
        let neighbour = |i: Option<usize>, class: &str| {
            i.and_then(|i| launches.get(i))
                .filter(|l| kernel(l.kernel).class == class)
                .map(|l| (l.kernel, l.block_dim))
        };
        let cap = p.shape.local_t;
        let mut products = Vec::new();
        // products the planner fused run as parts of a group launch: those are checked
        // against the golden by stage_qkv_proj_rope and against the unfused plan's bits by
        // the layer tests; here they are only counted
        let (mut grouped, mut grouped_split_k) = (0, 0);
        // the compressor's two projections read x_normed too: a group may take them
        let mut compressor = 0;
        for (i, l) in launches.iter().enumerate() {
            let k = kernel(l.kernel);
            // a product read ahead launches as a group of it and the reader (gemm::prefetch)
            let k = match k.parts.as_slice() {
                [product, reader] if reader.class == "BReader" => product,
                _ => k,
            };
            if k.class == "MatmulGroup" {
                // its products (not the part reading their B ahead: gemm::prefetch)
                let products = || k.parts.iter().filter(|p| p.class == "Matmul");
                grouped += products().count();
                grouped_split_k += products()
                    .filter(|p| param(p, "SLICE_K") < param(p, "K"))
                    .count();
                if l.also.contains(&"compressor") {
                    compressor = 2;
                }
                continue;
            }
            if k.class != "Matmul" {
                continue;
            }
            let name = l.kernel;
            let launches = Launches {
                matmul: (name, l.block_dim),
                sum: neighbour(Some(i + 1), "KSliceSum"),
            };
            let split_k = param(k, "SLICE_K") < param(k, "K");
            assert!(
                !(split_k && param(k, "INT8") == 1),
                "{name}: an int8 product is one k slice"
            );
            assert_eq!(
                launches.sum.is_some(),
                split_k && param(k, "INT8") == 0 && param(k, "CHAIN") == 0,
                "{name}: slice sum iff bf16 split K not chained"
            );
            // C's own layout comes from the slice sum when there is one.
            let (ldc, stride_c) = match launches.sum {
                Some((sum, _)) => (param(kernel(sum), "LD"), param(kernel(sum), "STRIDE")),
                None => (param(k, "LDC"), param(k, "STRIDE_C")),
            };
            let per_token = param(k, "ROWS_PER_TOKEN");
            let case = Case {
                name: format!("product{}", products.len()).leak(),
                int8: param(k, "INT8") == 1,
                b_nk: param(k, "B_NK") == 1,
                per_token,
                max_rows: cap * per_token,
                n: param(k, "N"),
                k: param(k, "K"),
                batch: param(k, "BATCH"),
                lda: param(k, "LDA"),
                ldb: param(k, "LDB"),
                ldc,
                strides: [param(k, "STRIDE_A"), param(k, "STRIDE_B"), stride_c],
                tile: [param(k, "TILE_M"), param(k, "TILE_N"), param(k, "TILE_K")],
                a_k: param(k, "A_TILE_K"),
                split: [
                    param(k, "RANGE_M"),
                    param(k, "SLICE_K"),
                    param(k, "RANGE_N"),
                ],
                tail: param(k, "TAIL_K"),
                buffers: [param(k, "B_L1_BUFFERS"), param(k, "C_STRIP_BUFFERS")],
                chain: param(k, "CHAIN") == 1,
                deal: match (param(k, "RUNS"), param(k, "COLUMNS_INNER")) {
                    (0, _) => Deal::BackAndForth,
                    (_, 0) => Deal::RowsInner,
                    _ => Deal::ColumnsInner,
                },
                c_half: param(k, "DEQ_SHIFT") > 0,
            };
            products.push(Product { case, launches });
        }
        assert_eq!(
            products.len() + grouped,
            3 + compressor,
            "{variant}: wq_a, wq_b and wkv are cube matmuls"
        );
        if variant == "hca_ref_tp1" {
            assert!(
                products.iter().any(|p| p.launches.sum.is_some()) || grouped_split_k > 0,
                "{variant}: a bf16 product splits K"
            );
        }
        let kernels = host.kernels.to_vec();
        let plan = products_plan(&products, kernels);
        let stages: Vec<&str> = products.iter().map(|p| p.case.name).collect();
        let rt = prepare(plan, &KernelSources::in_repo(&repo_root()), &stages);
        for t in [cap, cap - 8] {
            let operands: Vec<(Vec<f32>, Vec<f32>)> = products
                .iter()
                .enumerate()
                .map(|(i, p)| operands(&p.case, p.case.rows(t), 401 + i as u64))
                .collect();
            let results = run(&rt, &products, t, &operands);
            for ((product, (af, bf)), (out, counters)) in
                products.iter().zip(&operands).zip(&results)
            {
                let stats = &counters.stats;
                let (c, name) = (&product.case, product.launches.matmul.0);
                let rows = c.rows(t);
                let want = vec![reference(c, af, bf, 0, rows)];
                check_c(name, c, out, &want, rows);
                support::check_peaks(variant, &[(name.to_string(), *stats)]);
                println!(
                    "{variant} {name} rows {rows}: GM {} B moved / {} B minimum = {:.3}",
                    stats.gm_bytes(),
                    stats.gm_min_bytes(),
                    stats.gm_bytes() as f64 / stats.gm_min_bytes() as f64
                );
            }
        }
    }
}

/// Two products of one A as one `matmul_group.h` launch whose parts deal their items in
/// runs (consecutive items per block; 12 + 6 items on 3 blocks), each part's row ranges
/// innermost: each part's C against the reference, the split-K part's slice sum after the
/// group, at capacity and capacity − 8.
#[test]
fn a_group_dealt_in_runs_matches_the_reference() {
    let parts = [
        // two row ranges × three k slices apart × two N ranges
        Case {
            name: "group_runs0",
            deal: Deal::RowsInner,
            ..BF16_KN_SPLIT
        },
        // three row ranges × one slice × two N ranges, of the same A
        Case {
            name: "group_runs1",
            n: 64,
            ldb: 64,
            ldc: 64,
            tile: [32, 32, 64],
            split: [32, 320, 32],
            buffers: [2, 1],
            deal: Deal::RowsInner,
            ..BF16_KN_SPLIT
        },
    ];
    assert!(parts[0].partials() && !parts[1].partials());
    group_dealt_in_runs(parts, 3, false);
    // the same with the vector cores reading both parts' B ahead of the cube (one reader
    // over the parts in turn: `BReader` in dsv4/matmul_prefetch.h)
    group_dealt_in_runs(parts, 3, true);
}

/// Two products of one A sharing its panels (each part's column ranges innermost, one A
/// split): the group's items (k slice, row range, part, column range), 3 × 2 panels of
/// 2 + 2 items on 5 blocks, so runs of 4 and 5 items split panels between blocks, some
/// blocks holding one part of a panel only; a part of B [N, K] beside one of B [K, N], its
/// last column range narrower than a tile, both k slices apart and summed after.
#[test]
fn a_group_sharing_its_a_panels_matches_the_reference() {
    let parts = [
        Case {
            name: "group_cols0",
            deal: Deal::ColumnsInner,
            ..BF16_KN_SPLIT
        },
        Case {
            name: "group_cols1",
            b_nk: true,
            n: 96,
            ldb: 320,
            ldc: 96,
            split: [64, 128, 64],
            deal: Deal::ColumnsInner,
            ..BF16_KN_SPLIT
        },
    ];
    assert!(parts.iter().all(Case::partials));
    group_dealt_in_runs(parts, 5, false);
}

/// `parts` as one group launch on `blocks` blocks, with `ahead` their B read ahead by the
/// vector cores (`gemm::prefetched`), against the reference.
fn group_dealt_in_runs(parts: [Case; 2], blocks: u32, ahead: bool) {
    let names = parts.map(|c| c.name);
    let group = Kernel {
        name: format!("test_mm_{}", names[0]),
        doc: "two matmuls of one A dealt in runs".into(),
        block: "matmul_group.h",
        class: "MatmulGroup",
        cores: Cores::Aic,
        params: Vec::new(),
        args: vec!["a", "b0", "c0", "b1", "c1"],
        buffers: Vec::new(),
        parts: parts.iter().map(Case::kernel).collect(),
    };
    let group = if ahead {
        gemm::prefetched(&group)
    } else {
        group
    };
    let (group_name, group_cores) = (group.name.clone().leak() as &'static str, group.cores);
    let sums = parts.iter().filter(|c| c.partials()).map(Case::sum_kernel);
    let (sources, kernels) = render(std::iter::once(group).chain(sums).collect());
    let products: Vec<Product> = parts
        .iter()
        .map(|c| Product {
            case: *c,
            launches: Launches {
                matmul: (group_name, blocks),
                sum: c
                    .partials()
                    .then(|| (c.sum_kernel().name.leak() as &'static str, blocks)),
            },
        })
        .collect();
    // the products' buffers, then one stage: the group launch and the slice sums
    let base = products_plan(&products, kernels);
    let stage = parts[0].name;
    let launch = |kernel: &'static str, cores: Cores, args: Vec<String>| {
        Step::Launch(Launch {
            stage,
            kernel,
            cores,
            block_dim: blocks,
            args: args
                .into_iter()
                .map(|a| a.leak() as &'static str)
                .collect::<Vec<_>>()
                .leak(),
            also: &[],
        })
    };
    let arg = |c: &Case, what: &str| format!("{}.{what}", c.name);
    let target = |c: &Case| arg(c, if c.partials() { "parts" } else { "c" });
    let mut args = vec![arg(&parts[0], "a")];
    for c in &parts {
        args.extend([arg(c, "b"), target(c)]);
    }
    let mut steps = vec![launch(group_name, group_cores, args)];
    for p in &products {
        if let Some((sum, _)) = p.launches.sum {
            steps.push(launch(
                sum,
                Cores::Aiv,
                vec![arg(&p.case, "parts"), arg(&p.case, "c")],
            ));
        }
    }
    let plan: &'static VariantPlan = Box::leak(Box::new(VariantPlan {
        steps: steps.leak(),
        ..*base
    }));
    let rt = prepare(plan, &sources, &[stage]);
    let c0 = &parts[0];
    for t in [c0.max_tokens(), c0.max_tokens() - 8] {
        let rows = c0.rows(t);
        let (a, b0) = operands(c0, rows, 601);
        let (_, b1) = operands(&parts[1], rows, 602);
        let mut given = TensorMap::new();
        given.insert(format!("{}.a", names[0]), input(c0, &a));
        for (c, b) in parts.iter().zip([&b0, &b1]) {
            given.insert(format!("{}.b", c.name), input(c, b));
        }
        let tiling = support::tiling(&[("t", t), ("group_t", t)]);
        let out = rt
            .run_stages(&given, &tiling)
            .unwrap_or_else(|e| panic!("{e}"));
        for (c, b) in parts.iter().zip([&b0, &b1]) {
            let got = out.tensors.get(&format!("{}.c", c.name)).unwrap();
            check_c(c.name, c, got, &[reference(c, &a, b, 0, rows)], rows);
        }
        if ahead {
            let counters = (out.steps.iter())
                .find_map(|s| match &s.kind {
                    StepKind::Launch {
                        kernel, counters, ..
                    } if *kernel == group_name => counters.clone(),
                    _ => None,
                })
                .expect("the sim counts the group");
            let size = 2; // bf16 parts
            let b_bytes: usize = parts.iter().map(|c| extents(c, rows)[1] * size).sum();
            check_read_ahead(group_name, &counters, rows * c0.k * size, b_bytes);
        }
    }
}
