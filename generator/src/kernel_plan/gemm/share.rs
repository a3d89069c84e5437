//! The vector cores' share of a weight-streaming product (`dsv4/matmul_group.h`): a
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
//! rows and the unit's columns; narrow units: per column block one multiply-add over many
//! k, see `vector_matmul.h`); int8 only while its sums stay exact in f32 (`K · 2¹⁴ ≤ 2²⁴`).
//! A product launched alone gets [`plan`]; the parts of a matmul group (the fusion pass's
//! products of one A) get [`plan_group`].

use abi::DType;

use super::matmul::{BLayout, Matmul, Operands};
use super::prefetch::Beside;
use super::rate::Rate;
use super::split::{Deal, KSum, Room, Split, Tiles, back_and_forth, plan_split, sizes};
use crate::budget::{self, Buffer, row};
use crate::chip::{Chip, Mem};

/// A rows per pass of the vector cores' accumulators.
pub(super) const ROW_BATCH: usize = 8;

/// A vector core's unit of work: `cols` columns of C over all of K, in tiles of `tile_k`;
/// for B `[K, N]` with `k_lanes` > 0, one call per column block covers that many k, each
/// into an accumulator of its own (`vector_matmul.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    pub cols: usize,
    pub tile_k: usize,
    pub k_lanes: usize,
}

impl Unit {
    /// B `[N, K]`: 32 rows of B, 256 k a tile (16 KiB of bf16 a load); a core takes
    /// several, each call repeating over a unit's rows.
    const NK: Unit = Unit {
        cols: 32,
        tile_k: 256,
        k_lanes: 0,
    };

    /// B `[N, K]` wider: 40 or 48 rows of B, 128 k a tile (the accumulators, 64 lanes a B
    /// row and A row, take 80 or 96 KiB): per-core unit counts that even out a product's
    /// share where 32-row units leave some cores one more than others.
    const NK_WIDER: [Unit; 2] = [
        Unit {
            cols: 40,
            tile_k: 128,
            k_lanes: 0,
        },
        Unit {
            cols: 48,
            tile_k: 128,
            k_lanes: 0,
        },
    ];

    /// B `[K, N]`: k per tile (the f32 widening of 64 × 256, 64 KiB, leaves UB room for the
    /// rest). A core's calls repeat over its unit's columns (at most 255 blocks), so a core
    /// takes one unit of 32 to 256 columns; or, with k lanes, a narrow unit of its own.
    const KN_TILE_K: usize = 64;

    /// B `[K, N]` wide: per k one call over the unit's 32 to 256 columns.
    fn kn(cols: usize) -> Unit {
        Unit {
            cols,
            tile_k: Unit::KN_TILE_K,
            k_lanes: 0,
        }
    }

    /// B `[K, N]` narrow (16 to 64 columns): a call per column block covers 2048 / `cols`
    /// k (at most the tile's 64), so the accumulators take 64 KiB at most; a core takes
    /// any count of them, as of `[N, K]` units.
    fn kn_lanes(cols: usize) -> Unit {
        Unit {
            cols,
            tile_k: Unit::KN_TILE_K,
            k_lanes: (2048 / cols).min(Unit::KN_TILE_K),
        }
    }

    /// Slices in UB at once: a narrow unit computes a slice in less than a GM read's
    /// latency, so three load ahead; the others compute longer, one loads ahead.
    pub fn in_buffers(self) -> usize {
        if self.k_lanes > 0 { 4 } else { 2 }
    }

    fn tile_k(layout: BLayout) -> usize {
        match layout {
            BLayout::Nk => Unit::NK.tile_k,
            BLayout::Kn => Unit::KN_TILE_K,
        }
    }
}

/// The vector cores' candidate shares of `mm` on `aiv` of them, as (unit, columns): any
/// count of `[N, K]` units (32, 40 or 48 rows) or narrow `[K, N]` ones; wide `[K, N]` units
/// one per core, 256 columns down to 32.
fn shares(mm: &Matmul, aiv: usize) -> Vec<(Unit, usize)> {
    let any_count = |unit: Unit| (1..mm.n / unit.cols).map(move |count| (unit, count * unit.cols));
    let all: Vec<(Unit, usize)> = match mm.b_layout {
        BLayout::Nk => [Unit::NK]
            .into_iter()
            .chain(Unit::NK_WIDER)
            .flat_map(any_count)
            .collect(),
        BLayout::Kn => (1..=8)
            .rev()
            .map(|i| {
                let unit = Unit::kn(32 * i);
                (unit, aiv / mm.batch * unit.cols)
            })
            .chain(
                [16, 32, 64]
                    .into_iter()
                    // a B tile row is whole 32-byte blocks
                    .filter(|c| (c * mm.operands.bytes()).is_multiple_of(32))
                    .flat_map(|c| any_count(Unit::kn_lanes(c))),
            )
            .collect(),
    };
    // a unit's C row is whole 32-byte blocks (half C: no 40-row [N, K] units)
    all.into_iter()
        .filter(|&(unit, columns)| {
            columns > 0 && columns < mm.n && (unit.cols * mm.c_bytes()).is_multiple_of(32)
        })
        .collect()
}

/// The vector cores' columns of a product: C's last `columns` of every batch; and, for a
/// product launched alone, what they read of the cube's B into L2 ahead of it between
/// their units' slices (`dsv4/matmul_group.h` ReadBeside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VectorShare {
    pub columns: usize,
    pub unit: Unit,
    pub read: Option<Beside>,
}

/// Cycles of one vector core's unit (its columns over all of K, `rows` A rows) on a launch
/// of `cores` cores: per K tile the slower of its loads (and `extra` cycles of the core's
/// MTE2 for reads beside them) and its calls, then what turns the accumulators into C
/// ([N, K]: the block sums).
fn unit_cycles(mm: &Matmul, unit: Unit, rows: usize, cores: usize, extra: f64) -> f64 {
    let e = mm.operands.bytes();
    let Unit {
        cols,
        tile_k,
        k_lanes,
    } = unit;
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
        // a Brcb of the A slice, then per k one call of 8 row blocks per column block, or
        // per column block one call per k_lanes k
        BLayout::Kn if k_lanes == 0 => {
            Rate::call(Rate::BRCB, rows * tile_k * 8)
                + tile_k as f64 * Rate::call(Rate::MUL_ADD, cols * 8)
        }
        BLayout::Kn => {
            Rate::call(Rate::BRCB, rows * tile_k * 8)
                + (tile_k / k_lanes * cols / 8) as f64
                    * Rate::call(Rate::MUL_ADD, k_lanes * rows * 8)
        }
    };
    let calls = widen(cols * tile_k) + widen(rows * tile_k) + products;
    // a slice's loads stream at the core's rate; each waits a GM read latency, hidden
    // behind the slices loading ahead of it
    let stream = ((cols + rows) * tile_k * e) as f64 / Rate::load(cores) + extra;
    let loads = stream.max((Rate::GM_LATENCY + stream) / (unit.in_buffers() - 1) as f64);
    let finish = match mm.b_layout {
        BLayout::Nk => {
            rows as f64 * Rate::call(Rate::BLOCK_SUM, cols * 64)
                + Rate::call(Rate::BLOCK_SUM, rows * cols * 8)
        }
        BLayout::Kn if k_lanes == 0 => 0.0,
        // the lanes zeroed, then summed pairwise
        BLayout::Kn => {
            let lane = ROW_BATCH * cols;
            Rate::call(Rate::DUPLICATE, k_lanes * lane)
                + std::iter::successors(Some(k_lanes / 2), |w| Some(w / 2))
                    .take_while(|&w| w >= 1)
                    .map(|w| Rate::call(Rate::ADD, w * lane))
                    .sum::<f64>()
        }
    };
    (mm.k / tile_k) as f64 * calls.max(loads) + finish
}

/// `vector_matmul.h`'s UB: a B tile and a pass's A slice in (pairs), both widened to f32
/// (int8 through an f16 stage, sized as bf16), the pass's accumulators and the pass's C
/// rows; for B `[N, K]` the accumulators' 8-lane block sums (and for int8 their f32 sums),
/// for B `[K, N]` the A slice spread one value per block.
pub(super) fn vector_buffers(mm: &Matmul, unit: Unit) -> Vec<Buffer> {
    use DType::*;
    use Mem::Ub;
    let (operands, layout) = (mm.operands, mm.b_layout);
    let Unit {
        cols: r,
        tile_k: kc,
        k_lanes,
    } = unit;
    let rb = ROW_BATCH;
    let input = match operands {
        Operands::Bf16 => Bf16,
        Operands::I8 => I8,
    };
    let b_run = match layout {
        BLayout::Nk => kc,
        BLayout::Kn => r,
    };
    let mut v = vec![
        row("b_in", Ub, input, r * kc, unit.in_buffers(), Some(b_run)),
        row("a_in", Ub, input, rb * kc, unit.in_buffers(), Some(kc)),
        row("b_wide", Ub, F32, r * kc, 1, None),
        row("a_wide", Ub, F32, rb * kc, 1, None),
        row("c_out", Ub, mm.c_dtype(), rb * r, 1, Some(r)),
    ];
    if operands == Operands::I8 {
        v.push(row("f16", Ub, Bf16, r * kc, 1, None));
    }
    match layout {
        BLayout::Nk => {
            v.extend([
                row("acc", Ub, F32, rb * r * 64, 1, None),
                row("sums8", Ub, F32, rb * r * 8, 1, None),
            ]);
            if operands == Operands::I8 {
                v.push(row("sums", Ub, F32, rb * r, 1, None));
            }
        }
        BLayout::Kn => v.extend([
            row("acc", Ub, F32, rb * r * k_lanes.max(1), 1, None),
            row("a_brcb", Ub, F32, rb * kc * 8, 1, None),
        ]),
    }
    v
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
/// soonest, when that is sooner than the whole product launched alone on split `alone`
/// (its B read ahead by the vector cores where `gemm::prefetch` will).
pub(super) fn plan(
    mm: &Matmul,
    tiles: [usize; 3],
    alone: &Split,
    chip: &Chip,
) -> Option<(Matmul, Split, VectorShare)> {
    if unfit(mm).is_some() {
        return None;
    }
    let (aic, aiv) = (chip.aic_cores, chip.aiv_cores);
    let mut best = (alone.cycles(mm, mm.max_rows, chip), None);
    let shares = shares(mm, aiv);
    // The cube's column ranges are whole column tiles: narrower tiles let its share of
    // the columns spread evenly over its cores.
    for halvings in 0..3 {
        for &(unit, columns) in &shares {
            let Some(split) = cube_split(mm, columns, tiles, halvings, chip) else {
                continue;
            };
            // no reads, or 1 to 8 eighths of each strip where a reader fits
            let room = reader_room(mm, unit, &split, chip);
            let reads = std::iter::once(None).chain(room.into_iter().flat_map(|(chunk, slots)| {
                (1..=8).map(move |eighths| {
                    Some(Beside {
                        eighths,
                        chunk,
                        slots,
                    })
                })
            }));
            for read in reads {
                let share = VectorShare {
                    columns,
                    unit,
                    read,
                };
                let part = GroupPart {
                    split,
                    share: Some(share),
                };
                let cycles = group_cycles(&[(mm, part)], aic, aiv, aic + aiv)
                    .max(moved(mm, part) / Rate::peak(chip));
                if cycles < best.0 {
                    let cube = Matmul {
                        n: mm.n - columns,
                        ..mm.clone()
                    };
                    best = (cycles, Some((cube, split, share)));
                }
            }
        }
    }
    best.1
}

/// The reader's DMA size and slots beside the vector cores' `unit`s (`dsv4/matmul_prefetch.h`):
/// DMAs of 8 KiB (a strip's B row at least), as many slots as fit in UB beside the units'
/// buffers, an even count up to 8; None where fewer than two fit or the split's strips
/// cannot be waited for (column ranges innermost).
fn reader_room(mm: &Matmul, unit: Unit, split: &Split, chip: &Chip) -> Option<(usize, usize)> {
    let row = match mm.b_layout {
        BLayout::Nk => split.slice_k.min(mm.k),
        BLayout::Kn => split.tiles.n,
    } * mm.operands.bytes();
    let chunk = row.next_multiple_of(32).max(8 * 1024);
    let free = chip.capacity(Mem::Ub)
        - budget::bytes_in(&vector_buffers(mm, unit), Mem::Ub, chip).min(chip.capacity(Mem::Ub));
    let slots = (free / chunk).min(8) / 2 * 2;
    (slots >= 2 && split.deal != Deal::ColumnsInner).then_some((chunk, slots))
}

/// GM bytes a launch of `part` of `mm` moves: A, B (and what the vector cores read of the
/// cube's B ahead of it) and C.
fn moved(mm: &Matmul, part: GroupPart) -> f64 {
    let (columns, eighths) = part
        .share
        .map_or((0, 0), |s| (s.columns, s.read.map_or(0, |r| r.eighths)));
    let (a, b, c) = sizes(mm, mm.max_rows);
    let ahead = b / mm.n * (mm.n - columns) * eighths / 8;
    (a + b + c + ahead) as f64
}

/// A part of a group as `dsv4/matmul_group.h` runs it: its cube split (of its columns
/// less the share) and the vector cores' share of its last columns, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupPart {
    pub split: Split,
    pub share: Option<VectorShare>,
}

/// The parts of a group (`dsv4/matmul_group.h`: products of one A, dealt over all the
/// launch's cores), each given as its product, its own cube split and the stage's spec
/// tiles, planned so the busiest core finishes soonest with the vector cores taking some
/// columns; `None` when that is not sooner than the parts' own splits. A part gives its
/// last columns in whole 32-column units, the parts of one B layout about the same
/// fraction of their columns (tried in steps of 1/32 per layout: a vector core's unit
/// costs differ by layout); `[K, N]` units are the narrowest (k lanes, a B row of one
/// 32-byte block: a unit holds all of K, so narrow units even out the vector cores). The
/// cube part is split again for its columns, its column tile the spec's or half or a
/// quarter of it (per layout): the group deals items over the cores, and narrower items
/// even out the busiest core.
pub(super) fn plan_group(
    parts: &[(Matmul, Split, [usize; 3])],
    chip: &Chip,
) -> Option<Vec<GroupPart>> {
    const STEPS: usize = 32;
    let (aic, aiv) = (chip.aic_cores, chip.aiv_cores);
    let mut best = (group_cycles(&on_the_cube(parts), aic, aiv, aic), None);
    let mut splits = std::collections::HashMap::new();
    for narrow in 0..9 {
        for nk in 0..STEPS {
            for kn in 0..STEPS {
                let planned: Option<Vec<(&Matmul, GroupPart)>> = parts
                    .iter()
                    .enumerate()
                    .map(|(i, (mm, _, tiles))| {
                        let (step, halvings) = match mm.b_layout {
                            BLayout::Nk => (nk, narrow % 3),
                            BLayout::Kn => (kn, narrow / 3),
                        };
                        let share = part_share(mm, step, STEPS);
                        let columns = share.map_or(0, |s| s.columns);
                        let split = *splits
                            .entry((i, halvings, columns))
                            .or_insert_with(|| cube_split(mm, columns, *tiles, halvings, chip));
                        Some((
                            mm,
                            GroupPart {
                                split: split?,
                                share,
                            },
                        ))
                    })
                    .collect();
                let Some(planned) = planned else {
                    continue;
                };
                if planned.iter().all(|(_, p)| p.share.is_none()) {
                    continue;
                }
                let cycles = group_cycles(&planned, aic, aiv, aic + aiv);
                if cycles < best.0 {
                    best = (cycles, Some(planned.into_iter().map(|(_, p)| p).collect()));
                }
            }
        }
    }
    best.1
}

/// A group's parts as the cube cores alone run them: each its own split.
fn on_the_cube(parts: &[(Matmul, Split, [usize; 3])]) -> Vec<(&Matmul, GroupPart)> {
    parts
        .iter()
        .map(|(mm, split, _)| {
            let part = GroupPart {
                split: *split,
                share: None,
            };
            (mm, part)
        })
        .collect()
}

/// The cube split of `mm`'s columns but its last `columns`, column tile the spec's
/// halved `halvings` times; `None` when that tile is no tile or no whole split fits.
fn cube_split(
    mm: &Matmul,
    columns: usize,
    [m, n, k]: [usize; 3],
    halvings: usize,
    chip: &Chip,
) -> Option<Split> {
    let tile_n = n >> halvings;
    if tile_n < 16 || !tile_n.is_multiple_of(16) {
        return None;
    }
    let cube = Matmul {
        n: mm.n - columns,
        ..mm.clone()
    };
    let room = Room::for_tiles(m, n, k, chip);
    plan_split(&cube, &room, Tiles::spec(&cube, [m, tile_n, k]), chip)
        .filter(|s| s.sum == KSum::Whole)
}

/// The last `step / steps` of `mm`'s columns, down to whole 32-column units, as a vector
/// share, if the product takes one and that is some but not all of them.
fn part_share(mm: &Matmul, step: usize, steps: usize) -> Option<VectorShare> {
    if unfit(mm).is_some() || mm.batch != 1 {
        return None;
    }
    let columns = mm.n * step / steps / 32 * 32;
    if columns == 0 || columns >= mm.n {
        return None;
    }
    let unit = match mm.b_layout {
        BLayout::Nk => Unit::NK,
        // the narrowest: a B tile row of one 32-byte block
        BLayout::Kn => Unit::kn_lanes(32 / mm.operands.bytes()),
    };
    columns.is_multiple_of(unit.cols).then_some(VectorShare {
        columns,
        unit,
        read: None,
    })
}

/// Cycles of a group's busiest core on `cores`: the cube parts' items dealt back and forth
/// over `aic` cores, the shares' units in contiguous runs over `aiv` (as
/// `dsv4/matmul_group.h` deals them; one part: a product launched alone). With reads beside
/// (one product), a block's vector cores read their eighths of its cube core's B, their
/// DMAs among their units' slices, and the cube core reads that part from L2.
fn group_cycles(parts: &[(&Matmul, GroupPart)], aic: usize, aiv: usize, cores: usize) -> f64 {
    let mut units = Vec::new();
    let mut items = Vec::new();
    let mut read = None;
    for (mm, part) in parts {
        let columns = part.share.map_or(0, |s| s.columns);
        let own = Matmul {
            n: mm.n - columns,
            ..(*mm).clone()
        };
        items.push((
            part.split.items(&own, mm.max_rows),
            part.split.item_bytes(&own),
        ));
        if let Some(s) = part.share {
            read = read.or(s.read);
            units.extend(std::iter::repeat_n(
                (*mm, s.unit),
                mm.batch * s.columns / s.unit.cols,
            ));
        }
    }
    let blocks = back_and_forth(items, aic);
    let f = read.map_or(0.0, |r| r.eighths as f64 / 8.0);
    let cube = (blocks.iter())
        .map(|&b| b as f64 * ((1.0 - f) / Rate::load(cores) + f / Rate::l2()))
        .fold(0.0, f64::max);
    // ShareOf: the first `total % aiv` cores take one unit more
    let (base, extra) = (units.len() / aiv, units.len() % aiv);
    let mut at = 0;
    let mut vector: f64 = 0.0;
    for core in 0..aiv {
        let take = base + usize::from(core < extra);
        let mine = &units[at..at + take];
        at += take;
        // half its block's reads; a round (half the slots) shorter than a GM read's latency
        // waits for the rest of it
        let reads = read.map_or(0.0, |r| {
            let bytes = f * blocks.get(core / 2).copied().unwrap_or(0) as f64 / 2.0;
            let round = (r.chunk * r.slots / 2) as f64 / Rate::load(cores);
            let rounds = (bytes / Rate::load(cores) / round).ceil();
            bytes / Rate::load(cores) + rounds * (Rate::GM_LATENCY - round).max(0.0)
        });
        let slices: usize = mine.iter().map(|(mm, u)| mm.k / u.tile_k).sum();
        let busy = match slices {
            0 => reads,
            _ => (mine.iter())
                .map(|(mm, u)| unit_cycles(mm, *u, mm.max_rows, cores, reads / slices as f64))
                .sum(),
        };
        vector = vector.max(busy);
    }
    cube.max(vector)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip;
    use crate::kernel_plan::gemm::matmul::Rows;
    use crate::kernel_plan::gemm::split::with_runs;

    /// The share of `mm` planned with spec tiles `tiles` on the 910B, beside the cube
    /// split of the whole product as `gemm::launch_alone` launches it (perhaps in runs):
    /// (cube alone, shared plan).
    fn planned(mm: &Matmul, tiles: [usize; 3]) -> (Split, Option<(Matmul, Split, VectorShare)>) {
        let chip = chip::find("910b").unwrap();
        let [m, n, k] = tiles;
        let room = Room::for_tiles(m, n, k, chip);
        let spec = Tiles::spec(mm, tiles);
        let alone = with_runs(
            plan_split(mm, &room, spec, chip).unwrap(),
            mm,
            &room,
            spec,
            chip,
        );
        let shared = plan(mm, tiles, &alone, chip);
        (alone, shared)
    }

    /// Cycles of the busiest cube core of `split` over `mm` (all its columns on the cube)
    /// on a launch of `cores` cores.
    fn on_the_cube_alone(mm: &Matmul, split: Split, cores: usize) -> f64 {
        let aic = chip::find("910b").unwrap().aic_cores;
        let part = GroupPart { split, share: None };
        group_cycles(&[(mm, part)], aic, 1, cores)
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

    /// wo_a at the reference's deployment (FLASH, 8 rows of each of 8 groups, bf16): in runs
    /// of three k slices with its B read ahead it loads quicker than with any share (the
    /// units' accumulators leave a reader beside them two slots of UB, rounds shorter than a
    /// GM read's latency).
    #[test]
    fn deployment_wo_a_is_read_ahead_in_runs() {
        let mm = deployment(Operands::Bf16, 1024, 4096, 4096, 1024 * 4096);
        let (alone, shared) = planned(&mm, O_PROJ_TILES);
        assert!(shared.is_none(), "{:?}", shared.map(|s| s.2));
        assert_eq!((alone.deal, alone.sum), (Deal::RowsInner, KSum::Partials));
        let chip = chip::find("910b").unwrap();
        let cube = on_the_cube_alone(&mm, alone, chip.aic_cores);
        assert!(alone.cycles(&mm, 8, chip) < 0.6 * cube);
    }

    /// wq_b and wo_b at the reference's deployment (FLASH, 8 rows, int8 over K = 1024:
    /// exact on the vector cores): a vector core multiplies an int8 element slower than it
    /// loads one, so its MTE2 has room. A share alone is slower than the launch alone with
    /// its B read ahead by the vector cores, which is slower than the share whose vector cores
    /// also read part of the cube's B ahead of it between their units' slices.
    #[test]
    fn deployment_int8_products_read_the_cube_s_b_beside_their_share() {
        let chip = chip::find("910b").unwrap();
        let (aic, aiv) = (chip.aic_cores, chip.aiv_cores);
        let wo_b = deployment(Operands::I8, 4096, 1024, 8192, 1024);
        let wq_b = Matmul::new(Operands::I8, BLayout::Kn, Rows::Tokens, 8, 32768, 1024);
        for (mm, tiles) in [(wo_b, O_PROJ_TILES), (wq_b, [64, 64, 256])] {
            assert_eq!(unfit(&mm), None);
            let (alone, shared) = planned(&mm, tiles);
            let (_, split, share) = shared.expect("a weight stream of 8 rows is shared");
            let read = share.read.expect("read beside");
            assert!(read.slots >= 2 && read.slots.is_multiple_of(2));
            let time = |share| {
                let part = GroupPart {
                    split,
                    share: Some(share),
                };
                group_cycles(&[(&mm, part)], aic, aiv, aic + aiv)
                    .max(moved(&mm, part) / Rate::peak(chip))
            };
            let ahead = alone.cycles(&mm, 8, chip);
            let (beside, apart) = (
                time(share),
                time(VectorShare {
                    read: None,
                    ..share
                }),
            );
            assert!(beside < ahead && ahead < apart, "{beside} {ahead} {apart}");
        }
    }

    /// A reader beside the vector cores' units fits in UB with them, in an even count of
    /// slots (two halves), or there is none.
    #[test]
    fn a_reader_beside_the_units_fits_in_ub() {
        let chip = chip::find("910b").unwrap();
        let wo_a = deployment(Operands::Bf16, 1024, 4096, 4096, 1024 * 4096);
        let (alone, _) = planned(&wo_a, O_PROJ_TILES);
        let mut planned = 0;
        for (unit, _) in shares(&wo_a, chip.aiv_cores) {
            let units = budget::bytes_in(&vector_buffers(&wo_a, unit), Mem::Ub, chip);
            if let Some((chunk, slots)) = reader_room(&wo_a, unit, &alone, chip) {
                assert!(slots >= 2 && slots.is_multiple_of(2) && chunk >= 4096 * 2);
                assert!(units + chunk * slots <= chip.capacity(Mem::Ub), "{unit:?}");
                planned += 1;
            }
        }
        assert!(planned > 0);
    }

    /// The projections of x_normed at the reference's deployment (FLASH, 8 tokens) as
    /// HCA's fusion groups them: the compressor's wkv and wgate (B [N, K]) and wq_a, wkv
    /// (B [K, N]).
    #[test]
    fn deployment_x_normed_group_gives_every_part_s_last_columns_to_the_vector_cores() {
        let chip = chip::find("910b").unwrap();
        let part = |layout, n| Matmul::new(Operands::Bf16, layout, Rows::Tokens, 8, n, 4096);
        let mms = [
            part(BLayout::Nk, 512),
            part(BLayout::Nk, 512),
            part(BLayout::Kn, 1024),
            part(BLayout::Kn, 512),
        ];
        let tiles = |mm: &Matmul| match mm.b_layout {
            BLayout::Nk => [64, 128, 128],
            BLayout::Kn => [64, 64, 256],
        };
        let parts: Vec<(Matmul, Split, [usize; 3])> = mms
            .iter()
            .map(|mm| {
                let [m, n, k] = tiles(mm);
                let room = Room::for_tiles(m, n, k, chip);
                let alone = plan_split(mm, &room, Tiles::spec(mm, tiles(mm)), chip).unwrap();
                (mm.clone(), alone, tiles(mm))
            })
            .collect();
        let planned = plan_group(&parts, chip).expect("a group of 8-row weight streams is shared");
        for (mm, part) in mms.iter().zip(&planned) {
            // whole units (narrow ones for [K, N]: a wide unit holds all 4096 k of at
            // least 32 columns, one per core), some but not all columns
            let share = part.share.expect("every part gives columns");
            assert!(share.columns < mm.n && share.columns.is_multiple_of(share.unit.cols));
            assert_eq!(share.unit.k_lanes > 0, mm.b_layout == BLayout::Kn);
        }
        // the busiest core of the mixed group finishes at least a third sooner
        let (aic, aiv) = (chip.aic_cores, chip.aiv_cores);
        let before = group_cycles(&on_the_cube(&parts), aic, aiv, aic);
        let shared: Vec<(&Matmul, GroupPart)> = mms.iter().zip(planned).collect();
        let mixed = group_cycles(&shared, aic, aiv, aic + aiv);
        assert!(mixed < 0.67 * before, "{mixed} vs {before}");
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
