//! A product overlapped with its consumer: where a vector kernel reads C range by range of
//! its columns (QHeads: head by head), the product runs in column ranges (`MatmulAt` in
//! `dsv4/matmul.h`) and each range's consumer runs beside the next range's product, one
//! mixed launch (`dsv4/together.h` with a cube part):
//!
//! ```text
//! cube:    C[0]        C[1]         …  C[R-1]
//! vector:              consume[0]   …  consume[R-2]   consume[R-1]
//! ```
//!
//! R + 1 launches instead of two, but the vector work runs under the cube's, and the mixed
//! launches' 72 cores load at once: a product alone on the 24 cube cores streams at most their
//! share of HBM (hicann/ge's Load fit, 457 GB/s), its C written back at the same rate, while
//! the consumer waits for all of it.

use super::group::described;
use super::kernels::kernel;
use super::matmul::Matmul;
use super::rate::Rate;
use super::split::{KSum, Room, Split, Tiles, plan_split, sizes, unfit, with_runs};
use crate::chip::Chip;
use crate::kernel_plan::{ByColumns, Cores, Decision, KernelPlan, Launch, Step, together};
use crate::kernel_plan::{Kernel, Value, intern, intern_list, serves_also};

/// A vector kernel reading C column range by column range: `kernel(first, cols)` finishes
/// columns `[first, first + cols)` (a multiple of `unit` each), on the blocks it returns;
/// `args` are what it binds, C among them.
pub struct Consumer<'a> {
    pub unit: usize,
    pub args: &'a [&'a str],
    pub kernel: &'a dyn Fn(usize, usize) -> (Kernel, u32),
}

/// How many column ranges an overlapped product runs in (FLASH `wq_b` at 512 tokens: two
/// 185 µs with its QHeads, four 205 µs, each range's items reading A again).
pub(super) const RANGES: usize = 2;

/// Whether C's `n` columns cut into [`RANGES`] ranges of whole consumer units.
pub(super) fn cuts(n: usize, unit: usize) -> bool {
    n.is_multiple_of(RANGES * unit)
}

/// What [`overlaps`] weighs of a product, its ranges and its chip.
pub(crate) struct Product {
    /// The fusion pass may fuse (`fuse: false` in a spec turns every overlap off).
    pub fuse: bool,
    /// Alone, the product gives the vector cores a share of its columns (they are busy).
    pub shared: bool,
    /// Items of a range's product as launched (None: C does not [`cuts`] or a range cannot
    /// be planned), and blocks of a range's consumer.
    pub range_items: Option<usize>,
    pub consumer_blocks: u32,
    pub cube_cores: usize,
    pub vector_cores: usize,
    /// The modeled time of both ways (None where a range cannot be planned).
    pub timing: Option<Timing>,
}

impl Product {
    /// `mm` launched whole with `whole` (`fuse`, `shared` as [`Product`] has them), or in
    /// ranges of `part` (None where a range cannot be planned) before a consumer whose
    /// ranges take `consumer_blocks` blocks.
    pub(crate) fn of(
        (fuse, shared): (bool, bool),
        (mm, whole): (&Matmul, &Split),
        part: Option<&(Matmul, Split)>,
        consumer_blocks: u32,
        chip: &Chip,
    ) -> Product {
        Product {
            fuse,
            shared,
            range_items: part.map(|(p, s)| s.items(p, p.max_rows)),
            consumer_blocks,
            cube_cores: chip.aic_cores,
            vector_cores: chip.aiv_cores,
            timing: part.map(|(p, s)| Timing::of(mm, whole, (p, s), consumer_blocks, chip)),
        }
    }
}

/// Modeled cycles of a product and its consumer, whole or in ranges, at the row capacity
/// and at a few rows (a decode step runs at either: [`Split::cycles`], as `with_runs` times
/// a split).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    /// At the row capacity, then at a few rows.
    pub at: [Cycles; 2],
    /// One launch more.
    pub launch: f64,
}

/// A product and its consumer at one row count.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cycles {
    /// The product whole, launched alone (perhaps with B read ahead).
    pub whole: f64,
    /// The first range's product, launched alone.
    pub range: f64,
    /// A later range's product, beside a consumer's range (nothing read ahead).
    pub beside: f64,
    /// A consumer's range, at least: its C range read at the fit's rate for its blocks.
    pub consumer: f64,
}

impl Timing {
    /// `mm` whole with `whole`, and a range's `part` with `split`, before a consumer on
    /// `consumer_blocks` vector cores.
    fn of(
        mm: &Matmul,
        whole: &Split,
        (part, split): (&Matmul, &Split),
        consumer_blocks: u32,
        chip: &Chip,
    ) -> Timing {
        let blocks = consumer_blocks.max(1) as usize;
        let at = |rows: usize| {
            let (_, _, c) = sizes(part, rows);
            Cycles {
                whole: whole.cycles(mm, rows, chip),
                range: split.cycles(part, rows, chip),
                beside: split.beside_cycles(part, rows, chip),
                consumer: c as f64 / (blocks as f64 * Rate::load(blocks)),
            }
        };
        Timing {
            at: [at(mm.max_rows), at(mm.max_rows.min(16))],
            launch: Rate::launch(chip),
        }
    }

    /// Whether the ranges overlapped take less time than the product whole and then its
    /// consumer at the row capacity plus at a few rows: the first range, each later one
    /// beside (at least) a consumer's range, the last consumer's range and one launch more
    /// per later range; against the product and every range's consumer. (At a few rows the
    /// ranges lose what reading B ahead gains the whole product, so they must gain more at
    /// the capacity; unlike `with_runs`, no veto at a few rows, or no product would ever
    /// overlap.)
    pub(crate) fn gains(&self) -> bool {
        let later = (RANGES - 1) as f64;
        let [(ranges, whole), (ranges_few, whole_few)] = self.at.map(|c| {
            let ranges = c.range + later * (c.beside.max(c.consumer) + self.launch) + c.consumer;
            (ranges, c.whole + RANGES as f64 * c.consumer)
        });
        ranges + ranges_few < whole + whole_few
    }
}

/// Whether a product can run in [`RANGES`] column ranges: where the fusion pass may fuse,
/// the product alone leaves the vector cores free, C cuts into ranges of whole consumer
/// units, each range's product still gives every cube core an item (else a range's cube
/// side takes as long as the whole product's) and a range's consumer fits the mixed
/// launch's vector cores.
pub(crate) fn fits(p: &Product) -> bool {
    let fills = p.range_items.is_some_and(|i| i >= p.cube_cores);
    p.fuse && !p.shared && fills && p.consumer_blocks <= p.vector_cores as u32
}

/// Whether a product runs in [`RANGES`] column ranges rather than whole: where it [`fits`]
/// and the model has the ranges quicker ([`Timing::gains`]: a few rows' product read ahead
/// whole streams its B on every core, a range beside a consumer on its cube cores only).
pub(crate) fn overlaps(p: &Product) -> bool {
    fits(p) && p.timing.is_some_and(|t| t.gains())
}

/// A column range's product of `mm` cut into [`RANGES`] ranges, and its split as the
/// range would launch alone on the spec tiles (perhaps in runs); None where a range cannot
/// run or its k slices would need a sum of their own.
pub(super) fn range_split(mm: &Matmul, tiles: [usize; 3], chip: &Chip) -> Option<(Matmul, Split)> {
    let part = Matmul {
        n: mm.n / RANGES,
        ..mm.clone()
    };
    let spec = Tiles::spec(&part, tiles);
    if unfit(&part, &spec).is_some() {
        return None;
    }
    let [m, n, k] = tiles;
    let room = Room::for_tiles(m, n, k, chip);
    let split = plan_split(&part, &room, spec, chip)?;
    let split = with_runs(split, &part, &room, spec, chip);
    (split.sum != KSum::Partials).then_some((part, split))
}

/// The most blocks a consumer's range takes.
pub(super) fn most_blocks(ranges: &[(Kernel, u32)]) -> u32 {
    ranges.iter().map(|(_, b)| *b).max().unwrap_or(0)
}

/// The launches (kernel, blocks) of a product run as [`RANGES`] products `part` planned with
/// `split` overlapped with `consumer`'s ranges (kernel, blocks): the first range's product
/// (binding the product's arguments), each later one beside the consumer of the range
/// before (the product's arguments, then the consumer's), the last range's consumer (its
/// arguments).
pub(super) fn launches(
    part: &Matmul,
    split: &Split,
    consumer: &[(Kernel, u32)],
    chip: &Chip,
) -> Vec<(Kernel, u32)> {
    let w = part.n;
    let cube_blocks = chip.aic_cores.min(split.items(part, part.max_rows)) as u32;
    let mut out = vec![(kernel(part, split), cube_blocks)];
    for r in 1..RANGES {
        let (vector, blocks) = &consumer[r - 1];
        let mixed = beside(kernel(part, split), r * w, vector, *blocks, chip);
        out.push((mixed, chip.aic_cores as u32));
    }
    out.push(consumer[RANGES - 1].clone());
    out
}

/// The fusion pass's overlaps: `plan` with each cube product launched alone whose next launch
/// finishes its C column range by column range ([`KernelPlan::by_columns`]) run in
/// [`RANGES`] ranges overlapped with it where [`overlaps`] says so, each decision added to
/// `decisions`.
pub(crate) fn consumers(
    mut plan: KernelPlan,
    chip: &Chip,
    decisions: &mut Vec<Decision>,
) -> KernelPlan {
    let mut i = 0;
    while i + 1 < plan.steps.len() {
        match overlapped(&plan, i, chip) {
            None => {}
            Some(Pair::Serial(consumer, why)) => decisions.push(Decision::Serial {
                product: i,
                consumer,
                why,
            }),
            Some(Pair::Overlapped(consumer, launches)) => {
                decisions.push(Decision::Overlaps {
                    product: i,
                    consumer,
                });
                let n = launches.len();
                let steps = launches.into_iter().map(|(launch, kernel, spreads)| {
                    if !plan.kernels.iter().any(|k| k.name == kernel.name) {
                        plan.kernels.push(kernel.clone());
                    }
                    if spreads && !plan.spreads.contains(&kernel.name) {
                        plan.spreads.push(kernel.name);
                    }
                    Step::Launch(launch)
                });
                let steps: Vec<Step> = steps.collect();
                plan.steps.splice(i..i + 2, steps);
                i += n - 1;
            }
        }
        i += 1;
    }
    plan.without_unused_kernels()
}

/// A product's launch and its consumer's after it, as the pass leaves them.
enum Pair {
    /// The consumer's kernel, and the launches in their place: each with its kernel and
    /// whether it spreads.
    Overlapped(String, Vec<(Launch, Kernel, bool)>),
    /// The consumer's kernel, and why the two stay one after the other.
    Serial(String, String),
}

/// Steps `i` and `i + 1` as the pass leaves them, if step `i` launches a cube product alone
/// and step `i + 1` a consumer of its C by columns.
fn overlapped(plan: &KernelPlan, i: usize, chip: &Chip) -> Option<Pair> {
    let (Step::Launch(pl), Step::Launch(cl)) = (&plan.steps[i], &plan.steps[i + 1]) else {
        return None;
    };
    let entry: &ByColumns = plan.by_columns.iter().find(|e| e.kernel == cl.kernel)?;
    let pk = plan.kernels.iter().find(|k| k.name == pl.kernel)?;
    let reads_c = pl.args[2] == entry.input && cl.args.contains(&entry.input);
    if pk.block != "matmul.h" || pk.cores != Cores::Aic || !reads_c {
        return None;
    }
    let serial = |why: &str| Some(Pair::Serial(entry.kernel.clone(), why.to_string()));
    let Some(origin) = plan.matmuls.iter().find(|o| o.kernel == pk.name) else {
        return serial("the product's origin is not known");
    };
    if cl.args.iter().any(|a| pl.args[..2].contains(a)) {
        return serial("the consumer binds the product's A or B");
    }
    let (mm, whole, tiles) = described(pk, origin);
    let w = mm.n / RANGES;
    let cut = entry.ranges.len() == RANGES
        && (entry.ranges.iter().enumerate()).all(|(r, (k, _))| {
            k.u32_param("COL0") == Some(r * w) && k.u32_param("NCOLS") == Some(w)
        });
    if !cut {
        return serial("the consumer's ranges are not the product's columns cut in ranges");
    }
    let part = range_split(&mm, tiles, chip);
    let blocks = most_blocks(&entry.ranges);
    let product = Product::of((true, false), (&mm, &whole), part.as_ref(), blocks, chip);
    let Some((part, split)) = part.filter(|_| overlaps(&product)) else {
        return serial(match fits(&product) {
            true => "the model has the product whole, then its consumer, quicker than in ranges",
            false => {
                "a range's product would leave cube cores idle or its consumer needs more vector cores"
            }
        });
    };
    let spreads = plan.spreads.contains(&entry.kernel);
    let also = serves_also(pl.stage, &[pl, cl]);
    let both: Vec<&str> = pl.args.iter().chain(cl.args).copied().collect();
    let last = RANGES;
    let out = launches(&part, &split, &entry.ranges, chip)
        .into_iter()
        .enumerate()
        .map(|(r, (kernel, block_dim))| {
            let (stage, args, also, cores) = match r {
                0 => (pl.stage, pl.args, pl.also, Cores::Aic),
                _ if r == last => (cl.stage, cl.args, cl.also, cl.cores),
                _ => (pl.stage, intern_list(&both), intern_list(&also), Cores::Mix),
            };
            let launch = Launch {
                stage,
                kernel: intern(&kernel.name),
                cores,
                block_dim,
                args,
                also,
            };
            (launch, kernel, r == last && spreads)
        })
        .collect();
    Some(Pair::Overlapped(entry.kernel.clone(), out))
}

/// The mixed launch's kernel: `cube` (a matmul kernel of a range's columns) at the product's
/// column `col0` (`MatmulAt`) on the cube cores, beside `vector` on `blocks` vector cores.
pub(super) fn beside(
    mut cube: Kernel,
    col0: usize,
    vector: &Kernel,
    blocks: u32,
    chip: &Chip,
) -> Kernel {
    cube.name = format!("{}_col{col0}", cube.name);
    cube.class = "MatmulAt";
    cube.params.push(("COL0", Value::u32(col0)));
    together::kernel(&[(&cube, chip.aic_cores as u32), (vector, blocks)], chip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip;
    use crate::kernel_plan::MatmulOrigin;
    use crate::kernel_plan::gemm::matmul::flash_wo_b;
    use crate::kernel_plan::gemm::split::{Room, Tiles, plan_split};

    const TILES: [usize; 3] = [64, 128, 128];

    /// FLASH's wo_b at 512 tokens, TP 1 (8 groups of 512 token rows, o_acc per group)
    /// launched alone, then a vector kernel reading o_acc by columns (`ranges` of it as its
    /// block takes them, on `blocks` each), binding `args`; its decisions and the plan after
    /// the pass.
    fn overlapped_wo_b(
        ranges: &[(usize, usize)],
        blocks: u32,
        args: &[&str],
    ) -> (KernelPlan, Vec<Decision>) {
        overlapped_wo_b_at(flash_wo_b().max_rows, ranges, blocks, args)
    }

    /// [`overlapped_wo_b`] at a row capacity of `rows` tokens.
    fn overlapped_wo_b_at(
        rows: usize,
        ranges: &[(usize, usize)],
        blocks: u32,
        args: &[&str],
    ) -> (KernelPlan, Vec<Decision>) {
        let chip = chip::find("910b").unwrap();
        let mm = Matmul {
            max_rows: rows,
            stride_a: rows * 1024,
            stride_c: rows * 4096,
            ..flash_wo_b()
        };
        let [m, n, k] = TILES;
        let room = Room::for_tiles(m, n, k, chip);
        let split = plan_split(&mm, &room, Tiles::spec(&mm, TILES), chip).unwrap();
        let product = kernel(&mm, &split);
        let consumer = Kernel {
            name: "sum".into(),
            doc: String::new(),
            block: "group_combine.h",
            class: "GroupCombine",
            cores: Cores::Aiv,
            params: vec![("N", Value::u32(4096))],
            args: vec!["p", "out"],
            buffers: Vec::new(),
            parts: Vec::new(),
        };
        let launch = |k: &Kernel, blocks, args: &[&str]| {
            Step::Launch(Launch {
                stage: "o_proj",
                kernel: intern(&k.name),
                cores: k.cores,
                block_dim: blocks,
                args: intern_list(args),
                also: &[],
            })
        };
        let plan = KernelPlan {
            kernels: vec![product.clone(), consumer.clone()],
            steps: vec![
                launch(&product, 24, &["o_i8", "wo_b", "o_acc"]),
                launch(&consumer, 48, args),
            ],
            matmuls: vec![MatmulOrigin {
                kernel: product.name.clone(),
                max_rows: rows,
                tiles: TILES,
                a_from_hbm: false,
            }],
            spreads: vec!["sum".into()],
            by_columns: vec![ByColumns {
                kernel: "sum".into(),
                input: "o_acc",
                ranges: (ranges.iter())
                    .map(|&(first, n)| (consumer.on_columns(first, n), blocks))
                    .collect(),
            }],
            ..KernelPlan::default()
        };
        let mut decisions = Vec::new();
        let plan = consumers(plan, chip, &mut decisions);
        (plan, decisions)
    }

    /// wo_b at 512 tokens before a consumer on one vector core (C read at one core's rate,
    /// longer than the product's second range) runs in two column ranges, the consumer of
    /// the first beside the cube's second (its product's arguments, then the consumer's),
    /// the second after it; the last range's consumer still spreads.
    #[test]
    fn a_column_consumer_runs_beside_the_next_range_of_its_product() {
        let halves = [(0, 2048), (2048, 2048)];
        let (plan, decisions) = overlapped_wo_b(&halves, 1, &["o_acc", "attn_out"]);
        let sum = "sum".to_string();
        assert_eq!(
            decisions,
            [Decision::Overlaps {
                product: 0,
                consumer: sum
            }]
        );
        let launches: Vec<&Launch> = (plan.steps.iter())
            .map(|s| match s {
                Step::Launch(l) => l,
                _ => panic!("launches only"),
            })
            .collect();
        assert_eq!(launches.len(), 3);
        let kernel = |l: &Launch| plan.kernels.iter().find(|k| k.name == l.kernel).unwrap();
        let (first, mixed, last) = (
            kernel(launches[0]),
            kernel(launches[1]),
            kernel(launches[2]),
        );
        assert_eq!(
            (first.u32_param("N"), launches[0].cores),
            (Some(2048), Cores::Aic)
        );
        assert_eq!(launches[0].args, ["o_i8", "wo_b", "o_acc"]);
        assert_eq!(launches[1].cores, Cores::Mix);
        assert_eq!(
            launches[1].args,
            ["o_i8", "wo_b", "o_acc", "o_acc", "attn_out"]
        );
        let classes: Vec<&str> = mixed.parts.iter().map(|p| p.class).collect();
        assert_eq!(classes, ["MatmulAt", "GroupCombine"]);
        assert_eq!(mixed.parts[0].u32_param("COL0"), Some(2048));
        assert_eq!(mixed.parts[1].u32_param("COL0"), Some(0));
        assert_eq!(
            (last.name.as_str(), launches[2].args),
            ("sum_col2048n2048", &["o_acc", "attn_out"][..])
        );
        assert!(plan.spreads.contains(&last.name));
        assert!(
            plan.kernels.iter().all(|k| k.name != "sum"),
            "the whole consumer is gone"
        );
    }

    /// Serial where a range's consumer would need more blocks than the vector cores, where
    /// the consumer's ranges are not the product's halves, where it binds the product's B,
    /// or where the model has the ranges slower (wo_b at 16 rows before a consumer on 48
    /// cores: the second range, beside it, reads its B on the cube cores only, and at 16
    /// rows the consumer hides little); no decision where it reads another tensor.
    #[test]
    fn a_column_consumer_stays_after_its_product_where_ranges_do_not_fit() {
        let halves = [(0, 2048), (2048, 2048)];
        let serial = |(plan, decisions): (KernelPlan, Vec<Decision>), why: &str| {
            assert_eq!(plan.steps.len(), 2, "{why}");
            assert!(
                matches!(&decisions[..], [Decision::Serial { product: 0, why: w, .. }] if w.contains(why)),
                "{decisions:?}"
            );
        };
        serial(
            overlapped_wo_b(&halves, 64, &["o_acc", "attn_out"]),
            "vector cores",
        );
        let quarters = [(0, 1024), (1024, 1024)];
        serial(
            overlapped_wo_b(&quarters, 48, &["o_acc", "attn_out"]),
            "ranges",
        );
        serial(overlapped_wo_b(&halves, 48, &["o_acc", "wo_b"]), "A or B");
        serial(
            overlapped_wo_b_at(16, &halves, 48, &["o_acc", "attn_out"]),
            "quicker than in ranges",
        );
        let (plan, decisions) = overlapped_wo_b(&halves, 48, &["o_scale", "attn_out"]);
        assert!(decisions.is_empty() && plan.steps.len() == 2);
    }

    /// Overlapped only where fusion is on, the vector cores are free, C cuts into whole
    /// consumer units, each range still gives every cube core an item and a range's consumer
    /// fits the vector cores.
    #[test]
    fn a_product_overlaps_its_consumer_where_the_ranges_fill_the_cube() {
        let flash = Product {
            fuse: true,
            shared: false,
            range_items: Some(24),
            consumer_blocks: 44,
            cube_cores: 24,
            vector_cores: 48,
            timing: Some(Timing {
                at: [
                    cycles(100.0, 50.0, 60.0, 40.0),
                    cycles(40.0, 20.0, 30.0, 20.0),
                ],
                launch: 1.0,
            }),
        };
        assert!(overlaps(&flash));
        let not = |p: Product, why: &str| assert!(!overlaps(&p), "{why}");
        not(
            Product {
                fuse: false,
                ..flash
            },
            "fuse: false",
        );
        not(
            Product {
                shared: true,
                ..flash
            },
            "shared",
        );
        not(
            Product {
                range_items: Some(12),
                ..flash
            },
            "few items",
        );
        not(
            Product {
                range_items: None,
                ..flash
            },
            "no ranges",
        );
        not(
            Product {
                consumer_blocks: 64,
                ..flash
            },
            "more blocks than vector cores",
        );
        not(
            Product {
                timing: None,
                ..flash
            },
            "not timed",
        );
        assert!(cuts(32768, 512) && !cuts(512, 512) && !cuts(1536, 512));
    }

    fn cycles(whole: f64, range: f64, beside: f64, consumer: f64) -> Cycles {
        Cycles {
            whole,
            range,
            beside,
            consumer,
        }
    }

    /// The ranges must be quicker at the row capacity plus at a few rows: a range, a later
    /// one beside (at least) a consumer's range, the last consumer's range and a launch,
    /// against the product whole and both consumers' ranges.
    #[test]
    fn ranges_gain_where_quicker_over_both_row_counts() {
        let timing = |capacity, few| Timing {
            at: [capacity, few],
            launch: 2.0,
        };
        let cases = [
            // 50 + 60 + 2 + 40 = 152 < 100 + 80 and 20 + 30 + 2 + 20 = 72 < 40 + 40
            ([100.0, 50.0, 60.0, 40.0], [40.0, 20.0, 30.0, 20.0], true),
            // at a few rows the second range beside its consumer reads slower: 20 + 45 + 2
            // + 1 = 68 > 40 + 2, but 152 + 68 < 180 + 42 over both
            ([100.0, 50.0, 60.0, 40.0], [40.0, 20.0, 45.0, 1.0], true),
            // 20 + 60 + 2 + 1 = 83: 152 + 83 > 180 + 42
            ([100.0, 50.0, 60.0, 40.0], [40.0, 20.0, 60.0, 1.0], false),
            // a range's consumer outlasting the range beside it: 50 + 70 + 2 + 70 < 100 + 140
            ([100.0, 50.0, 40.0, 70.0], [40.0, 20.0, 30.0, 20.0], true),
            // 50 + 49 + 2 + 1 = 100 + 2 and 20 + 19 + 2 + 1 = 40 + 2: the launch takes what
            // the ranges gain
            ([100.0, 50.0, 49.0, 1.0], [40.0, 20.0, 19.0, 1.0], false),
        ];
        for (capacity, few, gains) in cases {
            let [c, f] = [capacity, few].map(|[w, r, b, c]| cycles(w, r, b, c));
            assert_eq!(timing(c, f).gains(), gains, "{capacity:?}, {few:?}");
        }
    }
}
