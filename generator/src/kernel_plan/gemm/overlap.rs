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

use super::kernels::kernel;
use super::split::{Tiles, plan_split, with_runs};
use super::{Matmul, planned, share};
use crate::kernel_plan::together;
use crate::kernel_plan::{Builder, Kernel, Value};

/// A vector kernel reading C column range by column range: `kernel(first, cols)` finishes
/// columns `[first, first + cols)` (a multiple of `unit` each), on the blocks it returns;
/// `args` are what it binds, C among them.
pub struct Consumer<'a> {
    pub unit: usize,
    pub args: &'a [&'a str],
    pub kernel: &'a dyn Fn(usize, usize) -> (Kernel, u32),
}

/// What [`ranges`] weighs of a product and its chip.
pub(crate) struct Product {
    /// The fusion pass may fuse (`fuse: false` in a spec turns every overlap off).
    pub fuse: bool,
    /// Alone, the product gives the vector cores a share of its columns (they are busy).
    pub shared: bool,
    /// C's columns, and the consumer's unit they cut in.
    pub n: usize,
    pub unit: usize,
    pub cube_cores: usize,
    pub vector_cores: usize,
}

/// Column ranges a product runs in (1: not overlapped). Ranges overlap where the fusion pass
/// may fuse, the product alone leaves the vector cores free, C cuts into `RANGES` ranges of
/// whole consumer units, each range's product still gives every cube core an item (`items`
/// of a range's product, at `r` ranges; else a range's cube side takes as long as the whole
/// product's) and a range's consumer fits the mixed launch's vector cores (`blocks`).
pub(crate) fn ranges(
    p: &Product,
    items: impl Fn(usize) -> Option<usize>,
    blocks: impl Fn(usize) -> u32,
) -> usize {
    let whole = p.n.is_multiple_of(RANGES * p.unit);
    if !p.fuse || p.shared || !whole || blocks(RANGES) > p.vector_cores as u32 {
        return 1;
    }
    match items(RANGES) {
        Some(i) if i >= p.cube_cores => RANGES,
        _ => 1,
    }
}

/// How many column ranges an overlapped product runs in (FLASH `wq_b` at 512 tokens: two
/// 185 µs with its QHeads, four 205 µs, each range's items reading A again).
const RANGES: usize = 2;

/// Launches `mm` ([a, b, c]) and its `consumer`, overlapped in column ranges where
/// [`ranges`] says so, else the product alone (`super::launch_alone`) and the consumer
/// after it on all its columns; None where the product cannot run (the stage is then marked
/// missing, saying why).
pub fn launch_overlapped(
    b: &mut Builder,
    tiles: [usize; 3],
    mm: &Matmul,
    args: [&str; 3],
    consumer: &Consumer,
) -> Option<()> {
    let (plan, chip) = (b.plan, b.plan.chip);
    let (whole, room, _) = planned(b, tiles, mm, args[1])?;
    let range = |r: usize| Matmul {
        n: mm.n / r,
        ..mm.clone()
    };
    let product = Product {
        fuse: plan.fuse,
        shared: share::plan(mm, tiles, &whole, chip).is_some(),
        n: mm.n,
        unit: consumer.unit,
        cube_cores: chip.aic_cores,
        vector_cores: chip.aiv_cores,
    };
    let items = |r: usize| {
        let part = range(r);
        plan_split(&part, &room, Tiles::spec(&part, tiles), chip)
            .map(|s| s.items(&part, part.max_rows))
    };
    let n = ranges(&product, items, |r| (consumer.kernel)(0, mm.n / r).1);
    if n == 1 {
        super::launch_alone(b, tiles, mm, args)?;
        let (k, blocks) = (consumer.kernel)(0, mm.n);
        b.launch_spreading(k, blocks, consumer.args);
        return Some(());
    }
    let part = range(n);
    let (split, room, spec) = planned(b, tiles, &part, args[1])?;
    let split = with_runs(split, &part, &room, spec, chip);
    let w = part.n;
    let cube_blocks = chip.aic_cores.min(split.items(&part, part.max_rows)) as u32;
    b.launch(kernel(&part, &split), cube_blocks, &args);
    let launch_args: Vec<&str> = args.iter().chain(consumer.args).copied().collect();
    for r in 1..n {
        let (vector, blocks) = (consumer.kernel)((r - 1) * w, w);
        let cube = at_column(kernel(&part, &split), r * w);
        let cores = chip.aic_cores as u32;
        let mixed = together::kernel(&[(&cube, cores), (&vector, blocks)], chip);
        b.launch(mixed, cores, &launch_args);
    }
    let (last, blocks) = (consumer.kernel)((n - 1) * w, w);
    b.launch_spreading(last, blocks, consumer.args);
    Some(())
}

/// `cube` (a matmul kernel of a range's columns) at the product's column `col0`
/// (`MatmulAt`).
fn at_column(mut cube: Kernel, col0: usize) -> Kernel {
    cube.name = format!("{}_col{col0}", cube.name);
    cube.class = "MatmulAt";
    cube.params.push(("COL0", Value::u32(col0)));
    cube
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Overlapped only where fusion is on, the vector cores are free, C cuts into whole
    /// consumer units, each range still gives every cube core an item and a range's consumer
    /// fits the vector cores.
    #[test]
    fn a_product_overlaps_its_consumer_where_the_ranges_fill_the_cube() {
        let flash = Product {
            fuse: true,
            shared: false,
            n: 32768,
            unit: 512,
            cube_cores: 24,
            vector_cores: 48,
        };
        let (enough, fits) = (|_: usize| Some(24), |_: usize| 44);
        assert_eq!(ranges(&flash, enough, fits), RANGES);
        let unfused = Product {
            fuse: false,
            ..flash
        };
        assert_eq!(ranges(&unfused, enough, fits), 1, "fuse: false");
        let shared = Product {
            shared: true,
            ..flash
        };
        assert_eq!(ranges(&shared, enough, fits), 1, "shared");
        let one_unit = Product { n: 512, ..flash };
        assert_eq!(ranges(&one_unit, enough, fits), 1, "one unit");
        assert_eq!(ranges(&flash, |_| Some(12), fits), 1, "few items");
        assert_eq!(ranges(&flash, |_| None, fits), 1, "no split");
        assert_eq!(
            ranges(&flash, enough, |_| 64),
            1,
            "more blocks than vector cores"
        );
    }
}
