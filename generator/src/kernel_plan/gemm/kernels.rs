//! The kernels a product launches, specialised on its shapes and split: the matmul and
//! the slice sum of bf16 partials; and the on-chip buffers each receives.

use abi::DType;

use super::matmul::{BLayout, Matmul, Operands};
use super::prefetch;
use super::share::{self, VectorShare};
use super::split::{Deal, KSum, Split};
use crate::budget::{self, Buffer, row};
use crate::chip::Mem;
use crate::kernel_plan::{Cores, Kernel, Value};

pub(crate) fn kernel(mm: &Matmul, split: &Split) -> Kernel {
    let t = &split.tiles;
    let u = Value::u32;
    let layout = mm.b_layout.name();
    let mut name = format!(
        "matmul_{}_{layout}_n{}_k{}{}",
        mm.operands.name(),
        mm.n,
        mm.k,
        mm.rows.tag()
    );
    if mm.c_half {
        name.push_str("_half");
    }
    let default_ldb = match mm.b_layout {
        BLayout::Kn => mm.n,
        BLayout::Nk => mm.k,
    };
    for (tag, v, default) in [
        ("lda", mm.lda, mm.k),
        ("ldb", mm.ldb, default_ldb),
        ("ldc", mm.ldc, mm.n),
    ] {
        if v != default {
            name.push_str(&format!("_{tag}{v}"));
        }
    }
    if mm.batch > 1 {
        name.push_str(&format!(
            "_b{}_sa{}_sb{}_sc{}",
            mm.batch, mm.stride_a, mm.stride_b, mm.stride_c
        ));
    }
    name.push_str(&format!(
        "_tile{}x{}x{}_split{}x{}x{}",
        t.m, t.n, t.k, split.range_m, split.slice_k, split.range_n
    ));
    if split.tail_k > 0 {
        name.push_str(&format!("_tail{}", split.tail_k));
    }
    if split.a_k != t.k {
        name.push_str(&format!("_ak{}", split.a_k));
    }
    if (split.b_buffers, split.c_buffers) != (2, 1) {
        name.push_str(&format!("_bufs{}x{}", split.b_buffers, split.c_buffers));
    }
    match split.sum {
        KSum::Whole => {}
        // the partials' layout depends on the row capacity
        KSum::Partials => name.push_str(&format!("_parts_r{}", mm.max_rows)),
        KSum::Chained => name.push_str("_chain"),
    }
    match split.deal {
        Deal::BackAndForth => {}
        Deal::RowsInner => name.push_str("_runs"),
        Deal::ColumnsInner => name.push_str("_runs_cols"),
    }
    Kernel {
        name,
        doc: format!(
            "{} matmul C[M, {}] = A[M, {}] · B ({layout}), A panels of {} rows × {} k{}, N ranges of {}{}{}",
            mm.operands.name(),
            mm.n,
            mm.k,
            split.range_m,
            split.slice_k,
            if split.tail_k > 0 {
                format!(" (the last {} in L0A)", split.tail_k)
            } else {
                String::new()
            },
            split.range_n,
            match split.sum {
                KSum::Whole => "",
                KSum::Partials => ", k slices' partial products apart",
                KSum::Chained => ", k slices added in order on one core",
            },
            match split.deal {
                Deal::BackAndForth => "",
                Deal::RowsInner => ", items in runs per core",
                Deal::ColumnsInner => ", items in runs per core, a panel's column ranges in turn",
            }
        ),
        block: "matmul.h",
        class: "Matmul",
        cores: Cores::Aic,
        params: operand_types(mm)
            .into_iter()
            .chain(mm.rows.params())
            .chain([("N", u(mm.n))])
            .chain(operand_params(mm))
            .chain([
                ("TILE_M", u(t.m)),
                ("TILE_N", u(t.n)),
                ("TILE_K", u(t.k)),
                ("A_TILE_K", u(split.a_k)),
                ("RANGE_M", u(split.range_m)),
                ("SLICE_K", u(split.slice_k)),
                ("RANGE_N", u(split.range_n)),
                ("TAIL_K", u(split.tail_k)),
                ("B_L1_BUFFERS", u(split.b_buffers)),
                ("C_STRIP_BUFFERS", u(split.c_buffers)),
                ("CHAIN", Value::Bool(split.sum == KSum::Chained)),
                ("RUNS", Value::Bool(split.deal != Deal::BackAndForth)),
                (
                    "COLUMNS_INNER",
                    Value::Bool(split.deal == Deal::ColumnsInner),
                ),
                (
                    "SLICE_STRIDE_C",
                    u(match split.sum {
                        KSum::Partials => mm.batch * mm.stride_c,
                        _ => 0,
                    }),
                ),
            ])
            .collect(),
        args: vec!["a", "b", "c"],
        buffers: buffers(mm, split),
        parts: Vec::new(),
    }
}

/// The operand types, C's shift (half C = the int8 sums · 2^-DEQ_SHIFT; 0: C is the
/// accumulator's type) and B's layout: what the cube and the vector kernels of a product
/// share.
fn operand_types(mm: &Matmul) -> [(&'static str, Value); 3] {
    [
        ("INT8", Value::Bool(mm.operands == Operands::I8)),
        ("DEQ_SHIFT", Value::u32(mm.c_shift() as usize)),
        ("B_NK", Value::Bool(mm.b_layout == BLayout::Nk)),
    ]
}

/// K and how A, B and C lie in GM: what the cube and the vector kernels of a product share.
fn operand_params(mm: &Matmul) -> [(&'static str, Value); 8] {
    let u = Value::u32;
    [
        ("K", u(mm.k)),
        ("BATCH", u(mm.batch)),
        ("LDA", u(mm.lda)),
        ("LDB", u(mm.ldb)),
        ("LDC", u(mm.ldc)),
        ("STRIDE_A", u(mm.stride_a)),
        ("STRIDE_B", u(mm.stride_b)),
        ("STRIDE_C", u(mm.stride_c)),
    ]
}

/// `dsv4/matmul.h`'s buffers for one launch, in operand elements (bf16 or int8; the C
/// strip in f32 or i32): the item's A panel, its rows padded to whole fractals × the
/// slice's columns before the tail, in L1 beside the B tiles; the A tiles (`TILE_M` ×
/// `A_TILE_K`) in L0A beside the tail (when the slice has one); the B tiles in L0B; the C
/// strip, the range's Mmad tiles of one column tile, in L0C. Tiles rotate in pairs; B in L1 and the strip as the split says.
pub fn buffers(mm: &Matmul, split: &Split) -> Vec<Buffer> {
    use Mem::*;
    let (input, acc) = match mm.operands {
        Operands::Bf16 => (DType::Bf16, DType::F32),
        Operands::I8 => (DType::I8, DType::I32),
    };
    let t = &split.tiles;
    let rows = split.range_m.next_multiple_of(16);
    let strips = split.range_m.div_ceil(t.m);
    let panel_k = split.slice_k - split.tail_k;
    let mut v = vec![
        row("a_panel", L1, input, rows * panel_k, 1, None),
        row("b_l1", L1, input, t.k * t.n, split.b_buffers, None),
        row("a_l0", L0a, input, t.m * split.a_k, 2, None),
    ];
    if split.tail_k > 0 {
        v.push(row("a_tail", L0a, input, rows * split.tail_k, 1, None));
    }
    v.extend([
        row("b_l0", L0b, input, t.k * t.n, 2, None),
        row(
            "c_strip",
            L0c,
            acc,
            strips * t.m * t.n,
            split.c_buffers,
            None,
        ),
    ]);
    v
}

/// `dsv4/matmul_group.h` of one product: `cube` (its first columns) on the cube cores with
/// `split`, the rest of `mm` on the vector cores, one mixed launch; where the share says so,
/// the vector cores also read some of each of the cube's strips of B ahead of it.
pub(super) fn shared(mm: &Matmul, cube: &Matmul, split: &Split, share: VectorShare) -> Kernel {
    let cube = kernel(cube, split);
    let mut vector = vector(mm, share);
    vector.params.push(("PART", Value::u32(0)));
    let unit = share.unit;
    let mut parts = vec![cube, vector];
    let mut read = String::new();
    if let Some(beside) = share.read {
        parts.push(prefetch::beside(beside));
        read = format!("_rd{}", beside.eighths);
    }
    Kernel {
        name: format!(
            "{}_vec{}_t{}x{}{}{read}",
            parts[0].name,
            share.columns,
            unit.cols,
            unit.tile_k,
            match unit.k_lanes {
                0 => String::new(),
                lanes => format!("_l{lanes}"),
            }
        ),
        doc: format!(
            "{} matmul C[M, {}] = A[M, {}] · B ({}): the first {} columns on the cube cores, the last {} on the vector cores{}",
            mm.operands.name(),
            mm.n,
            mm.k,
            mm.b_layout.name(),
            mm.n - share.columns,
            share.columns,
            match share.read {
                None => String::new(),
                Some(r) => format!(
                    ", which read {}/8 of the cube's B into L2 ahead of it",
                    r.eighths
                ),
            }
        ),
        block: "matmul_group.h",
        class: "MatmulGroup",
        cores: Cores::Mix,
        params: Vec::new(),
        args: vec!["a", "b0", "c0"],
        buffers: Vec::new(),
        parts,
    }
}

/// `dsv4/vector_matmul.h`: the last `share.columns` columns of `mm` on the vector cores.
pub(super) fn vector(mm: &Matmul, share: VectorShare) -> Kernel {
    let u = Value::u32;
    let unit = share.unit;
    let first = mm.n - share.columns;
    Kernel {
        name: format!("vector_matmul_{}_n{first}", mm.operands.name()),
        doc: format!("columns {first}.. of the product on the vector cores"),
        block: "vector_matmul.h",
        class: "VectorMatmul",
        cores: Cores::Aiv,
        params: operand_types(mm)
            .into_iter()
            .chain(mm.rows.params())
            .chain(operand_params(mm))
            .chain([
                ("N_FIRST", u(first)),
                ("N_SHARE", u(share.columns)),
                ("UNIT_COLS", u(unit.cols)),
                ("TILE_K", u(unit.tile_k)),
                ("ROW_BATCH", u(share::ROW_BATCH)),
                ("K_LANES", u(unit.k_lanes)),
                ("IN_BUFFERS", u(unit.in_buffers())),
            ])
            .collect(),
        args: vec!["a", "b", "c"],
        buffers: share::vector_buffers(mm, unit),
        parts: Vec::new(),
    }
}

/// C as the vector launches around a split-K matmul see it: the kernel name's suffix and
/// the parameters GROUP_ROWS, ROWS_PER_TOKEN, N, LD, BATCH, STRIDE.
fn c_rows(mm: &Matmul) -> (String, Vec<(&'static str, Value)>) {
    let u = Value::u32;
    let mut suffix = String::new();
    if mm.ldc != mm.n {
        suffix.push_str(&format!("_ld{}", mm.ldc));
    }
    if mm.batch > 1 {
        suffix.push_str(&format!("_b{}_s{}", mm.batch, mm.stride_c));
    }
    suffix.push_str(&mm.rows.tag());
    let mut params = mm.rows.params().to_vec();
    params.extend([
        ("N", u(mm.n)),
        ("LD", u(mm.ldc)),
        ("BATCH", u(mm.batch)),
        ("STRIDE", u(mm.stride_c)),
    ]);
    (suffix, params)
}

/// Elements per copy for `n`-wide rows and a UB tile of `tile` elements: whole rows when
/// they fit, else the largest piece of 8-element blocks that divides `n`.
fn row_tile(n: usize, tile: usize) -> usize {
    if n <= tile {
        tile / n * n
    } else {
        (8..=tile)
            .rev()
            .step_by(8)
            .find(|d| n.is_multiple_of(*d))
            .unwrap_or(8)
    }
}

/// `dsv4/k_slice_sum.h`: adds the `slices` partial products of `mm` from its `k_partials_<c>`
/// into its C, in slice order.
pub(super) fn slice_sum(mm: &Matmul, slices: usize) -> Kernel {
    let (suffix, mut params) = c_rows(mm);
    let u = Value::u32;
    let tile = row_tile(mm.n, budget::K_SUM_TILE);
    params.extend([
        ("SLICES", u(slices)),
        ("ROWS", u(mm.max_rows)),
        ("TILE", u(tile)),
    ]);
    Kernel {
        name: format!("k_slice_sum_n{}_s{slices}_r{}{suffix}", mm.n, mm.max_rows),
        doc: format!(
            "C[M, {}] = the sum of {slices} k slices' partial products, in slice order",
            mm.n
        ),
        block: "k_slice_sum.h",
        class: "KSliceSum",
        cores: Cores::Aiv,
        params,
        args: vec!["parts", "out"],
        buffers: slice_sum_buffers(tile),
        parts: Vec::new(),
    }
}

/// `k_slice_sum.h`'s UB: partials in and sums out, tiles of `tile` f32 in pairs.
pub fn slice_sum_buffers(tile: usize) -> Vec<Buffer> {
    vec![
        row("parts_in", Mem::Ub, DType::F32, tile, 2, None),
        row("sums", Mem::Ub, DType::F32, tile, 2, None),
    ]
}
