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

use crate::chip::Chip;
use crate::kernel_plan::together;
use crate::kernel_plan::{Kernel, Value};

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
