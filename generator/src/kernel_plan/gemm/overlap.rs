//! A product overlapped with its consumer (`dsv4/matmul_beside.h`): where a vector kernel
//! reads C range by range of its columns (QHeads: head by head), the product runs in column
//! ranges and each range's consumer runs beside the next range's product, one mixed launch:
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

use super::kernels::kernel;
use super::split::{Room, Split, Tiles, plan_split, unfit, with_runs};
use super::{Matmul, share};
use crate::kernel_plan::{Builder, Cores, Kernel, Value, intern};

/// A vector kernel reading C column range by column range: `kernel(first, cols)` finishes
/// columns `[first, first + cols)` (a multiple of `unit` each), on the blocks it returns;
/// `args` are what it binds, C among them.
pub struct Consumer<'a> {
    pub unit: usize,
    pub args: &'a [&'a str],
    pub kernel: &'a dyn Fn(usize, usize) -> (Kernel, u32),
}

/// Column ranges a product runs in (1: not overlapped). Ranges overlap where the fusion
/// pass may fuse (`fuse`), the product alone leaves the vector cores free (no share of its
/// columns, `shared`), and C cuts into `RANGES` ranges of whole consumer units whose product
/// still gives every cube core an item (`items` of a range, per `ranges`).
pub(crate) fn ranges(
    fuse: bool,
    shared: bool,
    n: usize,
    unit: usize,
    cube_cores: usize,
    items: impl Fn(usize) -> Option<usize>,
) -> usize {
    let whole = n.is_multiple_of(RANGES * unit);
    if !fuse || shared || !whole {
        return 1;
    }
    match items(RANGES) {
        Some(i) if i >= cube_cores => RANGES,
        _ => 1,
    }
}

/// How many column ranges an overlapped product runs in.
const RANGES: usize = 2;

/// Launches `mm` ([a, b, c]) and its `consumer`, overlapped in column ranges where
/// [`ranges`] says so, else the product alone (`super::launch_alone`) and the consumer
/// after it on all its columns. Returns the product's split (of the whole product).
pub fn launch_overlapped(
    b: &mut Builder,
    tiles: [usize; 3],
    mm: &Matmul,
    args: [&str; 3],
    consumer: &Consumer,
) -> Option<Split> {
    let (plan, [m, tn, tk]) = (b.plan, tiles);
    let (chip, room) = (plan.chip, Room::for_tiles(m, tn, tk, plan.chip));
    let whole = cube_split(b, tiles, mm, args[1])?;
    let range = |r: usize| Matmul {
        n: mm.n / r,
        ..mm.clone()
    };
    let shared = share::plan(mm, tiles, &whole, chip).is_some();
    let n = ranges(
        plan.fuse,
        shared,
        mm.n,
        consumer.unit,
        chip.aic_cores,
        |r| {
            let part = range(r);
            plan_split(&part, &room, Tiles::spec(&part, tiles), chip)
                .map(|s| s.items(&part, part.max_rows))
        },
    );
    if n == 1 {
        let split = super::launch_alone(b, tiles, mm, args)?;
        let (k, blocks) = (consumer.kernel)(0, mm.n);
        b.launch_spreading(k, blocks, consumer.args);
        return Some(split);
    }
    let part = range(n);
    let split = with_runs(
        cube_split(b, tiles, &part, args[1])?,
        &part,
        &room,
        Tiles::spec(&part, tiles),
        chip,
    );
    let w = part.n;
    let cube_blocks = chip.aic_cores.min(split.items(&part, part.max_rows)) as u32;
    b.launch(kernel(&part, &split), cube_blocks, &args);
    let launch_args: Vec<&str> = args.iter().chain(consumer.args).copied().collect();
    for r in 1..n {
        let (vector, blocks) = (consumer.kernel)((r - 1) * w, w);
        let cube = at_column(kernel(&part, &split), r * w);
        b.launch(
            beside(cube, vector, blocks),
            chip.aic_cores as u32,
            &launch_args,
        );
    }
    let (last, blocks) = (consumer.kernel)((n - 1) * w, w);
    b.launch_spreading(last, blocks, consumer.args);
    Some(whole)
}

/// The least-traffic split of `mm` on the cube cores, or the stage marked missing, saying
/// why.
fn cube_split(b: &mut Builder, [m, n, k]: [usize; 3], mm: &Matmul, weights: &str) -> Option<Split> {
    let chip = b.plan.chip;
    let spec = Tiles::spec(mm, [m, n, k]);
    if let Some(why) = unfit(mm, &spec) {
        b.missing(format!("{weights}: {why}"));
        return None;
    }
    let split = plan_split(mm, &Room::for_tiles(m, n, k, chip), spec, chip);
    if split.is_none() {
        b.missing(format!("{weights}: no Mmad tile's C strip of 16 rows fits"));
    }
    split
}

/// `cube` (a matmul kernel of a range's columns) at the product's column `col0`.
fn at_column(mut cube: Kernel, col0: usize) -> Kernel {
    cube.name = format!("{}_col{col0}", cube.name);
    cube.params.push(("COL0", Value::u32(col0)));
    cube
}

/// `dsv4/matmul_beside.h`: `cube` on the cube cores beside `vector` on `blocks` of the vector
/// cores, one mixed launch; the vector kernel's arguments follow a, b, c, renamed apart.
fn beside(cube: Kernel, mut vector: Kernel, blocks: u32) -> Kernel {
    let name = format!("{}__beside__{}_on{blocks}", cube.name, vector.name);
    vector.params.extend([
        ("ARGS", Value::u32(vector.args.len())),
        ("BLOCK_BASE", Value::U32(0)),
        ("BLOCKS", Value::U32(blocks)),
    ]);
    let args = ["a", "b", "c"]
        .into_iter()
        .chain(vector.args.iter().map(|a| intern(&format!("v_{a}"))))
        .collect();
    Kernel {
        doc: format!(
            "{} on the cube cores beside {} on {blocks} vector cores",
            cube.name, vector.name
        ),
        name,
        block: "matmul_beside.h",
        class: "MatmulBeside",
        cores: Cores::Mix,
        params: Vec::new(),
        args,
        buffers: Vec::new(),
        parts: vec![cube, vector],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Overlapped only where fusion is on, the vector cores are free, C cuts into whole
    /// consumer units and each range still gives every cube core an item.
    #[test]
    fn a_product_overlaps_its_consumer_where_the_ranges_fill_the_cube() {
        let enough = |_: usize| Some(24);
        assert_eq!(ranges(true, false, 32768, 512, 24, enough), RANGES);
        assert_eq!(
            ranges(false, false, 32768, 512, 24, enough),
            1,
            "fuse: false"
        );
        assert_eq!(ranges(true, true, 32768, 512, 24, enough), 1, "shared");
        assert_eq!(ranges(true, false, 512, 512, 24, enough), 1, "one unit");
        assert_eq!(
            ranges(true, false, 32768, 512, 24, |_| Some(12)),
            1,
            "few items"
        );
        assert_eq!(ranges(true, false, 32768, 512, 24, |_| None), 1, "no split");
    }
}
