//! The vector cores' share of a weight-streaming product (`dsv4/matmul_shared.h`): a
//! decode step's projection of a few rows against megabytes of B is bound by how fast
//! cores load B, and under hicann/ge's `Load` fit (`a·N + b` bytes per cycle for N cores)
//! the 24 cube cores together load at most 457 GB/s. With the 48 vector cores loading
//! some of B's rows in the same launch, 72 cores load at once. A vector core multiplies
//! far slower than it loads (a B element costs a widening and, per A row, a
//! multiply-add), so the share is the column count whose busiest core, cube or vector, takes
//! the fewest cycles by the same fits the timing model uses ([`Rate`]).
//!
//! Planned for products of at most [`ROW_BATCH`] rows (one pass of the vector cores'
//! accumulators) and a cube split of one K slice (the vector cores write C whole), B stored
//! `[N, K]` (the o_proj weights) or `[K, N]` (`wq_b`: per k one multiply-add over all the
//! rows and the unit's columns, see `vector_matmul.h`); int8 only while its sums stay exact
//! in f32 (`K · 2¹⁴ ≤ 2²⁴`).

use super::matmul::{BLayout, Matmul, Operands};
use super::split::{KSum, Room, Split, Tiles, plan_split};
use crate::chip::Chip;

/// A rows per pass of the vector cores' accumulators.
pub(super) const ROW_BATCH: usize = 8;

/// A vector core's unit of work: `cols` columns of C over all of K, in tiles of `tile_k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    pub cols: usize,
    pub tile_k: usize,
}

impl Unit {
    /// B `[N, K]`: 32 rows of B, 256 k a tile (16 KiB of bf16 a load); a core takes
    /// several, each call repeating over a unit's rows.
    const NK: Unit = Unit {
        cols: 32,
        tile_k: 256,
    };

    /// B `[K, N]`: k per tile (the f32 widening of 64 × 256, 64 KiB, leaves UB room for the
    /// rest). A core's calls repeat over its unit's columns (at most 255 blocks), so a core
    /// takes one unit of 32 to 256 columns.
    const KN_TILE_K: usize = 64;

    fn tile_k(layout: BLayout) -> usize {
        match layout {
            BLayout::Nk => Unit::NK.tile_k,
            BLayout::Kn => Unit::KN_TILE_K,
        }
    }
}

/// The vector cores' candidate shares of `mm` on `aiv` of them, as (unit, columns): any
/// count of `[N, K]` units; for `[K, N]` one unit per core, 256 columns wide down to 32.
fn shares(mm: &Matmul, aiv: usize) -> Vec<(Unit, usize)> {
    let all: Vec<(Unit, usize)> = match mm.b_layout {
        BLayout::Nk => (1..mm.n / Unit::NK.cols)
            .map(|count| (Unit::NK, count * Unit::NK.cols))
            .collect(),
        BLayout::Kn => (1..=8)
            .rev()
            .map(|i| {
                let unit = Unit {
                    cols: 32 * i,
                    tile_k: Unit::KN_TILE_K,
                };
                (unit, aiv / mm.batch * unit.cols)
            })
            .collect(),
    };
    all.into_iter()
        .filter(|&(_, columns)| columns > 0 && columns < mm.n)
        .collect()
}

/// The vector cores' columns of a product: C's last `columns` of every batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VectorShare {
    pub columns: usize,
    pub unit: Unit,
}

/// The cycle costs the split is balanced with: hicann/ge's A2 fits
/// (`att/gen_model_info/api_perf_register/v1/perf_param_v1.cpp`), the same rows
/// `harness/sim/src/timing.cpp` times the calls with.
struct Rate;

impl Rate {
    /// `Load`: bytes per cycle of one of `cores` cores loading at once.
    fn load(cores: usize) -> f64 {
        9.9074 + 15.896 / cores as f64
    }

    /// A vector call over `elems` elements: `k·elems + b`.
    fn call((k, b): (f64, f64), elems: usize) -> f64 {
        k * elems as f64 + b
    }

    /// `Cast` f16 → f32 (bf16 → f32 borrows it), `uint8tofloat16` (int8 → f16 borrows
    /// it), `MulAddDst` f32 (none in ge: `Mul`'s at half its rate, as asc-devkit's
    /// theoretical figures have it, 32 vs 64 per cycle), `BlockReduceMax` f32
    /// (`BlockReduceSum` borrows it).
    const WIDEN: (f64, f64) = (0.0147, 20.1204);
    const WIDEN_I8: (f64, f64) = (0.0102, 46.512);
    const MUL_ADD: (f64, f64) = (0.0412, 23.23);
    const BLOCK_SUM: (f64, f64) = (0.0198, 16.7401);
    /// `Brcb` f32.
    const BRCB: (f64, f64) = (0.0146, 13.07);
}

/// Cycles of one vector core's unit (its columns over all of K, `rows` A rows) on a launch
/// of `cores` cores: per K tile the slower of its loads and its calls, then what turns the
/// accumulators into C ([N, K]: the block sums).
fn unit_cycles(mm: &Matmul, unit: Unit, rows: usize, cores: usize) -> f64 {
    let e = mm.operands.bytes();
    let Unit { cols, tile_k } = unit;
    let widen = |elems| {
        Rate::call(Rate::WIDEN, elems)
            + match mm.operands {
                Operands::I8 => Rate::call(Rate::WIDEN_I8, elems),
                Operands::Bf16 => 0.0,
            }
    };
    let products = match mm.b_layout {
        // per A row and 64 k, one call of a repeat per B row
        BLayout::Nk => (rows * tile_k / 64) as f64 * Rate::call(Rate::MUL_ADD, cols * 64),
        // a Brcb of the A slice, then per k one call of 8 row blocks per column block
        BLayout::Kn => {
            Rate::call(Rate::BRCB, rows * tile_k * 8)
                + tile_k as f64 * Rate::call(Rate::MUL_ADD, cols * 8)
        }
    };
    let calls = widen(cols * tile_k) + widen(rows * tile_k) + products;
    let loads = ((cols + rows) * tile_k * e) as f64 / Rate::load(cores);
    let finish = match mm.b_layout {
        BLayout::Nk => {
            rows as f64 * Rate::call(Rate::BLOCK_SUM, cols * 64)
                + Rate::call(Rate::BLOCK_SUM, rows * cols * 8)
        }
        BLayout::Kn => 0.0,
    };
    (mm.k / tile_k) as f64 * calls.max(loads) + finish
}

/// Cycles of the busiest cube core of `split` over `mm` on a launch of `cores` cores.
fn cube_cycles(mm: &Matmul, split: &Split, aic: usize, cores: usize) -> f64 {
    let items = split.items(mm, mm.max_rows);
    (items.div_ceil(aic) * split.item_bytes(mm)) as f64 / Rate::load(cores)
}

/// Why `mm` gets no vector share, if it gets none.
fn unfit(mm: &Matmul) -> Option<&'static str> {
    if mm.max_rows > ROW_BATCH {
        return Some("more rows than one pass of the vector accumulators");
    }
    if !mm.k.is_multiple_of(Unit::tile_k(mm.b_layout)) {
        return Some("K is not whole vector tiles");
    }
    if mm.operands == Operands::I8 && mm.k * 128 * 128 > 1 << 24 {
        return Some("int8 sums over this K are not exact in f32");
    }
    None
}

/// The cube split of the first columns and the vector share of the rest that finish
/// soonest, when that is sooner than the cube split `alone` of the whole product.
pub(super) fn plan(
    mm: &Matmul,
    room: &Room,
    tiles: [usize; 3],
    alone: &Split,
    chip: &Chip,
) -> Option<(Matmul, Split, VectorShare)> {
    if unfit(mm).is_some() || alone.sum != KSum::Whole {
        return None;
    }
    let (aic, aiv) = (chip.aic_cores, chip.aiv_cores);
    let mixed = aic + aiv;
    let mut best = (cube_cycles(mm, alone, aic, aic), None);
    let shares = shares(mm, aiv);
    // The cube's column ranges are whole column tiles: narrower tiles let its share of
    // the columns spread evenly over its cores.
    let [m, n, k] = tiles;
    let narrower = [n, n / 2, n / 4]
        .into_iter()
        .filter(|t| *t >= 16 && t % 16 == 0);
    for tile_n in narrower {
        for &(unit, columns) in &shares {
            let cube = Matmul {
                n: mm.n - columns,
                ..mm.clone()
            };
            let Some(split) = plan_split(&cube, room, Tiles::spec(&cube, [m, tile_n, k]), chip)
            else {
                continue;
            };
            if split.sum != KSum::Whole {
                continue;
            }
            let units = mm.batch * columns / unit.cols;
            let unit_time = unit_cycles(mm, unit, mm.max_rows, mixed);
            let cycles =
                cube_cycles(&cube, &split, aic, mixed).max(units.div_ceil(aiv) as f64 * unit_time);
            if cycles < best.0 {
                best = (cycles, Some((cube, split, VectorShare { columns, unit })));
            }
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip;
    use crate::kernel_plan::gemm::matmul::Rows;

    /// The share of `mm` planned with spec tiles `tiles` on the 910B, beside the cube
    /// split of the whole product: (cube alone, shared plan).
    fn planned(mm: &Matmul, tiles: [usize; 3]) -> (Split, Option<(Matmul, Split, VectorShare)>) {
        let chip = chip::find("910b").unwrap();
        let [m, n, k] = tiles;
        let room = Room::for_tiles(m, n, k, chip);
        let alone = plan_split(mm, &room, Tiles::spec(mm, tiles), chip).unwrap();
        let shared = plan(mm, &room, tiles, &alone, chip);
        (alone, shared)
    }

    /// o_proj's products at the reference's deployment (FLASH, TP 1, 8 tokens): 8 groups.
    fn deployment(operands: Operands, n: usize, k: usize, ldb: usize, stride_b: usize) -> Matmul {
        Matmul {
            batch: 8,
            ldb,
            stride_a: 16 * k,
            stride_b,
            stride_c: 16 * n,
            ..Matmul::new(operands, BLayout::Nk, Rows::GroupTokens, 8, n, k)
        }
    }

    const O_PROJ_TILES: [usize; 3] = [64, 128, 128];

    #[test]
    fn deployment_wo_a_gives_the_vector_cores_the_last_columns() {
        let mm = deployment(Operands::Bf16, 1024, 4096, 4096, 1024 * 4096);
        let (alone, shared) = planned(&mm, O_PROJ_TILES);
        let (cube, split, share) = shared.expect("a weight stream of 8 rows is shared");
        assert_eq!(cube.n + share.columns, 1024);
        assert_eq!(share.unit, Unit::NK);
        assert!(share.columns.is_multiple_of(Unit::NK.cols) && cube.n.is_multiple_of(16));
        assert_eq!(
            (cube.ldc, cube.ldb),
            (1024, 4096),
            "C and B as the whole product's"
        );
        assert_eq!(split.sum, KSum::Whole);
        // both sides busy: the busiest cube core moves less than alone, by at least a
        // quarter, and the vector cores hold at least a fifth of B
        let chip = chip::find("910b").unwrap();
        let (aic, all) = (chip.aic_cores, chip.aic_cores + chip.aiv_cores);
        let before = cube_cycles(&mm, &alone, aic, aic);
        let after = cube_cycles(&cube, &split, aic, all);
        assert!(after < 0.75 * before, "{after} vs {before}");
        assert!(5 * share.columns >= 1024, "{share:?}");
    }

    #[test]
    fn deployment_wo_b_is_shared_and_exact() {
        // int8 over K = 1024: every sum an integer below 2^24
        let mm = deployment(Operands::I8, 4096, 1024, 8192, 1024);
        let (_, shared) = planned(&mm, O_PROJ_TILES);
        assert!(shared.is_some());
    }

    #[test]
    fn deployment_wq_b_shares_its_columns_of_b_stored_k_by_n() {
        // wq_b at the reference's deployment: 8 rows, int8 [1024, 32768] in × out
        let mm = Matmul::new(Operands::I8, BLayout::Kn, Rows::Tokens, 8, 32768, 1024);
        let (alone, shared) = planned(&mm, [64, 64, 256]);
        let (cube, split, share) = shared.expect("a weight stream of 8 rows is shared");
        let unit = share.unit;
        assert_eq!(cube.n + share.columns, 32768);
        assert_eq!(share.columns, 48 * unit.cols, "one unit per vector core");
        // the busiest core, cube or vector, finishes sooner than the cube cores alone
        let chip = chip::find("910b").unwrap();
        let (aic, aiv) = (chip.aic_cores, chip.aiv_cores);
        let before = cube_cycles(&mm, &alone, aic, aic);
        let units = share.columns / unit.cols;
        let vector = units.div_ceil(aiv) as f64 * unit_cycles(&mm, unit, 8, aic + aiv);
        let after = cube_cycles(&cube, &split, aic, aic + aiv).max(vector);
        assert!(after < 0.85 * before, "{after} vs {before}");
    }

    #[test]
    fn what_the_vector_cores_do_not_take() {
        // more rows than a pass; int8 sums past f32's 24 bits; a K split
        let rows = Matmul::new(Operands::Bf16, BLayout::Nk, Rows::Tokens, 16, 1024, 4096);
        assert!(planned(&rows, O_PROJ_TILES).1.is_none());
        let wide = Matmul::new(Operands::I8, BLayout::Nk, Rows::Tokens, 8, 1024, 2048);
        assert_eq!(
            unfit(&wide),
            Some("int8 sums over this K are not exact in f32")
        );
        let many = Matmul::new(Operands::Bf16, BLayout::Nk, Rows::Tokens, 512, 1024, 4096);
        let (alone, shared) = planned(&many, O_PROJ_TILES);
        assert_ne!(alone.sum, KSum::Whole);
        assert!(shared.is_none());
    }
}
