//! What a matmul launch offers the fusion pass (`crate::kernel_plan::fuse`): products
//! that read the same A run as one `dsv4/matmul_group.h` launch (k slices apart write
//! their partial products to the part's own workspace, and its slice sum runs after the
//! group as it ran after the part). Each part keeps its own k slices and, but where the
//! parts share their A panels, its own split, its column ranges respread; the items are
//! dealt over all the launch's blocks, or in runs where the model times that quicker: a
//! part's row ranges innermost, or every part's column ranges under one A split whose
//! panels they share ([`super::split::group_runs`]). At a few rows
//! the vector cores may take the last columns of its parts in the same launch
//! ([`share::plan_group`]).

use sha2::{Digest, Sha256};

use super::kernels::{kernel as cube_kernel, vector};
use super::matmul::{BLayout, Matmul, Operands, Rows};
use super::share;
use super::split::{Deal, KSum, Split, Tiles, group_runs, respread};
use crate::chip::Chip;
use crate::kernel_plan::{Cores, Kernel, MatmulOrigin, Value};

/// The product, cube split and spec tiles a groupable matmul kernel was planned with, read
/// back from its parameters (what `kernels::kernel` wrote) and `origin`.
pub(super) fn described(kernel: &Kernel, origin: &MatmulOrigin) -> (Matmul, Split, [usize; 3]) {
    let p = |name| param(kernel, name) as usize;
    let per_token = p("ROWS_PER_TOKEN");
    let rows = match (p("GROUP_ROWS") == 1, per_token) {
        (true, _) => Rows::GroupTokens,
        (false, 1) => Rows::Tokens,
        (false, r) => Rows::TokensTimes(r),
    };
    let mm = Matmul {
        operands: if p("INT8") == 1 {
            Operands::I8
        } else {
            Operands::Bf16
        },
        b_layout: if p("B_NK") == 1 {
            BLayout::Nk
        } else {
            BLayout::Kn
        },
        rows,
        max_rows: origin.max_rows,
        n: p("N"),
        k: p("K"),
        batch: p("BATCH"),
        lda: p("LDA"),
        ldb: p("LDB"),
        ldc: p("LDC"),
        stride_a: p("STRIDE_A"),
        stride_b: p("STRIDE_B"),
        stride_c: p("STRIDE_C"),
        c_half: p("DEQ_SHIFT") > 0,
        a_from_hbm: origin.a_from_hbm,
    };
    let split = Split {
        tiles: Tiles {
            m: p("TILE_M"),
            n: p("TILE_N"),
            k: p("TILE_K"),
        },
        range_m: p("RANGE_M"),
        slice_k: p("SLICE_K"),
        range_n: p("RANGE_N"),
        tail_k: p("TAIL_K"),
        a_k: p("A_TILE_K"),
        sum: match (p("SLICE_K") >= p("K"), p("CHAIN") == 1) {
            (true, _) => KSum::Whole,
            (false, true) => KSum::Chained,
            (false, false) => KSum::Partials,
        },
        b_buffers: p("B_L1_BUFFERS"),
        c_buffers: p("C_STRIP_BUFFERS"),
        deal: match (p("RUNS") == 1, p("COLUMNS_INNER") == 1) {
            (false, _) => Deal::BackAndForth,
            (true, false) => Deal::RowsInner,
            (true, true) => Deal::ColumnsInner,
        },
    };
    (mm, split, origin.tiles)
}

/// Names longer than this would not make a file name (255 bytes) with room to spare: a
/// longer group is named by its shapes and a digest of its parts' names.
const MAX_NAME: usize = 160;

/// Why the matmul `kernel` cannot be a part of a group, or `None` when it can.
pub(crate) fn unfit(kernel: &Kernel) -> Option<&'static str> {
    if param(kernel, "BATCH") != 1 {
        return Some("it is batched");
    }
    None
}

/// Why two groupable matmuls cannot share their A operand (`None`: they can): they must
/// read it as the same rows of the same element type.
pub(crate) fn conflict(a: &Kernel, b: &Kernel) -> Option<&'static str> {
    let same = |p: &str| param(a, p) == param(b, p);
    if !["INT8", "K", "LDA", "GROUP_ROWS", "ROWS_PER_TOKEN"]
        .iter()
        .all(|p| same(p))
    {
        return Some("they read A differently (element type, K, leading dimension or rows)");
    }
    None
}

/// The bytes of B one work item of a part streams (its N range over all of K): the group
/// deals the parts with the heaviest items first.
pub(crate) fn b_bytes_per_item(kernel: &Kernel) -> u64 {
    let elem = if param(kernel, "INT8") == 1 { 1 } else { 2 };
    u64::from(param(kernel, "RANGE_N")) * u64::from(param(kernel, "K")) * elem
}

/// The group kernel of `parts` (each a groupable matmul), in the order they are dealt: the
/// parts as they are, their items over all the launch's cube cores; with `origins` (the
/// parts' own, in the same order) the vector cores may take some of their columns.
pub(crate) fn kernel(parts: &[&Kernel], origins: Option<&[&MatmulOrigin]>, chip: &Chip) -> Kernel {
    let op = if param(parts[0], "INT8") == 1 {
        "i8"
    } else {
        "bf16"
    };
    let products: Option<Vec<(Matmul, Split, [usize; 3])>> = origins.map(|os| {
        let read = parts.iter().zip(os).map(|(k, o)| described(k, o));
        read.collect()
    });
    let plan = products
        .as_ref()
        .and_then(|ps| Some((ps, share::plan_group(ps, chip)?)));
    let Some((products, planned)) = plan else {
        let parts = match &products {
            Some(ps) => {
                let own: Vec<(Matmul, Split)> =
                    ps.iter().map(|(m, s, _)| (m.clone(), *s)).collect();
                let splits = respread(&own, chip);
                let products: Vec<Matmul> = own.iter().map(|(m, _)| m.clone()).collect();
                let splits = group_runs(&products, &splits, chip);
                own.iter()
                    .zip(&splits)
                    .map(|((mm, _), s)| cube_kernel(mm, s))
                    .collect()
            }
            // hand-made parts (every planned matmul has its origin): as they are
            None => parts.iter().map(|k| (*k).clone()).collect(),
        };
        return group(parts, Vec::new(), op, "");
    };
    let mut cube = Vec::new();
    let mut vectors = Vec::new();
    let mut columns = Vec::new();
    for (i, ((mm, _, _), part)) in products.iter().zip(&planned).enumerate() {
        let shared = part.share.map_or(0, |s| s.columns);
        let first = Matmul {
            n: mm.n - shared,
            ..mm.clone()
        };
        cube.push(cube_kernel(&first, &part.split));
        if let Some(s) = part.share {
            let mut v = vector(mm, s);
            v.params.push(("PART", Value::u32(i)));
            vectors.push(v);
        }
        columns.push(shared.to_string());
    }
    group(cube, vectors, op, &format!("_vec{}", columns.join("x")))
}

/// The group of `cube` parts and `vector` parts (after them), named by its cube parts and
/// `suffix`.
fn group(cube: Vec<Kernel>, vector: Vec<Kernel>, op: &str, suffix: &str) -> Kernel {
    let prefix = format!("matmul_{op}_");
    let descs: Vec<&str> = cube
        .iter()
        .map(|k| k.name.strip_prefix(&prefix).unwrap_or(&k.name))
        .collect();
    let mut name = format!("matmul_group_{op}_{}{suffix}", descs.join("__"));
    if name.len() > MAX_NAME {
        // the parts' names (each its full specialisation), digested
        let mut h = Sha256::new();
        for k in &cube {
            h.update(k.name.as_bytes());
            h.update([0]);
        }
        let digest: String = h.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let ns: Vec<String> = cube.iter().map(|k| param(k, "N").to_string()).collect();
        name = format!(
            "matmul_group{}_{op}_k{}_n{}{suffix}_{digest}",
            cube.len(),
            param(&cube[0], "K"),
            ns.join("x"),
        );
    }
    let mut args = vec!["a"];
    for i in 0..cube.len() {
        args.push(["b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7"][i]);
        args.push(["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"][i]);
    }
    let mut doc = format!(
        "{} matmuls of one A, their work items dealt over every block in turn",
        cube.len()
    );
    let cores = if vector.is_empty() {
        Cores::Aic
    } else {
        doc.push_str(&format!(
            ", the last columns of {} on the vector cores",
            vector.len()
        ));
        Cores::Mix
    };
    Kernel {
        name,
        doc,
        block: "matmul_group.h",
        class: "MatmulGroup",
        cores,
        params: Vec::new(),
        args,
        buffers: Vec::new(),
        parts: cube.into_iter().chain(vector).collect(),
    }
}

/// The most parts a group binds (B and C each).
pub(crate) const MAX_PARTS: usize = 8;

fn param(kernel: &Kernel, name: &str) -> u32 {
    match kernel.param(name) {
        Some(Value::U32(v)) => v,
        Some(Value::Bool(v)) => u32::from(v),
        _ => panic!("matmul kernel {} has no parameter {name}", kernel.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip;
    use crate::kernel_plan::gemm::split::{Room, plan_split};

    /// A product's kernel reads back as the product and split it was planned with, whole
    /// or with k slices apart: the fusion pass plans a group's parts from their parameters.
    #[test]
    fn a_product_reads_back_from_its_kernel() {
        let chip = chip::find("910b").unwrap();
        let tiles = [64, 64, 256];
        let products = [
            Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, 8, 1024, 4096),
            Matmul::new(
                Operands::Bf16,
                BLayout::Nk,
                Rows::GroupTokens,
                16,
                512,
                4096,
            ),
            Matmul::new(
                Operands::I8,
                BLayout::Kn,
                Rows::TokensTimes(64),
                512,
                128,
                128,
            ),
            // x_normed's 1024-column projection at 512 tokens: A does not fit on chip
            Matmul::new(Operands::Bf16, BLayout::Kn, Rows::Tokens, 512, 1024, 4096),
            // wq_b at 512 tokens: half C, tall A tiles
            Matmul {
                c_half: true,
                ..Matmul::new(Operands::I8, BLayout::Kn, Rows::Tokens, 512, 32768, 1024)
            },
        ];
        let sums = [
            KSum::Whole,
            KSum::Whole,
            KSum::Whole,
            KSum::Partials,
            KSum::Whole,
        ];
        for (mm, sum) in products.into_iter().zip(sums) {
            let room = Room::for_tiles(tiles[0], tiles[1], tiles[2], chip);
            let split = plan_split(&mm, &room, Tiles::spec(&mm, tiles), chip).unwrap();
            assert_eq!(split.sum, sum, "{mm:?}");
            assert!(
                !mm.c_half || split.a_k < split.tiles.k,
                "{mm:?}: tall A tiles"
            );
            let kernel = cube_kernel(&mm, &split);
            let origin = MatmulOrigin {
                kernel: kernel.name.clone(),
                max_rows: mm.max_rows,
                tiles,
                a_from_hbm: mm.a_from_hbm,
            };
            assert_eq!(described(&kernel, &origin), (mm, split, tiles));
        }
    }
}
